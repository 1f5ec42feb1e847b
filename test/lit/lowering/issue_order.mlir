// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB gpus=16},cost-annotate,lower-to-events' | filecheck %s

// A column-parallel linear's backward as a traced graph may order it (HF Llama's
// separate projections): the weight gradient and its dp reduction first, then the
// input gradient and its tp all-reduce. The compute stream issues the tp
// all-reduce as soon as the input gradient exists, and the weight gradient runs
// beside it (Megatron's LinearWithGradAccumulationAndAsyncCommunication); the dp
// reduction stays after the gradient it reduces.
// CHECK:      %[[GI:.*]] = event.compute "matmul" on @compute
// CHECK-NEXT: %[[AR:.*]] = event.comm "all_reduce" on @comm_tp duration {{.*}} after(%[[GI]])
// CHECK-NEXT: %[[GW:.*]] = event.compute "matmul" on @compute
// CHECK-NEXT: event.comm "all_reduce" on @comm_dp duration {{.*}} after(%[[GW]])
// CHECK-NEXT: event.compute "elementwise" on @compute duration {{.*}} after(%[[AR]])
builtin.module {
  coll.grid @mesh(axes = ["dp", "tp"], shape = 2x8)
  %g = sim.input "grad" : tensor<4096x1024xbf16>
  %x = sim.input "x" : tensor<1024x4096xbf16>
  %w = sim.param "w" : tensor<1024x1024xbf16>
  %out = sim.phase "backward" -> tensor<4096x1024xbf16> {
    %gw = sim.matmul %x, %g : (tensor<1024x4096xbf16>, tensor<4096x1024xbf16>) -> tensor<1024x1024xbf16>
    %gwr = coll.all_reduce %gw on @mesh ["dp"] : tensor<1024x1024xbf16>
    %gi = sim.matmul %g, %w : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<4096x1024xbf16>
    %ar = coll.all_reduce %gi on @mesh ["tp"] : tensor<4096x1024xbf16>
    %s = sim.elementwise "add" %ar, %g : tensor<4096x1024xbf16>, tensor<4096x1024xbf16> -> tensor<4096x1024xbf16>
    sim.yield %s : tensor<4096x1024xbf16>
  }
}
