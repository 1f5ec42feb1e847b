// One Llama-3-70B decoder layer (hidden 8192, 64 q heads, 8 kv heads, head dim 128,
// SwiGLU ffn 28672), forward, backward and AdamW step, on one rank of an 8-way
// Megatron tensor-parallel group: seq 4096, micro-batch 1. Shapes are per rank:
// q/k/v and gate/up are column-parallel, the output and down projections are
// row-parallel and followed by an all_reduce (forward) - the input-gradient
// all_reduces sit in backward.
//
//   charon-opt examples/transformer_layer.mlir \
//     -p 'set-target{hardware=H100-SXM5-80GB},cost-annotate,lower-to-events' -t simulate
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 8)
  %x = sim.input "hidden" : tensor<4096x8192xbf16>
  %wn1 = sim.param "input_layernorm.weight" {role = #sim.role<norm>} : tensor<8192xbf16>
  %wq = sim.param "self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<1024x8192xbf16>
  %wk = sim.param "self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<128x8192xbf16>
  %wv = sim.param "self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<128x8192xbf16>
  %wo = sim.param "self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>} : tensor<8192x1024xbf16>
  %wn2 = sim.param "post_attention_layernorm.weight" {role = #sim.role<norm>} : tensor<8192xbf16>
  %wg = sim.param "mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<3584x8192xbf16>
  %wu = sim.param "mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<3584x8192xbf16>
  %wd = sim.param "mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>} : tensor<8192x3584xbf16>

  %f:12 = sim.phase "forward" -> tensor<4096x8192xbf16>, tensor<1x4096x8x128xbf16>, tensor<1x4096x1x128xbf16>, tensor<1x4096x1x128xbf16>, tensor<1x4096x8x128xbf16>, tensor<4096x1024xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<4096x8192xbf16> {
    %n1 = sim.norm "rms" %x, %wn1 : tensor<4096x8192xbf16>, tensor<8192xbf16>
    %q = sim.matmul %n1, %wq {transpose_rhs} : (tensor<4096x8192xbf16>, tensor<1024x8192xbf16>) -> tensor<4096x1024xbf16>
    %k = sim.matmul %n1, %wk {transpose_rhs} : (tensor<4096x8192xbf16>, tensor<128x8192xbf16>) -> tensor<4096x128xbf16>
    %v = sim.matmul %n1, %wv {transpose_rhs} : (tensor<4096x8192xbf16>, tensor<128x8192xbf16>) -> tensor<4096x128xbf16>
    %q4 = sim.view %q : tensor<4096x1024xbf16> -> tensor<1x4096x8x128xbf16>
    %k4 = sim.view %k : tensor<4096x128xbf16> -> tensor<1x4096x1x128xbf16>
    %v4 = sim.view %v : tensor<4096x128xbf16> -> tensor<1x4096x1x128xbf16>
    %qr = sim.elementwise "rope" %q4 : tensor<1x4096x8x128xbf16> -> tensor<1x4096x8x128xbf16>
    %kr = sim.elementwise "rope" %k4 : tensor<1x4096x1x128xbf16> -> tensor<1x4096x1x128xbf16>
    %o4 = sim.attention %qr, %kr, %v4 {causal, flash} : (tensor<1x4096x8x128xbf16>, tensor<1x4096x1x128xbf16>, tensor<1x4096x1x128xbf16>) -> tensor<1x4096x8x128xbf16>
    %o = sim.view %o4 : tensor<1x4096x8x128xbf16> -> tensor<4096x1024xbf16>
    %p = sim.matmul %o, %wo {transpose_rhs} : (tensor<4096x1024xbf16>, tensor<8192x1024xbf16>) -> tensor<4096x8192xbf16>
    %pr = coll.all_reduce %p on @mesh ["tp"] : tensor<4096x8192xbf16>
    %h1 = sim.elementwise "add" %x, %pr : tensor<4096x8192xbf16>, tensor<4096x8192xbf16> -> tensor<4096x8192xbf16>
    %n2 = sim.norm "rms" %h1, %wn2 : tensor<4096x8192xbf16>, tensor<8192xbf16>
    %g = sim.matmul %n2, %wg {transpose_rhs} : (tensor<4096x8192xbf16>, tensor<3584x8192xbf16>) -> tensor<4096x3584xbf16>
    %u = sim.matmul %n2, %wu {transpose_rhs} : (tensor<4096x8192xbf16>, tensor<3584x8192xbf16>) -> tensor<4096x3584xbf16>
    %gs = sim.elementwise "silu" %g : tensor<4096x3584xbf16> -> tensor<4096x3584xbf16>
    %m = sim.elementwise "mul" %gs, %u : tensor<4096x3584xbf16>, tensor<4096x3584xbf16> -> tensor<4096x3584xbf16>
    %d = sim.matmul %m, %wd {transpose_rhs} : (tensor<4096x3584xbf16>, tensor<8192x3584xbf16>) -> tensor<4096x8192xbf16>
    %dr = coll.all_reduce %d on @mesh ["tp"] : tensor<4096x8192xbf16>
    %out = sim.elementwise "add" %h1, %dr : tensor<4096x8192xbf16>, tensor<4096x8192xbf16> -> tensor<4096x8192xbf16>
    sim.yield %n1, %qr, %kr, %v4, %o4, %o, %h1, %n2, %g, %u, %m, %out : tensor<4096x8192xbf16>, tensor<1x4096x8x128xbf16>, tensor<1x4096x1x128xbf16>, tensor<1x4096x1x128xbf16>, tensor<1x4096x8x128xbf16>, tensor<4096x1024xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<4096x8192xbf16>
  }

  %b:9 = sim.phase "backward" -> tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16> {
    %dy = sim.elementwise "fill" %f#11 : tensor<4096x8192xbf16> -> tensor<4096x8192xbf16>
    // MLP: down (row-parallel), SwiGLU, gate/up (column-parallel)
    %dm = sim.matmul %dy, %wd : (tensor<4096x8192xbf16>, tensor<8192x3584xbf16>) -> tensor<4096x3584xbf16>
    %dwd = sim.matmul %dy, %f#10 {transpose_lhs} : (tensor<4096x8192xbf16>, tensor<4096x3584xbf16>) -> tensor<8192x3584xbf16>
    %du = sim.elementwise "mul" %dm, %f#8 : tensor<4096x3584xbf16>, tensor<4096x3584xbf16> -> tensor<4096x3584xbf16>
    %dgs = sim.elementwise "mul" %dm, %f#9 : tensor<4096x3584xbf16>, tensor<4096x3584xbf16> -> tensor<4096x3584xbf16>
    %dg = sim.elementwise "silu_grad" %dgs, %f#8 : tensor<4096x3584xbf16>, tensor<4096x3584xbf16> -> tensor<4096x3584xbf16>
    %dna = sim.matmul %dg, %wg : (tensor<4096x3584xbf16>, tensor<3584x8192xbf16>) -> tensor<4096x8192xbf16>
    %dnb = sim.matmul %du, %wu : (tensor<4096x3584xbf16>, tensor<3584x8192xbf16>) -> tensor<4096x8192xbf16>
    %dwg = sim.matmul %dg, %f#7 {transpose_lhs} : (tensor<4096x3584xbf16>, tensor<4096x8192xbf16>) -> tensor<3584x8192xbf16>
    %dwu = sim.matmul %du, %f#7 {transpose_lhs} : (tensor<4096x3584xbf16>, tensor<4096x8192xbf16>) -> tensor<3584x8192xbf16>
    %dn2 = sim.elementwise "add" %dna, %dnb : tensor<4096x8192xbf16>, tensor<4096x8192xbf16> -> tensor<4096x8192xbf16>
    %dn2r = coll.all_reduce %dn2 on @mesh ["tp"] : tensor<4096x8192xbf16>
    %t2 = sim.elementwise "mul" %dn2r, %f#7 : tensor<4096x8192xbf16>, tensor<4096x8192xbf16> -> tensor<4096x8192xbf16>
    %dwn2 = sim.reduce "sum" %t2 [0] : tensor<4096x8192xbf16> -> tensor<8192xbf16>
    %dh1 = sim.elementwise "rms_norm_grad" %dn2r, %f#6, %wn2 : tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<8192xbf16> -> tensor<4096x8192xbf16>
    %dh = sim.elementwise "add" %dh1, %dy : tensor<4096x8192xbf16>, tensor<4096x8192xbf16> -> tensor<4096x8192xbf16>
    // attention: output projection (row-parallel), core, q/k/v (column-parallel)
    %do = sim.matmul %dh, %wo : (tensor<4096x8192xbf16>, tensor<8192x1024xbf16>) -> tensor<4096x1024xbf16>
    %dwo = sim.matmul %dh, %f#5 {transpose_lhs} : (tensor<4096x8192xbf16>, tensor<4096x1024xbf16>) -> tensor<8192x1024xbf16>
    %do4 = sim.view %do : tensor<4096x1024xbf16> -> tensor<1x4096x8x128xbf16>
    %dq4, %dk4, %dv4 = sim.attention_grad %f#1, %f#2, %f#3, %f#4, %do4 {causal, flash} : (tensor<1x4096x8x128xbf16>, tensor<1x4096x1x128xbf16>, tensor<1x4096x1x128xbf16>, tensor<1x4096x8x128xbf16>, tensor<1x4096x8x128xbf16>) -> (tensor<1x4096x8x128xbf16>, tensor<1x4096x1x128xbf16>, tensor<1x4096x1x128xbf16>)
    %dq = sim.view %dq4 : tensor<1x4096x8x128xbf16> -> tensor<4096x1024xbf16>
    %dk = sim.view %dk4 : tensor<1x4096x1x128xbf16> -> tensor<4096x128xbf16>
    %dv = sim.view %dv4 : tensor<1x4096x1x128xbf16> -> tensor<4096x128xbf16>
    %dxq = sim.matmul %dq, %wq : (tensor<4096x1024xbf16>, tensor<1024x8192xbf16>) -> tensor<4096x8192xbf16>
    %dxk = sim.matmul %dk, %wk : (tensor<4096x128xbf16>, tensor<128x8192xbf16>) -> tensor<4096x8192xbf16>
    %dxv = sim.matmul %dv, %wv : (tensor<4096x128xbf16>, tensor<128x8192xbf16>) -> tensor<4096x8192xbf16>
    %dwq = sim.matmul %dq, %f#0 {transpose_lhs} : (tensor<4096x1024xbf16>, tensor<4096x8192xbf16>) -> tensor<1024x8192xbf16>
    %dwk = sim.matmul %dk, %f#0 {transpose_lhs} : (tensor<4096x128xbf16>, tensor<4096x8192xbf16>) -> tensor<128x8192xbf16>
    %dwv = sim.matmul %dv, %f#0 {transpose_lhs} : (tensor<4096x128xbf16>, tensor<4096x8192xbf16>) -> tensor<128x8192xbf16>
    %dn1 = sim.elementwise "add" %dxq, %dxk, %dxv : tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16> -> tensor<4096x8192xbf16>
    %dn1r = coll.all_reduce %dn1 on @mesh ["tp"] : tensor<4096x8192xbf16>
    %t1 = sim.elementwise "mul" %dn1r, %f#0 : tensor<4096x8192xbf16>, tensor<4096x8192xbf16> -> tensor<4096x8192xbf16>
    %dwn1 = sim.reduce "sum" %t1 [0] : tensor<4096x8192xbf16> -> tensor<8192xbf16>
    %dx1 = sim.elementwise "rms_norm_grad" %dn1r, %x, %wn1 : tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<8192xbf16> -> tensor<4096x8192xbf16>
    %dx = sim.elementwise "add" %dx1, %dh : tensor<4096x8192xbf16>, tensor<4096x8192xbf16> -> tensor<4096x8192xbf16>
    sim.yield %dwn1, %dwq, %dwk, %dwv, %dwo, %dwn2, %dwg, %dwu, %dwd : tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>
  }

  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%wn1, %wq, %wk, %wv, %wo, %wn2, %wg, %wu, %wd : tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) grads (%b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7, %b#8 : tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>)
    sim.yield
  }
}
