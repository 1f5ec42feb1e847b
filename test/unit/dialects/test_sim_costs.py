"""FLOPs and bytes the sim ops state for themselves (what every engine prices)."""

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import TensorType, bf16

from charon_ir.dialects import sim
from charon_ir.testing import parse_module as parse


def tensor(*shape: int) -> TensorType:
    return TensorType(bf16, shape)


def build_matmul(b: int, m: int, n: int, k: int, transpose_rhs: bool) -> sim.MatmulOp:
    lhs = sim.InputOp("lhs", tensor(b, m, k))
    rhs_shape = (n, k) if transpose_rhs else (k, n)
    rhs = sim.ParamOp("rhs", tensor(*rhs_shape))
    op = sim.MatmulOp(lhs.result, rhs.result, tensor(b, m, n), transpose_rhs=transpose_rhs)
    op.verify()
    return op


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 8), st.integers(1, 512), st.integers(1, 512), st.integers(1, 512), st.booleans()
)
def test_matmul_flops_are_2bmnk(b, m, n, k, transpose_rhs):
    op = build_matmul(b, m, n, k, transpose_rhs)
    assert op.flops() == 2 * b * m * n * k
    assert op.bytes_moved() == 2 * (b * m * k + n * k + b * m * n)


def test_causal_attention_counts_the_lower_triangle():
    module = parse(
        """
        %q = sim.input "q" : tensor<2x1024x32x128xbf16>
        %k = sim.input "k" : tensor<2x1024x8x128xbf16>
        %o = sim.attention %q, %k, %k {causal, flash} : (tensor<2x1024x32x128xbf16>, tensor<2x1024x8x128xbf16>, tensor<2x1024x8x128xbf16>) -> tensor<2x1024x32x128xbf16>
        %f = sim.attention %q, %k, %k {flash} : (tensor<2x1024x32x128xbf16>, tensor<2x1024x8x128xbf16>, tensor<2x1024x8x128xbf16>) -> tensor<2x1024x32x128xbf16>
        """
    )
    causal, full = [op for op in module.walk() if isinstance(op, sim.AttentionOp)]
    s, b, h, d = 1024, 2, 32, 128
    assert full.flops() == 4 * b * h * s * s * d
    assert causal.flops() == 4 * b * h * (s * (s + 1) / 2) * d
    # flash attention never writes the score matrix
    assert causal.bytes_moved() == 2 * (2 * b * s * h * d + 2 * b * s * 8 * d)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 64), st.integers(0, 64))
def test_decode_attention_sees_the_whole_cache(sq, extra):
    """A causal query block at the end of a longer kv sequence: query i sees
    skv - sq + i + 1 keys."""
    skv = sq + extra
    q = sim.InputOp("q", tensor(1, sq, 4, 16))
    k = sim.InputOp("k", tensor(1, skv, 2, 16))
    op = sim.AttentionOp(q.result, k.result, k.result, tensor(1, sq, 4, 16), causal=True)
    op.verify()
    pairs = sum(skv - sq + i + 1 for i in range(sq))
    assert op.score_pairs() == pairs


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 48), st.integers(0, 48), st.integers(1, 120))
def test_a_window_keeps_the_latest_keys_of_each_query(sq, extra, window):
    """Sliding-window attention: query i (kv position skv - sq + i) sees the
    min(position + 1, window) latest keys; a window past the sequence is plain
    causal attention."""
    skv = sq + extra
    q = sim.InputOp("q", tensor(1, sq, 4, 16))
    k = sim.InputOp("k", tensor(1, skv, 2, 16))
    op = sim.AttentionOp(q.result, k.result, k.result, tensor(1, sq, 4, 16), causal=True, window=window)
    op.verify()
    assert op.score_pairs() == sum(min(skv - sq + i + 1, window) for i in range(sq))
    causal = sim.AttentionOp(q.result, k.result, k.result, tensor(1, sq, 4, 16), causal=True)
    assert op.score_pairs() <= causal.score_pairs()
    if window >= skv:
        assert op.flops() == causal.flops()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 48), st.integers(0, 48), st.integers(1, 120))
def test_a_chunk_keeps_the_keys_of_each_querys_chunk(sq, extra, chunk):
    """Chunked attention (Llama 4): the query at kv position p sees the keys
    floor(p / chunk) * chunk .. p, counted one by one; a chunk past the sequence
    is plain causal attention, and no query sees more than a window of the
    chunk's size would show it."""
    skv = sq + extra
    q = sim.InputOp("q", tensor(1, sq, 4, 16))
    k = sim.InputOp("k", tensor(1, skv, 2, 16))
    op = sim.AttentionOp(q.result, k.result, k.result, tensor(1, sq, 4, 16), causal=True, chunk=chunk)
    op.verify()
    positions = range(skv - sq, skv)
    assert op.score_pairs() == sum(len(range(p // chunk * chunk, p + 1)) for p in positions)
    causal = sim.AttentionOp(q.result, k.result, k.result, tensor(1, sq, 4, 16), causal=True)
    window = sim.AttentionOp(q.result, k.result, k.result, tensor(1, sq, 4, 16), causal=True, window=chunk)
    assert op.score_pairs() <= window.score_pairs() <= causal.score_pairs()
    if chunk >= skv:
        assert op.flops() == causal.flops()
