"""shard-context: ring attention and Ulysses on a Llama layer of random legal shape.

Ring (causal, load-balanced): each rank holds s/cp tokens; per layer the forward
sends its k and v blocks cp-1 times around the ring, 2*b*(s/cp)*hkv*d*2 bytes a
step, and the attention work summed over the group is exactly the unsharded causal
work. Ulysses: four all_to_alls per layer forward (q, k, v in, the output back),
each moving (cp-1)/cp of its local tensor.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.dialects import coll, event, sim
from charon_ir.dialects.event import Link
from charon_ir.errors import CharonError
from charon_ir.memory.states import DataParallel
from charon_ir.parallel.accounting import collective_calls, replicated_flops, total_flops
from charon_ir.parallel.examples import apply_pipeline, llama_layer, parse

ATTENTION = (sim.AttentionOp, sim.AttentionGradOp)


def phase(module, kind):
    return next(p for p in module.walk() if isinstance(p, sim.PhaseOp) and p.kind.data == kind)


def flops_of(module, kinds):
    return sum(op.flops() for op in module.walk() if isinstance(op, kinds))


shapes = st.fixed_dictionaries({
    "cp": st.sampled_from([2, 4, 8]),
    "chunk": st.integers(1, 4),
    "hidden": st.sampled_from([64, 128]),
    "kv_heads": st.sampled_from([1, 2, 4, 8]),
    "group": st.sampled_from([1, 2]),
    "head_dim": st.sampled_from([8, 16]),
})


@settings(max_examples=20, deadline=None)
@given(shapes)
def test_ring(case):
    cp, hkv, d = case["cp"], case["kv_heads"], case["head_dim"]
    tokens = 2 * cp * case["chunk"] * 3
    text = llama_layer(tokens, case["hidden"], hkv * case["group"], hkv, d, 96)
    before = parse(text)
    module = apply_pipeline(parse(text), f"shard-context{{cp={cp} mode=ring}}")
    # causal load balancing: the group does exactly the unsharded attention work
    assert cp * flops_of(module, ATTENTION) == pytest.approx(flops_of(before, ATTENTION), rel=1e-12)
    rep = replicated_flops(module)["shard-context"]
    assert cp * total_flops(module) == pytest.approx(total_flops(before) + rep, rel=1e-12)
    # forward: cp-1 steps, each sending the local k and v blocks
    fwd = phase(module, "forward")
    sends = [op for op, _ in collective_calls(module, coll.SendOp, "cp") if fwd.is_ancestor(op)]
    block = 2 * (tokens // cp) * hkv * d  # bytes of one [1, s/cp, hkv, d] bf16 block
    assert len(sends) == 2 * (cp - 1)
    assert sum(op.ring_bytes_per_rank() for op in sends) == (cp - 1) * 2 * block
    # backward: the kv blocks again, and their gradients back to their owners
    bwd = phase(module, "backward")
    assert len([op for op, _ in collective_calls(module, coll.SendOp, "cp") if bwd.is_ancestor(op)]) == 4 * (cp - 1)
    # the merges: Transformer Engine's per-step accumulation, the first step's part
    # copied (2x its bytes), each later one added in place (3x): the output and dq
    # from the causal step's whole block and cp-1 half blocks, dk and dv from cp blocks
    q_block = 2 * (tokens // cp) * hkv * case["group"] * d
    merges = [(op.callee.data, op.bytes_moved()) for op in module.walk()
              if isinstance(op, sim.GenericOp) and op.callee.data.startswith("ring_attention.merge")]
    assert dict(merges) == {
        "ring_attention.merge": 2 * q_block + 3 * (cp - 1) * q_block / 2,
        "ring_attention.merge_dq": 2 * q_block + 3 * (cp - 1) * q_block / 2,
        "ring_attention.merge_dk": 2 * block + 3 * (cp - 1) * block,
        "ring_attention.merge_dv": 2 * block + 3 * (cp - 1) * block,
    } and len(merges) == 4


@settings(max_examples=20, deadline=None)
@given(shapes)
def test_ulysses(case):
    cp, hkv, d = case["cp"], case["kv_heads"], case["head_dim"]
    heads = max(hkv * case["group"], cp)
    hkv = min(hkv, heads)
    tokens = cp * case["chunk"] * 3
    text = llama_layer(tokens, case["hidden"], heads, hkv, d, 96)
    before = parse(text)
    module = apply_pipeline(parse(text), f"shard-context{{cp={cp} mode=ulysses}}")
    assert cp * flops_of(module, ATTENTION) == flops_of(before, ATTENTION)
    rep = replicated_flops(module)["shard-context"]
    assert cp * total_flops(module) == pytest.approx(total_flops(before) + rep, rel=1e-12)
    fwd = phase(module, "forward")
    a2a = [op for op, _ in collective_calls(module, coll.AllToAllOp, "cp") if fwd.is_ancestor(op)]
    local = tokens // cp
    q_bytes = 2 * local * heads * d
    kv_bytes = 2 * local * hkv * d
    if hkv % cp == 0:
        assert len(a2a) == 4
        assert sum(op.payload_bytes() for op in a2a) == 2 * q_bytes + 2 * kv_bytes
        assert sum(op.ring_bytes_per_rank() for op in a2a) == (cp - 1) / cp * (2 * q_bytes + 2 * kv_bytes)
    else:  # too few kv heads: q and the output go by all_to_all, k and v are gathered
        assert len(a2a) == 2
        gathers = [op for op, _ in collective_calls(module, coll.AllGatherOp, "cp") if fwd.is_ancestor(op)]
        assert len(gathers) == 2


def test_weight_gradients_summed_over_cp():
    module = apply_pipeline(parse(llama_layer(32, 64, 4, 2, 16, 128)), "shard-context{cp=2}")
    bwd = phase(module, "backward")
    reduces = [op for op, _ in collective_calls(module, coll.AllReduceOp, "cp") if bwd.is_ancestor(op)]
    # q, k, v, o, gate, up, down and both norm weights
    assert len(reduces) == 9
    assert all("coll.grad_sync" in op.attributes for op in reduces)


@pytest.mark.parametrize(
    "tokens, options, message",
    [
        (32, "cp=3", "shard-context: option 'cp' (3) does not divide the sequence length (32)"),
        (24, "cp=8", "shard-context: option 'cp' (8) does not divide the sequence length (24) into 2*cp load-balanced chunks (mode=ring)"),
        (32, "cp=8 mode=ulysses", "shard-context: option 'cp' (8) does not divide the attention heads (4) (mode=ulysses)"),
        (32, 'cp=4 mode="a2a+p2p" a2a=3', "shard-context: option 'a2a' (3) must divide 'cp' (4) and lie strictly "
         "between 1 and cp (mode=a2a+p2p; a2a=1 is mode=ring, a2a=cp is mode=ulysses)"),
        (32, 'cp=4 mode="a2a+p2p"', "shard-context: option 'a2a' (1) must divide 'cp' (4) and lie strictly "
         "between 1 and cp (mode=a2a+p2p; a2a=1 is mode=ring, a2a=cp is mode=ulysses)"),
        (40, 'cp=8 mode="a2a+p2p" a2a=2', "shard-context: option 'cp' (8) does not divide the sequence length "
         "(40) into 2*cp load-balanced chunks (mode=a2a+p2p)"),
        (64, 'cp=16 mode="a2a+p2p" a2a=8', "shard-context: option 'a2a' (8) does not divide the attention heads "
         "(4) (mode=a2a+p2p)"),
        (32, 'cp=8 mode="a2a+p2p" a2a=4', "shard-context: option 'a2a' (4) does not divide the kv heads (2) "
         "(mode=a2a+p2p)"),
        (32, "cp=4 mode=ulysses a2a=2", "shard-context: option 'a2a' (2) needs mode=a2a+p2p, not mode=ulysses"),
    ],
)
def test_errors(tokens, options, message):
    with pytest.raises(CharonError) as err:
        apply_pipeline(parse(llama_layer(tokens, 64, 4, 2, 16, 128)), f"shard-context{{{options}}}")
    assert str(err.value) == message


def test_composes_after_tensor_parallelism():
    module = apply_pipeline(parse(llama_layer(32, 64, 4, 2, 16, 128)), "shard-tensor{tp=2},shard-context{cp=2}")
    grid = next(op for op in module.walk() if isinstance(op, coll.GridOp))
    assert grid.axis_sizes() == {"cp": 2, "tp": 2}
    att = next(op for op in module.walk() if isinstance(op, sim.AttentionOp))
    assert sim.shape_of(att.q) == (1, 16, 2, 16)


hierarchical = st.fixed_dictionaries({
    "a2a": st.sampled_from([2, 4]),
    "ring": st.sampled_from([2, 4]),
    "chunk": st.integers(1, 3),
    "hidden": st.sampled_from([64, 128]),
    "kv_heads": st.sampled_from([4, 8]),
    "group": st.sampled_from([1, 2]),
    "head_dim": st.sampled_from([8, 16]),
})


@settings(max_examples=15, deadline=None)
@given(hierarchical)
def test_hierarchical(case):
    """a2a+p2p over cp = a2a x ring ranks: the attention work per rank is the
    ring's and Ulysses' at the same cp (1/cp of the unsharded causal work); per
    layer forward four all_to_alls on `cpa` move (a2a-1)/a2a of q, k, v and the
    output as each rank holds them (s/cp tokens, all heads), and the ring sends
    k and v blocks of s/ring tokens and 1/a2a of the kv heads ring-1 times on `cp`."""
    a, p, hkv, d = case["a2a"], case["ring"], case["kv_heads"], case["head_dim"]
    cp, heads = a * p, hkv * case["group"]
    tokens = 2 * cp * case["chunk"]
    text = llama_layer(tokens, case["hidden"], heads, hkv, d, 96)
    before = parse(text)
    module = apply_pipeline(parse(text), f'shard-context{{cp={cp} mode="a2a+p2p" a2a={a}}}')
    grid = next(op for op in module.walk() if isinstance(op, coll.GridOp))
    assert grid.axis_sizes() == {"cp": p, "cpa": a}
    unsharded = flops_of(before, ATTENTION)
    assert cp * flops_of(module, ATTENTION) == pytest.approx(unsharded, rel=1e-12)
    ring = apply_pipeline(parse(text), f"shard-context{{cp={cp} mode=ring}}")
    assert flops_of(module, ATTENTION) == pytest.approx(flops_of(ring, ATTENTION), rel=1e-12)
    if heads % cp == 0 and hkv % cp == 0:
        ulysses = apply_pipeline(parse(text), f"shard-context{{cp={cp} mode=ulysses}}")
        assert flops_of(module, ATTENTION) == pytest.approx(flops_of(ulysses, ATTENTION), rel=1e-12)
    rep = replicated_flops(module)["shard-context"]
    assert cp * total_flops(module) == pytest.approx(total_flops(before) + rep, rel=1e-12)
    fwd = phase(module, "forward")
    a2a = [op for op, _ in collective_calls(module, coll.AllToAllOp, "cpa") if fwd.is_ancestor(op)]
    assert all(op.axis_names() == ["cpa"] for op in a2a) and len(a2a) == 4
    local = tokens // cp
    moved = 2 * local * d * (2 * heads + 2 * hkv)  # bf16 q, out, k, v per rank
    assert sum(op.ring_bytes_per_rank() for op in a2a) == pytest.approx((a - 1) / a * moved, rel=1e-12)
    sends = [op for op, _ in collective_calls(module, coll.SendOp) if fwd.is_ancestor(op)]
    assert all(op.axis_names() == ["cp"] for op in sends) and len(sends) == 2 * (p - 1)
    block = 2 * (tokens // p) * (hkv // a) * d
    assert sum(op.ring_bytes_per_rank() for op in sends) == (p - 1) * 2 * block
    # the weight gradients: one sum over both axes each
    bwd = phase(module, "backward")
    reduces = [op for op, _ in collective_calls(module, coll.AllReduceOp) if bwd.is_ancestor(op)]
    assert len(reduces) == 9
    assert all(op.axis_names() == ["cp", "cpa"] and "coll.grad_sync" in op.attributes for op in reduces)


def test_hierarchical_is_deterministic():
    text = llama_layer(64, 64, 8, 4, 16, 128)
    runs = [str(apply_pipeline(parse(text), 'shard-context{cp=8 mode="a2a+p2p" a2a=2}')) for _ in range(2)]
    assert runs[0] == runs[1]


def test_hierarchical_gradients_fold_into_data_parallel():
    """data-parallel folds the cp x cpa gradient sums into its reduction over
    dp x cp x cpa, as it folds the ring's over dp x cp."""
    module = apply_pipeline(parse(llama_layer(32, 64, 4, 2, 16, 128)),
                            'shard-context{cp=4 mode="a2a+p2p" a2a=2},data-parallel{dp=2}')
    sums = [op for op, _ in collective_calls(module, coll.AllReduceOp) if "coll.grad_sync" in op.attributes]
    assert not sums
    reductions = [op for op, _ in collective_calls(module, coll.AllReduceOp, "dp")]
    assert reductions and all(op.axis_names() == ["dp", "cp", "cpa"] for op in reductions)
    assert all(op.group_size() == 8 for op in reductions)
    # the memory model shards the optimizer states over the same group
    zero1 = apply_pipeline(parse(llama_layer(32, 64, 4, 2, 16, 128)),
                           'shard-context{cp=4 mode="a2a+p2p" a2a=2},data-parallel{dp=2 zero=1}')
    assert DataParallel.from_module(zero1).dense_replicas == 8


def test_hierarchical_links():
    """16 GPUs, 8 a node, tp 2 innermost: the all-to-all groups (cpa 4 x tp 2 = one
    node) stay on NVLink, the ring between them (cp 2) and the gradient sum over
    cp x cpa cross the network."""
    module = apply_pipeline(
        parse(llama_layer(256, 64, 8, 8, 16, 128)),
        'shard-tensor{tp=2},shard-context{cp=8 mode="a2a+p2p" a2a=4},'
        "set-target{hardware=H100-SXM5-80GB gpus=16},cost-annotate,lower-to-events",
    )
    links: dict[tuple[str, str, int], set[Link | None]] = {}
    for op in module.walk():
        if isinstance(op, event.CommOp):
            key = (op.label.data, op.stream.root_reference.data, op.group_size())
            links.setdefault(key, set()).add(op.link_kind())
    assert links[("all_to_all", "comm_cpa", 4)] == {Link.SCALE_UP}
    assert links[("send", "comm_cp_send", 2)] == {Link.SCALE_OUT}
    assert links[("all_reduce", "comm_cp_cpa", 8)] == {Link.SCALE_OUT}
