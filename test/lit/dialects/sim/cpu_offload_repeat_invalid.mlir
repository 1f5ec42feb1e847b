// RUN: charon-opt %s --split-input-file --verify-diagnostics | filecheck %s
// A layer repeat's #sim.cpu_offload offloads at most its own layers and is a #sim.cpu_offload;
// its sim.cpu_offload_bytes is an integer >= 0 beside a mark that offloads layers.

%x = sim.input "x" : tensor<4xbf16>
%w = sim.param "w" : tensor<2x4x4xbf16>
%r = sim.repeat 2 iter(%x : tensor<4xbf16>) slices(%w : tensor<2x4x4xbf16>) {sim.cpu_offload = #sim.cpu_offload<layers = 3, first = 0, chunk_layers = 4, chunk_offloaded = 3>} -> (tensor<4xbf16>) {
^bb0(%h: tensor<4xbf16>, %wi: tensor<4x4xbf16>):
  sim.yield %h : tensor<4xbf16>
}
// CHECK: error: 'sim.repeat' op sim.cpu_offload offloads 3 layers of a repeat of 2

// -----

%x = sim.input "x" : tensor<4xbf16>
%w = sim.param "w" : tensor<2x4x4xbf16>
%r = sim.repeat 2 iter(%x : tensor<4xbf16>) slices(%w : tensor<2x4x4xbf16>) {sim.cpu_offload = 2 : i64} -> (tensor<4xbf16>) {
^bb0(%h: tensor<4xbf16>, %wi: tensor<4x4xbf16>):
  sim.yield %h : tensor<4xbf16>
}
// CHECK: error: 'sim.repeat' op 'sim.repeat': sim.cpu_offload must be a #sim.cpu_offload<...>, got 2 : i64

// -----

%x = sim.input "x" : tensor<4xbf16>
%w = sim.param "w" : tensor<2x4x4xbf16>
%r = sim.repeat 2 iter(%x : tensor<4xbf16>) slices(%w : tensor<2x4x4xbf16>) {sim.cpu_offload = #sim.cpu_offload<layers = 1, first = 0, chunk_layers = 4, chunk_offloaded = 1>, sim.cpu_offload_bytes = -8 : i64} -> (tensor<4xbf16>) {
^bb0(%h: tensor<4xbf16>, %wi: tensor<4x4xbf16>):
  sim.yield %h : tensor<4xbf16>
}
// CHECK: error: 'sim.repeat' op 'sim.repeat': sim.cpu_offload_bytes must be an integer >= 0, got -8 : i64

// -----

%x = sim.input "x" : tensor<4xbf16>
%w = sim.param "w" : tensor<2x4x4xbf16>
%r = sim.repeat 2 iter(%x : tensor<4xbf16>) slices(%w : tensor<2x4x4xbf16>) {sim.cpu_offload_bytes = 8 : i64} -> (tensor<4xbf16>) {
^bb0(%h: tensor<4xbf16>, %wi: tensor<4x4xbf16>):
  sim.yield %h : tensor<4xbf16>
}
// CHECK: error: 'sim.repeat' op sim.cpu_offload_bytes needs a sim.cpu_offload that offloads layers
