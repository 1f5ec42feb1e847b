// set-target{cluster=...} attaches a cluster (a preset name or a .cluster file):
// its canonical text goes on the module, so later passes and tools need no file.
// RUN: charon-opt %s -p 'set-target{cluster=dgx-h100 gpus=16}' | filecheck %s
// RUN: charon-opt %s -p 'set-target{cluster="%examples/clusters/gb200-nvl72.cluster" gpus=144}' | filecheck %s --check-prefix=NVL72
// RUN: charon-opt %s -p 'set-target{cluster="%S/Inputs/small.cluster"}' | filecheck %s --check-prefix=FILE
// The attribute reads back: a second charon-opt prices the collectives from it.
// RUN: charon-opt %s -p 'set-target{cluster="%S/Inputs/small.cluster"}' | charon-opt -p cost-annotate | filecheck %s --check-prefix=PRICED
// RUN: not charon-opt %s -p 'set-target{cluster=dgx-h100 hardware=A100}' 2>&1 | filecheck %s --check-prefix=MISMATCH
// RUN: not charon-opt %s -p 'set-target{cluster="%S/Inputs/small.cluster" gpus=64}' 2>&1 | filecheck %s --check-prefix=TOO-MANY

// CHECK: builtin.module attributes {sim.target = #sim.target<hardware = "H100-SXM5-80GB", gpus = 16, gpus_per_node = 8, cluster = "name = \22dgx-h100\22 nodes = 128 node { gpu = H100-SXM5-80GB gpus = 8 } scale_up nvswitch { domain = 8 bandwidth = 450GB/s latency = 500ns multicast = true } nic { count = 8 speed = 50GB/s rails = 8 latency = 1000ns pxn = true } scale_out fat_tree { rail_optimized = true tier { span = 32 oversubscription = 1:1 latency = 300ns } tier { span = 128 oversubscription = 1:1 latency = 300ns } }">}
// NVL72: sim.target = #sim.target<hardware = "GB200-per-GPU", gpus = 144, gpus_per_node = 4, cluster = "name = \22gb200-nvl72\22 nodes = 144 {{.*}} scale_up nvswitch { domain = 72 bandwidth = 900GB/s
// FILE: sim.target = #sim.target<hardware = "H100-SXM5-80GB", gpus = 16, gpus_per_node = 8, cluster = "name = \22two-nodes\22 nodes = 2
// The tensor-parallel all-reduce stays on NVLink; the data-parallel one crosses the NICs.
// PRICED: coll.all_reduce %{{.*}} on @mesh ["tp"] {sim.cost = #sim.cost<time_s = {{.*}}, engine = "analytic">}
// PRICED: coll.all_reduce %{{.*}} on @mesh ["dp"] {sim.cost = #sim.cost<time_s = {{.*}}, engine = "analytic">}
// MISMATCH: charon-opt: error: set-target: option 'hardware' (A100-SXM4-80GB) differs from the GPU of cluster 'dgx-h100' (H100-SXM5-80GB)
// TOO-MANY: charon-opt: error: set-target: option 'gpus' (64) exceeds the 16 GPUs of cluster 'two-nodes'
builtin.module {
  coll.grid @mesh(axes = ["dp", "tp"], shape = 2x8)
  %x = sim.input "x" : tensor<4096x4096xbf16>
  %a = coll.all_reduce %x on @mesh ["tp"] : tensor<4096x4096xbf16>
  %b = coll.all_reduce %a on @mesh ["dp"] : tensor<4096x4096xbf16>
}
