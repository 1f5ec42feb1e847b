"""A reference GPT step, written in the sim dialect, that saves exactly what
Megatron-LM saves for its backward (Korthikanti et al. 2022, section 4.1):
LayerNorm inputs, the QKV input, Q/K/V, the softmax output, the attention dropout
mask and output (a `sim.attention {sim.dropout}`), the projection input, two dropout
masks (1 byte per element), the MLP input, the GeLU input and output.

With `tp > 1` the weights are Megatron's column/row splits; with `sp` the
LayerNorm and dropout region is split on the sequence and each LayerNorm output
is all-gathered before its matmul (the backward gathers the saved shard again),
as Megatron's sequence parallelism does.

It is the reference the memory analysis is checked against (Korthikanti's
formulas, `GptShape.per_layer_formula`) and a small realistic input for the
recompute and memory passes:

    from charon_ir.memory.megatron_reference import GptShape, gpt_step
    print(gpt_step(GptShape(s=2048, b=1, h=4096, a=32, layers=4)))
"""

from __future__ import annotations

from dataclasses import dataclass

from charon_ir.dialects.sim import RecomputePolicy
from charon_ir.testing import parse_module


@dataclass(frozen=True)
class GptShape:
    s: int = 256
    b: int = 2
    h: int = 512
    a: int = 8
    layers: int = 4
    tp: int = 1
    sp: bool = False

    def per_layer_formula(self, policy: str) -> float:
        """Korthikanti's activation bytes per layer (eqs. 1-5)."""
        s, b, h, a, t = self.s, self.b, self.h, self.a, self.tp
        sbh = s * b * h
        if policy == RecomputePolicy.FULL:
            return 2 * sbh / (t if self.sp else 1)
        attention_core = 0 if policy == RecomputePolicy.SELECTIVE else 5 * a * s / h
        if self.sp or t == 1:
            return sbh * (34 + attention_core) / t
        return sbh * (10 + 24 / t + attention_core / t)


def gpt_step(shape: GptShape) -> str:
    s, b, h, a, t, n = shape.s, shape.b, shape.h, shape.a, shape.tp, shape.layers
    d = h // a
    sl = s // t if shape.sp else s
    X = f"tensor<{b}x{sl}x{h}xbf16>"
    XF = f"tensor<{b}x{s}x{h}xbf16>"
    M = f"tensor<{b}x{sl}x{h}xi8>"
    QKV = f"tensor<{b}x{s}x{3 * h // t}xbf16>"
    HD = f"tensor<{b}x{s}x{a // t}x{d}xbf16>"
    AO = f"tensor<{b}x{s}x{h // t}xbf16>"
    F1 = f"tensor<{b}x{s}x{4 * h // t}xbf16>"
    LN = f"tensor<{h}xbf16>"
    WQKV, WO = f"tensor<{h}x{3 * h // t}xbf16>", f"tensor<{h // t}x{h}xbf16>"
    W1, W2 = f"tensor<{h}x{4 * h // t}xbf16>", f"tensor<{4 * h // t}x{h}xbf16>"

    def stacked(t_: str) -> str:
        return t_.replace("tensor<", f"tensor<{n}x")

    def gen(callee: str, ins: str, in_types: str, out_types: str, flops: float = 0.0, bytes_: float = 1.0) -> str:
        return (
            f'sim.generic "{callee}"({ins}) {{flop_count = {flops} : f64, byte_count = {bytes_} : f64}}'
            f" : ({in_types}) -> {out_types}"
        )

    def gather(v: str) -> str:
        if not shape.sp:
            return f"%{v}f = sim.view %{v} : {X} -> {XF}"
        return f'%{v}f = coll.all_gather %{v} on @mesh ["tp"] axis 1 : {X} -> {XF}'

    def reduce(v: str, out: str) -> str:
        if shape.sp:
            return f'%{out} = coll.reduce_scatter %{v} on @mesh ["tp"] axis 1 : {XF} -> {X}'
        if t > 1:
            return f'%{out} = coll.all_reduce %{v} on @mesh ["tp"] : {XF}'
        return f"%{out} = sim.view %{v} : {XF} -> {X}"

    def wgrad(lhs: str, lt: str, rhs: str, rt: str, out: str, m: int, k: int) -> list[str]:
        return [
            f"%{out}b = sim.matmul %{lhs}, %{rhs} {{transpose_lhs}} : ({lt}, {rt}) -> tensor<{b}x{m}x{k}xbf16>",
            f"%{out} = sim.reduce \"sum\" %{out}b [0] : tensor<{b}x{m}x{k}xbf16> -> tensor<{m}x{k}xbf16>",
        ]

    saved = ["x", "n1", "q", "k", "v", "att", "m1", "x1", "n2", "f1", "gl", "m2"]
    saved_types = [X, X, HD, HD, HD, HD, M, X, X, F1, F1, M]
    weights = [LN, WQKV, WO, LN, W1, W2]
    forward = [
        f'%n1 = sim.norm "layer" %x, %ln1 : {X}, {LN}',
        gather("n1"),
        f"%qkv = sim.matmul %n1f, %wqkv : ({XF}, {WQKV}) -> {QKV}",
        *(f"%{v} = " + gen("aten.split", "%qkv", QKV, HD, bytes_=0.0) for v in "qkv"),
        f"%att = sim.attention %q, %k, %v {{causal, sim.dropout}} : ({HD}, {HD}, {HD}) -> {HD}",
        f"%ao = sim.view %att : {HD} -> {AO}",
        f"%po = sim.matmul %ao, %wo : ({AO}, {WO}) -> {XF}",
        reduce("po", "pr"),
        "%m1 = " + gen("bernoulli", "%pr", X, M),
        f'%d1 = sim.elementwise "dropout" %pr, %m1 : {X}, {M} -> {X}',
        f'%x1 = sim.elementwise "add" %x, %d1 : {X}, {X} -> {X}',
        f'%n2 = sim.norm "layer" %x1, %ln2 : {X}, {LN}',
        gather("n2"),
        f"%f1 = sim.matmul %n2f, %w1 : ({XF}, {W1}) -> {F1}",
        f'%gl = sim.elementwise "gelu" %f1 : {F1} -> {F1}',
        f"%f2 = sim.matmul %gl, %w2 : ({F1}, {W2}) -> {XF}",
        reduce("f2", "f2r"),
        "%m2 = " + gen("bernoulli", "%f2r", X, M),
        f'%d2 = sim.elementwise "dropout" %f2r, %m2 : {X}, {M} -> {X}',
        f'%x2 = sim.elementwise "add" %x1, %d2 : {X}, {X} -> {X}',
        f"sim.yield %x2, {', '.join('%' + v for v in saved)} : {X}, {', '.join(saved_types)}",
    ]
    backward = [
        f'%gd2 = sim.elementwise "mul" %g, %m2 : {X}, {M} -> {X}',
        gather("gd2"),
        f"%dgl = sim.matmul %gd2f, %w2 {{transpose_rhs}} : ({XF}, {W2}) -> {F1}",
        *wgrad("gl", F1, "gd2f", XF, "dw2", 4 * h // t, h),
        f'%df1 = sim.elementwise "gelu_grad" %dgl, %f1 : {F1}, {F1} -> {F1}',
        gather("n2"),
        *wgrad("n2f", XF, "df1", F1, "dw1", h, 4 * h // t),
        f"%dn2 = sim.matmul %df1, %w1 {{transpose_rhs}} : ({F1}, {W1}) -> {XF}",
        reduce("dn2", "dn2r"),
        "%dx1n, %dln2 = " + gen("layer_norm_backward", "%dn2r, %x1, %ln2", f"{X}, {X}, {LN}", f"({X}, {LN})"),
        f'%gx1 = sim.elementwise "add" %g, %dx1n : {X}, {X} -> {X}',
        f'%gd1 = sim.elementwise "mul" %gx1, %m1 : {X}, {M} -> {X}',
        gather("gd1"),
        f"%dao = sim.matmul %gd1f, %wo {{transpose_rhs}} : ({XF}, {WO}) -> {AO}",
        f"%aov = sim.view %att : {HD} -> {AO}",
        *wgrad("aov", AO, "gd1f", XF, "dwo", h // t, h),
        f"%datt = sim.view %dao : {AO} -> {HD}",
        f"%dq, %dk, %dv = sim.attention_grad %q, %k, %v, %att, %datt {{causal}} : "
        f"({HD}, {HD}, {HD}, {HD}, {HD}) -> ({HD}, {HD}, {HD})",
        "%dqkv = " + gen("aten.cat", "%dq, %dk, %dv", f"{HD}, {HD}, {HD}", QKV),
        gather("n1"),
        *wgrad("n1f", XF, "dqkv", QKV, "dwqkv", h, 3 * h // t),
        f"%dn1 = sim.matmul %dqkv, %wqkv {{transpose_rhs}} : ({QKV}, {WQKV}) -> {XF}",
        reduce("dn1", "dn1r"),
        "%dxn, %dln1 = " + gen("layer_norm_backward", "%dn1r, %x, %ln1", f"{X}, {X}, {LN}", f"({X}, {LN})"),
        f'%gx = sim.elementwise "add" %gx1, %dxn : {X}, {X} -> {X}',
        f"sim.yield %gx, %dln1, %dwqkv, %dwo, %dln2, %dw1, %dw2 : {X}, {', '.join(weights)}",
    ]
    wnames = ["ln1", "wqkv", "wo", "ln2", "w1", "w2"]
    params = [f'  %p_{w} = sim.param "layers.{w}" : {stacked(ty)}' for w, ty in zip(wnames, weights)]
    stacked_saved = ", ".join(stacked(ty) for ty in saved_types)
    grid = f'  coll.grid @mesh(axes = ["tp"], shape = {t})' if t > 1 else ""
    p_args = ", ".join(f"%p_{w}" for w in wnames)
    p_types = ", ".join(stacked(ty) for ty in weights)
    f_args = ", ".join(f"%{w}: {ty}" for w, ty in zip(wnames, weights))
    fr = ", ".join(f"%f#{i}" for i in range(1, 13))
    body_f = "\n".join("      " + line for line in forward)
    body_b = "\n".join("      " + line for line in backward)
    grads_t = ", ".join(stacked(ty) for ty in weights)
    return f"""builtin.module {{
{grid}
  %x0 = sim.input "hidden" : {X}
  %gin = sim.input "grad_hidden" : {X}
{chr(10).join(params)}
  %f:13 = sim.phase "forward" -> {X}, {stacked_saved} {{
    %r:13 = sim.repeat {n} iter(%x0 : {X}) slices({p_args} : {p_types}) -> ({X}, {stacked_saved}) {{
    ^bb0(%x: {X}, {f_args}):
{body_f}
    }}
    sim.yield {", ".join(f"%r#{i}" for i in range(13))} : {X}, {stacked_saved}
  }}
  %bw:6 = sim.phase "backward" -> {grads_t} {{
    %rb:7 = sim.repeat {n} iter(%gin : {X}) slices({p_args}, {fr} : {p_types}, {stacked_saved}) {{reverse}} -> ({X}, {grads_t}) {{
    ^bb0(%g: {X}, {f_args}, {", ".join(f"%{v}: {ty}" for v, ty in zip(saved, saved_types))}):
{body_b}
    }}
    sim.yield {", ".join(f"%rb#{i}" for i in range(1, 7))} : {grads_t}
  }}
  sim.phase "optimizer" {{
    sim.optimizer_step "adamw"({p_args} : {p_types}) grads({", ".join(f"%bw#{i}" for i in range(6))} : {grads_t})
    sim.yield
  }}
}}
"""


def gpt_module(shape: GptShape):
    return parse_module(gpt_step(shape))
