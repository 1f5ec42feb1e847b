"""Numbers and structures read from files and flags are bounded where they are
read (issue #30, item 3): each case was an internal error, a hang or a silent
exit 0, and is now one line naming what and where, exit 1."""

from __future__ import annotations

import pytest

from charon_ir.errors import MAX_NESTING, nesting_depth, parse_json

DEEP = 100_000


def test_a_config_nested_100000_deep_is_one_line(tmp_path, charon_fails):
    cfg = tmp_path / "deep.json"
    cfg.write_text('{"a":' * DEEP + "1" + "}" * DEEP)
    for args in (["simulate", "--model", str(cfg), "--gpus", "8"],
                 ["serve", "--model", str(cfg), "--batch", "1", "--input-len", "8", "--output-len", "2"]):
        line = charon_fails(*args)
        assert line == f"error: {cfg}: malformed config.json: nested more than {MAX_NESTING} deep"


def test_a_sweep_model_nested_deep_is_one_line(tmp_path, charon_fails):
    cfg = tmp_path / "deep.json"
    cfg.write_text("[" * DEEP + "]" * DEEP)
    line = charon_fails("sweep", "--model", str(cfg), "--gpus", "8", "--db", str(tmp_path / "s.sqlite"))
    assert "nested more than" in line


def test_a_records_file_nested_deep_is_one_line(tmp_path, charon_fails):
    records = tmp_path / "records.json"
    records.write_text("[" * DEEP + "]" * DEEP)
    assert "nested more than" in charon_fails("validate", "--set", str(records))


@pytest.mark.parametrize("text", ["NaN", '{"a": Infinity}', '[-Infinity]'])
def test_json_constants_that_are_not_json_are_refused(text):
    from charon_ir.errors import CharonError

    with pytest.raises(CharonError, match="is not a JSON number"):
        parse_json(text, "f.json")


def test_nesting_depth_stops_past_its_limit():
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    assert nesting_depth(deep, limit=5) == 6
    assert nesting_depth({"a": [1, {"b": 2}]}) == 3 and nesting_depth(7) == 0


LONG_NAME = "x" * 300


@pytest.mark.parametrize("args", [
    ["simulate", "--model", "llama-3.1-8b", "--gpus", "8", "--trace", "{dir}/{long}.json"],
    ["import", "llama-3.1-8b", "-o", "{dir}/{long}.mlir"],
    ["sweep", "--model", "llama-3.1-8b", "--gpus", "8", "--tp", "1,2", "--db", "{dir}/{long}.sqlite"],
    ["simulate", "--model", "m" * 100_000, "--gpus", "8"],
])
def test_a_file_name_too_long_is_one_line(tmp_path, charon_fails, args):
    args = [a.format(dir=tmp_path, long=LONG_NAME) for a in args]
    line = charon_fails(*args)
    assert line.endswith("File name too long") and "…" in line


def test_a_profile_database_name_too_long_is_one_line(tmp_path, charon_fails, monkeypatch):
    monkeypatch.setenv("CHARON_PROFILE_DB", str(tmp_path / f"{LONG_NAME}.db"))
    line = charon_fails("simulate", "--model", "llama-3.1-8b", "--gpus", "8", "--engines", "db,analytic")
    assert line.endswith("File name too long")


def chain_of_ops(n: int) -> str:
    lines = ['builtin.module {', '  %x0 = sim.input "x" : tensor<8x32xbf16>']
    lines += [f'  %x{i} = sim.elementwise "gelu" %x{i - 1} : tensor<8x32xbf16> -> tensor<8x32xbf16>'
              for i in range(1, n)]
    return "\n".join([*lines, "}"]) + "\n"


def test_an_ir_file_past_the_parsed_size_is_refused_before_parsing(tmp_path, charon_fails, monkeypatch):
    from xdsl.parser import Parser

    from charon_ir.tools.charon_opt import MAX_PARSED_OPS

    def parse(*args, **kwargs):
        raise AssertionError("the file was parsed")

    monkeypatch.setattr(Parser, "parse_module", parse)
    big = tmp_path / "big.mlir"
    big.write_text(chain_of_ops(MAX_PARSED_OPS))  # and the module: one too many (200,000 took 300 s)
    line = charon_fails("simulate", "--model", str(big))
    assert line.startswith(f"error: {big}: {MAX_PARSED_OPS + 1:,} operations; an IR file holds at most "
                           f"{MAX_PARSED_OPS:,} (~15 s with xDSL's parser")


def test_the_op_count_counts_op_lines():
    from charon_ir.tools.charon_opt import OP_LINE

    assert sum(1 for _ in OP_LINE.finditer(chain_of_ops(50))) == 51  # builtin.module is one
    text = '  "sim.yield"() : () -> ()\n  coll.grid @mesh(axes = ["tp"], shape = 2)\n  // a comment\n  }\n'
    assert sum(1 for _ in OP_LINE.finditer(text)) == 2
