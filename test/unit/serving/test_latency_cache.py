"""The serving latency cache trusts no entry: a table whose numbers are not
finite non-negative seconds (NaN stalled the scheduler: "4 requests never
finished"), or that holds another shape, is a miss, rebuilt and replaced with
one warning line."""

from __future__ import annotations

import inspect
import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

import charon_ir.parallel.sharding as sharding
from charon_ir.frontend import cache as frontend_cache
from charon_ir.serving import latency
from charon_ir.serving.latency import ReplicaShape, StepTimeModel

from .conftest import synthetic_model

TINY = str(Path(__file__).parents[3] / "examples" / "llama_tiny_config.json")


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """step_model over a fresh cache, with the build (seconds of tracing) replaced
    by the synthetic table: returns (shape, the entry's path, builds so far)."""
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(latency, "_MEMO", {})
    builds: list[ReplicaShape] = []

    def build(shape):
        builds.append(shape)
        return replace(synthetic_model(), shape=shape)

    monkeypatch.setattr(latency, "build_step_model", build)
    shape = ReplicaShape(TINY, "H100-SXM5-80GB")
    latency.step_model(shape)
    (entry,) = (tmp_path / "serving").glob("*.json")
    latency._MEMO.clear()
    return shape, entry, builds


@pytest.mark.parametrize("edit", [
    lambda d: d["body"]["ys"].__setitem__(1, math.nan),
    lambda d: d["decode_attention"]["ys"].__setitem__(0, -3e-4),
    lambda d: d.__setitem__("head_s", math.inf),
    lambda d: d.__setitem__("p2p_s_per_token", "fast"),
    lambda d: d["prefill_attention"]["xs"].reverse(),
    lambda d: d["body"]["xs"].pop(),
    lambda d: d["shape"].__setitem__("tp", 8),
    lambda d: d.__setitem__("shape", [[[]]]),
])
def test_a_bad_entry_is_rebuilt_with_one_warning(cached, capsys, edit):
    shape, entry, builds = cached
    data = json.loads(entry.read_text())
    edit(data)
    entry.write_text(json.dumps(data))
    capsys.readouterr()
    model = latency.step_model(shape)
    err = capsys.readouterr().err
    assert len(builds) == 2
    assert err.count("\n") == 1 and err.startswith(f"warning: serving latency cache {entry}"), err
    assert model.body(64.0) == synthetic_model().body(64.0)
    StepTimeModel.from_json(json.loads(entry.read_text()))  # the entry was replaced


def test_a_deeply_nested_entry_is_a_miss(cached, capsys):
    shape, entry, builds = cached
    entry.write_text("[" * 100_000 + "]" * 100_000)
    capsys.readouterr()
    latency.step_model(shape)
    assert len(builds) == 2 and capsys.readouterr().err.startswith("warning: ")


def test_a_sound_entry_is_used(cached, capsys):
    shape, _, builds = cached
    capsys.readouterr()
    latency.step_model(shape)
    assert len(builds) == 1 and capsys.readouterr().err == ""


def test_a_table_depends_on_the_sharding_rules_shard_tensor_runs():
    """shard-tensor prices a tp replica through parallel/sharding/ (its rules
    and propagation, split out of the pass): a change there is a change to
    every tp table, so each of those files is in the table's code digest."""
    files = {f.resolve() for f in latency.source_files()}
    package = Path(sharding.__file__).resolve().parent
    assert {f.resolve() for f in package.glob("*.py")} <= files
    assert Path(latency.shard_tensor.__file__).resolve() in files


def test_a_table_depends_on_every_pass_that_prices_it():
    """`price_module`'s passes (fuse, shard-tensor, shard-expert, set-target,
    cost-annotate) are files of the digest, and each exists: a name that no
    longer names a file would silently drop out of it."""
    files = latency.source_files()
    names = {f.stem for f in files}
    assert set(latency.PRICING_PASSES) <= names
    assert all(f.is_file() for f in files)
    source = inspect.getsource(latency.price_module)
    assert {name.replace("_", "-") for name in latency.PRICING_PASSES} == set(re.findall(r'make_pass\("([a-z-]+)"', source))


def test_a_table_is_keyed_on_what_its_imports_depend_on(monkeypatch):
    """A table is priced from imported IR: a new frontend version or, for vLLM's
    model code, another vLLM Python imports other IR, so the table's key changes
    with the IR cache's (a stale table would otherwise outlive its IR)."""
    vllm, hf = ReplicaShape(f"vllm:{TINY}", "H100-SXM5-80GB"), ReplicaShape(TINY, "H100-SXM5-80GB")
    monkeypatch.setenv("CHARON_VLLM_PYTHON", "/envs/a/bin/python")
    first, hf_first = latency.table_key(vllm), latency.table_key(hf)
    assert latency.table_key(vllm) == first and hf_first != first
    monkeypatch.setenv("CHARON_VLLM_PYTHON", "/envs/b/bin/python")
    assert latency.table_key(vllm) != first
    assert latency.table_key(hf) == hf_first  # the vLLM Python is no part of an HF model's table
    monkeypatch.setattr(frontend_cache, "FRONTEND_VERSION", "charon-frontend-next")
    assert latency.table_key(hf) != hf_first
