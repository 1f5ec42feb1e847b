"""The sharding rule each op declares beside its FLOPs (`sharding_rule()`): the
factors of each operand and result dim, and what a split of each does."""

from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import coll, sim
from charon_ir.testing import parse_module

GRID = 'coll.grid @g(axes = ["tp", "dp"], shape = 4x2)\n'


def only_op(text: str, kind: type):
    module = parse_module(text)
    return next(op for op in module.walk() if isinstance(op, kind))


def t(*shape: int, element: str = "bf16") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}>"


# -- one module per op kind, from the size of each factor ----------------------


def matmul(sizes: dict[str, int], transpose_lhs: bool = False, transpose_rhs: bool = False,
           batched_rhs: bool = False) -> str:
    batch = [sizes["b0"]] if "b0" in sizes else []
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    a = [*batch, *((k, m) if transpose_lhs else (m, k))]
    b = [*(batch if batched_rhs else []), *((n, k) if transpose_rhs else (k, n))]
    props = ", ".join(p for p, on in (("transpose_lhs", transpose_lhs), ("transpose_rhs", transpose_rhs)) if on)
    return (
        f'%a = sim.input "a" : {t(*a)}\n%b = sim.param "b" : {t(*b)}\n'
        f"%c = sim.matmul %a, %b {{{props}}} : ({t(*a)}, {t(*b)}) -> {t(*batch, m, n)}\n"
    )


def elementwise(sizes: dict[str, int], broadcast: str = "none") -> str:
    out = [sizes[f"d{i}"] for i in range(len(sizes))]
    other = {"none": out, "lead": out[1:], "ones": [1, *out[1:]]}[broadcast]
    return (
        f'%x = sim.input "x" : {t(*out)}\n%y = sim.input "y" : {t(*other)}\n'
        f'%z = sim.elementwise "mul" %x, %y : {t(*out)}, {t(*other)} -> {t(*out)}\n'
    )


def norm(sizes: dict[str, int]) -> str:
    x = [sizes["d0"], sizes["d1"], sizes["h"]]
    return (
        f'%x = sim.input "x" : {t(*x)}\n%w = sim.param "w" : {t(sizes["h"])}\n'
        f'%y = sim.norm "rms" %x, %w : {t(*x)}, {t(sizes["h"])}\n'
    )


def reduce(sizes: dict[str, int], dims: tuple[int, ...] = (1,), keep: bool = False) -> str:
    x = [sizes[f"d{i}"] for i in range(3)]
    r = [1 if i in dims else n for i, n in enumerate(x) if keep or i not in dims]
    return (
        f'%x = sim.input "x" : {t(*x)}\n'
        f'%r = sim.reduce "sum" %x [{", ".join(map(str, dims))}] : {t(*x)} -> {t(*r)}\n'
    )


def softmax(sizes: dict[str, int], dim: int = 1) -> str:
    x = [sizes["d0"], sizes["d1"]]
    return f'%x = sim.input "x" : {t(*x)}\n%p = sim.softmax %x dim {dim} : {t(*x)}\n'


def embedding(sizes: dict[str, int]) -> str:
    table, ids = [sizes["v"], sizes["h"]], [sizes["i0"], sizes["i1"]]
    return (
        f'%w = sim.param "w" : {t(*table)}\n%i = sim.input "i" : {t(*ids, element="i64")}\n'
        f"%e = sim.embedding %w, %i : ({t(*table)}, {t(*ids, element='i64')}) -> {t(*ids, sizes['h'])}\n"
    )


# -- what each op declares --------------------------------------------------------


def test_matmul_contracts_k_and_keeps_the_batch():
    sizes = {"b0": 2, "m": 8, "n": 16, "k": 4}
    rule = only_op(matmul(sizes, batched_rhs=True), sim.MatmulOp).sharding_rule()
    assert rule == sim.ShardingRule((("b0", "m", "k"), ("b0", "k", "n")), (("b0", "m", "n"),), reduction=("k",))
    assert not rule.pointwise


def test_matmul_transposes_swap_the_last_two_factors():
    sizes = {"m": 8, "n": 16, "k": 4}
    rule = only_op(matmul(sizes, transpose_lhs=True, transpose_rhs=True), sim.MatmulOp).sharding_rule()
    assert rule.operands == (("k", "m"), ("n", "k")) and rule.results == (("m", "n"),)


def test_a_weight_shared_over_the_batch_has_no_batch_factor():
    rule = only_op(matmul({"b0": 2, "m": 8, "n": 16, "k": 4}), sim.MatmulOp).sharding_rule()
    assert rule.operands == (("b0", "m", "k"), ("k", "n"))


def test_elementwise_is_pointwise_and_a_broadcast_dim_in_no_factor():
    sizes = {"d0": 2, "d1": 8, "d2": 4}
    rule = only_op(elementwise(sizes, "ones"), sim.ElementwiseOp).sharding_rule()
    assert rule.operands == (("d0", "d1", "d2"), (None, "d1", "d2")) and rule.results == (("d0", "d1", "d2"),)
    assert rule.pointwise and not rule.linear
    lead = only_op(elementwise(sizes, "lead"), sim.ElementwiseOp).sharding_rule()
    assert lead.operands[1] == ("d1", "d2")


def test_linear_kinds_pass_partial_sums():
    def linear(kind: str, n: int) -> bool:
        inputs = ", ".join(["%x"] * n)
        types = ", ".join([t(4, 8)] * n)
        text = f'%x = sim.input "x" : {t(4, 8)}\n%y = sim.elementwise "{kind}" {inputs} : {types} -> {t(4, 8)}\n'
        return only_op(text, sim.ElementwiseOp).sharding_rule().linear

    assert linear("add", 2) and linear("sub", 2) and linear("neg", 1) and linear("copy", 1)
    assert not linear("mul", 2) and not linear("silu", 1) and not linear("copy", 2)


def test_norm_needs_the_hidden_dim_whole():
    rule = only_op(norm({"d0": 2, "d1": 4, "h": 8}), sim.NormOp).sharding_rule()
    assert rule.operands == (("d0", "d1", "h"), ("h",)) and rule.need_replication == ("h",)
    assert not rule.pointwise


def test_reduce_sums_its_dims_dropped_or_kept_as_no_factor():
    sizes = {"d0": 2, "d1": 4, "d2": 8}
    dropped = only_op(reduce(sizes, (0, 2)), sim.ReduceOp).sharding_rule()
    assert dropped.results == (("d1",),) and dropped.reduction == ("d0", "d2")
    kept = only_op(reduce(sizes, (1,), keep=True), sim.ReduceOp).sharding_rule()
    assert kept.results == (("d0", None, "d2"),) and kept.reduction == ("d1",)


def test_softmax_needs_row_statistics_along_its_dim():
    rule = only_op(softmax({"d0": 4, "d1": 8}, dim=1), sim.SoftmaxOp).sharding_rule()
    assert rule.results == (("d0", "d1"),) and rule.row_stats == (("d1", 2),) and rule.pointwise


def test_embedding_sums_over_the_vocabulary():
    rule = only_op(embedding({"v": 16, "h": 8, "i0": 2, "i1": 4}), sim.EmbeddingOp).sharding_rule()
    assert rule == sim.ShardingRule((("v", "h"), ("i0", "i1")), (("i0", "i1", "h"),), reduction=("v",))


def test_collectives_carry_every_dim():
    text = GRID + (
        f'%x = sim.input "x" : {t(4, 8)}\n'
        f"%g = coll.all_gather %x on @g [\"tp\"] axis 1 : {t(4, 8)} -> {t(4, 32)}\n"
        f"%r = coll.all_reduce %x on @g [\"dp\"] : {t(4, 8)}\n"
    )
    module = parse_module(text)
    for op in module.walk():
        if isinstance(op, coll.CollectiveOp):
            assert op.sharding_rule() == sim.ShardingRule((("d0", "d1"),), (("d0", "d1"),))


def test_ops_beyond_factors_say_so():
    # each says why (and names the pattern that lays it out, where one does)
    for kind in (
        sim.AttentionOp, sim.AttentionGradOp, sim.GenericOp, sim.OptimizerStepOp, sim.TopKOp,
        sim.MoeDispatchOp, sim.MoeCombineOp, sim.KVCacheWriteOp, sim.KVCacheReadOp,
        sim.ViewOp, sim.RepeatOp, sim.YieldOp, coll.SendOp, coll.RecvOp,
    ):
        doc = kind.sharding_rule.__doc__ or ""
        assert doc.startswith("None: "), kind.name
        assert kind.sharding_rule(None) is None  # pyright: ignore[reportArgumentType]


# -- a rule agrees with the op's shapes and FLOPs -------------------------------

CASES = {
    "matmul": (matmul, ("m", "n", "k"), sim.MatmulOp),
    "matmul_t": (lambda s: matmul(s, transpose_lhs=True, transpose_rhs=True), ("m", "n", "k"), sim.MatmulOp),
    "bmm": (lambda s: matmul(s, batched_rhs=True), ("b0", "m", "n", "k"), sim.MatmulOp),
    "linear": (matmul, ("b0", "m", "n", "k"), sim.MatmulOp),
    "elementwise": (elementwise, ("d0", "d1", "d2"), sim.ElementwiseOp),
    "broadcast": (lambda s: elementwise(s, "ones"), ("d0", "d1", "d2"), sim.ElementwiseOp),
    "norm": (norm, ("d0", "d1", "h"), sim.NormOp),
    "reduce": (reduce, ("d0", "d1", "d2"), sim.ReduceOp),
    "reduce_kept": (lambda s: reduce(s, (0, 2), keep=True), ("d0", "d1", "d2"), sim.ReduceOp),
    "softmax": (softmax, ("d0", "d1"), sim.SoftmaxOp),
    "embedding": (embedding, ("v", "h", "i0", "i1"), sim.EmbeddingOp),
}


@settings(max_examples=80, deadline=None)
@given(
    case=st.sampled_from(sorted(CASES)),
    units=st.lists(st.integers(1, 6), min_size=4, max_size=4),
    ways=st.sampled_from([2, 4]),
    pick=st.integers(0, 3),
)
def test_splitting_a_factor_divides_the_flops(case, units, ways, pick):
    build, factors, kind = CASES[case]
    sizes = {f: ways * u for f, u in zip(factors, units)}
    op = only_op(build(sizes), kind)
    rule = op.sharding_rule()
    # every dim of the op is the size of its factor (a dim in no factor: a broadcast 1)
    for values, dims in ((op.operands, rule.operands), (op.results, rule.results)):
        for value, factor_dims in zip(values, dims):
            assert factor_dims is not None
            assert tuple(1 if f is None else sizes[f] for f in factor_dims) == sim.shape_of(value)
    # a factor the rule lets split: each of `ways` ranks does 1/ways of the work
    splittable = [f for f in factors if f not in rule.need_replication]
    factor = splittable[pick % len(splittable)]
    local = only_op(build({**sizes, factor: sizes[factor] // ways}), kind)
    assert local.flops() * ways == op.flops()
