"""xDSL's string-literal lexer, made linear (charon_ir/xdsl_lexer.py): an
unterminated string fails in one parse error. Under xDSL 0.74's own pattern the
parse below backtracks about 2^100 times (it never returns)."""

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError

import charon_ir.xdsl_lexer  # noqa: F401
from charon_ir.testing import make_context


def test_an_unterminated_string_literal_is_one_parse_error():
    text = 'builtin.module attributes {sim.model = "' + "a" * 200 + "} {\n}\n"
    with pytest.raises(ParseError, match="closing string literal"):
        Parser(make_context(), text).parse_module()


def test_string_literals_still_lex_with_their_escapes():
    module = Parser(make_context(), 'builtin.module attributes {x = "a\\"b\\n\\\\c\\41"} {\n}\n').parse_module()
    assert module.attributes["x"].data == 'a"b\n\\cA'
