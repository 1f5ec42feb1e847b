"""A model the user wrote (a small GPT) imports through the Python API."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from charon_ir.dialects import sim  # noqa: E402
from charon_ir.frontend import forward_flops, import_model, param_count, parse_ir, phase_flops  # noqa: E402


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 512, d: int = 64, heads: int = 4, layers: int = 2, ctx: int = 64):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


@pytest.fixture(scope="module")
def gpt_ir():
    model = TinyGPT()
    return model, import_model(model, seq_len=32, batch=2)


def test_parameter_count(gpt_ir):
    model, module = gpt_ir
    assert param_count(module) == sum(p.numel() for p in model.parameters())


def test_attention_is_one_opaque_op_per_layer(gpt_ir):
    _, module = gpt_ir
    atts = [op for op in module.walk() if isinstance(op, sim.AttentionOp)]
    grads = [op for op in module.walk() if isinstance(op, sim.AttentionGradOp)]
    # the blocks' ModuleList is found as a stack: one layer body, repeated twice
    assert len(atts) == len(grads) == 1
    assert all(isinstance(op.parent_op(), sim.RepeatOp) and op.parent_op().count.value.data == 2
               for op in atts + grads)
    assert sim.shape_of(atts[0].q) == (2, 32, 4, 16)


def test_backward_matmuls_twice_forward(gpt_ir):
    _, module = gpt_ir
    fwd = phase_flops(module, "forward", sim.MatmulOp)
    assert phase_flops(module, "backward", sim.MatmulOp) == pytest.approx(2 * fwd)
    assert forward_flops(module) > fwd


def test_phases_and_round_trip(gpt_ir):
    _, module = gpt_ir
    kinds = [op.kind.data for op in module.body.block.ops if isinstance(op, sim.PhaseOp)]
    assert kinds == ["forward", "backward", "optimizer"]
    parse_ir(str(module)).verify()


def test_untraceable_module_is_one_clear_error():
    from charon_ir.errors import CharonError

    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Linear(4, 4)

        def forward(self, idx):
            return self.w(idx)  # integer ids into a float Linear

    with pytest.raises(CharonError, match="cannot trace Broken"):
        import_model(Broken(), seq_len=8)


TOPK_PAST_THE_DIM = """
import torch
from torch import nn
from charon_ir.frontend import import_model

class TopKPastTheDim(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 4)

    def forward(self, idx):
        return torch.topk(self.emb(idx), k=8, dim=-1).values

import_model(TopKPastTheDim(), seq_len=8)
"""


def test_a_kernel_failing_under_fake_tensors_prints_no_torch_traceback():
    """torch logs the failing meta kernel with a traceback of its own (a top-k past
    its dim, as in a config with more experts per token than experts) before the
    exception reaches the tracer; only the tracer's error remains. (A subprocess:
    torch's log handler writes to the stream it found at import.)"""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", TOPK_PAST_THE_DIM], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "fake_tensor.py" not in r.stderr, r.stderr
    assert "CharonError: cannot trace TopKPastTheDim: RuntimeError" in r.stderr
