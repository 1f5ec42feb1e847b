"""Small modules in the shapes the torch frontend emits, for tests and examples of the
parallelism passes.

`llama_layer` is one unsharded Llama decoder layer (RMSNorm, GQA attention with
RoPE, SwiGLU MLP): forward, backward and AdamW step, on `tokens` tokens of hidden
size `hidden` (the unsharded twin of examples/transformer_layer.mlir).
"""

from string import Template

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from charon_ir.registry import ALL_PASSES
from charon_ir.testing import make_context, parse_module

LLAMA_LAYER = Template(
    """\
builtin.module {
  %x = sim.input "hidden" : tensor<${T}x${H}xbf16>
  %wn1 = sim.param "input_layernorm.weight" {role = #sim.role<norm>} : tensor<${H}xbf16>
  %wq = sim.param "self_attn.q_proj.weight" {role = #sim.role<attention>, split = #sim.split<column>} : tensor<${Q}x${H}xbf16>
  %wk = sim.param "self_attn.k_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<${KV}x${H}xbf16>
  %wv = sim.param "self_attn.v_proj.weight" {role = #sim.role<attention>, split = #sim.split<kv>} : tensor<${KV}x${H}xbf16>
  %wo = sim.param "self_attn.o_proj.weight" {role = #sim.role<attention>, split = #sim.split<row>} : tensor<${H}x${Q}xbf16>
  %wn2 = sim.param "post_attention_layernorm.weight" {role = #sim.role<norm>} : tensor<${H}xbf16>
  %wg = sim.param "mlp.gate_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<${F}x${H}xbf16>
  %wu = sim.param "mlp.up_proj.weight" {role = #sim.role<mlp>, split = #sim.split<column>} : tensor<${F}x${H}xbf16>
  %wd = sim.param "mlp.down_proj.weight" {role = #sim.role<mlp>, split = #sim.split<row>} : tensor<${H}x${F}xbf16>

  %f:12 = sim.phase "forward" -> tensor<${T}x${H}xbf16>, tensor<1x${T}x${HQ}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>, tensor<1x${T}x${HQ}x${D}xbf16>, tensor<${T}x${Q}xbf16>, tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16>, tensor<${T}x${F}xbf16>, tensor<${T}x${F}xbf16>, tensor<${T}x${F}xbf16>, tensor<${T}x${H}xbf16> {
    %n1 = sim.norm "rms" %x, %wn1 : tensor<${T}x${H}xbf16>, tensor<${H}xbf16>
    %q = sim.matmul %n1, %wq {transpose_rhs} : (tensor<${T}x${H}xbf16>, tensor<${Q}x${H}xbf16>) -> tensor<${T}x${Q}xbf16>
    %k = sim.matmul %n1, %wk {transpose_rhs} : (tensor<${T}x${H}xbf16>, tensor<${KV}x${H}xbf16>) -> tensor<${T}x${KV}xbf16>
    %v = sim.matmul %n1, %wv {transpose_rhs} : (tensor<${T}x${H}xbf16>, tensor<${KV}x${H}xbf16>) -> tensor<${T}x${KV}xbf16>
    %q4 = sim.view %q : tensor<${T}x${Q}xbf16> -> tensor<1x${T}x${HQ}x${D}xbf16>
    %k4 = sim.view %k : tensor<${T}x${KV}xbf16> -> tensor<1x${T}x${HKV}x${D}xbf16>
    %v4 = sim.view %v : tensor<${T}x${KV}xbf16> -> tensor<1x${T}x${HKV}x${D}xbf16>
    %qr = sim.elementwise "rope" %q4 : tensor<1x${T}x${HQ}x${D}xbf16> -> tensor<1x${T}x${HQ}x${D}xbf16>
    %kr = sim.elementwise "rope" %k4 : tensor<1x${T}x${HKV}x${D}xbf16> -> tensor<1x${T}x${HKV}x${D}xbf16>
    %o4 = sim.attention %qr, %kr, %v4 {causal} : (tensor<1x${T}x${HQ}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>) -> tensor<1x${T}x${HQ}x${D}xbf16>
    %o = sim.view %o4 : tensor<1x${T}x${HQ}x${D}xbf16> -> tensor<${T}x${Q}xbf16>
    %p = sim.matmul %o, %wo {transpose_rhs} : (tensor<${T}x${Q}xbf16>, tensor<${H}x${Q}xbf16>) -> tensor<${T}x${H}xbf16>
    %h1 = sim.elementwise "add" %x, %p : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    %n2 = sim.norm "rms" %h1, %wn2 : tensor<${T}x${H}xbf16>, tensor<${H}xbf16>
    %g = sim.matmul %n2, %wg {transpose_rhs} : (tensor<${T}x${H}xbf16>, tensor<${F}x${H}xbf16>) -> tensor<${T}x${F}xbf16>
    %u = sim.matmul %n2, %wu {transpose_rhs} : (tensor<${T}x${H}xbf16>, tensor<${F}x${H}xbf16>) -> tensor<${T}x${F}xbf16>
    %gs = sim.elementwise "silu" %g : tensor<${T}x${F}xbf16> -> tensor<${T}x${F}xbf16>
    %m = sim.elementwise "mul" %gs, %u : tensor<${T}x${F}xbf16>, tensor<${T}x${F}xbf16> -> tensor<${T}x${F}xbf16>
    %d = sim.matmul %m, %wd {transpose_rhs} : (tensor<${T}x${F}xbf16>, tensor<${H}x${F}xbf16>) -> tensor<${T}x${H}xbf16>
    %out = sim.elementwise "add" %h1, %d : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    sim.yield %n1, %qr, %kr, %v4, %o4, %o, %h1, %n2, %g, %u, %m, %out : tensor<${T}x${H}xbf16>, tensor<1x${T}x${HQ}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>, tensor<1x${T}x${HQ}x${D}xbf16>, tensor<${T}x${Q}xbf16>, tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16>, tensor<${T}x${F}xbf16>, tensor<${T}x${F}xbf16>, tensor<${T}x${F}xbf16>, tensor<${T}x${H}xbf16>
  }

  %b:9 = sim.phase "backward" -> tensor<${H}xbf16>, tensor<${Q}x${H}xbf16>, tensor<${KV}x${H}xbf16>, tensor<${KV}x${H}xbf16>, tensor<${H}x${Q}xbf16>, tensor<${H}xbf16>, tensor<${F}x${H}xbf16>, tensor<${F}x${H}xbf16>, tensor<${H}x${F}xbf16> {
    %dy = sim.elementwise "fill" %f#11 : tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    %dm = sim.matmul %dy, %wd : (tensor<${T}x${H}xbf16>, tensor<${H}x${F}xbf16>) -> tensor<${T}x${F}xbf16>
    %dwd = sim.matmul %dy, %f#10 {transpose_lhs} : (tensor<${T}x${H}xbf16>, tensor<${T}x${F}xbf16>) -> tensor<${H}x${F}xbf16>
    %du = sim.elementwise "mul" %dm, %f#8 : tensor<${T}x${F}xbf16>, tensor<${T}x${F}xbf16> -> tensor<${T}x${F}xbf16>
    %dgs = sim.elementwise "mul" %dm, %f#9 : tensor<${T}x${F}xbf16>, tensor<${T}x${F}xbf16> -> tensor<${T}x${F}xbf16>
    %dg = sim.elementwise "silu_grad" %dgs, %f#8 : tensor<${T}x${F}xbf16>, tensor<${T}x${F}xbf16> -> tensor<${T}x${F}xbf16>
    %dna = sim.matmul %dg, %wg : (tensor<${T}x${F}xbf16>, tensor<${F}x${H}xbf16>) -> tensor<${T}x${H}xbf16>
    %dnb = sim.matmul %du, %wu : (tensor<${T}x${F}xbf16>, tensor<${F}x${H}xbf16>) -> tensor<${T}x${H}xbf16>
    %dwg = sim.matmul %dg, %f#7 {transpose_lhs} : (tensor<${T}x${F}xbf16>, tensor<${T}x${H}xbf16>) -> tensor<${F}x${H}xbf16>
    %dwu = sim.matmul %du, %f#7 {transpose_lhs} : (tensor<${T}x${F}xbf16>, tensor<${T}x${H}xbf16>) -> tensor<${F}x${H}xbf16>
    %dn2 = sim.elementwise "add" %dna, %dnb : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    %t2 = sim.elementwise "mul" %dn2, %f#7 : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    %dwn2 = sim.reduce "sum" %t2 [0] : tensor<${T}x${H}xbf16> -> tensor<${H}xbf16>
    %dh1 = sim.elementwise "rms_norm_grad" %dn2, %f#6, %wn2 : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16>, tensor<${H}xbf16> -> tensor<${T}x${H}xbf16>
    %dh = sim.elementwise "add" %dh1, %dy : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    %do = sim.matmul %dh, %wo : (tensor<${T}x${H}xbf16>, tensor<${H}x${Q}xbf16>) -> tensor<${T}x${Q}xbf16>
    %dwo = sim.matmul %dh, %f#5 {transpose_lhs} : (tensor<${T}x${H}xbf16>, tensor<${T}x${Q}xbf16>) -> tensor<${H}x${Q}xbf16>
    %do4 = sim.view %do : tensor<${T}x${Q}xbf16> -> tensor<1x${T}x${HQ}x${D}xbf16>
    %dq4, %dk4, %dv4 = sim.attention_grad %f#1, %f#2, %f#3, %f#4, %do4 {causal} : (tensor<1x${T}x${HQ}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>, tensor<1x${T}x${HQ}x${D}xbf16>, tensor<1x${T}x${HQ}x${D}xbf16>) -> (tensor<1x${T}x${HQ}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>, tensor<1x${T}x${HKV}x${D}xbf16>)
    %dq = sim.view %dq4 : tensor<1x${T}x${HQ}x${D}xbf16> -> tensor<${T}x${Q}xbf16>
    %dk = sim.view %dk4 : tensor<1x${T}x${HKV}x${D}xbf16> -> tensor<${T}x${KV}xbf16>
    %dv = sim.view %dv4 : tensor<1x${T}x${HKV}x${D}xbf16> -> tensor<${T}x${KV}xbf16>
    %dxq = sim.matmul %dq, %wq : (tensor<${T}x${Q}xbf16>, tensor<${Q}x${H}xbf16>) -> tensor<${T}x${H}xbf16>
    %dxk = sim.matmul %dk, %wk : (tensor<${T}x${KV}xbf16>, tensor<${KV}x${H}xbf16>) -> tensor<${T}x${H}xbf16>
    %dxv = sim.matmul %dv, %wv : (tensor<${T}x${KV}xbf16>, tensor<${KV}x${H}xbf16>) -> tensor<${T}x${H}xbf16>
    %dwq = sim.matmul %dq, %f#0 {transpose_lhs} : (tensor<${T}x${Q}xbf16>, tensor<${T}x${H}xbf16>) -> tensor<${Q}x${H}xbf16>
    %dwk = sim.matmul %dk, %f#0 {transpose_lhs} : (tensor<${T}x${KV}xbf16>, tensor<${T}x${H}xbf16>) -> tensor<${KV}x${H}xbf16>
    %dwv = sim.matmul %dv, %f#0 {transpose_lhs} : (tensor<${T}x${KV}xbf16>, tensor<${T}x${H}xbf16>) -> tensor<${KV}x${H}xbf16>
    %dn1 = sim.elementwise "add" %dxq, %dxk, %dxv : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    %t1 = sim.elementwise "mul" %dn1, %f#0 : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    %dwn1 = sim.reduce "sum" %t1 [0] : tensor<${T}x${H}xbf16> -> tensor<${H}xbf16>
    %dx1 = sim.elementwise "rms_norm_grad" %dn1, %x, %wn1 : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16>, tensor<${H}xbf16> -> tensor<${T}x${H}xbf16>
    %dx = sim.elementwise "add" %dx1, %dh : tensor<${T}x${H}xbf16>, tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    sim.yield %dwn1, %dwq, %dwk, %dwv, %dwo, %dwn2, %dwg, %dwu, %dwd : tensor<${H}xbf16>, tensor<${Q}x${H}xbf16>, tensor<${KV}x${H}xbf16>, tensor<${KV}x${H}xbf16>, tensor<${H}x${Q}xbf16>, tensor<${H}xbf16>, tensor<${F}x${H}xbf16>, tensor<${F}x${H}xbf16>, tensor<${H}x${F}xbf16>
  }

  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%wn1, %wq, %wk, %wv, %wo, %wn2, %wg, %wu, %wd : tensor<${H}xbf16>, tensor<${Q}x${H}xbf16>, tensor<${KV}x${H}xbf16>, tensor<${KV}x${H}xbf16>, tensor<${H}x${Q}xbf16>, tensor<${H}xbf16>, tensor<${F}x${H}xbf16>, tensor<${F}x${H}xbf16>, tensor<${H}x${F}xbf16>) grads (%b#0, %b#1, %b#2, %b#3, %b#4, %b#5, %b#6, %b#7, %b#8 : tensor<${H}xbf16>, tensor<${Q}x${H}xbf16>, tensor<${KV}x${H}xbf16>, tensor<${KV}x${H}xbf16>, tensor<${H}x${Q}xbf16>, tensor<${H}xbf16>, tensor<${F}x${H}xbf16>, tensor<${F}x${H}xbf16>, tensor<${H}x${F}xbf16>)
    sim.yield
  }
}
"""
)


def llama_layer(tokens: int, hidden: int, heads: int, kv_heads: int, head_dim: int, ffn: int) -> str:
    return LLAMA_LAYER.substitute(
        T=tokens, H=hidden, HQ=heads, HKV=kv_heads, D=head_dim, Q=heads * head_dim,
        KV=kv_heads * head_dim, F=ffn,
    )


MOE_LAYER = Template(
    """\
builtin.module {
  %x = sim.input "hidden" : tensor<${T}x${H}xbf16>
  %wr = sim.param "mlp.gate.weight" {role = #sim.role<router>} : tensor<${E}x${H}xbf16>
  %wgu = sim.param "mlp.experts.gate_up_proj" {role = #sim.role<expert>, split = #sim.split<column>} : tensor<${E}x${F2}x${H}xbf16>
  %wd = sim.param "mlp.experts.down_proj" {role = #sim.role<expert>, split = #sim.split<row>} : tensor<${E}x${H}x${F}xbf16>
  %f:9 = sim.phase "forward" -> tensor<${T}x${K}xbf16>, tensor<${T}x${K}xi64>, tensor<${E}x${C}x${H}xbf16>, tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${H}xbf16>, tensor<${T}x${H}xbf16> {
    %s = sim.matmul %x, %wr {transpose_rhs} : (tensor<${T}x${H}xbf16>, tensor<${E}x${H}xbf16>) -> tensor<${T}x${E}xbf16>
    %p = sim.softmax %s dim 1 : tensor<${T}x${E}xbf16>
    %w, %i = sim.topk %p k = ${K} : tensor<${T}x${E}xbf16> -> (tensor<${T}x${K}xbf16>, tensor<${T}x${K}xi64>)
    %xd = sim.moe_dispatch %x, %i : (tensor<${T}x${H}xbf16>, tensor<${T}x${K}xi64>) -> tensor<${E}x${C}x${H}xbf16>
    %gu = sim.matmul %xd, %wgu {transpose_rhs} : (tensor<${E}x${C}x${H}xbf16>, tensor<${E}x${F2}x${H}xbf16>) -> tensor<${E}x${C}x${F2}xbf16>
    %g = sim.generic "aten.split"(%gu) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<${E}x${C}x${F2}xbf16>) -> tensor<${E}x${C}x${F}xbf16>
    %u = sim.generic "aten.split"(%gu) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<${E}x${C}x${F2}xbf16>) -> tensor<${E}x${C}x${F}xbf16>
    %a = sim.elementwise "silu" %g : tensor<${E}x${C}x${F}xbf16> -> tensor<${E}x${C}x${F}xbf16>
    %m = sim.elementwise "mul" %a, %u : tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16> -> tensor<${E}x${C}x${F}xbf16>
    %y = sim.matmul %m, %wd {transpose_rhs} : (tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${H}x${F}xbf16>) -> tensor<${E}x${C}x${H}xbf16>
    %out = sim.moe_combine %y, %i weights %w : tensor<${T}x${K}xbf16> : (tensor<${E}x${C}x${H}xbf16>, tensor<${T}x${K}xi64>) -> tensor<${T}x${H}xbf16>
    sim.yield %w, %i, %xd, %g, %u, %a, %m, %y, %out : tensor<${T}x${K}xbf16>, tensor<${T}x${K}xi64>, tensor<${E}x${C}x${H}xbf16>, tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${H}xbf16>, tensor<${T}x${H}xbf16>
  }
  %b:3 = sim.phase "backward" -> tensor<${E}x${F2}x${H}xbf16>, tensor<${E}x${H}x${F}xbf16>, tensor<${T}x${H}xbf16> {
    %dy = sim.elementwise "fill" %f#8 : tensor<${T}x${H}xbf16> -> tensor<${T}x${H}xbf16>
    %dye = sim.moe_dispatch %dy, %f#1 : (tensor<${T}x${H}xbf16>, tensor<${T}x${K}xi64>) -> tensor<${E}x${C}x${H}xbf16>
    %dw = sim.generic "moe_combine_weight_grad"(%f#7, %dy, %f#1) {flop_count = ${WG} : f64, byte_count = 0.0 : f64} : (tensor<${E}x${C}x${H}xbf16>, tensor<${T}x${H}xbf16>, tensor<${T}x${K}xi64>) -> tensor<${T}x${K}xbf16>
    %dwd = sim.matmul %dye, %f#6 {transpose_lhs} : (tensor<${E}x${C}x${H}xbf16>, tensor<${E}x${C}x${F}xbf16>) -> tensor<${E}x${H}x${F}xbf16>
    %dm = sim.matmul %dye, %wd : (tensor<${E}x${C}x${H}xbf16>, tensor<${E}x${H}x${F}xbf16>) -> tensor<${E}x${C}x${F}xbf16>
    %da = sim.elementwise "mul" %dm, %f#4 : tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16> -> tensor<${E}x${C}x${F}xbf16>
    %du = sim.elementwise "mul" %dm, %f#5 : tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16> -> tensor<${E}x${C}x${F}xbf16>
    %dg = sim.elementwise "silu_grad" %da, %f#3 : tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16> -> tensor<${E}x${C}x${F}xbf16>
    %dgu = sim.generic "aten.cat"(%dg, %du) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<${E}x${C}x${F}xbf16>, tensor<${E}x${C}x${F}xbf16>) -> tensor<${E}x${C}x${F2}xbf16>
    %dwgu = sim.matmul %dgu, %f#2 {transpose_lhs} : (tensor<${E}x${C}x${F2}xbf16>, tensor<${E}x${C}x${H}xbf16>) -> tensor<${E}x${F2}x${H}xbf16>
    %dxd = sim.matmul %dgu, %wgu : (tensor<${E}x${C}x${F2}xbf16>, tensor<${E}x${F2}x${H}xbf16>) -> tensor<${E}x${C}x${H}xbf16>
    %dx = sim.moe_combine %dxd, %f#1 : (tensor<${E}x${C}x${H}xbf16>, tensor<${T}x${K}xi64>) -> tensor<${T}x${H}xbf16>
    sim.yield %dwgu, %dwd, %dx : tensor<${E}x${F2}x${H}xbf16>, tensor<${E}x${H}x${F}xbf16>, tensor<${T}x${H}xbf16>
  }
  sim.phase "optimizer" {
    sim.optimizer_step "adamw" (%wgu, %wd : tensor<${E}x${F2}x${H}xbf16>, tensor<${E}x${H}x${F}xbf16>) grads (%b#0, %b#1 : tensor<${E}x${F2}x${H}xbf16>, tensor<${E}x${H}x${F}xbf16>)
    sim.yield
  }
}
"""
)


def moe_layer(tokens: int, hidden: int, experts: int, top_k: int, ffn: int) -> str:
    """The routed-experts MLP of an MoE layer (router, top-k, dispatch, gated
    experts, combine), forward and backward, with balanced routing: each expert
    gets tokens * top_k / experts rows (rounded up)."""
    capacity = -(-tokens * top_k // experts)
    return MOE_LAYER.substitute(
        T=tokens, H=hidden, E=experts, K=top_k, F=ffn, F2=2 * ffn, C=capacity,
        WG=float(2 * tokens * top_k * hidden),
    )


def parse(text: str) -> ModuleOp:
    return parse_module(text, make_context())


def apply_pipeline(module: ModuleOp, pipeline: str) -> ModuleOp:
    """Run a pass pipeline (`shard-tensor{tp=2},sequence-parallel`) on `module` in
    place, as charon-opt would, and verify the result."""
    PassPipeline.parse_spec(dict(ALL_PASSES), pipeline).apply(make_context(), module)
    module.verify()
    return module
