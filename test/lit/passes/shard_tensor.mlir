// RUN: charon-opt %s -p 'shard-tensor{tp=2}' | filecheck %s
// RUN: charon-opt %s -p 'shard-tensor{tp=4}' | filecheck %s --check-prefix=GQA
// RUN: charon-opt %s -p 'shard-tensor{tp=1}' | filecheck %s --check-prefix=ONE
// RUN: not charon-opt %s -p 'shard-tensor{tp=3}' 2>&1 | filecheck %s --check-prefix=HEADS
// RUN: not charon-opt %s -p 'shard-tensor{tp=8}' 2>&1 | filecheck %s --check-prefix=HEADS8
// RUN: not charon-opt %s -p 'shard-tensor{tp=2},shard-tensor{tp=2}' 2>&1 | filecheck %s --check-prefix=TWICE

// A tiny Llama layer (32 tokens, hidden 64, 4 query heads and 2 kv heads of 16,
// SwiGLU 128), unsharded. tp=2: q/k/v and gate/up split on their output features,
// o/down on their input features; an all_reduce after o_proj and after down_proj
// in the forward, after the q/k/v and gate/up input gradients in the backward.

// CHECK:      builtin.module attributes {sim.replicated_flops = #sim.replicated_flops<"shard-tensor" = {{.*}}>, sim.tensor_parallel = 2 : i64} {
// CHECK-NEXT:   coll.grid @mesh(axes = ["tp"], shape = 2)
// CHECK:        sim.param "input_layernorm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
// CHECK-NEXT:   sim.param "self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<32x64xbf16>
// CHECK-NEXT:   sim.param "self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<16x64xbf16>
// CHECK-NEXT:   sim.param "self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<16x64xbf16>
// CHECK-NEXT:   sim.param "self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>} : tensor<64x32xbf16>
// CHECK-NEXT:   sim.param "post_attention_layernorm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
// CHECK-NEXT:   sim.param "mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<64x64xbf16>
// CHECK-NEXT:   sim.param "mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<64x64xbf16>
// CHECK-NEXT:   sim.param "mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>} : tensor<64x64xbf16>
// CHECK-LABEL:  sim.phase "forward"
// CHECK:        sim.matmul %n1, %wq {transpose_rhs} : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
// CHECK:        sim.attention {{.*}} : (tensor<1x32x2x16xbf16>, tensor<1x32x1x16xbf16>, tensor<1x32x1x16xbf16>) -> tensor<1x32x2x16xbf16>
// CHECK:        %[[P:.*]] = sim.matmul %o, %wo {transpose_rhs} : (tensor<32x32xbf16>, tensor<64x32xbf16>) -> tensor<32x64xbf16>
// CHECK-NEXT:   %[[PR:.*]] = coll.all_reduce %[[P]] on @mesh ["tp"] : tensor<32x64xbf16>
// CHECK-NEXT:   sim.elementwise "add" %x, %[[PR]]
// CHECK:        %[[D:.*]] = sim.matmul %m, %wd {transpose_rhs} : (tensor<32x64xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
// CHECK-NEXT:   %[[DR:.*]] = coll.all_reduce %[[D]] on @mesh ["tp"] : tensor<32x64xbf16>
// CHECK-NEXT:   sim.elementwise "add" %h1, %[[DR]]
// CHECK-NOT:    coll.all_reduce
// CHECK-LABEL:  sim.phase "backward"
// CHECK:        %[[DN2:.*]] = sim.elementwise "add" %dna, %dnb : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
// CHECK-NEXT:   %[[DN2R:.*]] = coll.all_reduce %[[DN2]] on @mesh ["tp"] : tensor<32x64xbf16>
// CHECK:        sim.elementwise "rms_norm_grad" %[[DN2R]]
// CHECK:        sim.attention_grad {{.*}} -> (tensor<1x32x2x16xbf16>, tensor<1x32x1x16xbf16>, tensor<1x32x1x16xbf16>)
// CHECK:        %[[DN1:.*]] = sim.elementwise "add" %dxq, %dxk, %dxv
// CHECK-NEXT:   %[[DN1R:.*]] = coll.all_reduce %[[DN1]] on @mesh ["tp"] : tensor<32x64xbf16>
// CHECK-NOT:    coll.all_reduce
// CHECK-LABEL:  sim.phase "optimizer"

// tp=4 > 2 kv heads: each rank keeps one kv head (shared by two ranks), whose
// gradient is all-reduced; the q heads are split 4 ways.
// GQA:        coll.grid @mesh(axes = ["tp"], shape = 4)
// GQA:        sim.param "self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<16x64xbf16>
// GQA-NEXT:   sim.param "self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<16x64xbf16>
// GQA:        sim.attention {{.*}} : (tensor<1x32x1x16xbf16>, tensor<1x32x1x16xbf16>, tensor<1x32x1x16xbf16>) -> tensor<1x32x1x16xbf16>
// GQA:        sim.attention_grad
// GQA:        coll.all_reduce %dk on @mesh ["tp"] : tensor<32x16xbf16>
// GQA:        coll.all_reduce %dv on @mesh ["tp"] : tensor<32x16xbf16>

// ONE-NOT:    coll.
// ONE:        sim.param "self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<64x64xbf16>

// HEADS: charon-opt: error: shard-tensor: option 'tp' (3) does not divide the attention heads (4)
// HEADS8: charon-opt: error: shard-tensor: option 'tp' (8) does not divide the attention heads (4)

builtin.module {
  %x = sim.input "hidden" : tensor<32x64xbf16>
  %wn1 = sim.param "input_layernorm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
  %wq = sim.param "self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<64x64xbf16>
  %wk = sim.param "self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<32x64xbf16>
  %wv = sim.param "self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<32x64xbf16>
  %wo = sim.param "self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>} : tensor<64x64xbf16>
  %wn2 = sim.param "post_attention_layernorm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
  %wg = sim.param "mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<128x64xbf16>
  %wu = sim.param "mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<128x64xbf16>
  %wd = sim.param "mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>} : tensor<64x128xbf16>

  %f:12 = sim.phase "forward" -> tensor<32x64xbf16>, tensor<1x32x4x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x4x16xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<32x64xbf16> {
    %n1 = sim.norm "rms" %x, %wn1 : tensor<32x64xbf16>, tensor<64xbf16>
    %q = sim.matmul %n1, %wq {transpose_rhs} : (tensor<32x64xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
    %k = sim.matmul %n1, %wk {transpose_rhs} : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
    %v = sim.matmul %n1, %wv {transpose_rhs} : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
    %q4 = sim.view %q : tensor<32x64xbf16> -> tensor<1x32x4x16xbf16>
    %k4 = sim.view %k : tensor<32x32xbf16> -> tensor<1x32x2x16xbf16>
    %v4 = sim.view %v : tensor<32x32xbf16> -> tensor<1x32x2x16xbf16>
    %qr = sim.elementwise "rope" %q4 : tensor<1x32x4x16xbf16> -> tensor<1x32x4x16xbf16>
    %kr = sim.elementwise "rope" %k4 : tensor<1x32x2x16xbf16> -> tensor<1x32x2x16xbf16>
    %o4 = sim.attention %qr, %kr, %v4 {causal} : (tensor<1x32x4x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x2x16xbf16>) -> tensor<1x32x4x16xbf16>
    %o = sim.view %o4 : tensor<1x32x4x16xbf16> -> tensor<32x64xbf16>
    %p = sim.matmul %o, %wo {transpose_rhs} : (tensor<32x64xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
    %h1 = sim.elementwise "add" %x, %p : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
    %n2 = sim.norm "rms" %h1, %wn2 : tensor<32x64xbf16>, tensor<64xbf16>
    %g = sim.matmul %n2, %wg {transpose_rhs} : (tensor<32x64xbf16>, tensor<128x64xbf16>) -> tensor<32x128xbf16>
    %u = sim.matmul %n2, %wu {transpose_rhs} : (tensor<32x64xbf16>, tensor<128x64xbf16>) -> tensor<32x128xbf16>
    %gs = sim.elementwise "silu" %g : tensor<32x128xbf16> -> tensor<32x128xbf16>
    %m = sim.elementwise "mul" %gs, %u : tensor<32x128xbf16>, tensor<32x128xbf16> -> tensor<32x128xbf16>
    %d = sim.matmul %m, %wd {transpose_rhs} : (tensor<32x128xbf16>, tensor<64x128xbf16>) -> tensor<32x64xbf16>
    %out = sim.elementwise "add" %h1, %d : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
    sim.yield %n1, %qr, %kr, %v4, %o4, %o, %h1, %n2, %g, %u, %m, %out : tensor<32x64xbf16>, tensor<1x32x4x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x4x16xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<32x128xbf16>, tensor<32x64xbf16>
  }

  %b:9 = sim.phase "backward" -> tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16> {
    %dy = sim.elementwise "fill" %f#11 : tensor<32x64xbf16> -> tensor<32x64xbf16>
    %dm = sim.matmul %dy, %wd : (tensor<32x64xbf16>, tensor<64x128xbf16>) -> tensor<32x128xbf16>
    %dwd = sim.matmul %dy, %f#10 {transpose_lhs} : (tensor<32x64xbf16>, tensor<32x128xbf16>) -> tensor<64x128xbf16>
    %du = sim.elementwise "mul" %dm, %f#8 : tensor<32x128xbf16>, tensor<32x128xbf16> -> tensor<32x128xbf16>
    %dgs = sim.elementwise "mul" %dm, %f#9 : tensor<32x128xbf16>, tensor<32x128xbf16> -> tensor<32x128xbf16>
    %dg = sim.elementwise "silu_grad" %dgs, %f#8 : tensor<32x128xbf16>, tensor<32x128xbf16> -> tensor<32x128xbf16>
    %dna = sim.matmul %dg, %wg : (tensor<32x128xbf16>, tensor<128x64xbf16>) -> tensor<32x64xbf16>
    %dnb = sim.matmul %du, %wu : (tensor<32x128xbf16>, tensor<128x64xbf16>) -> tensor<32x64xbf16>
    %dwg = sim.matmul %dg, %f#7 {transpose_lhs} : (tensor<32x128xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
    %dwu = sim.matmul %du, %f#7 {transpose_lhs} : (tensor<32x128xbf16>, tensor<32x64xbf16>) -> tensor<128x64xbf16>
    %dn2 = sim.elementwise "add" %dna, %dnb : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
    %t2 = sim.elementwise "mul" %dn2, %f#7 : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
    %dwn2 = sim.reduce "sum" %t2 [0] : tensor<32x64xbf16> -> tensor<64xbf16>
    %dh1 = sim.elementwise "rms_norm_grad" %dn2, %f#6, %wn2 : tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64xbf16> -> tensor<32x64xbf16>
    %dh = sim.elementwise "add" %dh1, %dy : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
    %do = sim.matmul %dh, %wo : (tensor<32x64xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
    %dwo = sim.matmul %dh, %f#5 {transpose_lhs} : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<64x64xbf16>
    %do4 = sim.view %do : tensor<32x64xbf16> -> tensor<1x32x4x16xbf16>
    %dq4, %dk4, %dv4 = sim.attention_grad %f#1, %f#2, %f#3, %f#4, %do4 {causal} : (tensor<1x32x4x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x4x16xbf16>, tensor<1x32x4x16xbf16>) -> (tensor<1x32x4x16xbf16>, tensor<1x32x2x16xbf16>, tensor<1x32x2x16xbf16>)
    %dq = sim.view %dq4 : tensor<1x32x4x16xbf16> -> tensor<32x64xbf16>
    %dk = sim.view %dk4 : tensor<1x32x2x16xbf16> -> tensor<32x32xbf16>
    %dv = sim.view %dv4 : tensor<1x32x2x16xbf16> -> tensor<32x32xbf16>
    %dxq = sim.matmul %dq, %wq : (tensor<32x64xbf16>, tensor<64x64xbf16>) -> tensor<32x64xbf16>
    %dxk = sim.matmul %dk, %wk : (tensor<32x32xbf16>, tensor<32x64xbf16>) -> tensor<32x64xbf16>
    %dxv = sim.matmul %dv, %wv : (tensor<32x32xbf16>, tensor<32x64xbf16>) -> tensor<32x64xbf16>
    %dwq = sim.matmul %dq, %f#0 {transpose_lhs} : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<64x64xbf16>
    %dwk = sim.matmul %dk, %f#0 {transpose_lhs} : (tensor<32x32xbf16>, tensor<32x64xbf16>) -> tensor<32x64xbf16>
    %dwv = sim.matmul %dv, %f#0 {transpose_lhs} : (tensor<32x32xbf16>, tensor<32x64xbf16>) -> tensor<32x64xbf16>
    %dn1 = sim.elementwise "add" %dxq, %dxk, %dxv : tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
    %t1 = sim.elementwise "mul" %dn1, %f#0 : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
    %dwn1 = sim.reduce "sum" %t1 [0] : tensor<32x64xbf16> -> tensor<64xbf16>
    %dx1 = sim.elementwise "rms_norm_grad" %dn1, %x, %wn1 : tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64xbf16> -> tensor<32x64xbf16>
    %dx = sim.elementwise "add" %dx1, %dh : tensor<32x64xbf16>, tensor<32x64xbf16> -> tensor<32x64xbf16>
    sim.yield %dwn1, %dwq, %dwk, %dwv, %dwo, %dwn2, %dwg, %dwu, %dwd : tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>
  }

  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%wn1, %wq, %wk, %wv, %wo, %wn2, %wg, %wu, %wd : tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) grads (%b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7, %b#8 : tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>)
    sim.yield
  }
}
// TWICE: charon-opt: error: shard-tensor: the module is already sharded along grid axis 'tp'
