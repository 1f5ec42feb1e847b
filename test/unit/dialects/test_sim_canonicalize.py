"""The canonical forms of `sim.off_stage` (a value another pipeline stage holds)
and the effects ops declare: what dead-code elimination may take (ops that only
compute values) and what it must keep (collectives, optimizer steps, sends)."""

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from charon_ir.dialects import coll, sim
from charon_ir.testing import make_context, parse_module

T = "tensor<4x8xbf16>"


def canonical(text: str):
    ctx = make_context()
    module = parse_module(text, ctx)
    CanonicalizePass().apply(ctx, module)
    module.verify()
    return module


def ops_of(module, cls) -> list:
    return [op for op in module.walk() if isinstance(op, cls)]


@st.composite
def step_graphs(draw):
    """A forward phase of `n` ops over two inputs and `seeds` off-stage values, each
    op an elementwise op or an all-reduce of earlier values; every result yielded
    and read again by a backward phase."""
    seeds = draw(st.integers(0, 3))
    n = draw(st.integers(1, 10))
    ops = []
    for i in range(n):
        arity = draw(st.integers(1, 2))
        ops.append((draw(st.booleans()), [draw(st.integers(0, 2 + seeds + i - 1)) for _ in range(arity)]))
    return seeds, ops


def graph_text(seeds: int, ops) -> str:
    lines = ['coll.grid @mesh(axes = ["pp", "tp"], shape = 2x2)',
             f'%v0 = sim.input "a" : {T}', f'%v1 = sim.input "b" : {T}']
    body = [f"%v{2 + i} = sim.off_stage : {T}" for i in range(seeds)]
    first = 2 + seeds
    for i, (collective, args) in enumerate(ops):
        name = f"%v{first + i}"
        if collective:
            body.append(f'{name} = coll.all_reduce %v{args[0]} on @mesh ["tp"] : {T}')
        elif len(args) == 1:
            body.append(f'{name} = sim.elementwise "exp" %v{args[0]} : {T} -> {T}')
        else:
            body.append(f'{name} = sim.elementwise "add" %v{args[0]}, %v{args[1]} : {T}, {T} -> {T}')
    results = [f"%v{first + i}" for i in range(len(ops))]
    types = ", ".join([T] * len(ops))
    lines.append(f'%f:{len(ops)} = sim.phase "forward" -> {types} {{')
    lines += ["  " + b for b in body]
    lines.append(f"  sim.yield {', '.join(results)} : {types}")
    lines.append("}")
    lines.append(f'%g:{len(ops)} = sim.phase "backward" -> {types} {{')
    lines += [f'  %d{i} = sim.elementwise "exp" %f#{i} : {T} -> {T}' for i in range(len(ops))]
    lines.append(f"  sim.yield {', '.join(f'%d{i}' for i in range(len(ops)))} : {types}")
    lines.append("}")
    return "builtin.module {\n" + "\n".join(lines) + "\n}"


@settings(max_examples=40, deadline=None)
@given(step_graphs())
def test_exactly_what_reads_an_off_stage_value_leaves_the_stage(graph):
    """Off-stage spreads through every op and phase that reads it, however deep;
    what reads none stays, yielded by both phases, and no off-stage value is left."""
    seeds, ops = graph
    first = 2 + seeds
    tainted: set[int] = set(range(2, first))
    for i, (collective, args) in enumerate(ops):
        used = args[:1] if collective else args
        if any(a in tainted for a in used):
            tainted.add(first + i)
    kept = [i for i in range(len(ops)) if first + i not in tainted]
    module = canonical(graph_text(seeds, ops))
    phases = ops_of(module, sim.PhaseOp)
    assert not ops_of(module, sim.OffStageOp)
    if not kept:  # both phases emptied, then erased
        assert not phases
        return
    forward, backward = phases
    assert len(forward.outputs) == len(backward.outputs) == len(kept)
    assert len(ops_of(forward, sim.ElementwiseOp)) + len(ops_of(forward, coll.AllReduceOp)) == len(kept)


def test_a_collective_nobody_reads_stays_where_an_op_that_only_computes_goes():
    """Collectives are communication (the vocabulary-parallel cross-entropy's row
    statistics, data parallelism's reduce-scatter, read by nothing in the IR):
    dead-code elimination keeps them, and the optimizer step, which writes."""
    module = canonical(f"""builtin.module {{
      coll.grid @mesh(axes = ["pp", "tp"], shape = 2x2)
      %x = sim.input "x" : {T}
      %p = sim.param "p" : tensor<8x8xbf16>
      sim.phase "forward" {{
        %s = coll.all_reduce %x on @mesh ["tp"] : {T}
        %e = sim.elementwise "exp" %x : {T} -> {T}
        sim.yield
      }}
      sim.phase "optimizer" {{
        sim.optimizer_step "adamw"(%p : tensor<8x8xbf16>) grads(%p : tensor<8x8xbf16>)
        sim.yield
      }}
    }}""")
    assert len(ops_of(module, coll.AllReduceOp)) == 1
    assert not ops_of(module, sim.ElementwiseOp)
    assert len(ops_of(module, sim.OptimizerStepOp)) == 1
    (reduce,) = ops_of(module, coll.AllReduceOp)
    assert not is_trivially_dead(reduce)


def test_a_phase_result_nobody_reads_stays():
    """What a phase yields is also what the step returns (the loss): only a result
    yielded off-stage goes."""
    module = canonical(f"""builtin.module {{
      %x = sim.input "x" : {T}
      %f:2 = sim.phase "forward" -> {T}, {T} {{
        %loss = sim.elementwise "exp" %x : {T} -> {T}
        %away = sim.off_stage : {T}
        sim.yield %loss, %away : {T}, {T}
      }}
    }}""")
    (phase,) = ops_of(module, sim.PhaseOp)
    assert [str(r.type) for r in phase.outputs] == [T]
    assert len(ops_of(module, sim.ElementwiseOp)) == 1


def test_dropping_a_pair_keeps_the_other_updated_params():
    """A step over (p, off-stage grad) and (q, g): it goes over (q, g) alone; what
    read q's update reads the new step's, what read p's update is off-stage too."""
    module = canonical(f"""builtin.module {{
      coll.grid @mesh(axes = ["dp"], shape = 2)
      %p = sim.param "p" : {T}
      %q = sim.param "q" : {T}
      %g = sim.input "g" : {T}
      sim.phase "optimizer" {{
        %away = sim.off_stage : {T}
        %u:2 = sim.optimizer_step "adamw"(%p, %q : {T}, {T}) grads(%away, %g : {T}, {T}) -> {T}, {T}
        %gp = coll.all_gather %u#0 on @mesh ["dp"] axis 0 : {T} -> tensor<8x8xbf16>
        %gq = coll.all_gather %u#1 on @mesh ["dp"] axis 0 : {T} -> tensor<8x8xbf16>
        sim.yield
      }}
    }}""")
    (step,) = ops_of(module, sim.OptimizerStepOp)
    assert [p.owner.sym_name.data for p in step.params] == ["q"]
    (gather,) = ops_of(module, coll.AllGatherOp)
    assert gather.input is step.updated[0]
    assert [op.sym_name.data for op in ops_of(module, sim.ParamOp)] == ["q"]


def test_a_step_over_no_pairs_and_an_empty_phase_are_erased():
    module = canonical(f"""builtin.module {{
      %p = sim.param "p" : {T}
      sim.phase "optimizer" {{
        %away = sim.off_stage : {T}
        sim.optimizer_step "sgd"(%p : {T}) grads(%away : {T})
        sim.yield
      }}
    }}""")
    assert not list(module.body.block.ops)


def test_an_off_stage_value_structure_reads_is_left_for_its_pass_to_report():
    """A layer repeat is structure, not a value computation: an off-stage operand
    does not erase it (the pipeline pass names the reader in its error)."""
    module = canonical(f"""builtin.module {{
      %f = sim.phase "forward" -> {T} {{
        %away = sim.off_stage : {T}
        %r = sim.repeat 2 iter(%away : {T}) slices( : ) -> ({T}) {{
        ^bb0(%h: {T}):
          %y = sim.elementwise "exp" %h : {T} -> {T}
          sim.yield %y : {T}
        }}
        sim.yield %r : {T}
      }}
    }}""")
    assert len(ops_of(module, sim.OffStageOp)) == 1
    assert len(ops_of(module, sim.RepeatOp)) == 1
