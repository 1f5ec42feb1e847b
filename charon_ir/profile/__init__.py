"""
Measured op latencies: the profile database and what fills and reads it.

- `key`: what identifies a measurement (op kind, variant, shapes, dtypes); pure xDSL.
- `store`: the sqlite database (WAL, one transaction per measurement).
- `device`: which device a lookup prices for (`CHARON_PROFILE_DEVICE`).
- `collect`, `sweep`: the ops to profile, from an .mlir file, and shape variants
  of them that give the predictor a spread of sizes to fit.
- `runner`: runs one op with torch and times it; the only module importing torch.
- `fit`: per-family models of time from FLOPs, bytes and dims (numpy).

Nothing here imports torch except `runner`, so the `db` and `predict` engines stay
cheap to load in `charon-opt`.
"""
