"""Progress on stderr for runs that take more than a couple of seconds: a rich
bar (done / total, elapsed, ETA) or a spinner with what is being done, shown only
when stderr is a terminal and `charon --quiet` was not given (a script or a pipe
reading the output sees none of it).

    with progress_bar(len(records), "validate: records") as advance:
        for record in records:
            ...
            advance()

    with status(f"importing {name} (tracing one decoder layer; cached after)"):
        ...
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

QUIET = False
"""Set by `charon --quiet`: no progress at all."""
ACTIVE = 0
"""Displays drawn now (the sweep's bar counts itself): one at a time, so an import
inside a validate or sweep run adds no spinner of its own under the bar."""


def shown() -> bool:
    """Whether progress is drawn: stderr is a terminal, --quiet was not given and
    no other display is on it."""
    return not QUIET and not ACTIVE and sys.stderr.isatty()


@contextmanager
def _drawing() -> Iterator[None]:
    global ACTIVE
    ACTIVE += 1
    try:
        yield
    finally:
        ACTIVE -= 1


@contextmanager
def progress_bar(total: int, what: str) -> Iterator[Callable[[int], None]]:
    """A bar of `total` steps labelled `what`; yields `advance(n=1)`."""
    if not shown() or total <= 0:
        yield lambda n=1: None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn())
    with _drawing(), Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(what, total=total)
        yield lambda n=1: bar.advance(task, n)


@contextmanager
def status(what: str) -> Iterator[None]:
    """A spinner saying `what` is being done, for one long step without a count."""
    if not shown():
        yield
        return
    with _drawing(), Console(stderr=True).status(what):
        yield
