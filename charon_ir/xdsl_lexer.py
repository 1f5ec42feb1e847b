"""xDSL's lexer made linear on an unterminated string literal.

xDSL 0.74 matches a string literal with `"(?:[^"\\\n\v\f]+|\\...)*"`, whose
nested quantifiers backtrack exponentially when no closing quote follows on the
line: a mistyped `.mlir` file then hangs `charon-opt` (and `charon simulate
--model step.mlir`) instead of failing in one line (test_fuzz_contract found
one). The pattern below matches the same strings, one character or escape an
iteration, so a failing match backtracks once per character. Imported by the
dialects and by `charon-opt` before anything is parsed."""

import re

from xdsl.utils.mlir_lexer import MLIRLexer

STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')
"""A string literal, one character or escape an iteration."""

MLIRLexer._unescaped_characters_regex = STRING_LITERAL  # pyright: ignore[reportPrivateUsage]
