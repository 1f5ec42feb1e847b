"""The one exception type users see: a bad input, stated in one line.

Every tool (charon-opt, charon) prints a CharonError as `error: <message>` and exits
non-zero, with no traceback. Raise it (or a subclass) with a message that names
what is wrong and where: the file and line, the pass and option, the model
dimension.
"""


from pathlib import Path


class CharonError(Exception):
    """A user-facing error; its message is the whole diagnostic."""


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
