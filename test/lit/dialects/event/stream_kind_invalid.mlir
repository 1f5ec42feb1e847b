// RUN: not charon-opt %s 2>&1 | filecheck %s
// A stream kind outside StreamKind does not parse (the other event rules: invalid.mlir).

event.program @p ranks 1 {
  event.stream @s dma
}
// CHECK: stream_kind_invalid.mlir:5:19: error: Expected `compute`, `comm`, `host`, or `copy`.
