// RUN: charon-opt %s -p 'recompute{policy=none}' | filecheck %s --check-prefix=NONE
// RUN: charon-opt %s -p 'recompute{policy=selective}' | filecheck %s --check-prefix=SEL
// RUN: charon-opt %s -p 'recompute{policy=selective},recompute{policy=selective}' | filecheck %s --check-prefix=SEL
// RUN: charon-opt %s -p 'recompute{policy=full}' | filecheck %s --check-prefix=FULL
// RUN: charon-opt %s -p 'pipeline{pp=2},recompute{policy=full}' | filecheck %s --check-prefix=PP-FULL
// RUN: charon-opt %s -p 'recompute{policy=selective modules=layernorm}' | filecheck %s --check-prefix=LN
// RUN: charon-opt %s -p 'recompute{policy=selective modules=mlp}' | filecheck %s --check-prefix=MLP
// RUN: charon-opt %s -p 'recompute{policy=selective modules=core_attn,layernorm}' | filecheck %s --check-prefix=BOTH
// RUN: charon-opt %s -p 'recompute{policy=selective modules=moe,moe_act,shared_experts,mla_up_proj}' | filecheck %s --check-prefix=NO-BLOCK
// RUN: not charon-opt %s -p 'recompute{policy=most}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not charon-opt %s -p 'recompute{policy=selective modules=attention}' 2>&1 | filecheck %s --check-prefix=BAD-MODULE
// RUN: not charon-opt %s -p 'recompute{policy=full modules=mlp}' 2>&1 | filecheck %s --check-prefix=BAD-POLICY
// RUN: not charon-opt %examples/mlp.mlir -p 'recompute{policy=full}' 2>&1 | filecheck %s --check-prefix=NO-LAYERS

// Two GPT layers that save what Megatron-LM saves (the attention's softmax,
// dropout mask and output ride on `sim.attention {sim.dropout}`).

// NONE:      builtin.module attributes {sim.recompute_policy = #sim<recompute_policy "none">}
// NONE-NOT:  sim.recompute =
// NONE:      sim.phase "forward" -> tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x2x8xbf16>

// selective: the forward attention is marked (its probabilities are no longer
// saved), the backward recomputes it from the saved q, k, v right before its
// gradient, which reads the recomputed output. Running the pass twice changes
// nothing (the marked gradient is not matched again).
// SEL:       sim.phase "forward"
// SEL:       %[[ATT:.*]] = sim.attention %{{.*}}, %{{.*}}, %{{.*}} {sim.dropout, sim.recompute = #sim<recompute "selective">, causal}
// SEL:       sim.phase "backward"
// SEL:       ^bb0(%{{.*}}, %[[Q:[^:]*]]: tensor<1x8x2x8xbf16>, %[[K:[^:]*]]: tensor<1x8x2x8xbf16>, %[[V:[^:]*]]: tensor<1x8x2x8xbf16>, %[[SAVED:[^:]*]]: tensor<1x8x2x8xbf16>,
// SEL:       %[[RE:.*]] = sim.attention %[[Q]], %[[K]], %[[V]] {sim.dropout, sim.recompute = #sim<recompute "selective">, causal}
// SEL-NEXT:  sim.attention_grad %[[Q]], %[[K]], %[[V]], %[[RE]], %{{.*}} {sim.recompute = #sim<recompute "selective">, causal}
// SEL-NOT:   sim.attention
// SEL:       sim.phase "optimizer"

// full: the forward saves only each layer's input (one stacked output), the
// backward slices it and starts with a marked clone of the layer.
// FULL:      %{{.*}}, %[[XS:.*]] = sim.phase "forward" -> tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16> {
// FULL-NEXT:   sim.repeat 2 iter(%{{.*}} : tensor<1x8x16xbf16>) slices({{.*}}) {sim.recompute = #sim<recompute "full">} -> (tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>) {
// FULL-NEXT:   ^bb0(%[[X:[^:]*]]: tensor<1x8x16xbf16>,
// FULL-NOT:    sim.recompute
// FULL:        sim.yield %{{.*}}, %[[X]] : tensor<1x8x16xbf16>, tensor<1x8x16xbf16>
// FULL:      sim.phase "backward"
// FULL-NEXT:   sim.repeat 2 iter(%{{.*}} : tensor<1x8x16xbf16>) slices(%p_ln1, %p_wqkv, %p_wo, %p_ln2, %p_w1, %p_w2, %[[XS]] : {{.*}}, tensor<2x1x8x16xbf16>) {reverse}
// FULL-NEXT:   ^bb0(%{{[^:]*}}: tensor<1x8x16xbf16>, %[[LN1:[^:]*]]: tensor<16xbf16>, {{.*}}, %[[XB:[^:]*]]: tensor<1x8x16xbf16>):
// FULL-NEXT:     sim.norm "layer" %[[XB]], %[[LN1]] {sim.recompute = #sim<recompute "full">}
// FULL:          sim.attention %{{.*}} {sim.dropout, sim.recompute = #sim<recompute "full">, causal}
// FULL:          sim.elementwise "dropout" {{.*}} {sim.recompute = #sim<recompute "full">}
// FULL:          sim.elementwise "dropout" {{.*}} {sim.recompute = #sim<recompute "full">}
// FULL-NEXT:     sim.elementwise "add" {{.*}} {sim.recompute = #sim<recompute "full">}
// FULL-NEXT:     sim.elementwise "mul" %{{[^{]*}} : tensor<1x8x16xbf16>, tensor<1x8x16xi8> -> tensor<1x8x16xbf16>
// FULL:          sim.attention_grad

// After pipeline: each stage's step is rewritten.
// PP-FULL:   sim.stage [0]
// PP-FULL:     sim.repeat 1 iter{{.*}} {sim.recompute = #sim<recompute "full">} -> (tensor<1x8x16xbf16>, tensor<1x1x8x16xbf16>)
// PP-FULL:     sim.norm "layer" {{.*}} {sim.recompute = #sim<recompute "full">}
// PP-FULL:   sim.stage [1]
// PP-FULL:     sim.repeat 1 iter{{.*}} {sim.recompute = #sim<recompute "full">} -> (tensor<1x8x16xbf16>, tensor<1x1x8x16xbf16>)
// PP-FULL:     sim.norm "layer" {{.*}} {sim.recompute = #sim<recompute "full">}

// modules=layernorm: the forward no longer saves the norms' outputs; each
// norm is re-run from the saved residual right before the first backward op
// that reads its output (the MLP's weight gradient, then the QKV one).
// LN:        sim.phase "forward"
// LN:        %[[N1:.*]] = sim.norm "layer"
// LN:        %[[N2:.*]] = sim.norm "layer"
// LN:        sim.yield %{{[^,]*}}, %{{[^,]*}},
// LN-NOT:    %[[N1]],
// LN-SAME:   : tensor
// LN:        sim.phase "backward"
// LN:        %[[R2:.*]] = sim.norm "layer" %{{.*}} {sim.recompute = #sim<recompute "selective">}
// LN:        sim.view %[[R2]] :
// LN-NEXT:   sim.matmul
// LN:        %[[R1:.*]] = sim.norm "layer" %{{.*}} {sim.recompute = #sim<recompute "selective">}
// LN:        sim.view %[[R1]] :
// LN-NEXT:   sim.matmul
// LN:        sim.phase "optimizer"

// modules=mlp: the MLP block (from the second norm's output to the residual
// add) is re-run whole before the MLP's backward; the forward saves neither the
// first GEMM's output nor the activation.
// MLP:       sim.phase "forward"
// MLP:       %[[F1:.*]] = sim.matmul
// MLP:       sim.yield
// MLP-NOT:   %[[F1]]
// MLP-SAME:  : tensor
// MLP:       sim.phase "backward"
// MLP:       ^bb0(
// MLP-NEXT:  sim.view %{{.*}} {sim.recompute = #sim<recompute "selective">}
// MLP-NEXT:  %[[RF1:.*]] = sim.matmul %{{.*}} {sim.recompute = #sim<recompute "selective">}
// MLP-NEXT:  %[[RGL:.*]] = sim.elementwise "gelu" %[[RF1]] {sim.recompute = #sim<recompute "selective">}
// MLP-NEXT:  sim.matmul %[[RGL]], %{{.*}} {sim.recompute = #sim<recompute "selective">}
// MLP:       sim.matmul %[[RGL]], %{{.*}} {transpose_lhs}
// MLP:       sim.elementwise "gelu_grad" %{{.*}}, %[[RF1]]

// modules=core_attn,layernorm: both rewrites, each re-run where its backward starts.
// BOTH:      sim.phase "backward"
// BOTH:      sim.norm "layer" %{{.*}} {sim.recompute = #sim<recompute "selective">}
// BOTH:      %[[RE:.*]] = sim.attention %{{.*}} {sim.dropout, sim.recompute = #sim<recompute "selective">, causal}
// BOTH-NEXT: sim.attention_grad %{{.*}}, %[[RE]], %{{.*}} {sim.recompute = #sim<recompute "selective">, causal}
// BOTH:      sim.norm "layer" %{{.*}} {sim.recompute = #sim<recompute "selective">}

// A dense GPT layer has no MoE block and no latent attention: nothing changes.
// NO-BLOCK:  sim.phase "forward" -> tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x2x8xbf16>
// NO-BLOCK-NOT: sim.recompute =

// BAD: charon-opt: error: invalid pass pipeline 'recompute{policy=most}'
// BAD-MODULE: charon-opt: error: recompute: option 'modules': unknown module 'attention' (known: core_attn, layernorm, mla_up_proj, mlp, moe, moe_act, shared_experts)
// BAD-POLICY: charon-opt: error: recompute: option 'modules' needs policy=selective, got policy=full
// NO-LAYERS: charon-opt: error: recompute: option 'policy=full' needs the layers as a forward sim.repeat whose saved outputs a reverse sim.repeat in backward reads; the step has none

builtin.module {

  %x0 = sim.input "hidden" : tensor<1x8x16xbf16>
  %gin = sim.input "grad_hidden" : tensor<1x8x16xbf16>
  %p_ln1 = sim.param "layers.ln1" : tensor<2x16xbf16>
  %p_wqkv = sim.param "layers.wqkv" : tensor<2x16x48xbf16>
  %p_wo = sim.param "layers.wo" : tensor<2x16x16xbf16>
  %p_ln2 = sim.param "layers.ln2" : tensor<2x16xbf16>
  %p_w1 = sim.param "layers.w1" : tensor<2x16x64xbf16>
  %p_w2 = sim.param "layers.w2" : tensor<2x64x16xbf16>
  %f:13 = sim.phase "forward" -> tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x16xi8>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x64xbf16>, tensor<2x1x8x64xbf16>, tensor<2x1x8x16xi8> {
    %r:13 = sim.repeat 2 iter(%x0 : tensor<1x8x16xbf16>) slices(%p_ln1, %p_wqkv, %p_wo, %p_ln2, %p_w1, %p_w2 : tensor<2x16xbf16>, tensor<2x16x48xbf16>, tensor<2x16x16xbf16>, tensor<2x16xbf16>, tensor<2x16x64xbf16>, tensor<2x64x16xbf16>) -> (tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x16xi8>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x64xbf16>, tensor<2x1x8x64xbf16>, tensor<2x1x8x16xi8>) {
    ^bb0(%x: tensor<1x8x16xbf16>, %ln1: tensor<16xbf16>, %wqkv: tensor<16x48xbf16>, %wo: tensor<16x16xbf16>, %ln2: tensor<16xbf16>, %w1: tensor<16x64xbf16>, %w2: tensor<64x16xbf16>):
      %n1 = sim.norm "layer" %x, %ln1 : tensor<1x8x16xbf16>, tensor<16xbf16>
      %n1f = sim.view %n1 : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %qkv = sim.matmul %n1f, %wqkv : (tensor<1x8x16xbf16>, tensor<16x48xbf16>) -> tensor<1x8x48xbf16>
      %q = sim.generic "aten.split"(%qkv) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<1x8x48xbf16>) -> tensor<1x8x2x8xbf16>
      %k = sim.generic "aten.split"(%qkv) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<1x8x48xbf16>) -> tensor<1x8x2x8xbf16>
      %v = sim.generic "aten.split"(%qkv) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<1x8x48xbf16>) -> tensor<1x8x2x8xbf16>
      %att = sim.attention %q, %k, %v {causal, sim.dropout} : (tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>) -> tensor<1x8x2x8xbf16>
      %ao = sim.view %att : tensor<1x8x2x8xbf16> -> tensor<1x8x16xbf16>
      %po = sim.matmul %ao, %wo : (tensor<1x8x16xbf16>, tensor<16x16xbf16>) -> tensor<1x8x16xbf16>
      %pr = sim.view %po : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %m1 = sim.generic "bernoulli"(%pr) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x8x16xbf16>) -> tensor<1x8x16xi8>
      %d1 = sim.elementwise "dropout" %pr, %m1 : tensor<1x8x16xbf16>, tensor<1x8x16xi8> -> tensor<1x8x16xbf16>
      %x1 = sim.elementwise "add" %x, %d1 : tensor<1x8x16xbf16>, tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %n2 = sim.norm "layer" %x1, %ln2 : tensor<1x8x16xbf16>, tensor<16xbf16>
      %n2f = sim.view %n2 : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %f1 = sim.matmul %n2f, %w1 : (tensor<1x8x16xbf16>, tensor<16x64xbf16>) -> tensor<1x8x64xbf16>
      %gl = sim.elementwise "gelu" %f1 : tensor<1x8x64xbf16> -> tensor<1x8x64xbf16>
      %f2 = sim.matmul %gl, %w2 : (tensor<1x8x64xbf16>, tensor<64x16xbf16>) -> tensor<1x8x16xbf16>
      %f2r = sim.view %f2 : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %m2 = sim.generic "bernoulli"(%f2r) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x8x16xbf16>) -> tensor<1x8x16xi8>
      %d2 = sim.elementwise "dropout" %f2r, %m2 : tensor<1x8x16xbf16>, tensor<1x8x16xi8> -> tensor<1x8x16xbf16>
      %x2 = sim.elementwise "add" %x1, %d2 : tensor<1x8x16xbf16>, tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      sim.yield %x2, %x, %n1, %q, %k, %v, %att, %m1, %x1, %n2, %f1, %gl, %m2 : tensor<1x8x16xbf16>, tensor<1x8x16xbf16>, tensor<1x8x16xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x16xi8>, tensor<1x8x16xbf16>, tensor<1x8x16xbf16>, tensor<1x8x64xbf16>, tensor<1x8x64xbf16>, tensor<1x8x16xi8>
    }
    sim.yield %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6, %r#7, %r#8, %r#9, %r#10, %r#11, %r#12 : tensor<1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x16xi8>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x64xbf16>, tensor<2x1x8x64xbf16>, tensor<2x1x8x16xi8>
  }
  %bw:6 = sim.phase "backward" -> tensor<2x16xbf16>, tensor<2x16x48xbf16>, tensor<2x16x16xbf16>, tensor<2x16xbf16>, tensor<2x16x64xbf16>, tensor<2x64x16xbf16> {
    %rb:7 = sim.repeat 2 iter(%gin : tensor<1x8x16xbf16>) slices(%p_ln1, %p_wqkv, %p_wo, %p_ln2, %p_w1, %p_w2, %f#1, %f#2, %f#3, %f#4, %f#5, %f#6, %f#7, %f#8, %f#9, %f#10, %f#11, %f#12 : tensor<2x16xbf16>, tensor<2x16x48xbf16>, tensor<2x16x16xbf16>, tensor<2x16xbf16>, tensor<2x16x64xbf16>, tensor<2x64x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x2x8xbf16>, tensor<2x1x8x16xi8>, tensor<2x1x8x16xbf16>, tensor<2x1x8x16xbf16>, tensor<2x1x8x64xbf16>, tensor<2x1x8x64xbf16>, tensor<2x1x8x16xi8>) {reverse} -> (tensor<1x8x16xbf16>, tensor<2x16xbf16>, tensor<2x16x48xbf16>, tensor<2x16x16xbf16>, tensor<2x16xbf16>, tensor<2x16x64xbf16>, tensor<2x64x16xbf16>) {
    ^bb0(%g: tensor<1x8x16xbf16>, %ln1: tensor<16xbf16>, %wqkv: tensor<16x48xbf16>, %wo: tensor<16x16xbf16>, %ln2: tensor<16xbf16>, %w1: tensor<16x64xbf16>, %w2: tensor<64x16xbf16>, %x: tensor<1x8x16xbf16>, %n1: tensor<1x8x16xbf16>, %q: tensor<1x8x2x8xbf16>, %k: tensor<1x8x2x8xbf16>, %v: tensor<1x8x2x8xbf16>, %att: tensor<1x8x2x8xbf16>, %m1: tensor<1x8x16xi8>, %x1: tensor<1x8x16xbf16>, %n2: tensor<1x8x16xbf16>, %f1: tensor<1x8x64xbf16>, %gl: tensor<1x8x64xbf16>, %m2: tensor<1x8x16xi8>):
      %gd2 = sim.elementwise "mul" %g, %m2 : tensor<1x8x16xbf16>, tensor<1x8x16xi8> -> tensor<1x8x16xbf16>
      %gd2f = sim.view %gd2 : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %dgl = sim.matmul %gd2f, %w2 {transpose_rhs} : (tensor<1x8x16xbf16>, tensor<64x16xbf16>) -> tensor<1x8x64xbf16>
      %dw2b = sim.matmul %gl, %gd2f {transpose_lhs} : (tensor<1x8x64xbf16>, tensor<1x8x16xbf16>) -> tensor<1x64x16xbf16>
      %dw2 = sim.reduce "sum" %dw2b [0] : tensor<1x64x16xbf16> -> tensor<64x16xbf16>
      %df1 = sim.elementwise "gelu_grad" %dgl, %f1 : tensor<1x8x64xbf16>, tensor<1x8x64xbf16> -> tensor<1x8x64xbf16>
      %n2f = sim.view %n2 : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %dw1b = sim.matmul %n2f, %df1 {transpose_lhs} : (tensor<1x8x16xbf16>, tensor<1x8x64xbf16>) -> tensor<1x16x64xbf16>
      %dw1 = sim.reduce "sum" %dw1b [0] : tensor<1x16x64xbf16> -> tensor<16x64xbf16>
      %dn2 = sim.matmul %df1, %w1 {transpose_rhs} : (tensor<1x8x64xbf16>, tensor<16x64xbf16>) -> tensor<1x8x16xbf16>
      %dn2r = sim.view %dn2 : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %dx1n, %dln2 = sim.generic "layer_norm_backward"(%dn2r, %x1, %ln2) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x8x16xbf16>, tensor<1x8x16xbf16>, tensor<16xbf16>) -> (tensor<1x8x16xbf16>, tensor<16xbf16>)
      %gx1 = sim.elementwise "add" %g, %dx1n : tensor<1x8x16xbf16>, tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %gd1 = sim.elementwise "mul" %gx1, %m1 : tensor<1x8x16xbf16>, tensor<1x8x16xi8> -> tensor<1x8x16xbf16>
      %gd1f = sim.view %gd1 : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %dao = sim.matmul %gd1f, %wo {transpose_rhs} : (tensor<1x8x16xbf16>, tensor<16x16xbf16>) -> tensor<1x8x16xbf16>
      %aov = sim.view %att : tensor<1x8x2x8xbf16> -> tensor<1x8x16xbf16>
      %dwob = sim.matmul %aov, %gd1f {transpose_lhs} : (tensor<1x8x16xbf16>, tensor<1x8x16xbf16>) -> tensor<1x16x16xbf16>
      %dwo = sim.reduce "sum" %dwob [0] : tensor<1x16x16xbf16> -> tensor<16x16xbf16>
      %datt = sim.view %dao : tensor<1x8x16xbf16> -> tensor<1x8x2x8xbf16>
      %dq, %dk, %dv = sim.attention_grad %q, %k, %v, %att, %datt {causal} : (tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>) -> (tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>)
      %dqkv = sim.generic "aten.cat"(%dq, %dk, %dv) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>, tensor<1x8x2x8xbf16>) -> tensor<1x8x48xbf16>
      %n1f = sim.view %n1 : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %dwqkvb = sim.matmul %n1f, %dqkv {transpose_lhs} : (tensor<1x8x16xbf16>, tensor<1x8x48xbf16>) -> tensor<1x16x48xbf16>
      %dwqkv = sim.reduce "sum" %dwqkvb [0] : tensor<1x16x48xbf16> -> tensor<16x48xbf16>
      %dn1 = sim.matmul %dqkv, %wqkv {transpose_rhs} : (tensor<1x8x48xbf16>, tensor<16x48xbf16>) -> tensor<1x8x16xbf16>
      %dn1r = sim.view %dn1 : tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      %dxn, %dln1 = sim.generic "layer_norm_backward"(%dn1r, %x, %ln1) {flop_count = 0.0 : f64, byte_count = 1.0 : f64} : (tensor<1x8x16xbf16>, tensor<1x8x16xbf16>, tensor<16xbf16>) -> (tensor<1x8x16xbf16>, tensor<16xbf16>)
      %gx = sim.elementwise "add" %gx1, %dxn : tensor<1x8x16xbf16>, tensor<1x8x16xbf16> -> tensor<1x8x16xbf16>
      sim.yield %gx, %dln1, %dwqkv, %dwo, %dln2, %dw1, %dw2 : tensor<1x8x16xbf16>, tensor<16xbf16>, tensor<16x48xbf16>, tensor<16x16xbf16>, tensor<16xbf16>, tensor<16x64xbf16>, tensor<64x16xbf16>
    }
    sim.yield %rb#1, %rb#2, %rb#3, %rb#4, %rb#5, %rb#6 : tensor<2x16xbf16>, tensor<2x16x48xbf16>, tensor<2x16x16xbf16>, tensor<2x16xbf16>, tensor<2x16x64xbf16>, tensor<2x64x16xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw"(%p_ln1, %p_wqkv, %p_wo, %p_ln2, %p_w1, %p_w2 : tensor<2x16xbf16>, tensor<2x16x48xbf16>, tensor<2x16x16xbf16>, tensor<2x16xbf16>, tensor<2x16x64xbf16>, tensor<2x64x16xbf16>) grads(%bw#0, %bw#1, %bw#2, %bw#3, %bw#4, %bw#5 : tensor<2x16xbf16>, tensor<2x16x48xbf16>, tensor<2x16x16xbf16>, tensor<2x16xbf16>, tensor<2x16x64xbf16>, tensor<2x64x16xbf16>)
    sim.yield
  }
}

