// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// #sim.cpu_offload's rules (its round trip: cpu_offload.mlir).

builtin.module attributes {a = #sim.cpu_offload<layers = -1, first = 0, chunk_layers = 4, chunk_offloaded = 2>} {
}
// CHECK: #sim.cpu_offload: layers must be >= 0, got -1

// -----

builtin.module attributes {a = #sim.cpu_offload<layers = 4, first = 0, chunk_layers = 4, chunk_offloaded = 4>} {
}
// CHECK: #sim.cpu_offload: chunk_offloaded must be < chunk_layers (4), got 4

// -----

builtin.module attributes {a = #sim.cpu_offload<layers = 3, first = 1, chunk_layers = 8, chunk_offloaded = 2>} {
}
// CHECK: #sim.cpu_offload: layers must be what of the chunk's first 2 layers starts at layer 1, at most 1, got 3

// -----

builtin.module attributes {a = #sim.cpu_offload<layers = 0, first = 0, chunk_layers = 8, chunk_offloaded = 2>} {
}
// CHECK: #sim.cpu_offload: layers must be what of the chunk's first 2 layers starts at layer 0, at most 2, got 0

// -----

builtin.module attributes {a = #sim.cpu_offload<layers = 1, first = 0, chunk_layers = 8>} {
}
// CHECK: #sim.cpu_offload is missing the field chunk_offloaded

