// RUN: charon-opt %S/../lowering/Inputs/moe_layer.mlir -p group-expert-gemms | filecheck %s
// RUN: charon-opt %S/../lowering/Inputs/moe_layer.mlir -p 'shard-expert{ep=2},group-expert-gemms' | filecheck %s --check-prefix=EP2
// RUN: charon-opt %S/Inputs/stacked_experts.mlir -p group-expert-gemms | filecheck %s --check-prefix=STACKED
// RUN: charon-opt %examples/llama_tiny_step.mlir -p group-expert-gemms | filecheck %s --check-prefix=DENSE

// The router's GEMM (a rank-2 weight) stays; the experts' six, forward (rows x W),
// data gradients (dy x W) and weight gradients (a result of W's shape), are grouped.
// CHECK:      %[[WGU:.*]] = sim.param "mlp.experts.gate_up_proj"
// CHECK-NEXT: %[[WD:.*]] = sim.param "mlp.experts.down_proj"
// CHECK:      sim.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<32x64xbf16>, tensor<8x64xbf16>) -> tensor<32x8xbf16>
// CHECK:      sim.matmul %{{.*}}, %[[WGU]] {transpose_rhs, grouped} : (tensor<8x8x64xbf16>, tensor<8x64x64xbf16>)
// CHECK:      sim.matmul %{{.*}}, %[[WD]] {transpose_rhs, grouped} : (tensor<8x8x32xbf16>, tensor<8x64x32xbf16>)
// CHECK:      sim.phase "backward"
// CHECK:      sim.matmul %{{.*}}, %{{.*}} {transpose_lhs, grouped} : {{.*}} -> tensor<8x64x32xbf16>
// CHECK-NEXT: sim.matmul %{{.*}}, %[[WD]] {grouped} :
// CHECK:      sim.matmul %{{.*}}, %{{.*}} {transpose_lhs, grouped} : {{.*}} -> tensor<8x64x64xbf16>
// CHECK-NEXT: sim.matmul %{{.*}}, %[[WGU]] {grouped} :

// With ep 2 each rank holds 4 experts and runs their GEMMs on every rank's rows.
// EP2:     sim.matmul %{{.*}}, %{{.*}} {transpose_rhs, grouped} : (tensor<4x16x64xbf16>, tensor<4x64x64xbf16>)
// EP2-NOT: sim.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<4x

// Stacked [layers, experts, in, out] weights sliced by a repeat: the forward (W read
// as it is stored), the weight gradient and the data gradient are grouped; a GEMM of
// another parameter of the same shape, and one of two activations, are not.
// STACKED:      ^bb0(%[[H:.*]]: tensor<4x8x16xbf16>, %[[WL:.*]]: tensor<4x16x32xbf16>, %[[OL:.*]]: tensor<4x16x32xbf16>):
// STACKED-NEXT:   %[[Y:.*]] = sim.matmul %[[H]], %[[WL]] {grouped} :
// STACKED-NEXT:   %[[Z:.*]] = sim.matmul %[[H]], %[[OL]] : (
// STACKED-NEXT:   sim.matmul %[[H]], %[[Y]] {transpose_lhs, grouped} :
// STACKED-NEXT:   sim.matmul %[[H]], %[[H]] {transpose_rhs} : (
// STACKED-NEXT:   sim.matmul %[[Z]], %[[WL]] {transpose_rhs, grouped} :

// A dense model has no expert weight: nothing changes.
// DENSE-NOT: grouped
