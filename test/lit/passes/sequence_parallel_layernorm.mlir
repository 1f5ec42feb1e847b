// RUN: charon-opt %s -p 'shard-tensor{tp=2},sequence-parallel' | filecheck %s

// LayerNorm as the torch frontend emits it (GPT-2/3, Megatron's GPT): sim.norm
// "layer" plus a "layer_norm_stats" generic (mean, 1/std) in the forward, and
// aten.native_layer_norm_backward (dx; weight and bias gradients) in the backward.
// Under Megatron-SP the statistics and the norm's backward run on the rank's own
// 15 of the 30 tokens like the norm itself: no all_gather of the norm's input in
// either direction; the only gathers are the normed output before the QKV GEMMs,
// the incoming gradient before the o_proj GEMMs and the saved normed output for
// the QKV weight gradients. The weight and bias gradients, sums over the split
// tokens, are all-reduced.

// CHECK:        %[[X:.*]] = sim.generic "shard.slice"(%x) {{.*}} : (tensor<30x64xbf16>) -> tensor<15x64xbf16>
// CHECK-NOT:    coll.all_gather
// CHECK-LABEL:  sim.phase "forward"
// CHECK-NEXT:   %[[N:.*]] = sim.norm "layer" %[[X]], %wn1 : tensor<15x64xbf16>, tensor<64xbf16>
// CHECK-NEXT:   %[[N1:.*]] = sim.elementwise "add" %[[N]], %bn1 : tensor<15x64xbf16>, tensor<64xbf16> -> tensor<15x64xbf16>
// CHECK-NEXT:   %[[N1G:.*]] = coll.all_gather %[[N1]] on @mesh ["tp"] axis 0 {sim.sequence_parallel} : tensor<15x64xbf16> -> tensor<30x64xbf16>
// CHECK-NEXT:   %mean, %rstd = sim.generic "layer_norm_stats"(%[[X]]) {flop_count = 0.000000e+00 : f64, byte_count = 1.200000e+02 : f64} : (tensor<15x64xbf16>) -> (tensor<15x1xf32>, tensor<15x1xf32>)
// CHECK-NEXT:   sim.matmul %[[N1G]], %wq
// CHECK-NOT:    coll.all_gather
// CHECK:        coll.reduce_scatter %p on @mesh ["tp"] axis 0 : tensor<30x64xbf16> -> tensor<15x64xbf16>
// CHECK-NOT:    coll.all_gather
// CHECK:        sim.yield %[[N1]], %mean, %rstd, {{.*}}, %[[X]], %out : tensor<15x64xbf16>, tensor<15x1xf32>, tensor<15x1xf32>,
// Only the saved normed output is gathered again (for the weight gradients).
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[SAVED:.*]] = coll.all_gather %f on @mesh ["tp"] axis 0 {sim.sequence_parallel} : tensor<15x64xbf16> -> tensor<30x64xbf16>
// CHECK-NEXT:   sim.phase "backward"
// CHECK-NEXT:   %dy = sim.elementwise "fill" %f_9 : tensor<15x64xbf16> -> tensor<15x64xbf16>
// CHECK-NEXT:   %[[DYG:.*]] = coll.all_gather %dy on @mesh ["tp"] axis 0 {sim.sequence_parallel} : tensor<15x64xbf16> -> tensor<30x64xbf16>
// CHECK-NEXT:   sim.matmul %[[DYG]], %wo
// CHECK-NOT:    coll.all_gather
// CHECK:        sim.matmul %dq, %[[SAVED]] {transpose_lhs}
// CHECK-NOT:    coll.all_gather
// CHECK:        %[[DN1S:.*]] = coll.reduce_scatter %dn1 on @mesh ["tp"] axis 0 : tensor<30x64xbf16> -> tensor<15x64xbf16>
// CHECK-NEXT:   %dx1, %dwn1, %dbn1 = sim.generic "aten.native_layer_norm_backward"(%[[DN1S]], %f_8, %f_1, %f_2, %wn1, %bn1) {flop_count = 1.344000e+04 : f64, byte_count = 6.144000e+03 : f64} : (tensor<15x64xbf16>, tensor<15x64xbf16>, tensor<15x1xf32>, tensor<15x1xf32>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<15x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
// CHECK-NEXT:   %[[DW:.*]] = coll.all_reduce %dwn1 on @mesh ["tp"] {sim.sequence_parallel} : tensor<64xbf16>
// CHECK-NEXT:   %[[DB:.*]] = coll.all_reduce %dbn1 on @mesh ["tp"] {sim.sequence_parallel} : tensor<64xbf16>
// CHECK-NEXT:   %dx = sim.elementwise "add" %dx1, %dy : tensor<15x64xbf16>, tensor<15x64xbf16> -> tensor<15x64xbf16>
// CHECK-NEXT:   sim.yield %[[DW]], %[[DB]],
// CHECK-LABEL:  sim.phase "optimizer"

builtin.module {
  %x = sim.input "hidden" : tensor<30x64xbf16>
  %wn1 = sim.param "input_layernorm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
  %bn1 = sim.param "input_layernorm.bias" {role = #sim.role<norm>} : tensor<64xbf16>
  %wq = sim.param "self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<64x64xbf16>
  %wk = sim.param "self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<32x64xbf16>
  %wv = sim.param "self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<32x64xbf16>
  %wo = sim.param "self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>} : tensor<64x64xbf16>

  %f:10 = sim.phase "forward" -> tensor<30x64xbf16>, tensor<30x1xf32>, tensor<30x1xf32>, tensor<1x30x4x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x4x16xbf16>, tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<30x64xbf16> {
    %n = sim.norm "layer" %x, %wn1 : tensor<30x64xbf16>, tensor<64xbf16>
    %n1 = sim.elementwise "add" %n, %bn1 : tensor<30x64xbf16>, tensor<64xbf16> -> tensor<30x64xbf16>
    %mean, %rstd = sim.generic "layer_norm_stats"(%x) {flop_count = 0.0 : f64, byte_count = 240.0 : f64} : (tensor<30x64xbf16>) -> (tensor<30x1xf32>, tensor<30x1xf32>)
    %q = sim.matmul %n1, %wq {transpose_rhs} : (tensor<30x64xbf16>, tensor<64x64xbf16>) -> tensor<30x64xbf16>
    %k = sim.matmul %n1, %wk {transpose_rhs} : (tensor<30x64xbf16>, tensor<32x64xbf16>) -> tensor<30x32xbf16>
    %v = sim.matmul %n1, %wv {transpose_rhs} : (tensor<30x64xbf16>, tensor<32x64xbf16>) -> tensor<30x32xbf16>
    %q4 = sim.view %q : tensor<30x64xbf16> -> tensor<1x30x4x16xbf16>
    %k4 = sim.view %k : tensor<30x32xbf16> -> tensor<1x30x2x16xbf16>
    %v4 = sim.view %v : tensor<30x32xbf16> -> tensor<1x30x2x16xbf16>
    %qr = sim.elementwise "rope" %q4 : tensor<1x30x4x16xbf16> -> tensor<1x30x4x16xbf16>
    %kr = sim.elementwise "rope" %k4 : tensor<1x30x2x16xbf16> -> tensor<1x30x2x16xbf16>
    %o4 = sim.attention %qr, %kr, %v4 {causal} : (tensor<1x30x4x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x2x16xbf16>) -> tensor<1x30x4x16xbf16>
    %o = sim.view %o4 : tensor<1x30x4x16xbf16> -> tensor<30x64xbf16>
    %p = sim.matmul %o, %wo {transpose_rhs} : (tensor<30x64xbf16>, tensor<64x64xbf16>) -> tensor<30x64xbf16>
    %out = sim.elementwise "add" %x, %p : tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    sim.yield %n1, %mean, %rstd, %qr, %kr, %v4, %o4, %o, %x, %out : tensor<30x64xbf16>, tensor<30x1xf32>, tensor<30x1xf32>, tensor<1x30x4x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x4x16xbf16>, tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<30x64xbf16>
  }

  %b:6 = sim.phase "backward" -> tensor<64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16> {
    %dy = sim.elementwise "fill" %f#9 : tensor<30x64xbf16> -> tensor<30x64xbf16>
    %do = sim.matmul %dy, %wo : (tensor<30x64xbf16>, tensor<64x64xbf16>) -> tensor<30x64xbf16>
    %dwo = sim.matmul %dy, %f#7 {transpose_lhs} : (tensor<30x64xbf16>, tensor<30x64xbf16>) -> tensor<64x64xbf16>
    %do4 = sim.view %do : tensor<30x64xbf16> -> tensor<1x30x4x16xbf16>
    %dq4, %dk4, %dv4 = sim.attention_grad %f#3, %f#4, %f#5, %f#6, %do4 {causal} : (tensor<1x30x4x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x4x16xbf16>, tensor<1x30x4x16xbf16>) -> (tensor<1x30x4x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x2x16xbf16>)
    %dq = sim.view %dq4 : tensor<1x30x4x16xbf16> -> tensor<30x64xbf16>
    %dk = sim.view %dk4 : tensor<1x30x2x16xbf16> -> tensor<30x32xbf16>
    %dv = sim.view %dv4 : tensor<1x30x2x16xbf16> -> tensor<30x32xbf16>
    %dxq = sim.matmul %dq, %wq : (tensor<30x64xbf16>, tensor<64x64xbf16>) -> tensor<30x64xbf16>
    %dxk = sim.matmul %dk, %wk : (tensor<30x32xbf16>, tensor<32x64xbf16>) -> tensor<30x64xbf16>
    %dxv = sim.matmul %dv, %wv : (tensor<30x32xbf16>, tensor<32x64xbf16>) -> tensor<30x64xbf16>
    %dwq = sim.matmul %dq, %f#0 {transpose_lhs} : (tensor<30x64xbf16>, tensor<30x64xbf16>) -> tensor<64x64xbf16>
    %dwk = sim.matmul %dk, %f#0 {transpose_lhs} : (tensor<30x32xbf16>, tensor<30x64xbf16>) -> tensor<32x64xbf16>
    %dwv = sim.matmul %dv, %f#0 {transpose_lhs} : (tensor<30x32xbf16>, tensor<30x64xbf16>) -> tensor<32x64xbf16>
    %dn1 = sim.elementwise "add" %dxq, %dxk, %dxv : tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    %dx1, %dwn1, %dbn1 = sim.generic "aten.native_layer_norm_backward"(%dn1, %f#8, %f#1, %f#2, %wn1, %bn1) {flop_count = 26880.0 : f64, byte_count = 11776.0 : f64} : (tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<30x1xf32>, tensor<30x1xf32>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<30x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
    %dx = sim.elementwise "add" %dx1, %dy : tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    sim.yield %dwn1, %dbn1, %dwq, %dwk, %dwv, %dwo : tensor<64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>
  }

  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%wn1, %bn1, %wq, %wk, %wv, %wo : tensor<64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>) grads (%b#0, %b#1, %b#2, %b#3, %b#4, %b#5 : tensor<64xbf16>, tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>)
    sim.yield
  }
}
