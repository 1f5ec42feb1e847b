// RUN: not charon-opt %s 2>&1 | filecheck %s
// A split outside WeightSplit does not parse (the other split rules: invalid.mlir).

%p = sim.param "p" {split = #sim.split<diagonal>} : tensor<4x4xbf16>
// CHECK: split_invalid.mlir:4:40: error: Expected `column`, `kv`, or `row`.
