// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB gpus=8}' | filecheck %s
// RUN: charon-opt %s -p 'set-target{hardware=A100 gpus=16 gpus-per-node=4}' | filecheck %s --check-prefix=ALIAS
// RUN: not charon-opt %s -p 'set-target{hardware=Z100}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not charon-opt %s -p 'set-target' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=4}' 2>&1 | filecheck %s --check-prefix=SMALL
// RUN: not charon-opt %s -p 'set-target{hardware=H100 gpus=12 gpus-per-node=8}' 2>&1 | filecheck %s --check-prefix=PARTIAL
// RUN: not charon-opt %S/cost_annotate.mlir -p 'set-target{hardware=H100},cost-annotate,set-target{hardware=A100}' 2>&1 | filecheck %s --check-prefix=PRICED
// RUN: charon-opt %S/cost_annotate.mlir -p 'set-target{hardware=H100},cost-annotate,set-target{hardware=H100 gpus=16}' | filecheck %s --check-prefix=SAME-GPU

// CHECK: builtin.module attributes {sim.target = #sim.target<hardware = "H100-SXM5-80GB", gpus = 8, gpus_per_node = 8>}
// ALIAS: builtin.module attributes {sim.target = #sim.target<hardware = "A100-SXM4-80GB", gpus = 16, gpus_per_node = 4>}
// UNKNOWN: charon-opt: error: set-target: option 'hardware': unknown GPU 'Z100' (known: {{.*}}H100-SXM5-80GB{{.*}})
// MISSING: charon-opt: error: set-target: option 'hardware' is required
// SMALL: charon-opt: error: set-target: grid @mesh spans 8 devices but option 'gpus' is 4
// PARTIAL: charon-opt: error: set-target: option 'gpus' (12) is not a whole number of 8-GPU nodes
// Prices are the targeted GPU's: another GPU after cost-annotate would report H100 times
// against A100 peaks. The same GPU with another count is a new target like any other.
// PRICED: charon-opt: error: set-target: the module is already priced for H100-SXM5-80GB; set the target (A100-SXM4-80GB) before cost-annotate
// SAME-GPU: builtin.module attributes {sim.target = #sim.target<hardware = "H100-SXM5-80GB", gpus = 16, gpus_per_node = 8>}
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 8)
}
