"""A wheel builds without setuptools' warnings (issue #30, item 11): the license
is an SPDX string, and each folder of data files shipped with a package is listed
in `packages` (setuptools warns of every importable folder it ships unlisted)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_license_is_an_spdx_string():
    assert PROJECT["project"]["license"] == "Apache-2.0"
    assert any(r.startswith("setuptools>=77") for r in PROJECT["build-system"]["requires"])


def test_every_data_folder_is_listed():
    config = PROJECT["tool"]["setuptools"]
    listed = set(config["packages"])
    folders = set()
    for package, globs in config["package-data"].items():
        base = ROOT / config["package-dir"].get(package, package.replace(".", "/"))
        for glob in globs:
            for path in base.glob(glob):
                if path.parent != base:
                    folders.add(".".join([package, *path.parent.relative_to(base).parts]))
    assert folders and folders <= listed, sorted(folders - listed)
