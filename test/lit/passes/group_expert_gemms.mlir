// RUN: charon-opt %S/../lowering/Inputs/moe_layer.mlir -p group-expert-gemms | filecheck %s
// RUN: charon-opt %S/../lowering/Inputs/moe_layer.mlir -p 'shard-expert{ep=2},group-expert-gemms' | filecheck %s --check-prefix=EP2
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

// A dense model has no expert weight: nothing changes.
// DENSE-NOT: grouped
