"""The one exception type users see: a bad input, stated in one line.

Every tool (charon-opt, charon) prints a CharonError as `error: <message>` and exits
non-zero, with no traceback. Raise it (or a subclass) with a message that names
what is wrong and where: the file and line, the pass and option, the model
dimension.
"""


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
