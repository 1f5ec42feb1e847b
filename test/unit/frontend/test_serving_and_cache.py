"""Serving steps (prefill, decode with a KV cache), the on-disk IR cache, and the
grouping of a layer stack into repeats."""

from __future__ import annotations


import pytest

from charon_ir.dialects import sim
from charon_ir.frontend import forward_flops, import_model_with_summary, param_count
from charon_ir.frontend import cache as ir_cache


def _phases(module):
    return [op.kind.data for op in module.body.block.ops if isinstance(op, sim.PhaseOp)]


def test_prefill_writes_the_cache(imported):
    module = imported("llama-3.1-8b", seq_len=256, mode="prefill").module
    assert _phases(module) == ["prefill"]
    writes = [op for op in module.walk() if isinstance(op, sim.KVCacheWriteOp)]
    assert len(writes) == 1 and sim.shape_of(writes[0].k) == (1, 256, 8, 128)
    assert param_count(module) == 8030261248


def test_decode_reads_the_context(imported):
    module = imported("llama-3.1-8b", seq_len=1024, mode="decode").module
    assert _phases(module) == ["decode"]
    (att,) = [op for op in module.walk() if isinstance(op, sim.AttentionOp)]
    assert sim.shape_of(att.q)[1] == 1 and sim.shape_of(att.k)[1] == 1024
    # one token: 2 FLOPs per weight that multiplies (the LM head included) and
    # attention over the 1024 cached tokens in each of 32 layers
    weights = 2 * (8030261248 - 128256 * 4096)
    attention = 32 * 2 * 32 * (128 + 128) * 1024
    assert forward_flops(module) == pytest.approx(weights + attention, rel=0.01)


def test_cache_hit_traces_nothing_and_is_identical(tmp_path, monkeypatch):
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path))
    first = import_model_with_summary("llama-3.1-8b", seq_len=64)
    assert not first.from_cache and first.cache_file is not None
    assert first.cache_file.parent == tmp_path / "ir"
    # a hit parses the entry: the tracer (seconds of torch) must not run; how fast
    # the parse is, bench/bench_import.py measures (no timing asserted here)
    from charon_ir.frontend import tracing

    def no_trace(*args, **kwargs):
        raise AssertionError("a cache hit traced the model")

    with monkeypatch.context() as patched:
        patched.setattr(tracing, "trace_hf_model", no_trace)
        second = import_model_with_summary("llama-3.1-8b", seq_len=64)
    assert second.from_cache
    assert str(second.module) == str(first.module)
    # another option is another key
    third = import_model_with_summary("llama-3.1-8b", seq_len=64, mode="prefill", use_cache=True)
    assert not third.from_cache
    assert len(list((tmp_path / "ir").glob("*.mlir"))) == 2
    assert not list((tmp_path / "ir").glob("*.tmp"))  # atomic writes leave nothing behind


def test_cache_key_covers_config_and_options():
    base = ir_cache.cache_key({"a": 1}, {"seq_len": 8}, {"torch": "x"})
    assert base == ir_cache.cache_key({"a": 1}, {"seq_len": 8}, {"torch": "x"})
    assert base != ir_cache.cache_key({"a": 2}, {"seq_len": 8}, {"torch": "x"})
    assert base != ir_cache.cache_key({"a": 1}, {"seq_len": 9}, {"torch": "x"})
    assert base != ir_cache.cache_key({"a": 1}, {"seq_len": 8}, {"torch": "y"})


def test_an_entry_edited_and_resealed_is_a_miss(tmp_path, monkeypatch):
    """The seal covers the inputs, not only the entry: an entry resealed with the
    digest of its own text (all an editor can compute from what is on disk), or
    copied under another entry's name, is a miss."""
    import hashlib

    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path))
    key = ir_cache.cache_key({"vocab_size": 1000}, {"seq_len": 8}, {"torch": "x"})
    other = ir_cache.cache_key({"vocab_size": 10000}, {"seq_len": 8}, {"torch": "x"})
    path = ir_cache.write(key, "builtin.module {}\n")
    assert ir_cache.read(key) == "builtin.module {}\n"
    assert path.name == f"{key.name}.mlir" and key.inputs[32:] not in path.read_text()

    edited = "builtin.module {\n}\n"
    for resealed in (hashlib.sha256(edited.encode()).hexdigest(),
                     hashlib.sha256(f"{key.name}\n{edited}".encode()).hexdigest()):
        path.write_text(edited + ir_cache.SEAL_PREFIX + resealed + "\n")
        assert ir_cache.read(key) is None
    # another entry's text, seal and all, under this entry's name
    ir_cache.write(other, "builtin.module {}\n")
    path.write_text(ir_cache.cache_path(other).read_text())
    assert ir_cache.read(key) is None and ir_cache.read(other) == "builtin.module {}\n"


def test_damaged_cache_entry_is_reimported(tmp_path, monkeypatch):
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path))
    first = import_model_with_summary("llama-3.1-8b", seq_len=32)
    first.cache_file.write_text("builtin.module { garbage")
    again = import_model_with_summary("llama-3.1-8b", seq_len=32)
    assert not again.from_cache
    assert param_count(again.module) == 8030261248
    # the unparsed path (`charon import -o` copies the text out without parsing
    # it) passed a truncated entry through: the checksum makes it a miss too
    text = first.cache_file.read_text()
    assert text.splitlines()[-1].startswith(ir_cache.SEAL_PREFIX)
    first.cache_file.write_text(text[: len(text) // 2])
    copied = import_model_with_summary("llama-3.1-8b", seq_len=32, parse=False)
    assert not copied.from_cache and copied.text == again.text


def test_group_layers_finds_runs_and_periods():
    from charon_ir.frontend.tracing import group_layers

    def runs(sigs):
        return [(r.start, len(r.period), r.count) for r in group_layers(sigs)]

    assert runs(["d"] * 4) == [(0, 1, 4)]
    assert runs(["d"] * 3 + ["m"] * 58) == [(0, 1, 3), (3, 1, 58)]  # DeepSeek-V3
    assert runs(["d", "m"] * 24) == [(0, 2, 24)]  # interleaved MoE
    assert runs(["d", "d", "m", "m", "m"]) == [(0, 1, 2), (2, 1, 3)]
    assert runs(["a", "b", "c"]) == [(0, 1, 1), (1, 1, 1), (2, 1, 1)]


def test_every_cache_lives_under_charon_cache_dir(tmp_path, monkeypatch):
    """The serving and validation caches went to the variable's parent folder,
    the sweep's clusters into the folder itself, the IR into it too."""
    from charon_ir.serving.latency import serving_cache_dir as serving_cache
    from charon_ir.sweep.hardware import cluster_directory
    from charon_ir.validation.runner import cache_directory

    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path))
    assert [ir_cache.cache_dir(), serving_cache(), cache_directory(), cluster_directory()] == [
        tmp_path / "ir", tmp_path / "serving", tmp_path / "validation", tmp_path / "sweep-clusters"]
