"""A sweep's space is bounded before it is expanded (issue #30, item 5): YAML
aliases are counted before they are built, the points before they are
enumerated, and `--limit` takes the first points as they come."""

from __future__ import annotations

from pathlib import Path

import pytest

from charon_ir.commands.sweep import MAX_POINTS as FLAG_DEFAULT
from charon_ir.sweep import space as space_module
from charon_ir.sweep.runner import MAX_POINTS, run_sweep
from charon_ir.sweep.space import MAX_SPACE_VALUES

from .conftest import TINY_STEP


def bomb(levels: int) -> str:
    """A mapping of nested aliases: 9**levels values from a few hundred bytes."""
    parts = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    parts += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "model: llama-3.1-8b\ntp: {" + ", ".join(parts) + "}\n"


def test_an_alias_bomb_is_refused_by_its_expanded_size(tmp_path, charon_fails):
    space = tmp_path / "bomb.yaml"
    space.write_text(bomb(7))  # 4.8 M values; it printed a 312 MB line after 4.5 s
    assert len(space.read_bytes()) < 700
    line = charon_fails("sweep", str(space), "--db", str(tmp_path / "r.sqlite"))
    assert line == (f"error: {space}: the space file expands to more than {MAX_SPACE_VALUES:,} values "
                    "(aliases repeating aliases); a space file holds at most that")
    assert not (tmp_path / "r.sqlite").exists()


@pytest.mark.parametrize("text", ["model: " + "[" * 100_000 + "]" * 100_000 + "\n",
                                  "model: llama-3.1-8b\ntp: &a [1, *a]\n"])
def test_deep_or_recursive_yaml_is_one_line(tmp_path, charon_fails, text):
    space = tmp_path / "deep.yaml"
    space.write_text(text)
    assert charon_fails("sweep", str(space)) == f"error: {space}: not valid YAML (nested more than 100 deep)"


def test_aliases_that_expand_a_little_are_read(tmp_path):
    space = tmp_path / "small.yaml"
    space.write_text(f"model: {TINY_STEP}\ngpus: 8\nframework: none\nsizes: &s [1, 2]\n")
    # 'sizes' is no setting: the file was read through its aliases, then checked
    with pytest.raises(Exception, match="unknown setting 'sizes'"):
        run_sweep(space)


def test_a_space_over_max_points_is_refused_before_enumerating(tmp_path, charon_fails, monkeypatch):
    def enumerated(*args, **kwargs):
        raise AssertionError("the points were enumerated")

    monkeypatch.setattr(space_module, "normalise", enumerated)
    values = ",".join(str(v) for v in range(1, 101))
    db = tmp_path / "r.sqlite"
    line = charon_fails("sweep", "--model", "llama-3.1-8b", "--tp", values, "--pp", values, "--dp", values,
                        "--micro-batch", "1,2", "--db", str(db))
    assert line == ("error: the space has 2,000,000 points, more than --max-points 1,000,000 (fewer axis "
                    "values, or a larger --max-points)")
    assert not db.exists()
    assert "more than --max-points 10 " in charon_fails(
        "sweep", "--model", "llama-3.1-8b", "--tp", "1,2,4,8", "--pp", "1,2,4", "--max-points", "10")
    assert FLAG_DEFAULT == MAX_POINTS == 10**6


def test_limit_streams_the_first_points(tmp_path, monkeypatch):
    drawn = []
    real = space_module.config_key

    def counting(config):
        drawn.append(config)
        if len(drawn) > 1_000:
            raise AssertionError("--limit enumerated the whole space")
        return real(config)

    monkeypatch.setattr(space_module, "config_key", counting)
    wide = {"kind": "training", "model": TINY_STEP, "gpus": 8, "global_batch": 16, "framework": "none",
            "tp": [1, 2], "seq_len": list(range(64, 64 + 400 * 8, 8)), "dp_bucket_mb": list(range(1, 401))}
    result = run_sweep(wide, db=tmp_path / "r.sqlite", limit=1, tier="fast", max_points=10**6)
    assert result.evaluated == 1 and len(drawn) < 10
    assert result.pending == 2 * 400 * 400 - len(result.records)
