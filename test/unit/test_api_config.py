"""api.TrainingConfig and api.pass_plan: how the command-line degrees map onto the
mesh and the passes, and the one-line errors of impossible ones."""

import json
import re

import pytest

from charon_ir.api import TrainingConfig, configure, overlap_model, pass_plan
from charon_ir.engines.compute_efficiency import OVERLAP_SLOWDOWN
from charon_ir.errors import CharonError
from charon_ir.frameworks import FRAMEWORKS, Framework, Rule
from charon_ir.runtime.interpreter import OverlapModel
from charon_ir.target.hardware import load_gpu


def options(plan, name):
    return next(opts for pass_name, opts in plan if pass_name == name)


def test_expert_parallelism_is_carved_out_of_data_parallelism():
    """16 GPUs, ep 8: 16 data-parallel replicas of the dense weights, in 2 groups
    of 8 expert-parallel ranks (Megatron-LM's convention): the mesh's dp axis is 2
    and the global batch is shared by all 16."""
    config = TrainingConfig(model="deepseek-v2-lite", gpus=16, ep=8, global_batch=64)
    assert config.data_parallel() == 16
    plan = pass_plan(config)
    assert options(plan, "shard-expert")["ep"] == 8
    assert options(plan, "data-parallel")["dp"] == 2
    assert options(plan, "pipeline")["microbatches"] == 4


def test_fp8_training_prices_transformer_engines_casts():
    plan = pass_plan(TrainingConfig(model="llama-3.1-8b", gpus=8, precision="fp8"))
    assert options(plan, "cost-annotate")["fp8_gemms"] and options(plan, "cost-annotate")["fp8_casts"]
    plan = pass_plan(TrainingConfig(model="llama-3.1-8b", gpus=8))
    assert not options(plan, "cost-annotate")["fp8_casts"]


def test_fp8_weight_casts_follow_the_framework():
    """Megatron-Core's TE modules cast their weights on a chunk's first
    micro-batch only; weights kept in fp8 are not cast per GEMM; llm-foundry
    (is_first_microbatch None) casts them every forward."""
    def weight_casts(framework, **settings):
        config, _ = configure("llama-3.1-8b", framework, gpus=8, precision="fp8", **settings)
        return options(pass_plan(config), "cost-annotate").get("fp8_weight_casts", "every")
    assert weight_casts("megatron-core") == "first-microbatch"
    assert weight_casts("megatron-core", fp8_params=True) == "none"
    assert weight_casts("megatron-bridge") == "none"  # its fp8_param_gather for FP8-CS
    assert weight_casts("llm-foundry") == "every"
    assert "fp8_weight_casts" not in options(pass_plan(TrainingConfig(model="llama-3.1-8b", gpus=8)),
                                             "cost-annotate")


def test_overlap_param_gather_is_a_data_parallel_option():
    config = TrainingConfig(model="llama-3.1-8b", gpus=16, zero=1, dp_overlap_param_gather=True)
    assert options(pass_plan(config), "data-parallel")["overlap_param_gather"] is True


@pytest.mark.parametrize("hardware", ["A100-SXM4-80GB", "A100-SXM4-40GB", "H100-SXM5-80GB"])
def test_overlap_contention_defaults_to_the_gpu_types_calibration(hardware):
    gpu = load_gpu(hardware)
    calibrated = OVERLAP_SLOWDOWN["A100-SXM4-80GB"] if hardware.startswith("A100") else 0.0
    assert overlap_model(TrainingConfig(model="m"), gpu) == OverlapModel(calibrated, calibrated)
    # a value set in the config replaces the calibrated one, each on its own
    assert overlap_model(TrainingConfig(model="m", compute_slowdown=0.25), gpu) == (
        OverlapModel(0.25, calibrated))
    assert overlap_model(TrainingConfig(model="m", compute_slowdown=0.0, comm_slowdown=0.0),
                         gpu) == OverlapModel(0.0, 0.0)


@pytest.mark.parametrize(
    "degrees, message",
    [
        (dict(gpus=16, ep=3), "--ep 3 does not divide the data-parallel replicas 16"),
        (dict(gpus=16, tp=4, ep=8), "--ep 8 does not divide the data-parallel replicas 4"),
        (dict(gpus=16, tp=3), "--gpus 16 is not divisible by tp x pp x cp = 3"),
        (dict(gpus=16, tp=2, dp=4), "--gpus 16 is not tp x pp x cp x dp = 2 x 1 x 1 x 4 = 8"),
        (dict(gpus=16, global_batch=24), "--global-batch 24 is not divisible by dp x micro-batch"),
        (dict(optimizer="apex"), "--optimizer must be fused, unfused-fp16, unfused-bf16, got 'apex'"),
        (dict(hardware="A100-SXM4-80GB", precision="fp8"), "--precision fp8: A100-SXM4-80GB has no fp8 tensor cores"),
        # flags that used to be dropped without a word
        (dict(gpus=16, sequence_parallel=True), "--sequence-parallel needs --tp > 1"),
        (dict(gpus=16, fsdp=True, zero=1), "--fsdp is ZeRO-3: it cannot be combined with --zero 1"),
        (dict(gpus=16, vpp=2), "--vpp 2 needs --pp > 1 (an interleaved schedule of one stage)"),
        (dict(gpus=16, dp_overlap_param_gather=True),
         "--overlap-param-gather needs --zero 1 or 2 (only they gather updated parameters), got --zero 0"),
        (dict(gpus=16, fsdp=True, dp_overlap_param_gather=True),
         "--overlap-param-gather needs --zero 1 or 2 (only they gather updated parameters), got --fsdp"),
        # counts below one used to divide by zero, or pass on as another pass's option
        (dict(gpus=0), "--gpus must be >= 1, got 0"),
        (dict(gpus=16, tp=-2), "--tp must be >= 1, got -2"),
        (dict(gpus=16, micro_batch=0), "--micro-batch must be >= 1, got 0"),
        (dict(gpus=16, global_batch=-16), "--global-batch must be >= 0, got -16"),
    ],
)
def test_impossible_degrees_are_one_line(degrees, message):
    with pytest.raises(CharonError, match=re.escape(message)) as err:
        pass_plan(TrainingConfig(model="deepseek-v2-lite", **degrees))
    assert "\n" not in str(err.value)


def test_the_package_entry_points_are_the_cli_s_and_load_on_first_use():
    import subprocess
    import sys

    import charon_ir
    from charon_ir.api import simulate
    from charon_ir.serving.api import serve

    assert charon_ir.simulate is simulate and charon_ir.serve is serve
    # importing the package imports neither (charon-opt's start-up stays light)
    probe = "import sys, charon_ir; print('charon_ir.api' in sys.modules, 'torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.split() == ["False", "False"]


def test_a_pipeline_layout_moves_layers_between_stages(charon_cli, tmp_path):
    """--pp-layout is the pipeline pass's `layers`: the stage given more layers
    computes longer; a layout that does not cover the model is one line."""
    import json

    plan = pass_plan(TrainingConfig(model="llama-3.1-8b", gpus=16, tp=8, pp=2, global_batch=8, pp_layout=(12, 20)))
    assert options(plan, "pipeline")["layers"] == (12, 20)
    assert "layers" not in options(pass_plan(TrainingConfig(model="llama-3.1-8b", gpus=16, tp=8, pp=2, global_batch=8)), "pipeline")
    config = json.loads(open("examples/llama_tiny_config.json").read())
    config["num_hidden_layers"] = 4
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    args = ["simulate", "--model", str(path), "--gpus", "2", "--pp", "2",
            "--seq-len", "128", "--global-batch", "4", "--framework", "none", "--json"]
    compute = {}
    for layout in ("1,3", "3,1"):
        result = charon_cli(*args, "--pp-layout", layout)
        assert result.returncode == 0, result.stderr
        compute[layout] = [s["compute_s"] for s in json.loads(result.stdout)["stages"]]
    assert compute["1,3"][0] < compute["1,3"][1] and compute["3,1"][0] > compute["3,1"][1]
    for layout, message in (("2,1", "summing to the model's 4 layers"), ("x", "--pp-layout: expected layer counts")):
        result = charon_cli(*args, "--pp-layout", layout)
        assert result.returncode != 0
        assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("flags, want", [
    ({}, {"cp": 8}),
    ({"cp_comm_type": "p2p"}, {"cp": 8}),
    ({"cp_comm_type": "a2a"}, {"cp": 8, "mode": "ulysses", "gather_kv": False}),
    ({"cp_comm_type": "a2a+p2p", "hierarchical_cp": 2}, {"cp": 8, "mode": "a2a+p2p", "a2a": 2}),
])
def test_cp_comm_type_is_shard_contexts_mode(flags, want):
    """--cp-comm-type (Megatron-Core's) picks shard-context's mode; a2a+p2p takes
    its inner all-to-all group from --hierarchical-cp."""
    plan = pass_plan(TrainingConfig(model="llama-3.1-8b", gpus=8, cp=8, seq_len=8192, **flags))
    assert options(plan, "shard-context") == want


@pytest.mark.parametrize("flags, message", [
    ({"cp": 8, "cp_comm_type": "ring"}, "--cp-comm-type must be p2p, a2a, a2a+p2p, got 'ring'"),
    ({"cp": 1, "cp_comm_type": "a2a"}, "--cp-comm-type a2a needs --cp > 1"),
    ({"cp": 8, "hierarchical_cp": 2}, "--hierarchical-cp 2 needs --cp-comm-type a2a+p2p, not p2p"),
    ({"cp": 8, "cp_comm_type": "a2a+p2p"}, "--cp-comm-type a2a+p2p needs --hierarchical-cp A"),
    ({"cp": 8, "cp_comm_type": "a2a+p2p", "hierarchical_cp": 3},
     "--hierarchical-cp 3 must divide --cp 8 and lie strictly between 1 and it"),
    ({"cp": 8, "cp_comm_type": "a2a+p2p", "hierarchical_cp": 8},
     "--hierarchical-cp 8 must divide --cp 8 and lie strictly between 1 and it"),
    ({"cp": 8, "cp_comm_type": "a2a+p2p", "hierarchical_cp": -1}, "--hierarchical-cp must be >= 0, got -1"),
])
def test_bad_cp_comm_flags_are_one_line(flags, message):
    with pytest.raises(CharonError, match=re.escape(message)) as err:
        pass_plan(TrainingConfig(model="llama-3.1-8b", gpus=8, seq_len=8192, **flags))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("flags, message", [
    # the tiny Llama: 4 query heads, 2 kv heads
    (["--cp", "8", "--hierarchical-cp", "4", "--seq-len", "128"],
     "shard-context: option 'a2a' (4) does not divide the kv heads (2) (mode=a2a+p2p)"),
    (["--cp", "4", "--hierarchical-cp", "2", "--seq-len", "132"],
     "shard-context: option 'cp' (4) does not divide the sequence length (132) into 2*cp load-balanced chunks "
     "(mode=a2a+p2p)"),
    (["--cp", "4", "--hierarchical-cp", "3", "--seq-len", "128"],
     "--hierarchical-cp 3 must divide --cp 4"),
])
def test_hierarchical_cp_on_the_command_line(charon_cli, tmp_path, flags, message):
    """`charon simulate --cp-comm-type a2a+p2p`: the model's misfits are one line,
    exit 1, no report."""
    out = tmp_path / "trace.json"
    result = charon_cli("simulate", "--model", "examples/llama_tiny_config.json", "--gpus", str(int(flags[1])),
                        "--cp-comm-type", "a2a+p2p", *flags, "--framework", "none", "--trace", str(out))
    assert result.returncode == 1 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
    assert not out.exists()


def test_hierarchical_cp_simulates(charon_cli):
    """The tiny Llama (4 query heads, 2 kv heads) at cp 4: the ring and a2a+p2p
    (2 x 2) do the same work per rank; Transformer Engine's a2a, which splits the
    2 kv heads as the queries' 4, is refused at cp 4 and runs at cp 2."""
    def simulate(cp: str, *kind: str):
        return charon_cli("simulate", "--model", "examples/llama_tiny_config.json", "--gpus", cp, "--cp", cp,
                          "--seq-len", "256", "--framework", "none", "--cp-comm-type", *kind, "--json")

    flops = {}
    for kind in (["p2p"], ["a2a+p2p", "--hierarchical-cp", "2"]):
        result = simulate("4", *kind)
        assert result.returncode == 0, result.stderr
        flops[kind[0]] = json.loads(result.stdout)["model_flops_per_gpu"]
    assert flops["a2a+p2p"] == pytest.approx(flops["p2p"])
    refused = simulate("4", "a2a")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        "error: shard-context: option 'cp' (4) does not divide the kv heads (2) "
        "(mode=ulysses, gather-kv=false: Transformer Engine's a2a)"]
    ring, a2a = simulate("2", "p2p"), simulate("2", "a2a")
    assert ring.returncode == a2a.returncode == 0, a2a.stderr
    assert json.loads(a2a.stdout)["model_flops_per_gpu"] == pytest.approx(
        json.loads(ring.stdout)["model_flops_per_gpu"])


def test_cpu_offload_is_a_pass_before_memory_analysis():
    plan = pass_plan(TrainingConfig(model="llama-3.1-8b", gpus=8, tp=8, cpu_offload_layers=4))
    names = [name for name, _ in plan]
    assert options(plan, "offload-activations") == {"layers": 4}
    assert names.index("offload-activations") < names.index("memory-analysis")
    assert "offload-activations" not in [n for n, _ in pass_plan(TrainingConfig(model="llama-3.1-8b"))]


@pytest.mark.parametrize("flags, message", [
    ({"cpu_offload_layers": -1}, "--cpu-offload-layers must be >= 0, got -1"),
    ({"cpu_offload_layers": 2, "pp": 2, "gpus": 16, "global_batch": 16},
     "--cpu-offload-layers 2 needs --pp 1: Megatron-Core has no CPU offloading under pipeline parallelism"),
    ({"cpu_offload_layers": 2, "recompute": "selective"},
     "--cpu-offload-layers 2 with --recompute selective: Megatron-Core's CPU offloading does not work when "
     "activation recomputation is enabled"),
])
def test_bad_cpu_offload_flags_are_one_line(flags, message):
    with pytest.raises(CharonError, match=re.escape(message)) as err:
        pass_plan(TrainingConfig(**{"model": "llama-3.1-8b", "gpus": 8, **flags}))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("flags, message", [
    (["--cpu-offload-layers", "2"],
     "error: --cpu-offload-layers 2 must be less than the model's 2 layers (Megatron-Core keeps the last "
     "layer's activations on the GPU)"),
    (["--cpu-offload-layers", "32"], "error: --cpu-offload-layers 32 must be less than the model's 2 layers"),
    (["--cpu-offload-layers", "-3"], "error: --cpu-offload-layers must be >= 0, got -3"),
    (["--cpu-offload-layers", "1", "--recompute", "full"], "error: --cpu-offload-layers 1 with --recompute full"),
])
def test_cpu_offload_misfits_on_the_command_line(charon_cli, flags, message):
    """The tiny Llama has 2 layers: offloading both is refused (Megatron-Core keeps
    the last on the GPU). One line, exit 1, no report."""
    result = charon_cli("simulate", "--model", "examples/llama_tiny_config.json", "--gpus", "1",
                        "--seq-len", "256", *flags, "--json")
    assert result.returncode == 1 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith(message)


def test_a_preset_that_turns_recompute_on_is_named_in_the_refusal(monkeypatch):
    """No bundled preset turns recompute on; one that did is named, not a
    --recompute the user never gave. A --recompute given keeps the flag's wording."""
    preset = Framework("recomputing", "a preset with selective recompute",
                       (Rule("recompute", lambda r: "selective", "test preset"),))
    monkeypatch.setitem(FRAMEWORKS, preset.name, preset)
    with pytest.raises(CharonError) as err:
        configure("llama-3.1-8b", framework="recomputing", gpus=8, cpu_offload_layers=2)
    assert str(err.value) == (
        "--cpu-offload-layers 2: the framework preset 'recomputing' turns on --recompute selective, and "
        "Megatron-Core's CPU offloading does not work when activation recomputation is enabled; add "
        "--recompute none")
    config, _ = configure("llama-3.1-8b", framework="recomputing", gpus=8, cpu_offload_layers=2, recompute="none")
    assert config.recompute == "none"
    config, _ = configure("llama-3.1-8b", framework="recomputing", gpus=8, recompute="full", cpu_offload_layers=2)
    with pytest.raises(CharonError, match=re.escape("--cpu-offload-layers 2 with --recompute full")):
        pass_plan(config)


def test_cpu_offload_reports_the_host_bytes_and_where_the_setting_came_from(charon_cli):
    def simulate(*flags: str) -> dict:
        result = charon_cli("simulate", "--model", "examples/llama_tiny_config.json", "--gpus", "1",
                            "--seq-len", "256", *flags, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    plain, offloaded = simulate(), simulate("--cpu-offload-layers", "1")
    assert "cpu_offload" not in plain
    report = offloaded["cpu_offload"]
    assert report["layers"] == 1 and report["from"] == "flag"
    assert "cpu_offloading=False" in report["why"]
    (host,) = report["host_bytes_per_microbatch"]
    assert host > 0
    assert offloaded["peak_memory_bytes"][0] <= plain["peak_memory_bytes"][0]
    # no preset decides it: the framework's settings do not list it
    assert "cpu_offload_layers" not in offloaded["framework"]["settings"]
    assert offloaded["model_flops_per_gpu"] == plain["model_flops_per_gpu"]


FORWARD_ONLY = """
builtin.module {
  %x = sim.input "x" {tokens} : tensor<64x128xbf16>
  %ws = sim.param "w" {stacked} : tensor<3x128x128xbf16>
  %f = sim.phase "forward" -> tensor<64x128xbf16> {
    %a:2 = sim.repeat 3 iter(%x : tensor<64x128xbf16>) slices(%ws : tensor<3x128x128xbf16>) -> (tensor<64x128xbf16>, tensor<3x64x128xbf16>) {
    ^bb0(%h: tensor<64x128xbf16>, %w: tensor<128x128xbf16>):
      %u = sim.matmul %h, %w : (tensor<64x128xbf16>, tensor<128x128xbf16>) -> tensor<64x128xbf16>
      sim.yield %u, %h : tensor<64x128xbf16>, tensor<64x128xbf16>
    }
    sim.yield %a#0 : tensor<64x128xbf16>
  }
}
"""


def test_cpu_offload_of_a_forward_only_step_is_one_line(charon_cli, tmp_path):
    step = tmp_path / "forward.mlir"
    step.write_text(FORWARD_ONLY)
    result = charon_cli("simulate", "--model", str(step), "--gpus", "1", "--cpu-offload-layers", "1")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "error: offload-activations: the step has no backward phase: a forward-only step saves no activations "
        "to offload"]
