"""The screening tier: composed points against the fast tier, the schedule it
runs, and the re-timing that makes a sweep's best records exact."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from charon_ir.sweep import run_sweep
from charon_ir.sweep.screen import StepItems, run_step


def by_key(result):
    return {r["key"]: r for r in result.records}


def screened_and_fast(space):
    """(screened record, fast-tier record) of every point the screen timed."""
    fast = by_key(run_sweep(space, tier="fast"))
    pairs = []
    for r in run_sweep(space, tier="screen", retime=-1).records:
        if r["status"] == "ok":
            assert r["metrics"]["tier"] == "screen", r["config"]
            assert fast[r["key"]]["status"] == "ok", r["config"]
            pairs.append((r, fast[r["key"]]))
    return pairs


def step_error(screened, fast) -> float:
    return screened["metrics"]["iteration_time_s"] / fast["metrics"]["iteration_time_s"] - 1


def test_screen_is_close_to_the_fast_tier(tiny_space):
    # every schedule: a split backward (zb-h1) has its own probes
    pairs = screened_and_fast({**tiny_space, "schedule": ["", "gpipe", "zb-h1"]})
    for r, f in pairs:
        # tokens per step off the IR in both (the step's own shapes, not seq_len)
        tokens = [m["tokens_per_s"] * m["iteration_time_s"] for m in (r["metrics"], f["metrics"])]
        assert tokens[0] == pytest.approx(tokens[1], rel=1e-9), r["config"]
        # model FLOPs leave recompute's re-run forward out in both tiers
        share = [m["mfu"] / m["hfu"] for m in (r["metrics"], f["metrics"])]
        assert share[0] == pytest.approx(share[1], rel=0.01), r["config"]
        assert (share[1] < 0.9) == (r["config"]["recompute"] == "full"), r["config"]
        memory = r["metrics"]["max_peak_memory_bytes"] / f["metrics"]["max_peak_memory_bytes"] - 1
        assert abs(memory) < 0.10, (r["config"], memory)
    # the hand-written step has 2 layers of a few microseconds: what lies beside
    # them weighs most here, above all the gradient reductions, which the screen
    # starts only once a layer's whole backward has ended and prices without
    # bandwidth sharing (tp1 pp1 ZeRO-1: 0.135 ms exposed against the fast tier's
    # 0.044 ms of a 0.93 ms step). On llama-3.1-70b the median is under 1 %
    # (bench/bench_sweep.py --compare).
    errors = [step_error(r, f) for r, f in pairs]
    assert len(errors) == 48
    assert max(abs(e) for e in errors) < 0.15, errors


def test_screen_times_megatron_core_defaults_close_to_the_fast_tier(tiny_space):
    """Under the default framework (distributed optimizer with its parameter
    gathers overlapped in the next forward, sequence parallelism and tp-comm
    overlap with tp > 1, fp32 main gradients) points are screened, not sent to
    the fast tier, and land as near it as the bare settings do."""
    pairs = screened_and_fast({**tiny_space, "framework": "megatron-core", "zero": 1})
    assert all(r["config"]["dp_overlap_param_gather"] == (r["config"]["dp"] > 1) for r, _ in pairs)
    errors = [step_error(r, f) for r, f in pairs]
    assert len(errors) >= 8
    assert max(abs(e) for e in errors) < 0.15, errors


def test_screen_is_deterministic(tiny_space):
    a = run_sweep(tiny_space, tier="screen", retime=-1)
    b = run_sweep(tiny_space, tier="screen", retime=-1)
    dump = lambda r: json.dumps([(x["key"], x["status"], x["metrics"]) for x in r.records], sort_keys=True)  # noqa: E731
    assert dump(a) == dump(b)


def test_the_best_records_are_retimed_by_the_fast_tier(tiny_space):
    result = run_sweep(tiny_space)
    ok = sorted((r for r in result.records if r["status"] == "ok"),
                key=lambda r: -r["metrics"]["tokens_per_s"])
    assert [r["metrics"]["tier"] for r in ok[:3]] == ["fast"] * 3
    fast = by_key(run_sweep(tiny_space, tier="fast"))
    for r in ok[:3]:
        assert r["metrics"] == fast[r["key"]]["metrics"]


@settings(max_examples=60, deadline=None)
@given(pp=st.integers(1, 8), m=st.integers(1, 24), f=st.floats(0.1, 5.0), b=st.floats(0.1, 5.0),
       schedule=st.sampled_from(["1f1b", "gpipe"]))
def test_uniform_pipeline_takes_its_closed_form(pp, m, f, b, schedule):
    """Uniform stages, free sends: the step is (m + pp - 1)(T_F + T_B) under
    GPipe and 1F1B alike (Narayanan et al. 2021, sec. 2.2)."""
    counts = [1] * pp
    t, _, busy, exposed = run_step(schedule, pp, 1, m, counts,
                                   StepItems([f] * pp, [b] * pp, [0.0] * pp, False, [0.0] * pp, [0.0] * pp))
    assert abs(t - (m + pp - 1) * (f + b)) <= 1e-9 * t
    assert all(abs(x - m * (f + b)) <= 1e-9 * t for x in busy)
    assert exposed == [0.0] * pp


@settings(max_examples=40, deadline=None)
@given(pp=st.integers(2, 8), vpp=st.integers(2, 3), k=st.integers(1, 3), f=st.floats(0.1, 5.0),
       b=st.floats(0.1, 5.0))
def test_uniform_interleaved_pipeline_takes_its_closed_form(pp, vpp, k, f, b):
    """Megatron-LM's interleaved 1F1B over vpp chunks of equal cost: the bubble
    shrinks vpp-fold, (m vpp + pp - 1)(T_F + T_B) with chunk times T_F, T_B
    (Narayanan et al. 2021, sec. 2.2.2); m a multiple of pp."""
    m, chunks = pp * k, pp * vpp
    t, *_ = run_step("interleaved", pp, vpp, m, [1] * chunks,
                     StepItems([f] * chunks, [b] * chunks, [0.0] * chunks, False, [0.0] * pp, [0.0] * pp))
    assert abs(t - (m * vpp + pp - 1) * (f + b)) <= 1e-9 * t


@settings(max_examples=40, deadline=None)
@given(pp=st.integers(2, 8), extra=st.integers(0, 16), t_item=st.floats(0.1, 5.0))
def test_uniform_zero_bubble_pipeline_takes_its_closed_form(pp, extra, t_item):
    """ZB-H1 with T_F = T_B = T_W: (3m + pp - 1) T, the bubble (pp - 1)(T_F + T_B
    - T_W) of Qi et al. 2023 (m >= pp)."""
    m = pp + extra
    t, *_ = run_step("zb-h1", pp, 1, m, [1] * pp,
                     StepItems([t_item] * pp, [t_item] * pp, [t_item] * pp, True, [0.0] * pp, [0.0] * pp))
    assert abs(t - (3 * m + pp - 1) * t_item) <= 1e-9 * t


@settings(max_examples=60, deadline=None)
@given(pp=st.integers(2, 6), vpp=st.integers(1, 2), k=st.integers(1, 4),
       f=st.lists(st.floats(0.1, 5.0), min_size=12, max_size=12),
       b=st.lists(st.floats(0.1, 5.0), min_size=12, max_size=12),
       send=st.lists(st.floats(0.0, 2.0), min_size=6, max_size=6))
def test_waiting_for_the_sends_never_makes_a_screened_step_faster(pp, vpp, k, f, b, send):
    """Blocking sends (Megatron-Core's non-interleaved 1F1B) only add a
    dependence to each stage's next compute: the step is no faster, no slower
    than with every send on the compute stream itself, and with free sends
    unchanged."""
    chunks, m = pp * vpp, pp * k
    schedule = "interleaved" if vpp > 1 else "1f1b"

    def step(sends, blocking):
        items = StepItems(f[:chunks], b[:chunks], [0.0] * chunks, False, sends, [0.0] * pp,
                          blocking_sends=blocking)
        return run_step(schedule, pp, vpp, m, [1] * chunks, items)[0]

    free, waited = step(send[:pp], False), step(send[:pp], True)
    assert waited >= free * (1 - 1e-12)
    # at most each stage's sends in series with its compute
    assert waited - free <= sum(send[:pp]) * 2 * m * vpp * (1 + 1e-9)
    assert step([0.0] * pp, True) == pytest.approx(step([0.0] * pp, False), rel=1e-12)


@pytest.mark.parametrize(
    "options",
    [dict(zero=3), dict(fsdp=True), dict(cp=2), dict(dp_overlap=False), dict(blocking_comm=("tp",)),
     dict(pipeline_scatter_gather=True), dict(optimizer="unfused-fp16"),
     dict(unfused_grad_accumulation=True), dict(cpu_offload_layers=1)],
)
def test_what_the_screen_does_not_model_goes_to_the_fast_tier(options):
    from charon_ir.api import TrainingConfig
    from charon_ir.sweep.screen import screenable

    assert screenable(TrainingConfig(model="llama-3-8b"))
    assert not screenable(TrainingConfig(model="llama-3-8b", **options))


def test_blocking_pipeline_sends_are_screened():
    from charon_ir.api import TrainingConfig
    from charon_ir.sweep.screen import screenable

    assert screenable(TrainingConfig(model="llama-3-8b", pp=4, pp_send_overlap=False))
    assert screenable(TrainingConfig(model="llama-3-8b", pp=4, blocking_comm=("pp",)))
    assert not screenable(TrainingConfig(model="llama-3-8b", pp=4, blocking_comm=("pp", "tp")))


def test_a_model_imported_at_its_tp_goes_to_the_fast_tier():
    """A probe imports its model whole; Megatron-Core's model code is imported
    already split at the run's tp (`api.imports_tensor_parallel`)."""
    from charon_ir.api import TrainingConfig
    from charon_ir.sweep.screen import screenable

    model = "megatron:examples/megatron_gpt_tiny.yaml"
    assert screenable(TrainingConfig(model=model, tp=1))
    assert not screenable(TrainingConfig(model=model, tp=2, gpus=2))


SCREENED_AXES = [
    ({"tp": 2, "sequence_parallel": True}, "tp_comm_overlap", [False, True]),
    ({}, "fuse_attention", [True, False]),
    ({}, "attention_kernel", ["", "triton"]),
    ({"zero": 1}, "dp_bucket_mb", [25, 1]),
]


@pytest.mark.parametrize("fixed, axis, values", SCREENED_AXES, ids=[axis for _, axis, _ in SCREENED_AXES])
def test_screen_follows_the_settings_it_models(unflashed_step, fixed, axis, values):
    """A setting the probe's passes or the composed gathers take in changes a
    screened step the way it changes the fast tier's, by as much to within a
    factor of 2 (how close the steps themselves are is the first test's)."""
    space = {"model": unflashed_step, "gpus": 8, "global_batch": 16, "framework": "none", **fixed, axis: values}
    screened = run_sweep(space, tier="screen", retime=-1).records
    fast = run_sweep(space, tier="fast").records
    assert [r["metrics"]["tier"] for r in screened] == ["screen", "screen"]
    s, f = ([r["metrics"]["iteration_time_s"] for r in records] for records in (screened, fast))
    assert 0.5 <= (s[1] - s[0]) / (f[1] - f[0]) <= 2.0, (s, f)


@pytest.mark.parametrize(
    "fixed, axis, values",
    [({}, "dp_overlap", [True, False]),
     ({"tp": 2, "pp": 2}, "pipeline_scatter_gather", [False, True]),
     ({}, "optimizer", ["fused", "unfused-bf16"]), ({}, "unfused_grad_accumulation", [False, True])],
)
def test_points_of_a_setting_the_screen_does_not_model_are_timed_by_the_fast_tier(tiny_space, fixed, axis, values):
    space = {**tiny_space, "tp": 1, "pp": 1, "zero": 0, "recompute": "none", **fixed, axis: values}
    screened = run_sweep(space, tier="screen", retime=-1).records
    fast = run_sweep(space, tier="fast").records
    assert [r["metrics"]["tier"] for r in screened] == ["screen", "fast"]
    assert screened[1]["metrics"] == fast[1]["metrics"]


def test_probe_classes_split_on_what_the_probe_builds_not_on_the_memory_limit():
    from charon_ir.sweep.screen import class_key
    from charon_ir.sweep.space import normalise

    base = normalise("training", {"model": "m", "gpus": 8, "tp": 2, "sequence_parallel": True})
    # the probe is analysed without a limit; each point is held to its own
    assert class_key({**base, "memory_limit_gb": 40.0}) == class_key(base)
    for setting, value in (("tp_comm_overlap", True), ("fuse_attention", False),
                           ("attention_kernel", "flash3")):
        assert class_key({**base, setting: value}) != class_key(base), setting
    # the gradient buckets are priced per point from the probe's gradient groups
    assert class_key({**base, "dp_bucket_mb": 100}) == class_key(base)


@pytest.mark.parametrize("built, priced", [(1, 4), (4, 1), (25, 1)])
def test_gradient_buckets_at_any_size_are_the_ones_data_parallel_emits(built, priced):
    """A probe's gradient groups, read off a build with one bucket size, give
    the all-reduces data-parallel emits with another (so points of every
    bucket size share one probe)."""
    from pathlib import Path

    from xdsl.context import Context

    from charon_ir.dialects import coll, sim
    from charon_ir.frontend import parse_ir
    from charon_ir.memory.tensors import value_bytes
    from charon_ir.passes.data_parallel import DataParallelPass
    from charon_ir.sweep.screen import _gradient_group

    text = (Path(__file__).resolve().parents[2] / "lit/passes/Inputs/large_vocab.mlir").read_text()
    modules = {}
    for mb in (built, priced):
        modules[mb] = parse_ir(text)
        DataParallelPass(dp=2, bucket_mb=mb).apply(Context(), modules[mb])
    groups = [g for op in modules[built].walk() if (g := _gradient_group(op, coll, sim)) is not None]
    emitted = [(float(value_bytes(op.operands[0])), tuple(op.axis_names()))
               for op in modules[priced].walk() if isinstance(op, coll.AllReduceOp)]
    composed = [(c.payload_bytes, c.axes) for g in groups for c in g.buckets(priced)]
    assert groups and len(emitted) > len(groups) and composed == emitted


def test_updated_gathers_are_the_ones_data_parallel_emits():
    """The screen prices ZeRO-1's all-gathers of updated parameters as the pass
    buckets them: bucket-mb of parameters per gather, gathered from dp shards."""
    from pathlib import Path

    from xdsl.context import Context

    from charon_ir.dialects import coll, sim
    from charon_ir.frontend import parse_ir
    from charon_ir.memory.tensors import value_bytes
    from charon_ir.passes.data_parallel import DataParallelPass
    from charon_ir.sweep.screen import updated_gathers

    path = Path(__file__).resolve().parents[2] / "lit/passes/Inputs/large_vocab.mlir"
    module = parse_ir(path.read_text())
    params = sum(value_bytes(op.result) for op in module.walk() if isinstance(op, sim.ParamOp))
    DataParallelPass(dp=4, zero=1, bucket_mb=1).apply(Context(), module)
    phase = next(op for op in module.walk() if isinstance(op, sim.PhaseOp) and op.kind.data == "optimizer")
    emitted = [value_bytes(op.results[0]) for op in phase.walk() if isinstance(op, coll.AllGatherOp)]
    priced = [c.payload_bytes for c in updated_gathers(params, 4, 1)]
    assert len(emitted) > 1 and priced == emitted


def test_screen_prices_the_contention_of_gradient_reductions_beside_the_backward():
    """On an A100 (calibrated overlap contention, compute_efficiency.OVERLAP_SLOWDOWN)
    the gradient reductions beside each stage's last backward stretch it, and the
    stretch runs down the pipeline; the screen prices it where the reductions
    run, as the fast tier does (it was 2-10 % fast on these points without)."""
    space = {"kind": "training", "name": "a100", "model": "gpt3-175b", "hardware": "A100-SXM4-80GB",
             "gpus": 1024, "seq_len": 2048, "global_batch": 1536, "tp": 4, "pp": [8, 16],
             "vpp": [1, 2], "sequence_parallel": True, "recompute": "selective", "zero": 1,
             "framework": "none"}
    screened = run_sweep(space, tier="screen", retime=-1)
    fast = by_key(run_sweep(space, tier="fast"))
    errors = [r["metrics"]["iteration_time_s"] / fast[r["key"]]["metrics"]["iteration_time_s"] - 1
              for r in screened.records if r["status"] == "ok"]
    assert len(errors) == 4 and max(abs(e) for e in errors) < 0.02, errors


@settings(max_examples=40, deadline=None)
@given(pp=st.integers(1, 4), m=st.integers(4, 12), layers=st.integers(1, 3),
       times=st.lists(st.floats(0.01, 2.0), min_size=8, max_size=8),
       reduce=st.booleans(), gather=st.booleans(), schedule=st.sampled_from(["1f1b", "gpipe", "zb-h1"]))
def test_a_step_shape_built_once_times_every_point_of_it(pp, m, layers, times, reduce, gather, schedule):
    """The step program's events are built once per shape and each point's
    durations filled in: a point timed on a shape another point built runs as
    on a program built for it alone."""
    from charon_ir.runtime.interpreter import OverlapModel
    from charon_ir.sweep import screen
    from charon_ir.sweep.screen import Phase

    m = max(m, pp)
    split = schedule == "zb-h1"
    counts = [layers] * pp

    def items(scale: float) -> StepItems:
        f, b, w, send, opt, sync, gather_s, pre = (t * scale for t in times)
        return StepItems([f] * pp, [b] * pp, [w] * pp, split, [send] * pp, [opt] * pp, reduce=reduce,
                         sync_phase=Phase(pre=pre, layer=b / (layers + 1), post=0.0),
                         sync_layer=(sync,), sync_pre=(sync / 2,), sync_post=(sync / 3,),
                         gathers=[gather_s] * pp, layer_gather=[gather_s / layers if gather else None] * pp)

    overlap = OverlapModel(0.2, 0.3)
    screen._SHAPES.clear()
    first = run_step(schedule, pp, 1, m, counts, items(1.0), overlap)
    second = run_step(schedule, pp, 1, m, counts, items(1.7), overlap)  # the shape of the first
    assert len(screen._SHAPES) == 1
    program, shape = screen.step_program(schedule, pp, 1, m, counts, items(2.3))
    assert shape.tables.describe(program)  # the interpreter's tables shared, not derived again
    screen._SHAPES.clear()
    alone = run_step(schedule, pp, 1, m, counts, items(1.7), overlap)
    assert second == alone
    assert first.time_s < second.time_s


def test_a_point_out_of_memory_is_not_simulated():
    """A composed peak beyond the memory band is out of memory whatever its
    time: compose returns it untimed, and the sweep records it out of memory."""
    from charon_ir.api import TrainingConfig
    from charon_ir.sweep import screen
    from charon_ir.sweep.evaluate import TrainingEvaluator

    config = TrainingConfig(model="llama-3-8b", tp=1, pp=2, gpus=16, global_batch=64, seq_len=1024)
    evaluator = TrainingEvaluator(tier="screen")
    probe = screen.build_probe(evaluator, config)
    target = screen.point_target(config)
    fits = screen.compose(probe, config, target.topology, 10 * target.gpu.hbm_bytes)
    assert fits.timed and fits.iteration_time_s > 0
    tight = screen.compose(probe, config, target.topology, max(fits.peaks) / 2)
    assert not tight.timed and tight.peaks == fits.peaks


def test_points_that_differ_only_in_waiting_for_sends_share_a_probe():
    """A probe is one stage: it sends nothing, so a point whose preset waits for
    pipeline sends (`pp_send_overlap` off: 1F1B under Megatron-Core) and one that
    does not (interleaved) are composed from one probe, built once."""
    from dataclasses import replace

    from charon_ir.api import TrainingConfig
    from charon_ir.sweep import screen
    from charon_ir.sweep.evaluate import TrainingEvaluator

    config = TrainingConfig(model="llama-3-8b", tp=1, pp=2, gpus=16, global_batch=64, seq_len=1024)
    evaluator = TrainingEvaluator(tier="screen")
    waits = screen.build_probe(evaluator, replace(config, pp_send_overlap=False))
    assert screen.build_probe(evaluator, replace(config, pp_send_overlap=True)) is waits


def test_batches_keep_a_layer_group_in_one_batch():
    """A screened layer's points (its classes, whose probes share passes) are
    sent to one worker: a batch ends only where the group changes."""
    from charon_ir.sweep.runner import _batches
    from charon_ir.sweep.space import Point

    points = [Point({"tp": tp, "i": i}, str((tp, i)), "") for tp in (1, 2, 4) for i in range(7)]
    batches = _batches(points, workers=2, group=lambda p: p.config["tp"])
    assert [p for b in batches for p in b] == points
    # the batch size would be 2 points: each batch is a whole group instead
    assert [[p.config["tp"] for p in b] for b in batches] == [[tp] * 7 for tp in (1, 2, 4)]
    assert len(_batches(points, workers=2)) == 11  # ungrouped: cut every 2 points


@pytest.mark.parametrize("flash", [True, False])
def test_a_recompute_that_rewrites_nothing_shares_the_probe(tiny_space, unflashed_step, flash):
    """Selective recomputation of a flash attention rewrites nothing: its points
    are composed from the probe without recomputation (one probe, one
    composition each), and screen exactly as those points do; where it rewrites
    (an attention left unfused), it has its own probe."""
    from charon_ir.sweep.evaluate import TrainingEvaluator, sharing_order, training_config
    from charon_ir.sweep.screen import build_probe
    from charon_ir.sweep.space import load_space

    model = tiny_space["model"] if flash else unflashed_step
    space = {**tiny_space, "model": model, "tp": [1, 2], "recompute": ["none", "selective"],
                       "fuse_attention": flash}
    records = run_sweep(space, tier="screen", retime=-1).records

    def setting(r):
        return repr(sorted((k, v) for k, v in r["config"].items() if k != "recompute"))

    none = {setting(r): r["metrics"] for r in records if r["config"]["recompute"] == "none"}
    twins = [none[setting(r)] == r["metrics"] for r in records if r["config"]["recompute"] == "selective"]
    assert len(twins) == 8 and all(r["metrics"]["tier"] == "screen" for r in records)
    assert all(twins) if flash else not any(twins)
    evaluator = TrainingEvaluator(tier="screen")
    points = sharing_order([p for p in load_space(space).points() if not p.pruned])
    probes = {p.config["recompute"]: build_probe(evaluator, training_config(p.config)) for p in points[:2]}
    assert (probes["none"] is probes["selective"]) == flash


def test_a_probe_a_pass_refuses_goes_to_the_fast_tier_and_a_bug_is_the_points_error(tiny_space, monkeypatch):
    """The screen falls back to the fast tier only where a pass refuses the
    probe (a CharonError: the fast tier gives the point's own answer); any other
    exception is a bug, recorded as the point's error naming its type and
    where it was raised, never a silent fall back to the slow tier."""
    from charon_ir.errors import CharonError
    from charon_ir.sweep import screen

    space = {**tiny_space, "tp": 1, "pp": 1, "zero": 0, "recompute": "none"}
    screened = run_sweep(space, tier="screen", retime=-1).records
    assert [r["metrics"]["tier"] for r in screened] == ["screen"]

    def refuses(evaluator, config):
        raise CharonError("pipeline: a refusal")

    monkeypatch.setattr(screen, "build_probe", refuses)
    refused = run_sweep(space, tier="screen", retime=-1).records
    fast = run_sweep(space, tier="fast").records
    assert [r["metrics"] for r in refused] == [r["metrics"] for r in fast]
    assert refused[0]["metrics"]["tier"] == "fast"

    def broken(evaluator, config):
        return None.layers  # an AttributeError: a bug

    monkeypatch.setattr(screen, "build_probe", broken)
    [bug] = run_sweep(space, tier="screen", retime=-1).records
    assert bug["status"] == "error" and bug["metrics"] is None
    assert bug["error"].startswith("AttributeError: ") and "test_screen.py:" in bug["error"]


def test_a_probe_whose_timing_fails_fails_each_later_point_the_same_way():
    """A probe's deferred timing runs once: what it raised is raised again to
    every later point of its class (its module is half priced), not a
    different error."""
    from charon_ir.errors import CharonError
    from charon_ir.sweep.screen import Phase, Probe

    calls = []

    def timing():
        calls.append(1)
        raise CharonError("cost-annotate: no engine can price it")

    probe = Probe(layers=4, forward=Phase(), backward=Phase(), weight=None, optimizer_s=0.0,
                  flops_per_microbatch=0.0, recomputed_per_microbatch=0.0, tokens_per_microbatch=1,
                  activation_bytes=0.0, sizes={})
    probe._timing = timing
    errors = []
    for _ in range(3):
        with pytest.raises(CharonError) as raised:
            probe.timed()
        errors.append(raised.value)
    assert len(calls) == 1 and errors[0] is errors[1] is errors[2]


def test_the_probe_caches_are_bounded_and_change_no_answer(tiny_space, monkeypatch):
    """Every cache of the screen's probes (probes, shared modules, layers,
    gradient groups, untimed probes) is an LRU of its size: at size 1 a sweep
    rebuilds what it evicted and answers exactly as with the defaults."""
    from charon_ir.sweep import screen
    from charon_ir.sweep.evaluate import TrainingEvaluator, sharing_order
    from charon_ir.sweep.space import load_space

    space = load_space({**tiny_space, "tp": [1, 2], "micro_batch": [1, 2], "recompute": ["none", "full"]})
    points = sharing_order([p for p in space.points() if not p.pruned])
    points.sort(key=lambda p: screen.class_order(p.config))
    roomy = TrainingEvaluator(tier="screen")
    wide = [{k: r[k] for k in ("key", "status", "error", "metrics")} for r in roomy.evaluate(points)]
    assert len(roomy.probes.probes) > 1 and len(roomy.probes.prefixes) > 1
    for size in ("PROBES_KEPT", "PREFIX_CACHE_SIZE", "LAYERS_KEPT", "GRADIENTS_KEPT", "UNTIMED_PROBES"):
        monkeypatch.setattr(screen, size, 1)
    tight = TrainingEvaluator(tier="screen")
    narrow = [{k: r[k] for k in ("key", "status", "error", "metrics")} for r in tight.evaluate(points)]
    assert narrow == wide
    cache = tight.probes
    # (the last recompute policy of a layer takes the modules it shares)
    assert max(len(cache.probes), len(cache.prefixes), len(cache.layers), len(cache.gradients),
               len(cache.untimed)) == 1
    assert sum(r["metrics"]["tier"] == "screen" for r in narrow if r["status"] == "ok") >= 8


def test_pipelines_under_full_recomputation_land_within_1_percent_of_the_fast_tier(deep_step):
    """1F1B and interleaved 4-stage pipelines, with and without full
    recomputation, on one node and with neighbour stages across nodes (2 GPUs a
    node): within 1 % of the fast tier. Two mechanisms the screen shares with
    the fast tier decide it: a backward under full recomputation first re-runs
    its first layer's forward from the saved checkpoint, which needs nothing
    from the next stage and runs while the gradient is on its way (the fast
    tier's folded loop head; without it these points were 1.4-2.0 % slow); and
    each pair of neighbour stages sends over its own link (priced as the first
    pair's, across nodes they were up to 1.4 % fast)."""
    space = {"model": deep_step, "gpus": 4, "pp": 4, "vpp": [1, 2], "global_batch": 16,
             "recompute": ["none", "full"], "gpus_per_node": [8, 2], "framework": "none"}
    pairs = screened_and_fast(space)
    assert len(pairs) == 8
    errors = {(r["config"]["vpp"], r["config"]["recompute"], r["config"]["gpus_per_node"]): step_error(r, f)
              for r, f in pairs}
    assert max(abs(e) for e in errors.values()) < 0.01, errors


def test_pipelines_waiting_for_their_sends_land_near_the_fast_tier(deep_step):
    """Megatron-Core's non-interleaved 1F1B waits for each send
    (`pp_send_overlap` false, the megatron-core preset's with pp > 1 and no vpp):
    the screen holds each stage's next compute for it as the fast tier's
    `comm_wait` does: within 1 % on one node, 3 % across nodes."""
    space = {"model": deep_step, "gpus": 4, "pp": 4, "vpp": [1, 2], "global_batch": 16, "recompute": "none",
             "gpus_per_node": [8, 2], "framework": "none", "pp_send_overlap": [True, False]}
    pairs = screened_and_fast(space)
    assert len(pairs) == 8
    errors = {(r["config"]["vpp"], r["config"]["gpus_per_node"], r["config"]["pp_send_overlap"]): step_error(r, f)
              for r, f in pairs}
    # with neighbour stages across nodes the waited-for sends come out 2.3-2.8 %
    # fast against the fast tier (free sends: 0.2 %); why is not found yet
    assert max(abs(e) for (_, per_node, free), e in errors.items() if per_node == 8 or free) < 0.01, errors
    assert max(abs(e) for e in errors.values()) < 0.03, errors
    step = {key: r["metrics"]["iteration_time_s"] for key, (r, _) in zip(errors, pairs)}
    for vpp in (1, 2):
        for gpus_per_node in (8, 2):
            assert step[(vpp, gpus_per_node, False)] > step[(vpp, gpus_per_node, True)]


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_the_probe_head_is_one_recomputed_layer_forward(deep_step, recompute):
    """What a B runs before it needs its gradient (`Phase.head`, read off the
    fast tier's folded backward loop) is one layer's forward under full
    recomputation, nothing otherwise (a selective recompute re-runs attention
    after the gradients of what follows it)."""
    from charon_ir.api import TrainingConfig
    from charon_ir.sweep.evaluate import TrainingEvaluator
    from charon_ir.sweep.screen import build_probe

    config = TrainingConfig(model=deep_step, gpus=4, pp=4, global_batch=16, recompute=recompute)
    probe = build_probe(TrainingEvaluator(tier="screen"), config).timed()
    assert probe.forward.head == 0.0
    if recompute == "full":
        assert probe.backward.head == pytest.approx(probe.forward.layer, rel=1e-6)
        assert probe.backward.head < probe.backward.layer
    else:
        assert probe.backward.head == 0.0
