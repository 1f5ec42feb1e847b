// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse' | filecheck %s --check-prefixes=CHECK,PIECES
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse{backward=true}' | filecheck %s --check-prefixes=CHECK,BWD
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse{attention=true norm=false bias-act=false rope=false}' | filecheck %s --check-prefix=FLASH
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse{attention=false norm=true bias-act=false rope=false}' | filecheck %s --check-prefix=NORM
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse{attention=false norm=false bias-act=true rope=false}' | filecheck %s --check-prefix=ACT
// RUN: charon-opt %S/Inputs/models/tiny-llama.mlir -p 'fuse{attention=false norm=false bias-act=false rope=true}' | filecheck %s --check-prefix=ROPE

// A 2-layer Llama as the torch frontend imports it (hidden 64, 4 heads, 2 kv heads of
// 16, SwiGLU 128, seq 24): RMSNorm, RoPE and SwiGLU arrive as their pieces. Each
// fusion becomes one op with the FLOPs of its pieces, reading its inputs once and
// writing what is used outside it. What only the backward read (the norm's fp32
// copy of x and x * rstd, silu(g)) is not written: the forward saves the kernel's
// input in its place, and the backward recomputes it (`<callee>.recompute`).

// CHECK-LABEL: sim.phase "forward"
// CHECK:       sim.repeat 2
// CHECK-NEXT:  ^bb0(%[[X:.*]]: tensor<1x24x64xbf16>,
// RMSNorm: cast, pow, mean, add eps, rsqrt, mul, cast, mul by the weight (4*N + ...)
// CHECK:       %[[RSTD:.*]], %{{.*}} = sim.generic "fused.rms_norm"(%[[X]], %{{.*}}) {flop_count = 6.192000e+03 : f64, byte_count = 6.368000e+03 : f64} : (tensor<1x24x64xbf16>, tensor<64xbf16>) -> (tensor<1x24x1xf32>, tensor<1x24x64xbf16>)
// CHECK:       sim.generic "fused.rope"({{.*}}) {{.*}} -> tensor<1x4x24x16xbf16>
// CHECK:       sim.generic "fused.rope"({{.*}}) {{.*}} -> tensor<1x2x24x16xbf16>
// CHECK:       sim.attention {{.*}} {causal, flash}
// CHECK:       sim.generic "fused.rms_norm"
// CHECK:       %[[GATE:.*]] = sim.matmul
// silu (4 FLOPs) and mul (1) on 24 x 128; writes the product only
// CHECK:       sim.generic "fused.swiglu"(%[[GATE]], %{{.*}}) {flop_count = 1.536000e+04 : f64, byte_count = 1.843200e+04 : f64} : (tensor<1x24x128xbf16>, tensor<1x24x128xbf16>) -> tensor<1x24x128xbf16>
// the layer saves its input and the gate where the internals were
// CHECK:       sim.yield %{{[0-9]+}}, %[[X]], %[[RSTD]], %[[RSTD]], %[[X]], %{{[0-9]+}},
// CHECK-SAME:  %[[GATE]], %[[GATE]],
// CHECK:       sim.generic "fused.rms_norm"
// CHECK-LABEL: sim.phase "backward"
// the final norm's internals, from its saved input and rstd: fp32 copy (cast), x * rstd (1 FLOP each)
// BWD:       %[[COPY:.*]], %[[SCALED:.*]] = sim.generic "fused.rms_norm.recompute"(%{{.*}}, %{{.*}}) {flop_count = 1.536000e+03 : f64, byte_count = 3.168000e+03 : f64} : (tensor<1x24x64xbf16>, tensor<1x24x1xf32>) -> (tensor<1x24x64xf32>, tensor<1x24x64xbf16>)
// its backward as one kernel: reads the output gradient (3072 B), the weight
// (128) and rstd (2 x 96), the recomputed values on chip (not moved); writes the
// weight's gradient (128) and the input's (3072): 6592 B
// BWD-NEXT:  %[[DW:.*]], %[[DX:.*]] = sim.generic "fused.rms_norm_grad"(%[[DY:.*]], %{{.*}}, %[[SCALED]], %[[COPY]], %{{.*}}, %{{.*}}) {flop_count = 1.696800e+04 : f64, byte_count = 6.592000e+03 : f64} : (tensor<1x24x64xbf16>, tensor<64xbf16>, tensor<1x24x64xbf16>, tensor<1x24x64xf32>, tensor<1x24x1xf32>, tensor<1x24x1xf32>) -> (tensor<1x1x64xbf16>, tensor<1x24x64xbf16>)
// BWD:       sim.repeat 2 iter(%[[DX]] :
// SwiGLU's backward: output gradient, silu(g) on chip, up and gate in; both gradients out (5 x 6144 B)
// BWD:       %[[SILU:.*]] = sim.generic "fused.swiglu.recompute"(%{{.*}}) {flop_count = 1.228800e+04 : f64, byte_count = 6.144000e+03 : f64} : (tensor<1x24x128xbf16>) -> tensor<1x24x128xbf16>
// BWD-NEXT:  sim.generic "fused.swiglu_grad"(%{{.*}}, %[[SILU]], %{{.*}}, %{{.*}}) {flop_count = 2.457600e+04 : f64, byte_count = 3.072000e+04 : f64}
// the sum of the gate and up projections' input gradients is autograd's accumulation, not the norm's
// BWD:       %[[SUM:.*]] = sim.elementwise "add"
// BWD-NEXT:  sim.generic "fused.rms_norm.recompute"
// BWD-NEXT:  %{{.*}}, %[[NORM_DX:.*]] = sim.generic "fused.rms_norm_grad"(%[[SUM]],
// the residual's gradient: its own add
// BWD-NEXT:  sim.elementwise "add" %{{.*}}, %[[NORM_DX]]
// BWD:       %[[DQ:.*]], %[[DK:.*]], %{{.*}} = sim.attention_grad {{.*}} {causal, flash}
// RoPE's backward per head group, from cos and sin
// BWD:       sim.generic "fused.rope_grad"(%[[DK]], %{{.*}}, %{{.*}}) {{.*}} -> tensor<1x2x24x16xbf16>
// BWD-NEXT:  sim.generic "fused.rope_grad"(%[[DQ]], %{{.*}}, %{{.*}}) {{.*}} -> tensor<1x4x24x16xbf16>
// BWD:       sim.generic "fused.rms_norm.recompute"
// BWD-NEXT:  sim.generic "fused.rms_norm_grad"
// BWD-NOT:   sim.elementwise "pow"
// BWD:       sim.phase "optimizer"

// PIECES:       %[[COPY:.*]], %[[SCALED:.*]] = sim.generic "fused.rms_norm.recompute"
// PIECES-NEXT:  sim.elementwise "mul" %{{.*}}, %[[SCALED]]
// PIECES:       sim.elementwise "mul" %{{.*}}, %[[COPY]]
// PIECES:       sim.repeat 2
// PIECES:       %[[SILU:.*]] = sim.generic "fused.swiglu.recompute"
// PIECES-NEXT:  sim.elementwise "mul" %{{.*}}, %[[SILU]]
// PIECES:       sim.generic "fused.rms_norm.recompute"
// PIECES:       sim.attention_grad {{.*}} {causal, flash}
// PIECES:       sim.generic "fused.rms_norm.recompute"
// PIECES-NOT:   _grad"

// FLASH-NOT:   fused.
// FLASH:       sim.attention {{.*}} {causal, flash}
// FLASH:       sim.attention_grad {{.*}} {causal, flash}

// NORM:        fused.rms_norm
// NORM-NOT:    fused.rope
// NORM-NOT:    flash

// ACT-NOT:     fused.rope
// ACT:         fused.swiglu
// ACT-NOT:     fused.rms_norm

// ROPE-NOT:    fused.rms_norm
// ROPE:        fused.rope
// ROPE:        fused.rope
// ROPE-NOT:    fused.swiglu
