"""A sweep's numbers are simulate's numbers: shared imports and pass prefixes,
and memory-analysis before cost-annotate, change the cost of a point, never its
answer."""

import pytest

from charon_ir.api import configure, simulate
from charon_ir.sweep import run_sweep
from charon_ir.sweep.evaluate import TrainingEvaluator, sharing_order, training_config, training_steps
from charon_ir.sweep.space import ModelShape, Point, load_space, normalise

SIMULATE_KEYS = (
    "gpus", "tp", "pp", "dp", "vpp", "global_batch", "recompute", "zero", "micro_batch", "seq_len", "fuse",
)


def test_sweep_records_match_simulate(tiny_space):
    points = [p for p in load_space(tiny_space).points() if not p.pruned]
    records = list(TrainingEvaluator().evaluate(sharing_order(points)))
    assert [r["status"] for r in records] == ["ok"] * len(points)
    for r in records[:: max(1, len(records) // 6)]:
        config = r["config"]
        reference = simulate(config["model"], framework=config["framework"], **{k: config[k] for k in SIMULATE_KEYS})
        assert r["metrics"]["iteration_time_s"] == pytest.approx(reference["iteration_time_s"], rel=1e-12)
        assert r["metrics"]["peak_memory_bytes"] == reference["peak_memory_bytes"]
        ours, theirs = r["metrics"]["breakdown"], reference["breakdown"]
        assert ours["compute_s"] == pytest.approx(theirs["compute_s"], rel=1e-12)
        assert ours["bubble_s"] == pytest.approx(theirs["bubble_s"], rel=1e-12, abs=1e-15)
        assert ours["exposed_comm_s"] == pytest.approx(theirs["exposed_comm_s"], rel=1e-12)


def test_sharing_order_groups_common_prefixes(tiny_space):
    points = [p for p in load_space(tiny_space).points() if not p.pruned]
    ordered = sharing_order(points)
    steps = [training_steps(training_config(p.config)) for p in ordered]
    # points with the same first passes are contiguous: a prefix, once left, never returns
    firsts = [s[:2] for s in steps]
    seen, previous = set(), None
    for f in firsts:
        if f != previous:
            assert f not in seen
            seen.add(f)
            previous = f


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tiny_space):
    good = [p for p in load_space(tiny_space).points() if not p.pruned][:2]
    bad_config = normalise("training", {**good[0].config, "hardware": "Z100"})
    bad = Point(bad_config, "bad")
    records = list(TrainingEvaluator().evaluate([good[0], bad, good[1]]))
    assert [r["status"] for r in records] == ["ok", "error", "ok"]
    assert "Z100" in records[1]["error"] and "\n" not in records[1]["error"]


def test_out_of_memory_is_pruned_before_timing(tiny_space, monkeypatch):
    evaluator = TrainingEvaluator()
    timed = []
    original = evaluator._time
    monkeypatch.setattr(evaluator, "_time", lambda module, config: timed.append(1) or original(module, config))
    # the tiny step needs ~25 MB: an 8 GPU target with 0.01 GiB cannot hold it
    space = load_space({**tiny_space, "tp": 1, "pp": 1, "vpp": 1, "zero": 0, "recompute": "none"})
    point = space.points()[0]
    import charon_ir.api as api

    real = api.make_pass

    def tight(name, **options):
        if name == "memory-analysis":
            options["limit_gb"] = 0.01
        return real(name, **options)

    monkeypatch.setattr(api, "make_pass", tight)
    (r,) = evaluator.evaluate([point])
    assert r["status"] == "oom" and r["error"].startswith("memory-analysis: stage 0 needs")
    assert timed == []


def _answers(records):
    """Everything a record says about its point except what it cost."""
    import json

    return [json.dumps({k: v for k, v in r.items() if k not in ("seconds", "cpu_seconds")}, sort_keys=True)
            for r in records]


def test_cached_evaluation_is_byte_identical_to_uncached(tiny_space):
    # vpp and micro-batch axes too: points that share imports, pipelines and
    # data-parallel prefixes, snapshots handed over and cloned; pp x vpp = 4
    # exceeds the tiny step's 2 layers, so a failing prefix is remembered too
    space = load_space({**tiny_space, "tp": [1, 2], "pp": [1, 2], "vpp": [1, 2], "micro_batch": [1, 2]})
    points = sharing_order([p for p in space.points() if not p.pruned])
    cached = list(TrainingEvaluator().evaluate(points))
    uncached = list(TrainingEvaluator(cache=False).evaluate(points))
    statuses = [r["status"] for r in cached]
    assert statuses.count("ok") >= 16 and set(statuses) == {"ok", "error"}
    assert _answers(cached) == _answers(uncached)
    # a second pass over the same points on the warm evaluator answers the same
    evaluator = TrainingEvaluator()
    list(evaluator.evaluate(points[: len(points) // 2]))
    assert _answers(evaluator.evaluate(points)) == _answers(uncached)


def test_evaluator_caches_are_bounded(tiny_space, monkeypatch):
    import charon_ir.sweep.evaluate as evaluate

    monkeypatch.setattr(evaluate, "IMPORT_CACHE_SIZE", 1)
    space = load_space({**tiny_space, "tp": 1, "pp": 1, "zero": 0, "recompute": "none", "micro_batch": [1, 2]})
    evaluator = TrainingEvaluator()
    records = list(evaluator.evaluate(sharing_order([p for p in space.points() if not p.pruned])))
    assert [r["status"] for r in records] == ["ok", "ok"]
    assert len(evaluator._imports) == 1
    # uncached keeps nothing between points
    uncached = TrainingEvaluator(cache=False)
    list(uncached.evaluate(sharing_order([p for p in space.points() if not p.pruned])))
    assert not uncached._imports and not uncached._snapshots


LATER_AXES = [
    ({"tp": 2, "sequence_parallel": True}, "tp_comm_overlap", [False, True]),
    ({}, "fuse_attention", [True, False]),
    ({}, "attention_kernel", ["", "triton"]),
    ({"zero": 1}, "dp_bucket_mb", [25, 1]),
    ({}, "dp_overlap", [True, False]),
    ({"zero": 1}, "dp_overlap_param_gather", [False, True]),
    # scatter-gather slices what tp replicates: under sequence parallelism nothing is
    ({"tp": 2, "pp": 2, "sequence_parallel": False}, "pipeline_scatter_gather", [False, True]),
    ({}, "optimizer", ["fused", "unfused-fp16"]),
    ({}, "unfused_grad_accumulation", [False, True]),
    ({}, "cpu_offload_layers", [0, 1]),
]


@pytest.mark.parametrize("fixed, axis, values", LATER_AXES, ids=[axis for _, axis, _ in LATER_AXES])
def test_later_settings_are_axes_simulate_answers(unflashed_step, fixed, axis, values):
    space = load_space({"model": unflashed_step, "gpus": 8, "global_batch": 16, **fixed, axis: values})
    points = space.points()
    assert [p.config[axis] for p in points] == values and not any(p.pruned for p in points)
    records = list(TrainingEvaluator().evaluate(sharing_order(points)))
    assert [r["status"] for r in records] == ["ok", "ok"]
    times = [r["metrics"]["iteration_time_s"] for r in records]
    assert times[0] != times[1]
    for r in records:
        config = r["config"]
        reference = simulate(config["model"], **{k: config[k] for k in (*SIMULATE_KEYS, "sequence_parallel", axis)})
        assert r["metrics"]["iteration_time_s"] == pytest.approx(reference["iteration_time_s"], rel=1e-12)
        assert r["metrics"]["peak_memory_bytes"] == reference["peak_memory_bytes"]


@pytest.mark.parametrize("tier", ["fast", "screen"])
def test_memory_limit_is_an_axis(tiny_space, tier):
    # the tiny step needs ~25 MB per GPU: 0.01 GiB cannot hold it, the HBM can
    space = {**tiny_space, "tp": 1, "pp": 1, "zero": 0, "recompute": "none", "memory_limit_gb": [0, 0.01]}
    records = run_sweep(space, tier=tier, retime=-1).records
    assert [(r["config"]["memory_limit_gb"], r["status"]) for r in records] == [(0.0, "ok"), (0.01, "oom")]


def test_states_bound_prunes_against_the_memory_limit():
    """The closed-form bound compares with the point's memory limit when it has
    one: a limit above the HBM (memory reported, never stopped at) prunes nothing
    the HBM alone would."""
    evaluator = TrainingEvaluator()
    evaluator._shapes["m"] = ModelShape(layers=8, heads=8, kv_heads=8, experts=0, params=10**10)
    # 16 B per parameter: 160 GB on one GPU
    overflow = {}
    for limit in (0, 100, 1e6):
        point = Point(normalise("training", {"model": "m", "gpus": 1, "memory_limit_gb": limit}), "p")
        overflow[limit] = evaluator._states_overflow(point, training_config(point.config))
    assert "of 80.0 GiB" in overflow[0] and "of 100.0 GiB" in overflow[100] and overflow[1e6] == ""


def test_a_megatron_model_is_imported_per_tensor_parallel_size():
    """Megatron-Core splits itself at import (frontend/megatron.py): a sweep
    imports a megatron: model once per tp and sequence parallelism, and plans
    no shard-tensor for it; sequence-parallel stays (it leaves the imported
    collectives and prices --tp-comm-overlap)."""
    model = "megatron:examples/megatron_gpt_tiny.yaml"
    config, _ = configure(model, gpus=4, tp=2, sequence_parallel=True, seq_len=256, global_batch=8)
    steps = training_steps(config)
    assert steps[0] == ("import", (("batch", 1), ("model", model), ("seq_len", 256), ("sequence_parallel", True),
                                   ("tp", 2)))
    names = [name for name, _ in steps]
    assert "shard-tensor" not in names and "sequence-parallel" in names
    whole, _ = configure(model, gpus=4, tp=1, seq_len=256, global_batch=8)
    assert training_steps(whole)[0] == ("import", (("batch", 1), ("model", model), ("seq_len", 256)))
    hf, _ = configure("llama-3-8b", gpus=4, tp=2, sequence_parallel=True, seq_len=256, global_batch=8)
    assert dict(training_steps(hf)[0][1]).keys() == {"batch", "model", "seq_len"}
    assert "shard-tensor" in [name for name, _ in training_steps(hf)]



def test_parse_models_parses_each_import_of_the_points_once(tiny_space):
    """What a pool parses before forking its workers: one module per distinct
    import of the legal points (a .mlir step imports once per micro-batch), the
    ones their evaluation then takes."""
    points = [p for p in load_space({**tiny_space, "micro_batch": [1, 2]}).points() if not p.pruned]
    evaluator = TrainingEvaluator()
    evaluator.parse_models(points)
    imports = {training_steps(training_config(p.config))[0] for p in points}
    assert len(imports) == 2 and set(evaluator._imports) == imports
    parsed = dict(evaluator._imports)
    list(evaluator.evaluate(sharing_order(points[:3])))
    assert all(evaluator._imports[k] is parsed[k] for k in parsed if k in evaluator._imports)


@pytest.mark.parametrize("flash", [True, False])
def test_a_recompute_that_rewrites_nothing_is_timed_once(tiny_space, unflashed_step, flash, monkeypatch):
    """Selective recomputation of a flash attention rewrites nothing (flash
    re-runs its core already): such a point's module is the one without
    recomputation, and one of the two is timed. Where selective rewrites (an
    attention left unfused), each is timed. Either way the records are those of
    an evaluation that keeps nothing."""
    model = tiny_space["model"] if flash else unflashed_step
    space = load_space({**tiny_space, "model": model, "tp": [1, 2], "recompute": ["none", "selective"],
                       "fuse_attention": flash})
    points = sharing_order([p for p in space.points() if not p.pruned])
    evaluator = TrainingEvaluator()
    timed = []
    original = evaluator._time
    monkeypatch.setattr(evaluator, "_time", lambda module, config: timed.append(1) or original(module, config))
    cached = list(evaluator.evaluate(points))
    assert {r["status"] for r in cached} == {"ok"}
    assert len(timed) == (len(points) // 2 if flash else len(points))
    assert _answers(cached) == _answers(TrainingEvaluator(cache=False).evaluate(points))
    def setting(r):
        return repr(sorted((k, v) for k, v in r["config"].items() if k != "recompute"))

    none = {setting(r): r["metrics"] for r in cached if r["config"]["recompute"] == "none"}
    twins = [none[setting(r)] == r["metrics"] for r in cached if r["config"]["recompute"] == "selective"]
    assert len(twins) == len(points) // 2
    assert all(twins) if flash else not any(twins)
