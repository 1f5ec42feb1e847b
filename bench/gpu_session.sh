#!/usr/bin/env bash
# The checks a lent GPU machine runs, in one call (README "Measured", docs/interop.md),
# in the order of their worth when the lease runs out:
#   1. the shipped kernels of this GPU timed again, as CUDA graphs, into
#      charon_ir/profile/data/gpu_kernels.db (every row of the shipped steps' plan),
#      for at most PROFILE_BUDGET seconds;
#   2. torch.profiler (Kineto) traces and an execution trace of a small training step;
#   3. `charon validate --live` on the GPU;
#   4. the host's cost per eager launch (bench/host_launch_cost.py: docs/calibration.md, MoE host);
#   5. the routed experts' GEMMs as the frameworks run them (bench/moe_gemm_bench.py).
# Run from the repository root on a machine with torch and a GPU; what it writes goes
# to $OUT (default out/gpu). Needs the shipped steps' ops as .mlir (written here, with
# the pinned torch, by `python bench/shipped_step_ops.py .gpu/ops`) so the GPU side
# measures exactly the ops the pinned frontend builds, and wheels of the pure-Python
# dependencies the GPU image lacks in .whl/:
#   .venv/bin/python -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       -d .whl xdsl==0.74.0 lark==1.3.1 'immutabledict<4.3.2' ordered-set==4.1.0
# The GPU image's own torch and transformers are used (2.11.0+cu130 and 5.17.0 on
# 2026-11-27). A rehearsal without a GPU: DEVICE=cpu PROFILE_BUDGET=5 DB=/tmp/x.db.
#   PROFILE_BUDGET: at most this many seconds for step 1 (default 240); REPEATS: samples an op (5);
#   REFRESH_BELOW: re-time the stored ops faster than this many seconds (default 1: all of them;
#   0: measure only the ops the database lacks, after a pass changed some)
#   SKIP_PROFILE, SKIP_TRACES, SKIP_LIVE, SKIP_HOST, SKIP_MOE: leave out step 1, 2, 3, 4 or 5
set -u
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
LOG="$OUT/session.log"
exec > >(tee -a "$LOG") 2>&1
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}  # cpu: a rehearsal of the plumbing on a machine without a GPU
TAG=${TAG:-$DEVICE}  # names the traces: llama4-TAG-s512-b8.json.gz

if compgen -G ".whl/*.whl" >/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/charon-site .whl/*.whl || exit 1
fi
# the package as setuptools lays it out (pyproject's package-dir), without building it
rm -rf /tmp/charon-pkg && mkdir -p /tmp/charon-pkg
cp -r charon_ir /tmp/charon-pkg/ && for d in dialects passes lowering tools; do cp -r "$d" "/tmp/charon-pkg/charon_ir/$d"; done
export PYTHONPATH=/tmp/charon-pkg:/tmp/charon-site${PYTHONPATH:+:$PYTHONPATH}
export CHARON_CACHE_DIR=/tmp/charon-cache CHARON_PROFILE_DB=/tmp/charon-cache/profile.db
CHARON="$PY -P -m charon_ir.cli"  # -P: not the checkout's charon_ir (cwd), the laid-out one
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
$PY -c "import torch, transformers, xdsl; print('torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')" || exit 1

echo "== 1. shipped kernels as CUDA graphs $(date -u +%T)"
DB=${DB:-charon_ir/profile/data/gpu_kernels.db}
if [ -z "${SKIP_PROFILE:-}" ]; then
  ops=(); for f in .gpu/ops/*.mlir; do ops+=(--ops-from "$f"); done
  # the budget stops starting ops; a later run with the same flags measures them all again
  budget=${PROFILE_BUDGET:-240}
  echo "profile budget ${budget} s"
  timeout $(( budget + 60 )) $CHARON --quiet profile --device "$DEVICE" "${ops[@]}" --db "$DB" \
    --refresh-below "${REFRESH_BELOW:-1}" --repeats "${REPEATS:-5}" --budget "$budget"
  echo "rc=$?"
  $PY - "$DB" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA journal_mode=DELETE"); c.commit(); c.close()
PY
  cp "$DB" "$OUT/gpu_kernels.db"
fi

echo "== 2. Kineto traces $(date -u +%T)"
[ -n "${SKIP_TRACES:-}" ] || timeout 120 $PY bench/record_kineto_trace.py --device "$DEVICE" --seq-len 512 --batch 8 \
  --out "$OUT/llama4-$TAG-s512-b8.json.gz" --execution-trace "$OUT/llama4-$TAG-s512-b8.et.json.gz"
[ -n "${SKIP_TRACES:-}" ] || timeout 90 $PY bench/record_kineto_trace.py --device "$DEVICE" --seq-len 512 --batch 16 --out "$OUT/llama4-$TAG-s512-b16.json.gz"

echo "== 3. validate --live $(date -u +%T)"
[ -n "${SKIP_LIVE:-}" ] || timeout 200 $CHARON validate --live --device "$DEVICE" --json > "$OUT/live.json"
echo "rc=$?"; [ -s "$OUT/live.json" ] && cat "$OUT/live.json"
echo "== 4. host cost per launch $(date -u +%T)"
[ -n "${SKIP_HOST:-}" ] || timeout 90 $PY bench/host_launch_cost.py --device "$DEVICE" --out "$OUT/host_launch-$TAG.json"
echo "== 5. the routed experts' GEMMs $(date -u +%T)"
[ -n "${SKIP_MOE:-}" ] || [ "$DEVICE" = cpu ] || timeout 150 $PY bench/moe_gemm_bench.py --out "$OUT/moe_gemm-$TAG.json"
echo "== done $(date -u +%T)"
