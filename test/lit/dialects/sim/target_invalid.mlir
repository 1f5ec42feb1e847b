// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// A #sim.target names its GPU and at least one GPU per node (its round trip:
// ops.mlir; a cluster's own rules: the cluster parser's tests).

builtin.module attributes {sim.target = #sim.target<hardware = "H100-SXM5-80GB", gpus = 8, gpus_per_node = 0>} {
}
// CHECK: #sim.target: gpus_per_node must be >= 1, got 0

// -----

builtin.module attributes {sim.target = #sim.target<hardware = "", gpus = 8, gpus_per_node = 8>} {
}
// CHECK: #sim.target: hardware must name a GPU

// -----

builtin.module attributes {sim.target = #sim.target<hardware = "H100-SXM5-80GB", gpus = 8>} {
}
// CHECK: #sim.target is missing the field gpus_per_node
