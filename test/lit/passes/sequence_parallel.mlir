// RUN: charon-opt %s -p 'shard-tensor{tp=2},sequence-parallel' | filecheck %s
// RUN: not charon-opt %s -p 'sequence-parallel' 2>&1 | filecheck %s --check-prefix=NOTP
// RUN: not charon-opt %s -p 'shard-tensor{tp=4},sequence-parallel' 2>&1 | filecheck %s --check-prefix=SEQ

// Megatron sequence parallelism on the tiny layer of shard_tensor.mlir (here 30
// tokens for the error case). Each all_reduce becomes reduce_scatter + all_gather;
// the norms and the residual adds run on 15 of the 30 tokens; the gathers sit just
// before the column-parallel matmuls; the saved activations stay split and the
// backward gathers them again for the weight gradients.

// CHECK:        builtin.module attributes {sim.replicated_flops = #sim.replicated_flops<"shard-tensor" = {{.*}}, "sequence-parallel" = -{{.*}}>, sim.tensor_parallel = 2 : i64}
// CHECK:        %[[X:.*]] = sim.generic "shard.slice"(%x) {{.*}} : (tensor<30x64xbf16>) -> tensor<15x64xbf16>
// CHECK-LABEL:  sim.phase "forward"
// CHECK-NEXT:   %[[N1:.*]] = sim.norm "rms" %[[X]], %wn1 : tensor<15x64xbf16>, tensor<64xbf16>
// CHECK-NEXT:   %[[N1G:.*]] = coll.all_gather %[[N1]] on @mesh ["tp"] axis 0 {sim.sequence_parallel} : tensor<15x64xbf16> -> tensor<30x64xbf16>
// CHECK-NEXT:   sim.matmul %[[N1G]], %wq {transpose_rhs} : (tensor<30x64xbf16>, tensor<32x64xbf16>) -> tensor<30x32xbf16>
// CHECK:        %[[P:.*]] = sim.matmul %o, %wo
// CHECK-NEXT:   %[[PS:.*]] = coll.reduce_scatter %[[P]] on @mesh ["tp"] axis 0 : tensor<30x64xbf16> -> tensor<15x64xbf16>
// CHECK-NEXT:   %[[H1:.*]] = sim.elementwise "add" %[[X]], %[[PS]] : tensor<15x64xbf16>, tensor<15x64xbf16> -> tensor<15x64xbf16>
// CHECK-NEXT:   %[[N2:.*]] = sim.norm "rms" %[[H1]], %wn2 : tensor<15x64xbf16>, tensor<64xbf16>
// CHECK-NEXT:   %[[N2G:.*]] = coll.all_gather %[[N2]] on @mesh ["tp"] axis 0 {sim.sequence_parallel} : tensor<15x64xbf16> -> tensor<30x64xbf16>
// CHECK:        %[[D:.*]] = sim.matmul %m, %wd
// CHECK-NEXT:   %[[DS:.*]] = coll.reduce_scatter %[[D]] on @mesh ["tp"] axis 0 : tensor<30x64xbf16> -> tensor<15x64xbf16>
// CHECK-NEXT:   sim.elementwise "add" %[[H1]], %[[DS]] : tensor<15x64xbf16>, tensor<15x64xbf16> -> tensor<15x64xbf16>
// CHECK-NEXT:   sim.yield %[[N1]], {{.*}}, %[[H1]], %[[N2]],
// CHECK-NOT:    coll.all_reduce
// CHECK-LABEL:  sim.phase "backward"
// CHECK:        %[[DYG:.*]] = coll.all_gather %dy on @mesh ["tp"] axis 0 {sim.sequence_parallel} : tensor<15x64xbf16> -> tensor<30x64xbf16>
// CHECK-NEXT:   sim.matmul %[[DYG]], %wd
// CHECK:        %[[DN2S:.*]] = coll.reduce_scatter %dn2 on @mesh ["tp"] axis 0 : tensor<30x64xbf16> -> tensor<15x64xbf16>
// The norm weight's gradient sums over the split tokens: all-reduced.
// CHECK:        %[[DWN2:.*]] = sim.reduce "sum" %{{.*}} [0] : tensor<15x64xbf16> -> tensor<64xbf16>
// CHECK-NEXT:   coll.all_reduce %[[DWN2]] on @mesh ["tp"] {sim.sequence_parallel} : tensor<64xbf16>
// CHECK:        sim.elementwise "rms_norm_grad" %[[DN2S]], {{.*}} -> tensor<15x64xbf16>
// CHECK:        coll.reduce_scatter %dn1 on @mesh ["tp"] axis 0 : tensor<30x64xbf16> -> tensor<15x64xbf16>
// CHECK-LABEL:  sim.phase "optimizer"

// NOTP: charon-opt: error: sequence-parallel: needs tensor parallelism (run shard-tensor{tp=N} first)
// SEQ: charon-opt: error: sequence-parallel: the tp axis (4) does not divide the sequence length (30)

builtin.module {
  %x = sim.input "hidden" : tensor<30x64xbf16>
  %wn1 = sim.param "input_layernorm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
  %wq = sim.param "self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<64x64xbf16>
  %wk = sim.param "self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<32x64xbf16>
  %wv = sim.param "self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<32x64xbf16>
  %wo = sim.param "self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>} : tensor<64x64xbf16>
  %wn2 = sim.param "post_attention_layernorm.weight" {role = #sim.role<norm>} : tensor<64xbf16>
  %wg = sim.param "mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<128x64xbf16>
  %wu = sim.param "mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<128x64xbf16>
  %wd = sim.param "mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>} : tensor<64x128xbf16>

  %f:12 = sim.phase "forward" -> tensor<30x64xbf16>, tensor<1x30x4x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x4x16xbf16>, tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<30x128xbf16>, tensor<30x128xbf16>, tensor<30x128xbf16>, tensor<30x64xbf16> {
    %n1 = sim.norm "rms" %x, %wn1 : tensor<30x64xbf16>, tensor<64xbf16>
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
    %h1 = sim.elementwise "add" %x, %p : tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    %n2 = sim.norm "rms" %h1, %wn2 : tensor<30x64xbf16>, tensor<64xbf16>
    %g = sim.matmul %n2, %wg {transpose_rhs} : (tensor<30x64xbf16>, tensor<128x64xbf16>) -> tensor<30x128xbf16>
    %u = sim.matmul %n2, %wu {transpose_rhs} : (tensor<30x64xbf16>, tensor<128x64xbf16>) -> tensor<30x128xbf16>
    %gs = sim.elementwise "silu" %g : tensor<30x128xbf16> -> tensor<30x128xbf16>
    %m = sim.elementwise "mul" %gs, %u : tensor<30x128xbf16>, tensor<30x128xbf16> -> tensor<30x128xbf16>
    %d = sim.matmul %m, %wd {transpose_rhs} : (tensor<30x128xbf16>, tensor<64x128xbf16>) -> tensor<30x64xbf16>
    %out = sim.elementwise "add" %h1, %d : tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    sim.yield %n1, %qr, %kr, %v4, %o4, %o, %h1, %n2, %g, %u, %m, %out : tensor<30x64xbf16>, tensor<1x30x4x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x4x16xbf16>, tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<30x128xbf16>, tensor<30x128xbf16>, tensor<30x128xbf16>, tensor<30x64xbf16>
  }

  %b:9 = sim.phase "backward" -> tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16> {
    %dy = sim.elementwise "fill" %f#11 : tensor<30x64xbf16> -> tensor<30x64xbf16>
    %dm = sim.matmul %dy, %wd : (tensor<30x64xbf16>, tensor<64x128xbf16>) -> tensor<30x128xbf16>
    %dwd = sim.matmul %dy, %f#10 {transpose_lhs} : (tensor<30x64xbf16>, tensor<30x128xbf16>) -> tensor<64x128xbf16>
    %du = sim.elementwise "mul" %dm, %f#8 : tensor<30x128xbf16>, tensor<30x128xbf16> -> tensor<30x128xbf16>
    %dgs = sim.elementwise "mul" %dm, %f#9 : tensor<30x128xbf16>, tensor<30x128xbf16> -> tensor<30x128xbf16>
    %dg = sim.elementwise "silu_grad" %dgs, %f#8 : tensor<30x128xbf16>, tensor<30x128xbf16> -> tensor<30x128xbf16>
    %dna = sim.matmul %dg, %wg : (tensor<30x128xbf16>, tensor<128x64xbf16>) -> tensor<30x64xbf16>
    %dnb = sim.matmul %du, %wu : (tensor<30x128xbf16>, tensor<128x64xbf16>) -> tensor<30x64xbf16>
    %dwg = sim.matmul %dg, %f#7 {transpose_lhs} : (tensor<30x128xbf16>, tensor<30x64xbf16>) -> tensor<128x64xbf16>
    %dwu = sim.matmul %du, %f#7 {transpose_lhs} : (tensor<30x128xbf16>, tensor<30x64xbf16>) -> tensor<128x64xbf16>
    %dn2 = sim.elementwise "add" %dna, %dnb : tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    %t2 = sim.elementwise "mul" %dn2, %f#7 : tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    %dwn2 = sim.reduce "sum" %t2 [0] : tensor<30x64xbf16> -> tensor<64xbf16>
    %dh1 = sim.elementwise "rms_norm_grad" %dn2, %f#6, %wn2 : tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<64xbf16> -> tensor<30x64xbf16>
    %dh = sim.elementwise "add" %dh1, %dy : tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    %do = sim.matmul %dh, %wo : (tensor<30x64xbf16>, tensor<64x64xbf16>) -> tensor<30x64xbf16>
    %dwo = sim.matmul %dh, %f#5 {transpose_lhs} : (tensor<30x64xbf16>, tensor<30x64xbf16>) -> tensor<64x64xbf16>
    %do4 = sim.view %do : tensor<30x64xbf16> -> tensor<1x30x4x16xbf16>
    %dq4, %dk4, %dv4 = sim.attention_grad %f#1, %f#2, %f#3, %f#4, %do4 {causal} : (tensor<1x30x4x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x4x16xbf16>, tensor<1x30x4x16xbf16>) -> (tensor<1x30x4x16xbf16>, tensor<1x30x2x16xbf16>, tensor<1x30x2x16xbf16>)
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
    %t1 = sim.elementwise "mul" %dn1, %f#0 : tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    %dwn1 = sim.reduce "sum" %t1 [0] : tensor<30x64xbf16> -> tensor<64xbf16>
    %dx1 = sim.elementwise "rms_norm_grad" %dn1, %x, %wn1 : tensor<30x64xbf16>, tensor<30x64xbf16>, tensor<64xbf16> -> tensor<30x64xbf16>
    %dx = sim.elementwise "add" %dx1, %dh : tensor<30x64xbf16>, tensor<30x64xbf16> -> tensor<30x64xbf16>
    sim.yield %dwn1, %dwq, %dwk, %dwv, %dwo, %dwn2, %dwg, %dwu, %dwd : tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>
  }

  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%wn1, %wq, %wk, %wv, %wo, %wn2, %wg, %wu, %wd : tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) grads (%b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7, %b#8 : tensor<64xbf16>, tensor<64x64xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>)
    sim.yield
  }
}

