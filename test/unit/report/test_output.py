"""Output files replace only a regular file or nothing: a symlink is written through
to its target, and a FIFO, a device or a folder at the path is refused in one line,
never replaced (a run as root once turned /dev/full into a JSON file)."""

import os
import stat
from pathlib import Path

import pytest

from charon_ir.errors import CharonError
from charon_ir.report.output import atomic_output, check_output_file

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def write(path: Path, text: str) -> None:
    with atomic_output(path, ".tmp") as tmp:
        Path(tmp).write_text(text)


def test_a_regular_file_or_nothing_is_replaced(tmp_path):
    out = tmp_path / "out.json"
    write(out, "one")
    write(out, "two")
    assert out.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_symlink_is_written_through_to_its_target(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "trace.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    # the temporary file was beside the target, and is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real"]
    assert [p.name for p in target.parent.iterdir()] == ["trace.json"]


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "made.json")
    write(link, "new")
    assert link.is_symlink() and (tmp_path / "made.json").read_text() == "new"


def test_a_fifo_is_refused_and_kept(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(CharonError) as info:
        write(fifo, "never")
    assert str(info.value) == f"{fifo}: is a FIFO, not a regular file; refusing to replace it"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_a_symlink_to_a_fifo_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link.json"
    link.symlink_to(fifo)
    with pytest.raises(CharonError) as info:
        write(link, "never")
    assert str(info.value) == (f"{fifo} (the target of the symlink {link}): is a FIFO, not a regular "
                               f"file; refusing to replace it")
    assert link.is_symlink() and stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_directory_is_refused_and_kept(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "inside").write_text("kept")
    with pytest.raises(CharonError) as info:
        write(folder, "never")
    assert str(info.value) == f"{folder}: is a directory, not a regular file; refusing to replace it"
    assert (folder / "inside").read_text() == "kept"


def test_a_device_is_refused(tmp_path):
    # a node of its own, never one of /dev: an implementation that replaced it
    # would replace the system's (as root, this test once turned /dev/null into a file)
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    with pytest.raises(CharonError) as info:
        write(device, "never")
    assert str(info.value) == f"{device}: is a character device, not a regular file; refusing to replace it"
    assert stat.S_ISCHR(device.lstat().st_mode)


def test_something_put_there_during_the_run_is_not_replaced(tmp_path):
    out = tmp_path / "out.json"
    with pytest.raises(CharonError):
        with atomic_output(out) as tmp:
            Path(tmp).write_text("late")
            os.mkfifo(out)
    assert stat.S_ISFIFO(out.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_symlink_loop_is_one_line(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(CharonError) as info:
        write(loop, "never")
    assert str(info.value) == f"{loop}: a symlink that leads nowhere (a loop)"


def test_the_check_before_a_run_refuses_them_too(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(CharonError) as info:
        check_output_file(fifo, "--trace")
    assert str(info.value) == f"--trace {fifo}: is a FIFO, not a regular file; refusing to replace it"
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere" / "t.json")
    check_output_file(link, "--trace")  # its target's folder is created when written


def test_simulate_refuses_a_fifo_trace_before_running(charon_fails, tmp_path):
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    line = charon_fails("simulate", "--model", str(EXAMPLES / "mlp.mlir"), "--hardware", "H100", "--trace", str(fifo))
    assert line == f"error: --trace {fifo}: is a FIFO, not a regular file; refusing to replace it"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
