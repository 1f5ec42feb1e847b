// RUN: charon-opt %S/Inputs/models/tiny-gpt-oss.mlir -p fuse | filecheck %s

// GPT-OSS's clamped SwiGLU on the stacked experts (a 2-layer, 4-expert, top-4 model,
// hidden 64, expert ffn 64, 64 tokens): the expert bias [4, 1, 128] added to the gate_up
// GEMM output, its gate and up halves sliced, clamped, gate * sigmoid(1.702 gate) *
// (up + 1), is one kernel; the backward recomputes its pieces from the GEMM output.

// CHECK-LABEL: sim.phase "forward"
// CHECK:       %[[D:.*]] = sim.moe_dispatch {{.*}} -> tensor<4x64x64xbf16>
// CHECK-NEXT:  %[[GU:.*]] = sim.matmul %[[D]], %{{.*}} : (tensor<4x64x64xbf16>, tensor<4x64x128xbf16>) -> tensor<4x64x128xbf16>
// CHECK-NEXT:  %[[B:.*]] = sim.view %{{.*}} : tensor<4x128xbf16> -> tensor<4x1x128xbf16>
// CHECK-NEXT:  %[[A:.*]] = sim.generic "fused.bias_act"(%[[GU]], %[[B]]) {{.*}} : (tensor<4x64x128xbf16>, tensor<4x1x128xbf16>) -> tensor<4x64x64xbf16>
// CHECK-NEXT:  sim.matmul %[[A]], %{{.*}} : (tensor<4x64x64xbf16>, tensor<4x64x64xbf16>) -> tensor<4x64x64xbf16>
// CHECK-NOT:   sim.elementwise "clamp"
// CHECK-LABEL: sim.phase "backward"
// CHECK:       sim.generic "fused.bias_act.recompute"(%{{.*}}) {{.*}} : (tensor<4x64x128xbf16>) -> (tensor<4x64x64xbf16>,
