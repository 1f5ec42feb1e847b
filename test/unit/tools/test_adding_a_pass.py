"""README's "Adding a pass": its example pass, written out as the section says
(a module and an `xdsl.universe` entry point, no Charon-private name), runs in a
`charon-opt` pipeline."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _section_blocks(language: str) -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Adding a pass\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)


def _installed(tmp_path: Path) -> Path:
    """The example as pip would leave it: the package and its entry point's metadata."""
    (code,) = _section_blocks("python")
    package = tmp_path / "matmul_speedup"
    package.mkdir()
    (package / "__init__.py").write_text(code)
    (toml,) = _section_blocks("toml")
    entry = re.search(r"\[project.entry-points.'xdsl.universe'\]\n(\S+) = \"(\S+)\"", toml)
    assert entry, toml
    info = tmp_path / "matmul_speedup-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: matmul-speedup\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[xdsl.universe]\n{entry[1]} = {entry[2]}\n")
    return package / "__init__.py"


def test_the_example_pass_uses_no_private_name(tmp_path):
    tree = ast.parse(_installed(tmp_path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("charon_ir"):
            assert not any(part.startswith("_") for part in node.module.split(".")), node.module
            assert not any(alias.name.startswith("_") for alias in node.names), ast.unparse(node)


def test_the_example_pass_runs_in_a_charon_opt_pipeline(tmp_path):
    _installed(tmp_path)
    (command,) = [b for b in _section_blocks("bash") if "charon-opt" in b]
    pipeline = re.search(r"-p '([^']+)'", command)[1]
    assert "matmul-speedup" in pipeline
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))

    def step_s(passes: str) -> float:
        run = subprocess.run([sys.executable, "-m", "charon_ir.tools.charon_opt", "examples/transformer_layer.mlir",
                              "-t", "simulate", "-p", passes], cwd=ROOT, env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)["iteration_time_s"]

    listed = subprocess.run([sys.executable, "-m", "charon_ir.tools.charon_opt", "--help"], cwd=ROOT, env=env,
                            capture_output=True, text=True, check=True).stdout
    plugins = listed.split("Passes of installed plugins (xdsl.universe entry points):\n", 1)[1]
    assert plugins.startswith("  matmul-speedup         Divide the priced time of every `sim.matmul` by `factor`:")
    assert plugins.splitlines()[1].split() == ["options:", "factor=2.0"]
    faster = step_s(pipeline)
    as_priced = step_s(pipeline.replace("matmul-speedup{factor=2.0},", ""))
    assert faster < as_priced
    section = (ROOT / "README.md").read_text().split("\n## Adding a pass\n", 1)[1]
    quoted = re.search(r"from ([\d.]+) ms to ([\d.]+) ms", section)
    assert quoted and (quoted[1], quoted[2]) == (f"{as_priced * 1e3:.2f}", f"{faster * 1e3:.2f}"), \
        "README's 'Adding a pass' quotes other step times than charon-opt gives now"
