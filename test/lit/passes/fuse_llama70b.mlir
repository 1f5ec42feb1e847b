// RUN: charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'fuse' | filecheck %s
// RUN: charon-opt %S/Inputs/models/llama-3.1-70b.mlir -p 'shard-tensor{tp=8},fuse' | filecheck %s --check-prefix=TP8

// Llama-3.1-70B (seq 32): FLOPs of a fused RMSNorm on 32 x 8192 are those of its pieces.

// CHECK-LABEL: sim.phase "forward"
// CHECK:       sim.generic "fused.rms_norm"(%{{.*}}, %{{.*}}) {flop_count = 1.048640e+06 : f64, {{.*}}} : (tensor<1x32x8192xbf16>, tensor<8192xbf16>)
// CHECK:       sim.generic "fused.rope"({{.*}}) {{.*}} -> tensor<1x64x32x128xbf16>
// CHECK:       sim.generic "fused.rope"({{.*}}) {{.*}} -> tensor<1x8x32x128xbf16>
// CHECK:       sim.attention {{.*}} {causal, flash} : (tensor<1x32x64x128xbf16>, tensor<1x32x8x128xbf16>, tensor<1x32x8x128xbf16>)
// CHECK:       sim.generic "fused.swiglu"(%{{.*}}, %{{.*}}) {flop_count = 4.587520e+06 : f64, {{.*}}} : (tensor<1x32x28672xbf16>, tensor<1x32x28672xbf16>)
// CHECK-LABEL: sim.phase "backward"
// CHECK:       sim.attention_grad {{.*}} {causal, flash}

// After TP=8 the fused ops work on the local heads and ffn columns.
// TP8:         sim.generic "fused.rope"({{.*}}) {{.*}} -> tensor<1x8x32x128xbf16>
// TP8:         sim.generic "fused.rope"({{.*}}) {{.*}} -> tensor<1x1x32x128xbf16>
// TP8:         sim.attention {{.*}} {causal, flash} : (tensor<1x32x8x128xbf16>, tensor<1x32x1x128xbf16>, tensor<1x32x1x128xbf16>)
// TP8:         sim.generic "fused.swiglu"(%{{.*}}, %{{.*}}) {{.*}} : (tensor<1x32x3584xbf16>, tensor<1x32x3584xbf16>)
