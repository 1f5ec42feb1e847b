"""Charon's dialects: `sim` (what the model computes), `coll` (collectives on the
axes of `coll.grid`) and `event` (what the hardware does, in order)."""

import charon_ir.xdsl_lexer  # noqa: F401  (xDSL's string-literal lexer, linear)
