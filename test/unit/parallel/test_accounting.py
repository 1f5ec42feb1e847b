"""FLOPs and collective bytes weighted by repeat counts."""

from charon_ir.dialects import coll
from charon_ir.parallel.accounting import (
    collective_bytes,
    record_replicated_flops,
    replicated_flops,
    total_flops,
)
from charon_ir.testing import parse_module

TEXT = """
builtin.module {
  coll.grid @mesh(axes = ["tp"], shape = 4)
  %x = sim.input "x" : tensor<8x16xbf16>
  %w = sim.param "layers.w" : tensor<3x16x16xbf16>
  %r = sim.repeat 3 iter(%x : tensor<8x16xbf16>) slices(%w : tensor<3x16x16xbf16>) -> (tensor<8x16xbf16>) {
  ^bb0(%h: tensor<8x16xbf16>, %wi: tensor<16x16xbf16>):
    %y = sim.matmul %h, %wi : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
    %z = coll.all_reduce %y on @mesh ["tp"] : tensor<8x16xbf16>
    sim.yield %z : tensor<8x16xbf16>
  }
  %n = sim.elementwise "add" %r, %x : tensor<8x16xbf16>, tensor<8x16xbf16> -> tensor<8x16xbf16>
}
"""


def test_repeat_counts_multiply():
    module = parse_module(TEXT)
    assert total_flops(module) == 3 * 2 * 8 * 16 * 16 + 8 * 16
    assert collective_bytes(module, coll.AllReduceOp, "tp") == 3 * 2 * 3 / 4 * 8 * 16 * 2


def test_replicated_work_per_pass():
    module = parse_module(TEXT)
    record_replicated_flops(module, "shard-tensor", 12.0)
    record_replicated_flops(module, "sequence-parallel", -4.0)
    assert replicated_flops(module) == {"shard-tensor": 12.0, "sequence-parallel": -4.0}
