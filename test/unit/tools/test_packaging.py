"""What a non-editable install ships: every package of the source tree is listed
in pyproject.toml (setuptools installs only the listed ones)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_every_package_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = config["package-dir"]
    on_disk = set()
    for name, folder in mapped.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            parts = [] if str(rel) == "." else list(rel.parts)
            if "__pycache__" in parts or any(p.startswith(".") for p in parts):
                continue
            on_disk.add(".".join([name, *parts]))
    missing = {p for p in on_disk if not any(p == q for q in listed)}
    # subpackages of a mapped folder other than charon_ir itself count too
    assert not missing, f"add to pyproject.toml [tool.setuptools] packages: {sorted(missing)}"
