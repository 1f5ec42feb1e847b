"""The same small sweep on a local Ray cluster of 2 workers and in-process."""

import pytest

from charon_ir.sweep import run_sweep

ray = pytest.importorskip("ray", reason="Ray is optional: pip install 'charon-ir[sweep]' to run this test")


def test_ray_cluster_gives_in_process_results(tiny_space, tmp_path):
    space = {**tiny_space, "zero": 0}
    local = run_sweep(space)
    remote = run_sweep(space, db=tmp_path / "ray.sqlite", ray=True, jobs=2)
    assert remote.executor == "ray"
    there = {r["key"]: (r["status"], r["metrics"]) for r in remote.records}
    here = {r["key"]: (r["status"], r["metrics"]) for r in local.records}
    # seen once under xdist (2026-11-28, not reproduced since): name what differs
    differ = {k: (here.get(k), there.get(k)) for k in here.keys() | there.keys() if here.get(k) != there.get(k)}
    assert not differ, f"{len(differ)} of {len(here)} points differ (in-process, Ray): {sorted(differ.items())[:2]}"
    assert not ray.is_initialized()  # a cluster the sweep started is shut down
