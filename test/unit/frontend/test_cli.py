"""`charon import` end to end in a subprocess: exit codes, one-line errors, output
files, and that the command line does not pay for torch unless it traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TINY = Path(__file__).parents[2] / "lit" / "frontend" / "Inputs" / "tiny-llama.json"


def run(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if cache is not None:
        env["CHARON_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "charon_ir.cli", "import", *args],
        capture_output=True, text=True, env=env, timeout=300,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0]


def test_unknown_name():
    assert_one_line_error(run("llama-9000b"), "unknown model 'llama-9000b'")


def test_malformed_config(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{ not json")
    assert_one_line_error(run(str(bad)), "malformed config.json")


def test_a_value_hf_does_not_know_names_the_config(tmp_path):
    bad = tmp_path / "act.json"
    bad.write_text(json.dumps({**json.loads(TINY.read_text()), "hidden_act": "foo"}))
    out = tmp_path / "act.mlir"
    assert_one_line_error(run(str(bad), "-o", str(out), cache=tmp_path / "cache"),
                          "act: cannot build llama from its config.json: a value it does not know: "
                          "'foo' (e.g. 'hidden_act')")
    assert not out.exists()


def test_unsupported_architecture(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "t5", "architectures": ["T5ForConditionalGeneration"]}))
    assert_one_line_error(run(str(bad)), "unsupported architecture 't5'")


def test_binary_config(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_bytes(b"\xff\xfe{}")
    assert_one_line_error(run(str(bad)), f"{bad}: not UTF-8 text (byte 0)")


def test_output_that_cannot_be_written(tmp_path):
    """Checked before tracing; it used to fail after it with an internal error
    and leave the temporary file beside the folder."""
    folder = tmp_path / "out"
    folder.mkdir()
    assert_one_line_error(run(str(TINY), "-o", str(folder)), f"-o {folder}: is a directory, not a file")
    under_a_file = tmp_path / "a-file" / "x.mlir"
    under_a_file.parent.write_text("not a folder")
    assert_one_line_error(run(str(TINY), "-o", str(under_a_file)),
                          f"-o {under_a_file}: {under_a_file.parent} is not a writable directory")
    assert sorted(tmp_path.rglob("*")) == [under_a_file.parent, folder]


def test_bad_mode():
    assert_one_line_error(run("llama-3.1-8b", "--mode", "serve"), "unknown mode 'serve'")


def test_ir_and_sizes_import_cannot_take(charon_fails):
    """A .mlir was read as a malformed config.json; a 1e20 sequence overflowed in torch."""
    mlp = str(Path(__file__).parents[3] / "examples" / "mlp.mlir")
    assert charon_fails("import", mlp) == (
        f"error: {mlp}: already IR; import takes a bundled name or a config.json (charon-opt and "
        "charon simulate read .mlir files)")
    assert charon_fails("import", str(TINY), "--seq-len", str(10**20)) == (
        f"error: --seq-len must be in 1..2147483647, got {10**20}")
    assert charon_fails("import", str(TINY), "--batch", "0") == "error: --batch must be in 1..2147483647, got 0"
    # each in range, their product past 64-bit byte counts: torch's traceback, then one line
    assert charon_fails("import", str(TINY), "--seq-len", "2000000000", "--batch", "100000") == (
        "error: sequence length x batch is 2,000,000,000 x 100,000 = 200,000,000,000,000 tokens; "
        "at most 2,147,483,647 (torch's and the IR's sizes are 64-bit)")


def test_list_needs_no_model_and_a_missing_model_is_a_usage_error(charon_fails):
    from typer.testing import CliRunner

    from charon_ir.cli import app

    listed = CliRunner().invoke(app, ["import", "--list"])
    assert listed.exit_code == 0 and "llama-3.1-8b" in listed.output.splitlines()
    assert charon_fails("import") == ("error: charon import: Invalid value for 'MODEL': give a model "
                                      "(a bundled name or a config.json); --list names them")


def test_help_and_opt_do_not_import_torch():
    code = (
        "import sys, charon_ir.cli, charon_ir.frontend, charon_ir.tools.charon_opt;"
        "assert 'torch' not in sys.modules, 'torch imported';"
        "assert 'transformers' not in sys.modules, 'transformers imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_import_to_file_then_cache(tmp_path):
    out = tmp_path / "new" / "tiny.mlir"  # missing folders are created
    first = run(str(TINY), "--seq-len", "16", "-o", str(out), cache=tmp_path / "cache")
    assert first.returncode == 0, first.stderr
    assert "traced" in first.stderr
    text = out.read_text()
    assert text.startswith("builtin.module") and 'sim.phase "optimizer"' in text
    second = run(str(TINY), "--seq-len", "16", "-o", str(out), cache=tmp_path / "cache")
    assert second.returncode == 0 and "from the cache" in second.stderr
    assert out.read_text() == text
    # the written IR parses back (the cache stores exactly this text)
    from charon_ir.frontend import parse_ir

    parse_ir(text).verify()


def test_list_models():
    proc = run("--list", "x")
    assert proc.returncode == 0
    assert "llama-3.1-405b" in proc.stdout.split()


def test_no_mtp_leaves_deepseek_v3s_prediction_module_out(tmp_path):
    """DeepSeek-V3 trains a multi-token-prediction module (`mtp.0.*` weights)
    unless `--no-mtp`; the two imports are cached apart."""
    config = tmp_path / "dsv3.json"
    config.write_text(json.dumps({
        "model_type": "deepseek_v3", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 4, "intermediate_size": 128, "moe_intermediate_size": 32, "vocab_size": 256,
        "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
        "q_lora_rank": 32, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
        "head_dim": 8, "n_group": 2, "topk_group": 1, "num_nextn_predict_layers": 1}))
    texts = {}
    for flags in ((), ("--no-mtp",)):
        out = tmp_path / f"dsv3{len(flags)}.mlir"
        proc = run(str(config), "--seq-len", "64", "-o", str(out), *flags, cache=tmp_path / "cache")
        assert proc.returncode == 0, proc.stderr
        texts[flags] = out.read_text()
    assert 'sim.param "mtp.0.eh_proj.weight"' in texts[()]
    assert "mtp." not in texts[("--no-mtp",)]
