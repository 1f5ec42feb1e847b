"""Op keys (what identifies a measurement) and sweep variants."""

from __future__ import annotations

import json

import pytest
from xdsl.dialects.builtin import FloatData

from charon_ir.dialects.sim import AttentionOp, ElementwiseOp, MatmulOp, OptimizerStepOp, ReduceOp
from charon_ir.profile.collect import OpSet, parse_module_text
from charon_ir.profile.key import OpKey, is_free_view
from charon_ir.profile.sweep import scaled_dim, variants, with_midpoints



def parse(text: str):
    return parse_module_text(text, "test")


MODULE = """
builtin.module {
  %a = sim.input "a" : tensor<256x128xbf16>
  %w = sim.param "w" : tensor<344x128xbf16>
  %c = sim.input "c" : tensor<256x1xbf16>
  %q = sim.input "q" : tensor<1x256x2x64xbf16>
  %k = sim.input "k" : tensor<1x256x1x64xbf16>
  %m1 = sim.matmul %a, %w {transpose_rhs} : (tensor<256x128xbf16>, tensor<344x128xbf16>) -> tensor<256x344xbf16>
  %m2 = sim.matmul %a, %w {transpose_rhs} : (tensor<256x128xbf16>, tensor<344x128xbf16>) -> tensor<256x344xbf16>
  %s = sim.elementwise "silu" %m1 : tensor<256x344xbf16> -> tensor<256x344xbf16>
  %b = sim.elementwise "mul" %a, %c : tensor<256x128xbf16>, tensor<256x1xbf16> -> tensor<256x128xbf16>
  %r = sim.reduce "sum" %a [0] : tensor<256x128xbf16> -> tensor<128xbf16>
  %o = sim.attention %q, %k, %k {causal, flash} : (tensor<1x256x2x64xbf16>, tensor<1x256x1x64xbf16>, tensor<1x256x1x64xbf16>) -> tensor<1x256x2x64xbf16>
  %v = sim.generic "view"(%a) {flop_count = 0.0 : f64, byte_count = 0.0 : f64} : (tensor<256x128xbf16>) -> tensor<128x256xbf16>
  %g = sim.generic "aten.cat"(%a, %a) {flop_count = 0.0 : f64, byte_count = 131072.0 : f64} : (tensor<256x128xbf16>, tensor<256x128xbf16>) -> tensor<512x128xbf16>
  sim.optimizer_step "adamw" (%w : tensor<344x128xbf16>) grads (%w : tensor<344x128xbf16>)
}
"""


def ops_of(kind: type):
    return [op for op in parse(MODULE).walk() if isinstance(op, kind)]


def test_key_names_kind_variant_shapes_and_dtypes():
    key = OpKey.of(ops_of(MatmulOp)[0])
    assert (key.kind, key.variant) == ("matmul", "transpose_rhs")
    assert key.shape_list() == [[256, 128], [344, 128], [256, 344]]
    assert key.dtype_list() == ["bf16"] * 3
    assert key.family == "matmul:bf16"
    silu = OpKey.of(ops_of(ElementwiseOp)[0])
    assert (silu.variant, silu.family) == ("kind=silu", "elementwise[silu]:bf16")
    reduce = OpKey.of(ops_of(ReduceOp)[0])
    assert reduce.variant == "dims=[0] kind=sum"
    assert OpKey.of(ops_of(AttentionOp)[0]).variant == "causal flash"
    # the operand segment sizes restate the types: not part of the variant
    assert OpKey.of(ops_of(OptimizerStepOp)[0]).variant == "kind=adamw"


def test_opset_dedupes_and_sets_views_aside():
    opset = OpSet()
    opset.add_module(parse(MODULE))
    kinds = sorted(k.kind for k in opset.ops)
    assert kinds.count("matmul") == 1
    assert "aten.cat" in kinds and "view" not in kinds
    assert opset.views == 1
    views = [op for op in parse(MODULE).walk() if getattr(op, "name", "") == "sim.generic"]
    assert [is_free_view(op) for op in views] == [True, False]


def test_scaled_dims_keep_alignment():
    assert scaled_dim(256, 0.3) == 64  # 76.8 rounds to a multiple of 32
    assert scaled_dim(256, 3) == 768
    assert scaled_dim(344, 0.5) == 176  # 344 = 8 * 43: multiples of 8
    assert scaled_dim(64, 0.25) == 32  # never below one alignment unit (32)
    assert scaled_dim(2, 0.25) == 2
    assert with_midpoints([0.5, 2.0]) == [0.5, 2 ** -0.5, 2 ** 0.5, 2.0]


def test_matmul_variants_scale_each_of_m_n_k():
    op = ops_of(MatmulOp)[0]
    shapes = {json.dumps(OpKey.of(v).shape_list()) for v in variants(op, (0.5, 2.0))}
    assert shapes == {
        json.dumps(s)
        for s in (
            [[128, 128], [344, 128], [128, 344]], [[512, 128], [344, 128], [512, 344]],  # M
            [[256, 128], [176, 128], [256, 176]], [[256, 128], [688, 128], [256, 688]],  # N
            [[256, 64], [344, 64], [256, 344]], [[256, 256], [344, 256], [256, 344]],  # K
        )
    }


def test_single_axis_variants_verify_and_keep_broadcasts():
    mul = ops_of(ElementwiseOp)[1]
    vs = variants(mul, (0.5, 2.0))
    assert len(vs) == 4  # two factors and their midpoints
    for v in vs:
        v.verify()
        a, c, out = OpKey.of(v).shape_list()
        assert a == out and c == [out[0], 1]
    attention = variants(ops_of(AttentionOp)[0], (0.5, 2.0))
    assert {tuple(OpKey.of(v).shape_list()[0]) for v in attention} == {
        (1, 128, 2, 64), (1, 192, 2, 64), (1, 352, 2, 64), (1, 512, 2, 64)
    }
    reduce = variants(ops_of(ReduceOp)[0], (2.0,))
    assert OpKey.of(reduce[-1]).shape_list() == [[256, 256], [256]]


def test_a_property_of_a_type_with_no_key_text_is_refused():
    # str(attr) would make the key depend on how the attribute prints: a new
    # property type must be given key text, never change the database's keys silently
    op = ops_of(ElementwiseOp)[0]
    op.properties["scale"] = FloatData(0.5)
    with pytest.raises(TypeError, match="sim.elementwise property scale is a FloatData"):
        OpKey.of(op)
