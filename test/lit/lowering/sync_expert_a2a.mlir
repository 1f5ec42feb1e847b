// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB gpus=8},cost-annotate,lower-to-events{sync-expert-a2a=true}' | filecheck %s
// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB gpus=8},cost-annotate,lower-to-events' | filecheck %s --check-prefix=ASYNC
// RUN: charon-opt %S/Inputs/moe_layer.mlir -p 'shard-expert{ep=4},set-target{hardware=H100-SXM5-80GB gpus=4},cost-annotate,lower-to-events{sync-expert-a2a=true}' | filecheck %s --check-prefix=MOE
// RUN: not charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB gpus=8},cost-annotate,lower-to-events{sync-expert-a2a=maybe}' 2>&1 | filecheck %s --check-prefix=BAD

// Megatron-Core's token dispatchers call the expert-parallel all_to_all
// synchronously: it starts after the compute issued before it (a zero-length
// `comm_issue`) and all later compute waits for it (`comm_wait`). The reduction
// over dp x ep, which also spans `ep`, stays asynchronous: the second GEMM runs
// beside it.
// CHECK:      %[[Y:.*]] = event.compute "matmul" on @compute
// CHECK-NEXT: %[[ISSUE:.*]] = event.compute "comm_issue" on @compute duration 0.000000e+00 after(%[[Y]])
// CHECK-NEXT: %[[A2A:.*]] = event.comm "all_to_all" on @comm_ep duration {{.*}} after(%[[ISSUE]])
// CHECK-NEXT: %[[WAIT:.*]] = event.compute "comm_wait" on @compute duration 0.000000e+00 after(%[[A2A]])
// CHECK-NEXT: event.comm "all_reduce" on @comm_dp_ep duration {{.*}} after(%[[Y]])
// CHECK-NOT:  comm_wait
// CHECK:      event.compute "matmul" on @compute

// Without it the all_to_all, too, runs beside the second GEMM.
// ASYNC-NOT:  comm_issue
// ASYNC:      %[[Y:.*]] = event.compute "matmul" on @compute
// ASYNC-NEXT: event.comm "all_to_all" on @comm_ep duration {{.*}} after(%[[Y]])
// ASYNC-NOT:  comm_wait

// A MoE layer after shard-expert: its dispatch and combine, forward and backward,
// are each waited for.
// MOE:      %[[A1:.*]] = event.comm "all_to_all" on @comm_ep
// MOE-NEXT: event.compute "comm_wait" on @compute duration 0.000000e+00 after(%[[A1]])
// MOE:      %[[A2:.*]] = event.comm "all_to_all" on @comm_ep
// MOE-NEXT: event.compute "comm_wait" on @compute duration 0.000000e+00 after(%[[A2]])
// MOE:      %[[A3:.*]] = event.comm "all_to_all" on @comm_ep
// MOE-NEXT: event.compute "comm_wait" on @compute duration 0.000000e+00 after(%[[A3]])
// MOE:      %[[A4:.*]] = event.comm "all_to_all" on @comm_ep
// MOE-NEXT: event.compute "comm_wait" on @compute duration 0.000000e+00 after(%[[A4]])
// MOE-NOT:  event.comm "all_to_all"

// BAD: charon-opt: error: invalid pass pipeline {{.*}}lower-to-events{sync-expert-a2a=maybe}': Incompatible types: given ('maybe',), expected <class 'bool'>
// BAD-NOT: Traceback

builtin.module {
  coll.grid @mesh(axes = ["dp", "ep"], shape = 2x4)
  %x = sim.input "x" : tensor<8x2048x4096xbf16>
  %w = sim.param "w" : tensor<4096x4096xbf16>
  %out:2 = sim.phase "backward" -> tensor<8x2048x4096xbf16>, tensor<8x2048x4096xbf16> {
    %y = sim.matmul %x, %w : (tensor<8x2048x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8x2048x4096xbf16>
    %a = coll.all_to_all %y on @mesh ["ep"] split 0 concat 1 : tensor<8x2048x4096xbf16> -> tensor<2x8192x4096xbf16>
    %r = coll.all_reduce %y on @mesh ["dp", "ep"] : tensor<8x2048x4096xbf16>
    %z = sim.matmul %x, %w : (tensor<8x2048x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8x2048x4096xbf16>
    sim.yield %r, %z : tensor<8x2048x4096xbf16>, tensor<8x2048x4096xbf16>
  }
}
