// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate' | filecheck %s
// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{engines=analytic}' | filecheck %s
// RUN: not charon-opt %s -p 'set-target{hardware=H100},cost-annotate{engines=oracle}' 2>&1 | filecheck %s --check-prefix=ENGINE
// RUN: not charon-opt %s -p 'cost-annotate' 2>&1 | filecheck %s --check-prefix=NOTARGET
// RUN: charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{fp8-gemms=true}' | filecheck %s --check-prefix=FP8
// RUN: not charon-opt %s -p 'set-target{hardware=A100-SXM4-80GB},cost-annotate{fp8-gemms=true}' 2>&1 | filecheck %s --check-prefix=NO-FP8
// RUN: charon-opt %S/Inputs/fp8_layers.mlir -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{fp8-gemms=true fp8-casts=true}' | filecheck %s --check-prefix=CASTS
// RUN: not charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{fp8-casts=true}' 2>&1 | filecheck %s --check-prefix=CASTS-ERR
// RUN: charon-opt %S/Inputs/fp8_layers.mlir -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{fp8-gemms=true fp8-casts=true fp8-recipe=current}' | filecheck %s --check-prefix=CURRENT
// RUN: charon-opt %S/Inputs/fp8_layers.mlir -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{fp8-gemms=true fp8-casts=true fp8-recipe=mxfp8}' | filecheck %s --check-prefix=MXFP8
// RUN: not charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{fp8-gemms=true fp8-casts=true fp8-recipe=nvfp4}' 2>&1 | filecheck %s --check-prefix=RECIPE-ERR
// RUN: charon-opt %S/Inputs/fp8_layers.mlir -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{fp8-gemms=true fp8-casts=true fp8-weight-casts=none}' | filecheck %s --check-prefix=FP8-PARAMS
// RUN: charon-opt %S/Inputs/fp8_layers.mlir -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{fp8-gemms=true fp8-casts=true fp8-weight-casts=first-microbatch}' | filecheck %s --check-prefix=CASTS
// RUN: not charon-opt %s -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate{fp8-gemms=true fp8-casts=true fp8-weight-casts=never}' 2>&1 | filecheck %s --check-prefix=WEIGHT-ERR

// An 8192^3 bf16 GEMM on H100 (989.4 TFLOP/s dense, 3.35 TB/s) is compute bound:
// 2 * 8192^3 = 1.0995e12 FLOPs, at least 1.111e-3 s (the exact bound is a pytest).
// CHECK: sim.matmul {{.*}} {sim.cost = #sim.cost<time_s = {{0\.00[1-9][0-9]+}}, flops = 1099511627776.0, bytes = 402653184.0, engine = "analytic">, transpose_rhs}
// A collective over 8 GPUs of one node is priced on NVLink (450 GB/s one way).
// CHECK: coll.all_reduce {{.*}} {sim.cost = #sim.cost<time_s = {{.*}}, flops = 0.0, bytes = 234881024.0, engine = "analytic">}
// Views are never priced.
// CHECK: sim.view
// CHECK-NOT: cost
// CHECK-SAME: -> tensor<8192x2x4096xbf16>
// ENGINE: charon-opt: error: cost-annotate: option 'engines': unknown engine 'oracle' (known: {{.*}}analytic{{.*}})
// NOTARGET: charon-opt: error: the module has no target: run set-target{hardware=...} first
// With fp8-gemms the GEMM runs on H100's fp8 tensor cores (1978.9 TFLOP/s dense):
// at least 5.556e-4 s, half the bf16 bound; the all_reduce stays 16-bit.
// FP8: sim.matmul {{.*}} {sim.cost = #sim.cost<time_s = {{0\.000[5-9][0-9]+}}, flops = 1099511627776.0, bytes = 402653184.0, engine = "analytic">, transpose_rhs}
// FP8: coll.all_reduce {{.*}} {sim.cost = #sim.cost<time_s = {{.*}}, flops = 0.0, bytes = 234881024.0, engine = "analytic">}
// NO-FP8: charon-opt: error: cost-annotate: option 'fp8-gemms': A100-SXM4-80GB has no fp8 tensor cores
// With fp8-casts (Transformer Engine's fp8 training) a layer's GEMM, inside the
// repeat, runs in fp8 and carries TE's cast and transpose kernels: 2 bytes per
// operand element, 2 * 2 * 8192^2 = 2.684355e+08 bytes more (6.710886e+08 in all),
// memory bound at the 16-bit 3.35 TB/s: ~90 us more. The output layer's GEMM,
// outside the layers (not a TE module), stays 16-bit: at least 1.111e-3 s.
// CASTS: sim.repeat
// CASTS: sim.matmul {{.*}} {sim.cost = #sim.cost<time_s = {{0\.000[6-9][0-9]+}}, flops = 1099511627776.0, bytes = 671088640.0, engine = "analytic">, transpose_rhs}
// CASTS: sim.matmul {{.*}} {sim.cost = #sim.cost<time_s = {{0\.00[1-9][0-9]+}}, flops = 1099511627776.0, bytes = 402653184.0, engine = "analytic">, transpose_rhs}
// CASTS-ERR: charon-opt: error: cost-annotate: option 'fp8-casts' needs fp8-gemms=true
// Current scaling reads each tensor once more for its amax: 3 bytes per operand
// element, 3 * 2 * 8192^2 = 4.026532e+08 bytes of casts (8.053064e+08 in all).
// CURRENT: sim.repeat
// CURRENT: sim.matmul {{.*}} bytes = 805306368.0, engine = "analytic">, transpose_rhs}
// MXFP8 writes a one-byte scale per 32 elements in each orientation: 2 + 1/32 bytes.
// MXFP8: sim.repeat
// MXFP8: sim.matmul {{.*}} bytes = 675282944.0, engine = "analytic">, transpose_rhs}
// RECIPE-ERR: charon-opt: error: cost-annotate: option 'fp8-recipe' must be one of delayed, current, mxfp8, blockwise, got 'nvfp4'
// Weights kept in fp8 (fp8-weight-casts=none) are not cast per GEMM: only the
// activation's 2 * 8192^2 = 1.342177e+08 bytes (5.368709e+08 in all). Cast on the
// first micro-batch only, a module without #sim.pipeline has one: as CASTS.
// FP8-PARAMS: sim.repeat
// FP8-PARAMS: sim.matmul {{.*}} bytes = 536870912.0, engine = "analytic">, transpose_rhs}
// FP8-PARAMS: sim.matmul {{.*}} bytes = 402653184.0, engine = "analytic">, transpose_rhs}
// WEIGHT-ERR: charon-opt: error: invalid pass pipeline {{.*}}fp8-weight-casts=never{{.*}}: Incompatible types: given ('never',), expected typing.Literal['every', 'first-microbatch', 'none']
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 8)
  %a = sim.input "a" : tensor<8192x8192xbf16>
  %w = sim.param "w" : tensor<8192x8192xbf16>
  %y = sim.matmul %a, %w {transpose_rhs} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = coll.all_reduce %y on @mesh ["tp"] : tensor<8192x8192xbf16>
  %v = sim.view %r : tensor<8192x8192xbf16> -> tensor<8192x2x4096xbf16>
}
