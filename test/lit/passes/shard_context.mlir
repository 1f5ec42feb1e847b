// RUN: charon-opt %s -p 'shard-context{cp=2}' | filecheck %s --check-prefix=RING
// RUN: charon-opt %s -p 'shard-context{cp=2 mode=ring}' | filecheck %s --check-prefix=RING
// RUN: charon-opt %s -p 'shard-context{cp=2 mode=ulysses}' | filecheck %s --check-prefix=ULYSSES
// RUN: not charon-opt %s -p 'shard-context{cp=3}' 2>&1 | filecheck %s --check-prefix=SEQ
// RUN: not charon-opt %s -p 'shard-context{cp=8 mode=ulysses}' 2>&1 | filecheck %s --check-prefix=HEADS
// RUN: not charon-opt %s -p 'shard-context{cp=2},shard-context{cp=2}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: charon-opt %s -p 'shard-context{cp=2 mode=ulysses gather-kv=false}' | filecheck %s --check-prefix=ULYSSES
// RUN: not charon-opt %s -p 'shard-context{cp=4 mode=ulysses gather-kv=false}' 2>&1 | filecheck %s --check-prefix=GATHER-KV
// RUN: not charon-opt %s -p 'shard-context{cp=2 gather-kv=false}' 2>&1 | filecheck %s --check-prefix=GATHER-KV-MODE
// RUN: charon-opt %s -p 'shard-context{cp=4 mode="a2a+p2p" a2a=2}' | filecheck %s --check-prefix=HIER
// RUN: not charon-opt %s -p 'shard-context{cp=4 mode="a2a+p2p" a2a=3}' 2>&1 | filecheck %s --check-prefix=HIER-DIV
// RUN: not charon-opt %s -p 'shard-context{cp=4 mode="a2a+p2p" a2a=4}' 2>&1 | filecheck %s --check-prefix=HIER-DIV4
// RUN: not charon-opt %s -p 'shard-context{cp=8 mode="a2a+p2p" a2a=4}' 2>&1 | filecheck %s --check-prefix=HIER-KV
// RUN: not charon-opt %s -p 'shard-context{cp=32 mode="a2a+p2p" a2a=2}' 2>&1 | filecheck %s --check-prefix=HIER-SEQ
// RUN: not charon-opt %s -p 'shard-context{cp=4 a2a=2}' 2>&1 | filecheck %s --check-prefix=HIER-MODE
// RUN: not charon-opt %s -p 'shard-context{cp=4 mode="a2a+p2p" a2a=2},shard-context{cp=2}' 2>&1 | filecheck %s --check-prefix=TWICE

// Context parallelism on the tiny layer of shard_tensor.mlir (32 tokens, 4 query
// heads, 2 kv heads): every activation holds 16 of the 32 tokens.

// Ring: a causal step on the local kv block, then a step on the block received from
// the previous rank for half of the (load-balanced) queries.
// RING:        coll.grid @mesh(axes = ["cp"], shape = 2)
// RING:        sim.input "hidden" : tensor<16x64xbf16>
// RING-LABEL:  sim.phase "forward"
// RING:        coll.send %kr on @mesh ["cp"] shift 1 : tensor<1x16x2x16xbf16>
// RING-NEXT:   coll.send %v4 on @mesh ["cp"] shift 1 : tensor<1x16x2x16xbf16>
// RING-NEXT:   %[[K1:.*]] = coll.recv on @mesh ["cp"] shift -1 : tensor<1x16x2x16xbf16>
// RING-NEXT:   %[[V1:.*]] = coll.recv on @mesh ["cp"] shift -1 : tensor<1x16x2x16xbf16>
// RING-NEXT:   %[[O0:.*]] = sim.attention %qr, %kr, %v4 {causal} : (tensor<1x16x4x16xbf16>, tensor<1x16x2x16xbf16>, tensor<1x16x2x16xbf16>) -> tensor<1x16x4x16xbf16>
// RING-NEXT:   %[[QH:.*]] = sim.generic "shard.slice"(%qr) {{.*}} -> tensor<1x8x4x16xbf16>
// RING-NEXT:   %[[O1:.*]] = sim.attention %[[QH]], %[[K1]], %[[V1]] : (tensor<1x8x4x16xbf16>, tensor<1x16x2x16xbf16>, tensor<1x16x2x16xbf16>) -> tensor<1x8x4x16xbf16>
// The merge is Transformer Engine's per-step output correction: the causal step's
// output copied in (2 x 2048 bytes), the half step's added in place (3 x 1024).
// RING-NEXT:   %[[O:.*]] = sim.generic "ring_attention.merge"(%[[O0]], %[[O1]]) {flop_count = 0.000000e+00 : f64, byte_count = 7.168000e+03 : f64}
// RING-NEXT:   sim.view %[[O]] : tensor<1x16x4x16xbf16> -> tensor<16x64xbf16>
// RING-LABEL:  sim.phase "backward"
// Weight gradients are summed over the context-parallel ranks (and marked for the
// data-parallel pass to fold into its own reduction).
// RING:        coll.all_reduce %dwd on @mesh ["cp"] {coll.grad_sync} : tensor<64x128xbf16>
// RING:        coll.send %f_2 on @mesh ["cp"] shift 1
// RING:        sim.attention_grad %f_1, %f_2, %f_3, %f_4, %do4 {causal}
// RING:        sim.attention_grad {{.*}} : (tensor<1x8x4x16xbf16>, tensor<1x16x2x16xbf16>, tensor<1x16x2x16xbf16>, tensor<1x8x4x16xbf16>, tensor<1x8x4x16xbf16>)
// RING-NEXT:   coll.send %{{.*}} on @mesh ["cp"] shift -1 : tensor<1x16x2x16xbf16>
// RING-NEXT:   coll.send %{{.*}} on @mesh ["cp"] shift -1 : tensor<1x16x2x16xbf16>
// RING-NEXT:   coll.recv on @mesh ["cp"] shift 1 : tensor<1x16x2x16xbf16>
// RING-NEXT:   coll.recv on @mesh ["cp"] shift 1 : tensor<1x16x2x16xbf16>
// RING:        "ring_attention.merge_dq"({{.*}}) {flop_count = 0.000000e+00 : f64, byte_count = 7.168000e+03 : f64}
// RING:        "ring_attention.merge_dk"({{.*}}) {flop_count = 0.000000e+00 : f64, byte_count = 5.120000e+03 : f64}
// RING:        coll.all_reduce %dwq on @mesh ["cp"] {coll.grad_sync} : tensor<64x64xbf16>

// Ulysses: all_to_all from split on tokens to split on heads around attention.
// ULYSSES-LABEL: sim.phase "forward"
// ULYSSES:       %[[V:.*]] = coll.all_to_all %v4 on @mesh ["cp"] split 2 concat 1 : tensor<1x16x2x16xbf16> -> tensor<1x32x1x16xbf16>
// ULYSSES:       %[[Q:.*]] = coll.all_to_all %qr on @mesh ["cp"] split 2 concat 1 : tensor<1x16x4x16xbf16> -> tensor<1x32x2x16xbf16>
// ULYSSES:       %[[K:.*]] = coll.all_to_all %kr on @mesh ["cp"] split 2 concat 1 : tensor<1x16x2x16xbf16> -> tensor<1x32x1x16xbf16>
// ULYSSES-NEXT:  %[[O:.*]] = sim.attention %[[Q]], %[[K]], %[[V]] {causal} : (tensor<1x32x2x16xbf16>, tensor<1x32x1x16xbf16>, tensor<1x32x1x16xbf16>) -> tensor<1x32x2x16xbf16>
// ULYSSES-NEXT:  %[[OS:.*]] = coll.all_to_all %[[O]] on @mesh ["cp"] split 1 concat 2 : tensor<1x32x2x16xbf16> -> tensor<1x16x4x16xbf16>
// ULYSSES-NEXT:  sim.view %[[OS]] : tensor<1x16x4x16xbf16> -> tensor<16x64xbf16>
// What attention read is saved, split on heads: the backward needs no all_to_all for it.
// ULYSSES:       sim.yield %n1, %[[Q]], %[[K]], %[[V]], %[[O]],
// ULYSSES-LABEL: sim.phase "backward"
// ULYSSES:       %[[DO:.*]] = coll.all_to_all %do4 on @mesh ["cp"] split 2 concat 1 : tensor<1x16x4x16xbf16> -> tensor<1x32x2x16xbf16>
// ULYSSES-NEXT:  %dq4, %dk4, %dv4 = sim.attention_grad %f_1, %f_2, %f_3, %f_4, %[[DO]] {causal}
// ULYSSES-NEXT:  coll.all_to_all %dv4 on @mesh ["cp"] split 1 concat 2 : tensor<1x32x1x16xbf16> -> tensor<1x16x2x16xbf16>
// ULYSSES-NEXT:  coll.all_to_all %dk4 on @mesh ["cp"] split 1 concat 2 : tensor<1x32x1x16xbf16> -> tensor<1x16x2x16xbf16>
// ULYSSES-NEXT:  coll.all_to_all %dq4 on @mesh ["cp"] split 1 concat 2 : tensor<1x32x2x16xbf16> -> tensor<1x16x4x16xbf16>

// a2a+p2p (cp = 4: all_to_alls within pairs of ranks on the inner axis `cpa`, the
// ring over the 2 pairs on `cp`): every activation holds 8 of the 32 tokens; around
// attention the all_to_alls give each rank 16 tokens of half the heads (2 of 4 q
// heads, 1 of 2 kv heads), and the ring's blocks are of that shape.
// HIER:        coll.grid @mesh(axes = ["cp", "cpa"], shape = 2x2)
// HIER:        sim.input "hidden" : tensor<8x64xbf16>
// HIER-LABEL:  sim.phase "forward"
// HIER:        %[[V:.*]] = coll.all_to_all %v4 on @mesh ["cpa"] split 2 concat 1 : tensor<1x8x2x16xbf16> -> tensor<1x16x1x16xbf16>
// HIER:        %[[Q:.*]] = coll.all_to_all %qr on @mesh ["cpa"] split 2 concat 1 : tensor<1x8x4x16xbf16> -> tensor<1x16x2x16xbf16>
// HIER:        %[[K:.*]] = coll.all_to_all %kr on @mesh ["cpa"] split 2 concat 1 : tensor<1x8x2x16xbf16> -> tensor<1x16x1x16xbf16>
// HIER-NEXT:   coll.send %[[K]] on @mesh ["cp"] shift 1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   coll.send %[[V]] on @mesh ["cp"] shift 1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   %[[K1:.*]] = coll.recv on @mesh ["cp"] shift -1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   %[[V1:.*]] = coll.recv on @mesh ["cp"] shift -1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   %[[O0:.*]] = sim.attention %[[Q]], %[[K]], %[[V]] {causal} : (tensor<1x16x2x16xbf16>, tensor<1x16x1x16xbf16>, tensor<1x16x1x16xbf16>) -> tensor<1x16x2x16xbf16>
// HIER-NEXT:   %[[QH:.*]] = sim.generic "shard.slice"(%[[Q]]) {{.*}} -> tensor<1x8x2x16xbf16>
// HIER-NEXT:   %[[O1:.*]] = sim.attention %[[QH]], %[[K1]], %[[V1]] : (tensor<1x8x2x16xbf16>, tensor<1x16x1x16xbf16>, tensor<1x16x1x16xbf16>) -> tensor<1x8x2x16xbf16>
// HIER-NEXT:   %[[O:.*]] = sim.generic "ring_attention.merge"(%[[O0]], %[[O1]]) {flop_count = 0.000000e+00 : f64, byte_count = 3.584000e+03 : f64}
// HIER-NEXT:   %[[OS:.*]] = coll.all_to_all %[[O]] on @mesh ["cpa"] split 1 concat 2 : tensor<1x16x2x16xbf16> -> tensor<1x8x4x16xbf16>
// HIER-NEXT:   sim.view %[[OS]] : tensor<1x8x4x16xbf16> -> tensor<8x64xbf16>
// HIER:        sim.yield %n1, %[[Q]], %[[K]], %[[V]], %[[O]],
// Weight gradients: one sum over both axes, marked for data-parallel to fold.
// HIER-LABEL:  sim.phase "backward"
// HIER:        coll.all_reduce %dwd on @mesh ["cp", "cpa"] {coll.grad_sync} : tensor<64x128xbf16>
// HIER-NOT:    coll.all_reduce %{{.*}} on @mesh ["cp"]
// HIER:        %[[DO:.*]] = coll.all_to_all %do4 on @mesh ["cpa"] split 2 concat 1 : tensor<1x8x4x16xbf16> -> tensor<1x16x2x16xbf16>
// HIER-NEXT:   coll.send %f_2 on @mesh ["cp"] shift 1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   coll.send %f_3 on @mesh ["cp"] shift 1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   coll.recv on @mesh ["cp"] shift -1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   coll.recv on @mesh ["cp"] shift -1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   %dq4, %dk4, %dv4 = sim.attention_grad %f_1, %f_2, %f_3, %f_4, %[[DO]] {causal}
// HIER:        sim.attention_grad {{.*}} : (tensor<1x8x2x16xbf16>, tensor<1x16x1x16xbf16>, tensor<1x16x1x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>)
// HIER-NEXT:   coll.send %{{.*}} on @mesh ["cp"] shift -1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   coll.send %{{.*}} on @mesh ["cp"] shift -1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   coll.recv on @mesh ["cp"] shift 1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   coll.recv on @mesh ["cp"] shift 1 : tensor<1x16x1x16xbf16>
// HIER-NEXT:   %[[DQ:.*]] = sim.generic "ring_attention.merge_dq"
// HIER-NEXT:   %[[DK:.*]] = sim.generic "ring_attention.merge_dk"
// HIER-NEXT:   %[[DV:.*]] = sim.generic "ring_attention.merge_dv"
// HIER-NEXT:   coll.all_to_all %[[DV]] on @mesh ["cpa"] split 1 concat 2 : tensor<1x16x1x16xbf16> -> tensor<1x8x2x16xbf16>
// HIER-NEXT:   coll.all_to_all %[[DK]] on @mesh ["cpa"] split 1 concat 2 : tensor<1x16x1x16xbf16> -> tensor<1x8x2x16xbf16>
// HIER-NEXT:   coll.all_to_all %[[DQ]] on @mesh ["cpa"] split 1 concat 2 : tensor<1x16x2x16xbf16> -> tensor<1x8x4x16xbf16>
// HIER:        coll.all_reduce %dwq on @mesh ["cp", "cpa"] {coll.grad_sync} : tensor<64x64xbf16>

// HIER-DIV: charon-opt: error: shard-context: option 'a2a' (3) must divide 'cp' (4) and lie strictly between 1 and cp (mode=a2a+p2p; a2a=1 is mode=ring, a2a=cp is mode=ulysses)
// HIER-DIV4: charon-opt: error: shard-context: option 'a2a' (4) must divide 'cp' (4)
// HIER-KV: charon-opt: error: shard-context: option 'a2a' (4) does not divide the kv heads (2) (mode=a2a+p2p)
// HIER-SEQ: charon-opt: error: shard-context: option 'cp' (32) does not divide the sequence length (32) into 2*cp load-balanced chunks (mode=a2a+p2p)
// HIER-MODE: charon-opt: error: shard-context: option 'a2a' (2) needs mode=a2a+p2p, not mode=ring
// SEQ: charon-opt: error: shard-context: option 'cp' (3) does not divide the sequence length (32)
// HEADS: charon-opt: error: shard-context: option 'cp' (8) does not divide the attention heads (4) (mode=ulysses)
// TWICE: charon-opt: error: shard-context: the module is already sharded along grid axis 'cp'

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

// Transformer Engine's a2a (gather-kv=false) splits the kv heads as it splits q's:
// 2 kv heads over 4 ranks is refused, not gathered.
// GATHER-KV: error: shard-context: option 'cp' (4) does not divide the kv heads (2) (mode=ulysses, gather-kv=false: Transformer Engine's a2a)
// GATHER-KV-MODE: error: shard-context: option 'gather-kv' needs mode=ulysses, not mode=ring
