"""The one line every tool prints for bad input: escaped and capped."""

from charon_ir.errors import MAX_LINE, one_line


def test_a_short_line_is_kept():
    assert one_line("unknown model 'x'") == "unknown model 'x'"


def test_a_long_line_is_cut_with_an_ellipsis():
    line = one_line("y" * 10**7)
    assert len(line) == MAX_LINE and line == "y" * (MAX_LINE - 1) + "…"
    assert one_line("z" * MAX_LINE) == "z" * MAX_LINE


def test_escapes_count_towards_the_cap():
    line = one_line("\n" * MAX_LINE)
    assert len(line) == MAX_LINE and line.startswith("\\n\\n") and line.endswith("…")
    assert "\n" not in line
