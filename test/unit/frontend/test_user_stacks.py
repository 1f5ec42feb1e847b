"""A user module's stack of layers is found, not assumed: the blocks of a
ModuleList (or Sequential) that chain become `sim.repeat`s, several where the
stack alternates, with the extra inputs every layer reads passed from the stem;
the FLOPs of every phase equal those of the module traced whole."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import charon_ir  # noqa: E402
from charon_ir.dialects import sim  # noqa: E402
from charon_ir.errors import CharonError  # noqa: E402
from charon_ir.frontend import import_model, param_count, parse_ir, phase_flops  # noqa: E402
from charon_ir.frontend import tracing  # noqa: E402


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class RopeBlock(nn.Module):
    """A Llama-style block that reads the rotary tables and a scale as extra inputs."""

    def __init__(self, d: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.norm2 = nn.RMSNorm(d)
        self.up = nn.Linear(d, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x, cos, sin, *, residual_scale: float = 1.0):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + residual_scale * self.o(y.transpose(1, 2).reshape(b, s, d))
        gate, up = self.up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class MlpOnlyBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm = nn.RMSNorm(d)
        self.fc = nn.Linear(d, d)

    def forward(self, x, cos, sin, *, residual_scale: float = 1.0):
        return x + self.fc(self.norm(x))


class RopeLM(nn.Module):
    def __init__(self, vocab=256, d=64, heads=4, ffn=128, layers=4, alternate=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(
            MlpOnlyBlock(d) if alternate and i % 2 else RopeBlock(d, heads, ffn) for i in range(layers)
        )
        self.norm = nn.RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, d // heads, 2).float() / (d // heads)))

    def forward(self, ids):
        t = torch.arange(ids.shape[1], dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(self.embed.weight.dtype), emb.sin().to(self.embed.weight.dtype)
        h = self.embed(ids)
        for layer in self.layers:
            h = layer(h, cos, sin, residual_scale=0.5)
        return self.lm_head(self.norm(h))


class Parallel(nn.Module):
    """Its ModuleList's blocks read the same input, not each other's outputs: no stack."""

    def __init__(self, vocab=64, d=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.branches = nn.ModuleList(nn.Linear(d, d) for _ in range(3))
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.embed(ids)
        return self.head(sum(b(h) for b in self.branches))


def whole(monkeypatch, model, **kw):
    """The module traced as one stem (stack discovery off)."""
    with monkeypatch.context() as m:
        m.setattr(tracing, "find_layer_stack", lambda *a: None)
        return import_model(model, **kw)


def repeats(module):
    fwd = next(op for op in module.body.block.ops if isinstance(op, sim.PhaseOp) and op.kind.data in ("forward", "prefill", "decode"))
    return [op for op in fwd.body.block.ops if isinstance(op, sim.RepeatOp)]


@pytest.mark.parametrize("mode", ["train", "prefill", "decode"])
def test_a_stack_with_extra_inputs_is_found_and_keeps_every_flop(monkeypatch, mode):
    model = RopeLM()
    found = import_model(model, seq_len=32, batch=2, mode=mode)
    assert [r.count.value.data for r in repeats(found)] == [4]
    assert param_count(found) == sum(p.numel() for p in model.parameters())
    traced_whole = whole(monkeypatch, model, seq_len=32, batch=2, mode=mode)
    if mode == "train":
        for phase in ("forward", "backward", "optimizer"):
            assert phase_flops(found, phase) == pytest.approx(phase_flops(traced_whole, phase), rel=1e-12), phase
    else:
        # serving heads see the last token only, as the HF families' do: the
        # whole-module trace computed logits for every prompt token
        dropped = 0 if mode == "decode" else 2 * (32 - 1)
        head = 2 * 64 * 256 * dropped
        assert phase_flops(found, mode, sim.MatmulOp) == phase_flops(traced_whole, mode, sim.MatmulOp) - head
    parse_ir(str(found)).verify()


def test_an_alternating_stack_is_one_repeat_of_its_period(monkeypatch):
    model = RopeLM(layers=6, alternate=True)
    found = import_model(model, seq_len=16, batch=1)
    (run,) = repeats(found)
    assert run.count.value.data == 3
    traced_whole = whole(monkeypatch, model, seq_len=16, batch=1)
    assert phase_flops(found, "backward") == pytest.approx(phase_flops(traced_whole, "backward"), rel=1e-12)


def test_blocks_that_do_not_chain_are_no_stack():
    module = import_model(Parallel(), seq_len=8)
    assert repeats(module) == []
    assert param_count(module) == sum(p.numel() for p in Parallel().parameters())


def test_the_stack_is_the_largest_chaining_list():
    stack = tracing.find_layer_stack(RopeLM(), tracing.StepShape("train", 1, 8), torch.bfloat16)
    assert stack is not None and stack.path == "layers"
    assert stack.hidden_slot == ("arg", 0) and stack.extra_slots == [("arg", 1), ("arg", 2)]
    assert stack.kwargs == {"residual_scale": 0.5}
    assert "embed.weight" in stack.stem_names and "lm_head.weight" in stack.head_names
    assert not any(name.startswith("layers.") for name in stack.stem_names | stack.head_names)


def test_a_user_module_runs_the_pipeline_and_recompute_through_the_api():
    """The issue's call: an nn.Module wherever a model name goes."""
    model = RopeLM(layers=4, d=64)
    piped = charon_ir.simulate(model, gpus=2, pp=2, recompute="full", seq_len=256, global_batch=8, framework="none")
    flat = charon_ir.simulate(model, gpus=1, seq_len=256, global_batch=8, framework="none")
    assert piped["iteration_time_s"] > 0 and flat["iteration_time_s"] > 0
    assert len(piped["stages"]) == 2


def test_a_module_without_a_stack_refuses_the_pipeline_in_one_line():
    with pytest.raises(CharonError, match="no stack of layers"):
        charon_ir.simulate(Parallel(), gpus=2, pp=2, seq_len=8, global_batch=4, framework="none")
