// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// #sim.replicated_flops names each pass once, with a finite count (its round
// trip: ops.mlir).

builtin.module attributes {sim.replicated_flops = #sim.replicated_flops<"shard-tensor" = 1.0, "shard-tensor" = 2.0>} {
}
// CHECK: #sim.replicated_flops names a pass twice: ['shard-tensor', 'shard-tensor']

// -----

builtin.module attributes {sim.replicated_flops = #sim.replicated_flops<shard_tensor = 1.0>} {
}
// CHECK: string literal expected

// -----

builtin.module attributes {sim.replicated_flops = #sim.replicated_flops<"" = 1.0>} {
}
// CHECK: #sim.replicated_flops: a pass name must not be empty

// -----

builtin.module attributes {sim.replicated_flops = #sim.replicated_flops<"shard-tensor" = 1.0e400>} {
}
// CHECK: #sim.replicated_flops: shard-tensor must be finite, got inf
