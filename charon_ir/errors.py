"""The one exception type users see: a bad input, stated in one line.

Every tool (charon-opt, charon) prints a CharonError as `error: <message>` and exits
non-zero, with no traceback. Raise it (or a subclass) with a message that names
what is wrong and where: the file and line, the pass and option, the model
dimension.
"""


import gzip
import json
from pathlib import Path


class CharonError(Exception):
    """A user-facing error; its message is the whole diagnostic."""


LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
"""What `str.splitlines` breaks at, each as its escape."""


MAX_LINE = 500
"""The most characters of an error line: a value the user gave can be huge (a
100k-character model name, a YAML of nested aliases expanding to 300 MB)."""


def one_line(message: str, limit: int = MAX_LINE) -> str:
    """`message` as one printable line of at most `limit` characters: a line
    break in a value the user gave (a model name, a file name) is shown escaped,
    not printed, and a longer line is cut, ending in "…"."""
    # escaping only lengthens the text: cut first, so a huge message costs nothing
    line = message[: limit + 1].translate(LINE_BREAKS)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def short_path(name: object, limit: int = 120) -> str:
    """A file name the user gave, its middle elided past `limit` characters: a
    300-character name must not push the reason off the capped line."""
    text = str(name)
    return text if len(text) <= limit else f"{text[: limit // 2]}…{text[-(limit // 2 - 1):]}"


def reason_of(e: BaseException, limit: int = 300) -> str:
    """A third-party exception's message on one line: its lines joined (a
    validation error puts the reason on its second line), cut at `limit`."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_text(path: str | Path, name: str = "", error: type[CharonError] = CharonError) -> str:
    """The text of a file the user named, or one `error` line naming it (`name`,
    else the path): `NAME: cannot read: REASON`, `NAME: not UTF-8 text (byte N)`."""
    name = name or str(path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise error(f"{name}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise error(f"{name}: not UTF-8 text (byte {e.start})") from None


MAX_NESTING = 100
"""The deepest nesting of a structure read from a file (JSON, YAML): a config.json
is 3 deep; 100,000 nested brackets would exhaust Python's recursion."""


def nesting_depth(value: object, limit: int = MAX_NESTING) -> int:
    """How deep lists and mappings nest in `value`, counted without recursion and
    stopping once past `limit` (the structure may be huge)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, (list, tuple)):
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            break
        stack.extend((child, depth) for child in item)
    return deepest


def parse_json(text: str, where: str, what: str = "JSON",
               error: type[CharonError] = CharonError, constants: bool = False) -> object:
    """`text` parsed as JSON, or one `error` line naming `where`: malformed (with
    line:column), nested deeper than MAX_NESTING, or holding NaN or Infinity
    (not JSON; Python's json accepts them) unless `constants` (the caller
    range-checks each number and names the field)."""
    def no_constant(name: str) -> float:
        raise ValueError(f"{name} is not a JSON number")

    try:
        data = json.loads(text, parse_constant=None if constants else no_constant)
    except json.JSONDecodeError as e:
        raise error(f"{where}:{e.lineno}:{e.colno}: malformed {what}: {e.msg}") from None
    except RecursionError:
        raise error(f"{where}: malformed {what}: nested more than {MAX_NESTING} deep") from None
    except ValueError as e:
        raise error(f"{where}: malformed {what}: {e}") from None
    if nesting_depth(data) > MAX_NESTING:
        raise error(f"{where}: malformed {what}: nested more than {MAX_NESTING} deep")
    return data


def read_json_file(path: str | Path, what: str) -> object:
    """A JSON file, plain or gzipped (traces are shipped as .json.gz), parsed as
    `parse_json` does; unreadable, not gzip or not JSON is one line naming it."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise CharonError(f"{short_path(path)}: cannot read: {e.strerror}") from None
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        text = raw.decode()
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise CharonError(f"{short_path(path)}: not a {what}: {reason_of(e)}") from None
    return parse_json(text, str(path), what, constants=True)
