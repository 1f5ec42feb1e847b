"""The one exception type users see: a bad input, stated in one line.

Every tool (charon-opt, charon) prints a CharonError as `error: <message>` and exits
non-zero, with no traceback. Raise it (or a subclass) with a message that names
what is wrong and where: the file and line, the pass and option, the model
dimension.
"""


class CharonError(Exception):
    """A user-facing error; its message is the whole diagnostic."""
