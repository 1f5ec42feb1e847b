"""Output files and folders the commands write (--trace, --plot, -o, ...): checked
before a run, so a path that cannot be written fails at once in one line instead
of after the whole simulation, and never leaves part of the output behind.
Missing folders on the way are created when the output is written, for files and
folders alike."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from charon_ir.errors import CharonError


def names_a_folder(path: str | Path) -> bool:
    """An existing folder, or a name ending in a separator, which names a folder
    even where none exists (`Path` drops the slash: pass the flag's own text)."""
    return str(path).endswith(("/", os.sep)) or Path(path).is_dir()


def check_output_file(path: str | Path, flag: str) -> None:
    """Raise unless a file can be written at `path`: `path` does not name a
    folder, and its folder exists and is writable or can be created."""
    if not str(path):
        raise CharonError(f"{flag}: an empty path")
    if names_a_folder(path):
        raise CharonError(f"{flag} {path}: is a directory, not a file")
    path = Path(path)
    target = replaceable_target(path, flag)
    _check_creatable(target.parent, path, flag)


def check_output_dir(path: str | Path, flag: str) -> None:
    """Raise unless files can be written into the folder `path` (created, with
    its parents, when the run writes it)."""
    if not str(path):
        raise CharonError(f"{flag}: an empty path")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise CharonError(f"{flag} {path}: exists and is not a directory")
    _check_creatable(path, path, flag)


def _check_creatable(folder: Path, path: Path, flag: str) -> None:
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK) or not _can_create_in(existing):
        raise CharonError(f"{flag} {path}: {existing} is not a writable directory")


def _can_create_in(folder: Path) -> bool:
    """Whether a folder can really be made in `folder` (made and removed again):
    `os.access` says yes to root on read-only mounts and pseudo file systems."""
    try:
        os.rmdir(tempfile.mkdtemp(dir=folder, prefix=".charon-check-"))
    except OSError:
        return False
    return True


SPECIAL_FILES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def replaceable_target(path: Path, flag: str = "") -> Path:
    """The file an output named `path` replaces: `path` itself, or, for a symlink,
    the file it points to (written through, as `open` would: the link stays).
    Raise when that is something other than a regular file (a FIFO, a device, a
    folder): renaming over it would destroy it, and writing into it is not what
    an output file means."""
    prefix = f"{flag} " if flag else ""
    try:
        target = path.resolve() if path.is_symlink() else path
    except (OSError, RuntimeError):  # Python 3.11 raises RuntimeError for a loop
        raise CharonError(f"{prefix}{path}: a symlink that leads nowhere (a loop)") from None
    try:
        mode = target.stat().st_mode
    except OSError:  # absent (or unreadable: the write will say why)
        return target
    if stat.S_ISREG(mode):
        return target
    what = next((name for is_kind, name in SPECIAL_FILES if is_kind(mode)), "not a regular file")
    via = f" (the target of the symlink {path})" if target != path else ""
    raise CharonError(f"{prefix}{target}{via}: is {what}, not a regular file; refusing to replace it")


def cannot_write(path: str | Path, error: OSError) -> CharonError:
    """The one-line error of a write that failed anyway (a full disk, a race)."""
    return CharonError(f"cannot write {path}: {error.strerror or error}")


@contextmanager
def atomic_output(path: Path, suffix: str = "") -> Iterator[str]:
    """A temporary file beside `path` to write into: it replaces `path` when the
    block ends, and is removed when the block fails, so a failed run never leaves
    part of the output behind; a write that fails is one line (`cannot_write`).
    Missing folders on the way are created. Only a regular file (or nothing) is
    replaced: a symlink is written through to its target, and a FIFO, a device or
    a folder at `path` is refused (`replaceable_target`), before anything is
    written and again when the output is complete."""
    path = Path(path)
    target = replaceable_target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=suffix)
    except OSError as e:
        raise cannot_write(path, e) from None
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        # the block may have run for minutes: something else may be there now
        os.replace(tmp, replaceable_target(path))
    except BaseException as e:
        os.unlink(tmp)
        if isinstance(e, OSError):
            raise cannot_write(path, e) from None
        raise
