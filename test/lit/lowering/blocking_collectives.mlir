// RUN: charon-opt %s -p 'set-target{hardware=A100-SXM4-80GB},cost-annotate,lower-to-events{blocking=tp}' | filecheck %s
// RUN: charon-opt %s -p 'set-target{hardware=A100-SXM4-80GB},cost-annotate,lower-to-events' | filecheck %s --check-prefix=ASYNC
// RUN: not charon-opt %s -p 'set-target{hardware=A100},cost-annotate,lower-to-events{blocking=xx}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: charon-opt %S/../passes/shard_context.mlir -p 'shard-context{cp=4 mode="a2a+p2p" a2a=2},set-target{hardware=H100-SXM5-80GB gpus=4},cost-annotate,lower-to-events{blocking=cpa}' | filecheck %s --check-prefix=CPA

// A column-parallel linear's backward: the input gradient is all-reduced over tp
// while the weight gradient, which does not need it, is computed. Megatron-LM
// 2021 called the all-reduce synchronously (`lower-to-events{blocking=tp}`): it
// starts after the compute issued before it (a zero-length `comm_issue` on the
// compute stream) and all later compute waits for it (a zero-length `comm_wait`:
// the stream runs its events in order).
// CHECK:      %[[GI:.*]] = event.compute "matmul" on @compute
// CHECK-NEXT: %[[ISSUE:.*]] = event.compute "comm_issue" on @compute duration 0.000000e+00 after(%[[GI]])
// CHECK-NEXT: %[[AR:.*]] = event.comm "all_reduce" on @comm_tp duration {{.*}} after(%[[ISSUE]])
// CHECK-NEXT: event.compute "comm_wait" on @compute duration 0.000000e+00 after(%[[AR]])
// CHECK-NEXT: event.compute "matmul" on @compute duration {{.*}} {engine
// CHECK-NEXT: event.compute "elementwise" on @compute duration {{.*}} after(%[[AR]])

// Without it the weight-gradient GEMM runs beside the all-reduce.
// ASYNC:      %[[GI:.*]] = event.compute "matmul" on @compute
// ASYNC-NEXT: %[[AR:.*]] = event.comm "all_reduce" on @comm_tp duration {{.*}} after(%[[GI]])
// ASYNC-NEXT: event.compute "matmul" on @compute duration {{.*}} {engine
// ASYNC-NEXT: event.compute "elementwise" on @compute duration {{.*}} after(%[[AR]])

// The inner all-to-all group of a2a+p2p context parallelism (grid axis cpa) blocks too.
// CPA:      %[[ISSUE:.*]] = event.compute "comm_issue" on @compute
// CPA-NEXT: %[[A2A:.*]] = event.comm "all_to_all" on @comm_cpa duration {{.*}} after(%[[ISSUE]])
// CPA-NEXT: event.compute "comm_wait" on @compute duration 0.000000e+00 after(%[[A2A]])

// BAD: charon-opt: error: lower-to-events: option 'blocking': unknown axis 'xx' (known: dp, pp, cp, cpa, ep, tp)
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 8)
  %g = sim.input "grad" : tensor<4096x1024xbf16>
  %x = sim.input "x" : tensor<1024x4096xbf16>
  %w = sim.param "w" : tensor<1024x1024xbf16>
  %out = sim.phase "forward" -> tensor<4096x1024xbf16> {
    %gi = sim.matmul %g, %w : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<4096x1024xbf16>
    %ar = coll.all_reduce %gi on @mesh ["tp"] : tensor<4096x1024xbf16>
    %gw = sim.matmul %x, %g : (tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<1024x1024xbf16>
    %s = sim.elementwise "add" %ar, %g : tensor<4096x1024xbf16>, tensor<4096x1024xbf16> -> tensor<4096x1024xbf16>
    sim.yield %s : tensor<4096x1024xbf16>
  }
}
