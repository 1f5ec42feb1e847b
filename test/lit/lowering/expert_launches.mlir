// RUN: charon-opt %S/Inputs/moe_layer.mlir -p 'shard-expert{ep=4},set-target{hardware=H100-SXM5-80GB gpus=4},cost-annotate,lower-to-events{host-launch=1e-05 expert-launches=3 moe-host-sync=true}' | filecheck %s
// RUN: charon-opt %S/Inputs/moe_layer.mlir -p 'shard-expert{ep=4},set-target{hardware=H100-SXM5-80GB gpus=4},cost-annotate,lower-to-events{host-launch=1e-05}' | filecheck %s --check-prefix=GROUPED
// RUN: charon-opt %S/Inputs/moe_layer.mlir -p 'shard-expert{ep=4},set-target{hardware=H100-SXM5-80GB gpus=4},cost-annotate,lower-to-events{expert-launches=3 moe-host-sync=true}' | filecheck %s --check-prefix=OFF
// RUN: not charon-opt %S/Inputs/moe_layer.mlir -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate,lower-to-events{host-launch=1e-05 expert-launches=-1.0}' 2>&1 | filecheck %s --check-prefix=BAD

// ep=4 leaves 2 experts a rank. Each GEMM of the routed experts (an op reading the
// rows moe_dispatch filled) costs the host 3 launches per local expert: 6 x 10 us.
// Every other op, the router's GEMM included, is one launch. After the forward's
// dispatch all_to_all the host waits for it (tokens per expert read back) before
// it issues anything more; the backward's dispatch is not waited for.
// CHECK:      %[[ROUTER:.*]] = event.launch "launch" on @host duration 1.000000e-05
// CHECK-NEXT: event.compute "matmul" on @compute duration {{.*}} after(%[[ROUTER]])
// CHECK:      %[[A2A:.*]] = event.comm "all_to_all" on @comm_ep
// CHECK-NEXT: %[[FC1:.*]] = event.launch "launch" on @host duration 6.0000000000000008e-05 after(%[[A2A]])
// CHECK-NEXT: event.compute "matmul" on @compute duration {{.*}} after(%[[A2A]], %[[FC1]])
// CHECK-NEXT: event.launch "launch" on @host duration 1.000000e-05 after(%[[A2A]])
// CHECK-NEXT: event.compute "aten.split"
// CHECK:      event.launch "launch" on @host duration 6.0000000000000008e-05 after(%[[A2A]])
// CHECK-NEXT: event.compute "matmul"
// CHECK:      event.compute "moe_dispatch"
// CHECK-NEXT: event.launch "launch" on @host duration 1.000000e-05 after(%[[A2A]])
// CHECK-NEXT: %[[BA2A:.*]] = event.comm "all_to_all" on @comm_ep
// CHECK-NEXT: event.launch "launch" on @host duration 6.0000000000000008e-05 after(%[[A2A]])
// CHECK-NEXT: event.compute "matmul" on @compute duration {{.*}} after(%[[BA2A]], {{.*}})
// CHECK-NOT:  after(%[[BA2A]])
// CHECK:      event.barrier

// GROUPED-NOT: duration 6.0000000000000008e-05
// GROUPED:     %[[A2A:.*]] = event.comm "all_to_all" on @comm_ep
// GROUPED-NEXT: event.launch "launch" on @host duration 1.000000e-05{{$}}

// OFF-NOT: event.launch

// BAD: charon-opt: error: lower-to-events: option 'expert-launches' must be a number >= 0, got -1.0
