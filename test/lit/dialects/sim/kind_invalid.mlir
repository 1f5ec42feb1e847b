// RUN: charon-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// An op kind outside its enum does not parse; the diagnostic lists the kinds
// (their round trip: ops.mlir).

sim.phase "sideways" {
  sim.yield
}
// CHECK: kind_invalid.mlir:5:11
// CHECK: Expected `forward`, `backward`, `optimizer`, `prefill`, or `decode`.

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%w = sim.param "w" : tensor<64xbf16>
%n = sim.norm "batch" %x, %w : tensor<4x64xbf16>, tensor<64xbf16>
// CHECK: Expected `rms`, or `layer`.

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%r = sim.reduce "prod" %x [1] : tensor<4x64xbf16> -> tensor<4xbf16>
// CHECK: Expected `sum`, `mean`, `max`, or `min`.

// -----

%x = sim.input "x" : tensor<4x64xbf16>
%y = sim.elementwise "softplus" %x : tensor<4x64xbf16> -> tensor<4x64xbf16>
// CHECK: Expected `add`, `sub`, `mul`, {{.*}}, `rope`, or `rms_norm_grad`.

// -----

%w = sim.param "w" : tensor<64xbf16>
%g = sim.input "g" : tensor<64xbf16>
sim.optimizer_step "lion" (%w : tensor<64xbf16>) grads (%g : tensor<64xbf16>)
// CHECK: Expected `adamw`, `adam`, or `sgd`.

// -----

// the generic form names the enum attribute
"sim.phase"() <{kind = #sim<phase_kind "sideways">}> ({
  "sim.yield"() : () -> ()
}) : () -> ()
// CHECK: Expected `forward`, `backward`, `optimizer`, `prefill`, or `decode`.

// -----

%q = sim.input "q" : tensor<1x16x8x64xbf16>
%k = sim.input "k" : tensor<1x16x4x64xbf16>
%o = sim.attention %q, %k, %k {causal, flash, kernel = #sim<attention_kernel "flash9">} : (tensor<1x16x8x64xbf16>, tensor<1x16x4x64xbf16>, tensor<1x16x4x64xbf16>) -> tensor<1x16x8x64xbf16>
// CHECK: Expected `flash2`, `flash3`, or `triton`.

// -----

%x = sim.input "x" {sim.recompute = #sim<recompute "partial">} : tensor<4x64xbf16>
// CHECK: kind_invalid.mlir:{{[0-9]+}}:{{[0-9]+}}
// CHECK: Expected `selective`, `selective-op`, or `full`.

// -----

builtin.module attributes {sim.recompute_policy = #sim<recompute_policy "most">} {
}
// CHECK: Expected `none`, `selective`, `selective-op`, or `full`.
