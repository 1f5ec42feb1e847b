"""xDSL's string-literal lexer, made linear (charon_ir/xdsl_lexer.py): an
unterminated string fails in one parse error. Under xDSL 0.74's own pattern a
200-character one backtracks about 2^100 times (it never returns), so whether the
linear pattern is the lexer's is checked first, and the parse is short enough
(20 characters) to end under either pattern."""

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError
from xdsl.utils.mlir_lexer import MLIRLexer

from charon_ir.testing import make_context
from charon_ir.xdsl_lexer import STRING_LITERAL


def test_the_lexer_matches_string_literals_linearly():
    assert MLIRLexer._unescaped_characters_regex is STRING_LITERAL  # pyright: ignore[reportPrivateUsage]
    # one character an iteration: no run of characters (`[^"...]+`) under the outer `*`
    assert "]+" not in STRING_LITERAL.pattern


def test_an_unterminated_string_literal_is_one_parse_error():
    text = 'builtin.module attributes {sim.model = "' + "a" * 20 + "} {\n}\n"
    with pytest.raises(ParseError, match="closing string literal"):
        Parser(make_context(), text).parse_module()


def test_string_literals_still_lex_with_their_escapes():
    module = Parser(make_context(), 'builtin.module attributes {x = "a\\"b\\n\\\\c\\41"} {\n}\n').parse_module()
    assert module.attributes["x"].data == 'a"b\n\\cA'
