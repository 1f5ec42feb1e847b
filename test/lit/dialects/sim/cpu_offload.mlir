// RUN: charon-opt %s | charon-opt | filecheck %s
// RUN: charon-opt %s --print-op-generic | charon-opt | filecheck %s

// offload-activations' mark on a forward layer repeat and its reverse twin
// (#sim.cpu_offload: this repeat's offloaded layers, its first layer's index in
// the chunk, the chunk's layers and how many of them it offloads), and
// memory-analysis' host bytes (#sim.memory's host_activations, left out when 0;
// sim.cpu_offload_bytes, what one offloaded layer of the repeat sends).

// CHECK: builtin.module attributes {sim.memory = [#sim.memory<stage = 0, params = 1, grads = 1, optimizer = 6, activations = 20, saved_per_microbatch = 5, in_flight = 1, comm_buffers = 0, weight_grad_residual = 0, host_activations = 7>]}
builtin.module attributes {sim.memory = [#sim.memory<host_activations = 7, stage = 0, params = 1, grads = 1, optimizer = 6, activations = 20, saved_per_microbatch = 5, in_flight = 1, comm_buffers = 0, weight_grad_residual = 0>]} {
  %x = sim.input "x" : tensor<4xbf16>
  %w = sim.param "w" : tensor<3x4x4xbf16>
  // CHECK: %[[R:.*]], %{{.*}} = sim.repeat 3 iter(%{{.*}} : tensor<4xbf16>) slices(%{{.*}} : tensor<3x4x4xbf16>) {sim.cpu_offload = #sim.cpu_offload<layers = 2, first = 0, chunk_layers = 3, chunk_offloaded = 2>}
  %r:2 = sim.repeat 3 iter(%x : tensor<4xbf16>) slices(%w : tensor<3x4x4xbf16>) {sim.cpu_offload = #sim.cpu_offload<chunk_offloaded = 2, layers = 2, first = 0, chunk_layers = 3>} -> (tensor<4xbf16>, tensor<3x4xbf16>) {
  ^bb0(%h: tensor<4xbf16>, %wi: tensor<4x4xbf16>):
    sim.yield %h, %h : tensor<4xbf16>, tensor<4xbf16>
  }
  // a repeat holding the chunk's layers 1 and 2, of which it offloads layer 1
  // CHECK: sim.repeat 2 iter(%[[R]] : tensor<4xbf16>) slices(%{{.*}} : tensor<2x4x4xbf16>) {sim.cpu_offload = #sim.cpu_offload<layers = 1, first = 1, chunk_layers = 4, chunk_offloaded = 2>, sim.cpu_offload_bytes = 8 : i64}
  %w2 = sim.param "w2" : tensor<2x4x4xbf16>
  %r2 = sim.repeat 2 iter(%r#0 : tensor<4xbf16>) slices(%w2 : tensor<2x4x4xbf16>) {sim.cpu_offload = #sim.cpu_offload<layers = 1, first = 1, chunk_layers = 4, chunk_offloaded = 2>, sim.cpu_offload_bytes = 8 : i64} -> (tensor<4xbf16>) {
  ^bb0(%h: tensor<4xbf16>, %wi: tensor<4x4xbf16>):
    sim.yield %h : tensor<4xbf16>
  }
}
