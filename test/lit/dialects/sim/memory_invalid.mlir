// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// A #sim.memory states every field once, none negative (its round trip: ops.mlir).

builtin.module attributes {sim.memory = [#sim.memory<stage = 0, params = -1, grads = 0, optimizer = 0, activations = 0, saved_per_microbatch = 0, in_flight = 1, comm_buffers = 0, weight_grad_residual = 0>]} {
}
// CHECK: #sim.memory: params must be >= 0, got -1

// -----

builtin.module attributes {sim.memory = [#sim.memory<stage = 0, params = 1, grads = 0, optimizer = 0, activations = 0, saved_per_microbatch = 0, in_flight = 1, comm_buffers = 0>]} {
}
// CHECK: #sim.memory is missing the field weight_grad_residual

// -----

builtin.module attributes {sim.memory = [#sim.memory<stage = 0, peak = 1>]} {
}
// CHECK: #sim.memory has no field peak (fields: stage, params, grads, optimizer, activations, saved_per_microbatch, in_flight, comm_buffers, weight_grad_residual, host_activations)
