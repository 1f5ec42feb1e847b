// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// #sim.replicated_flops names each pass once, with a finite count (its round
// trip: ops.mlir).

builtin.module attributes {sim.replicated_flops = #sim.replicated_flops<"shard-tensor" = 1.0, "shard-tensor" = 2.0>} {
}
// CHECK: #sim.replicated_flops: pass names must be distinct and non-empty, got ['shard-tensor', 'shard-tensor']

// -----

builtin.module attributes {sim.replicated_flops = #sim.replicated_flops<shard_tensor = 1.0>} {
}
// CHECK: string literal expected
