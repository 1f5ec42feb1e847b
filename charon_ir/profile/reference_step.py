"""
One training step of a small Llama-like model as `sim` IR text: the ops a real
step runs (projections, RoPE, GQA attention, SwiGLU, RMSNorm, their gradients,
AdamW) with shapes small enough that profiling it on a CPU takes seconds. It is
what `charon profile` measures when given no ops, and a test input.

Activations are 2-D [tokens, hidden]; `sim.view` ops (free, never priced)
reshape them to and from 4-D attention operands.

    python -m charon_ir.profile.reference_step > examples/llama_tiny_step.mlir
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class LlamaShape:
    batch: int = 2
    seq: int = 256
    hidden: int = 256
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 688
    vocab: int = 1024
    layers: int = 2
    dtype: str = "bf16"

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim


class _Writer:
    def __init__(self, s: LlamaShape):
        self.s = s
        self.lines: list[str] = []
        self.indent = 0

    def t(self, *dims: int, dtype: str | None = None) -> str:
        return f"tensor<{'x'.join(map(str, dims))}x{dtype or self.s.dtype}>"

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def matmul(self, res, a, ta, b, tb, out, tl=False, tr=False) -> None:
        flags = [n for n, on in (("transpose_lhs", tl), ("transpose_rhs", tr)) if on]
        attrs = f" {{{', '.join(flags)}}}" if flags else ""
        self.emit(f"%{res} = sim.matmul %{a}, %{b}{attrs} : ({ta}, {tb}) -> {out}")

    def ew(self, res, kind, args, types, out) -> None:
        operands = ", ".join(f"%{a}" for a in args)
        self.emit(f'%{res} = sim.elementwise "{kind}" {operands} : {", ".join(types)} -> {out}')

    def view(self, res, src, ts, out) -> None:
        self.emit(f"%{res} = sim.view %{src} : {ts} -> {out}")

    def norm(self, res, x, w, tx, tw) -> None:
        self.emit(f'%{res} = sim.norm "rms" %{x}, %{w} : {tx}, {tw}')

    def norm_grad(self, p, dy, x, w, tx, tw, dx_in) -> str:
        """RMSNorm backward as the elementwise and reduction ops it decomposes into."""
        s = self.s
        col = self.t(s.tokens, 1)
        self.ew(f"{p}_t", "mul", [dy, w], [tx, tw], tx)
        self.ew(f"{p}_tx", "mul", [f"{p}_t", x], [tx, tx], tx)
        self.emit(f'%{p}_s = sim.reduce "mean" %{p}_tx [1] : {tx} -> {col}')
        self.ew(f"{p}_r", "mul", [x, f"{p}_s"], [tx, col], tx)
        self.ew(f"{p}_d", "sub", [f"{p}_t", f"{p}_r"], [tx, tx], tx)
        self.ew(f"{p}_dx", "add", [dx_in, f"{p}_d"], [tx, tx], tx)
        return f"{p}_dx"


def llama_step_mlir(s: LlamaShape = LlamaShape()) -> str:
    w = _Writer(s)
    T, H, Q, KV, F, V, L = s.tokens, s.hidden, s.hidden, s.kv_dim, s.ffn, s.vocab, s.layers
    act, kvt, fft, vec = w.t(T, H), w.t(T, KV), w.t(T, F), w.t(H)
    q4 = w.t(s.batch, s.seq, s.heads, s.head_dim)
    kv4 = w.t(s.batch, s.seq, s.kv_heads, s.head_dim)
    # per-layer weights, HF layout [out, in]; stacked with a leading layer dim
    weights = [
        ("ln1", (H,)), ("wq", (Q, H)), ("wk", (KV, H)), ("wv", (KV, H)), ("wo", (H, Q)),
        ("ln2", (H,)), ("wg", (F, H)), ("wu", (F, H)), ("wd", (H, F)),
    ]
    wt = {n: w.t(*d) for n, d in weights}
    stacked = {n: w.t(L, *d) for n, d in weights}
    saved = [
        ("x", act), ("n1", act), ("q4", q4), ("k4", kv4), ("v4", kv4), ("a4", q4),
        ("a", act), ("x1", act), ("n2", act), ("g", fft), ("u", fft), ("sg", fft), ("m", fft),
    ]
    saved_stacked = [w.t(L, *_dims(t)) for _, t in saved]

    w.emit("builtin.module {")
    w.indent += 1
    w.emit(f'%tokens = sim.input "tokens" {{tokens}} : {w.t(T, dtype="i64")}')
    w.emit(f'%embed = sim.param "embed" : {w.t(V, H)}')
    w.emit(f'%head = sim.param "head" : {w.t(V, H)}')
    w.emit(f'%ln_f = sim.param "ln_f" : {vec}')
    w.emit(f'%cos = sim.input "rope_cos" : {act}')
    w.emit(f'%sin = sim.input "rope_sin" : {act}')
    w.emit(f'%cos_kv = sim.input "rope_cos_kv" : {kvt}')
    w.emit(f'%sin_kv = sim.input "rope_sin_kv" : {kvt}')
    w.emit(f'%onehot = sim.input "labels_onehot" : {w.t(T, V)}')
    for n, _ in weights:
        w.emit(f'%{n} = sim.param "layers.{n}" {{stacked}} : {stacked[n]}')

    # ---- forward
    fwd_types = [act, w.t(T, V), w.t(T, H), *saved_stacked]
    w.emit(f'%fwd:{len(fwd_types)} = sim.phase "forward" -> {", ".join(fwd_types)} {{')
    w.indent += 1
    w.emit(f"%x0 = sim.embedding %embed, %tokens : ({w.t(V, H)}, {w.t(T, dtype='i64')}) -> {act}")
    w.emit(
        f"%layers:{1 + len(saved)} = sim.repeat {L} iter(%x0 : {act}) "
        f"slices({', '.join('%' + n for n, _ in weights)} : {', '.join(stacked[n] for n, _ in weights)}) "
        f"-> ({', '.join([act, *saved_stacked])}) {{"
    )
    w.indent += 1
    w.emit(f"^bb0(%x: {act}, {', '.join(f'%{n}_i: {wt[n]}' for n, _ in weights)}):")
    w.norm("n1", "x", "ln1_i", act, vec)
    w.matmul("q", "n1", act, "wq_i", wt["wq"], act, tr=True)
    w.matmul("k", "n1", act, "wk_i", wt["wk"], kvt, tr=True)
    w.matmul("v", "n1", act, "wv_i", wt["wv"], kvt, tr=True)
    for p, typ, cos, sin in (("q", act, "cos", "sin"), ("k", kvt, "cos_kv", "sin_kv")):
        w.ew(f"{p}c", "mul", [p, cos], [typ, typ], typ)
        w.ew(f"{p}s", "mul", [p, sin], [typ, typ], typ)
        w.ew(f"{p}r", "add", [f"{p}c", f"{p}s"], [typ, typ], typ)
    w.view("q4", "qr", act, q4)
    w.view("k4", "kr", kvt, kv4)
    w.view("v4", "v", kvt, kv4)
    w.emit(f"%a4 = sim.attention %q4, %k4, %v4 {{causal, flash}} : ({q4}, {kv4}, {kv4}) -> {q4}")
    w.view("a", "a4", q4, act)
    w.matmul("o", "a", act, "wo_i", wt["wo"], act, tr=True)
    w.ew("x1", "add", ["x", "o"], [act, act], act)
    w.norm("n2", "x1", "ln2_i", act, vec)
    w.matmul("g", "n2", act, "wg_i", wt["wg"], fft, tr=True)
    w.matmul("u", "n2", act, "wu_i", wt["wu"], fft, tr=True)
    w.ew("sg", "silu", ["g"], [fft], fft)
    w.ew("m", "mul", ["sg", "u"], [fft, fft], fft)
    w.matmul("d", "m", fft, "wd_i", wt["wd"], act, tr=True)
    w.ew("x2", "add", ["x1", "d"], [act, act], act)
    w.emit(f"sim.yield %x2, {', '.join('%' + n for n, _ in saved)} : {', '.join([act] + [t for _, t in saved])}")
    w.indent -= 1
    w.emit("}")
    w.norm("hn", "layers#0", "ln_f", act, vec)
    w.matmul("logits", "hn", act, "head", w.t(V, H), w.t(T, V), tr=True)
    w.emit(f"%probs = sim.softmax %logits dim 1 : {w.t(T, V)}")
    w.emit(
        f"sim.yield %layers#0, %probs, %hn, "
        f"{', '.join(f'%layers#{i + 1}' for i in range(len(saved)))} : {', '.join(fwd_types)}"
    )
    w.indent -= 1
    w.emit("}")

    # ---- backward
    grad_types = [stacked[n] for n, _ in weights]
    bwd_types = [w.t(V, H), *grad_types]
    w.emit(f'%bwd:{len(bwd_types)} = sim.phase "backward" -> {", ".join(bwd_types)} {{')
    w.indent += 1
    w.ew("dlogits", "sub", ["fwd#1", "onehot"], [w.t(T, V), w.t(T, V)], w.t(T, V))
    w.matmul("dhead", "dlogits", w.t(T, V), "fwd#2", act, w.t(V, H), tl=True)
    w.matmul("dhn", "dlogits", w.t(T, V), "head", w.t(V, H), act)
    w.norm_grad("nf", "dhn", "fwd#0", "ln_f", act, vec, "dhn")
    saved_ops = [f"%fwd#{3 + i}" for i in range(len(saved))]
    w.emit(
        f"%grads:{1 + len(weights)} = sim.repeat {L} iter(%nf_dx : {act}) "
        f"slices({', '.join(['%' + n for n, _ in weights] + saved_ops)} : "
        f"{', '.join([stacked[n] for n, _ in weights] + saved_stacked)}) "
        f"{{reverse}} -> ({', '.join([act, *grad_types])}) {{"
    )
    w.indent += 1
    args = [f"%dx: {act}"] + [f"%{n}_i: {wt[n]}" for n, _ in weights]
    args += [f"%{n}_s: {t}" for n, t in saved]
    w.emit(f"^bb0({', '.join(args)}):")
    # SwiGLU MLP
    w.matmul("dwd", "dx", act, "m_s", fft, wt["wd"], tl=True)
    w.matmul("dm", "dx", act, "wd_i", wt["wd"], fft)
    w.ew("dsg", "mul", ["dm", "u_s"], [fft, fft], fft)
    w.ew("du", "mul", ["dm", "sg_s"], [fft, fft], fft)
    w.emit(f'%dg = sim.elementwise "silu_grad" %dsg, %g_s : {fft}, {fft} -> {fft}')
    w.matmul("dwg", "dg", fft, "n2_s", act, wt["wg"], tl=True)
    w.matmul("dwu", "du", fft, "n2_s", act, wt["wu"], tl=True)
    w.matmul("dn2g", "dg", fft, "wg_i", wt["wg"], act)
    w.matmul("dn2u", "du", fft, "wu_i", wt["wu"], act)
    w.ew("dn2", "add", ["dn2g", "dn2u"], [act, act], act)
    dx1 = w.norm_grad("ln2g", "dn2", "x1_s", "ln2_i", act, vec, "dx")
    # attention
    w.matmul("dwo", dx1, act, "a_s", act, wt["wo"], tl=True)
    w.matmul("da", dx1, act, "wo_i", wt["wo"], act)
    w.view("da4", "da", act, q4)
    w.emit(
        f"%dq4, %dk4, %dv4 = sim.attention_grad %q4_s, %k4_s, %v4_s, %a4_s, %da4 {{causal, flash}} : "
        f"({q4}, {kv4}, {kv4}, {q4}, {q4}) -> ({q4}, {kv4}, {kv4})"
    )
    w.view("dqr", "dq4", q4, act)
    w.view("dkr", "dk4", kv4, kvt)
    w.view("dv", "dv4", kv4, kvt)
    for p, typ, cos, sin in (("q", act, "cos", "sin"), ("k", kvt, "cos_kv", "sin_kv")):
        w.ew(f"d{p}c", "mul", [f"d{p}r", cos], [typ, typ], typ)
        w.ew(f"d{p}s", "mul", [f"d{p}r", sin], [typ, typ], typ)
        w.ew(f"d{p}", "add", [f"d{p}c", f"d{p}s"], [typ, typ], typ)
    w.matmul("dwq", "dq", act, "n1_s", act, wt["wq"], tl=True)
    w.matmul("dwk", "dk", kvt, "n1_s", act, wt["wk"], tl=True)
    w.matmul("dwv", "dv", kvt, "n1_s", act, wt["wv"], tl=True)
    w.matmul("dn1q", "dq", act, "wq_i", wt["wq"], act)
    w.matmul("dn1k", "dk", kvt, "wk_i", wt["wk"], act)
    w.matmul("dn1v", "dv", kvt, "wv_i", wt["wv"], act)
    w.ew("dn1qk", "add", ["dn1q", "dn1k"], [act, act], act)
    w.ew("dn1", "add", ["dn1qk", "dn1v"], [act, act], act)
    dx0 = w.norm_grad("ln1g", "dn1", "x_s", "ln1_i", act, vec, dx1)
    # RMSNorm weight grads: sum over tokens of dy * x_hat
    for n, dy, x in (("dln2", "dn2", "n2_s"), ("dln1", "dn1", "n1_s")):
        w.ew(f"{n}_p", "mul", [dy, x], [act, act], act)
        w.emit(f'%{n} = sim.reduce "sum" %{n}_p [0] : {act} -> {vec}')
    grads = {"ln1": "dln1", "wq": "dwq", "wk": "dwk", "wv": "dwv", "wo": "dwo",
             "ln2": "dln2", "wg": "dwg", "wu": "dwu", "wd": "dwd"}
    w.emit(
        f"sim.yield %{dx0}, {', '.join('%' + grads[n] for n, _ in weights)} : "
        f"{', '.join([act] + [wt[n] for n, _ in weights])}"
    )
    w.indent -= 1
    w.emit("}")
    w.emit(
        f"sim.yield %dhead, {', '.join(f'%grads#{i + 1}' for i in range(len(weights)))} : "
        f"{', '.join(bwd_types)}"
    )
    w.indent -= 1
    w.emit("}")

    # ---- optimizer
    params = ["%head"] + ["%" + n for n, _ in weights]
    w.emit('sim.phase "optimizer" {')
    w.indent += 1
    w.emit(
        f'sim.optimizer_step "adamw" ({", ".join(params)} : {", ".join(bwd_types)}) '
        f'grads ({", ".join(f"%bwd#{i}" for i in range(len(bwd_types)))} : {", ".join(bwd_types)})'
    )
    w.emit("sim.yield")
    w.indent -= 1
    w.emit("}")
    w.indent -= 1
    w.emit("}")
    return "\n".join(w.lines) + "\n"


def _dims(tensor_type: str) -> list[int]:
    body = tensor_type.removeprefix("tensor<").removesuffix(">")
    return [int(d) for d in body.split("x")[:-1]]


if __name__ == "__main__":
    sys.stdout.write(llama_step_mlir())
