"""The profile database: schema, WAL, one row per key, concurrent writers, and
one-line errors for files that are not Charon profile databases."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from charon_ir.errors import CharonError
from charon_ir.profile.key import OpKey
from charon_ir.profile.store import (
    SCHEMA_VERSION,
    Measurement,
    ProfileStore,
    default_db_path,
    latest_by_key,
)

KEY = OpKey("matmul", "transpose_rhs", "[[4,8],[16,8],[4,16]]", '["bf16","bf16","bf16"]')


def measurement(key: OpKey = KEY, time_s: float = 1e-3, device: str = "cpu", torch_version: str = "2.13.0", at: float = 0.0) -> Measurement:
    return Measurement(key, device, torch_version, time_s, 1024.0, 512.0, 10, 0.01, measured_at=at)


def test_creates_wal_database_with_schema_version(tmp_path: Path):
    path = tmp_path / "sub" / "profile.db"
    with ProfileStore.open(path) as store:
        assert store.put(measurement())
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert dict(conn.execute("SELECT name, value FROM meta"))["schema_version"] == str(SCHEMA_VERSION)


def test_put_keeps_first_measurement_of_a_key(tmp_path: Path):
    with ProfileStore.open(tmp_path / "p.db") as store:
        assert store.put(measurement(time_s=1e-3))
        assert not store.put(measurement(time_s=5e-3))
        assert [m.time_s for m in store.measurements("cpu")] == [1e-3]
        assert store.time_of(KEY, "cpu", "2.13.0") is not None
        assert store.time_of(KEY, "cpu", "2.14.0") is None
        assert store.time_of(KEY, "H100-SXM5-80GB", "2.13.0") is None


def test_device_and_torch_version_are_part_of_the_key(tmp_path: Path):
    with ProfileStore.open(tmp_path / "p.db") as store:
        assert store.put(measurement(device="cpu"))
        assert store.put(measurement(device="H100-SXM5-80GB"))
        assert store.put(measurement(torch_version="2.12.0"))
        assert store.devices() == ["H100-SXM5-80GB", "cpu"]
        assert len(list(store.measurements("cpu"))) == 2


def test_update_refines_a_row(tmp_path: Path):
    with ProfileStore.open(tmp_path / "p.db") as store:
        store.put(measurement(time_s=2e-3))
        store.update(measurement(time_s=1e-3))
        assert [m.time_s for m in store.measurements()] == [1e-3]


def test_latest_by_key_prefers_installed_torch_then_newest(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("charon_ir.profile.store.installed_torch_version", lambda: "2.13.0")
    old_same = measurement(time_s=1.0, torch_version="2.13.0", at=1.0)
    new_other = measurement(time_s=2.0, torch_version="2.12.0", at=5.0)
    assert latest_by_key([new_other, old_same])[KEY].time_s == 1.0
    newer_same = measurement(time_s=3.0, torch_version="2.13.0", at=9.0)
    assert latest_by_key([old_same, newer_same, new_other])[KEY].time_s == 3.0


def test_open_existing_does_not_create(tmp_path: Path):
    assert ProfileStore.open_existing(tmp_path / "missing.db") is None
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize(
    "content",
    [
        b"\x8f\x02random bytes that are not sqlite at all" * 100,
        b"SQLite format 3\x00" + b"\xff" * 200,
    ],
)
def test_corrupt_file_is_one_clear_line(tmp_path: Path, content: bytes):
    path = tmp_path / "bad.db"
    path.write_bytes(content)
    for opener in (ProfileStore.open, ProfileStore.open_existing):
        with pytest.raises(CharonError) as info:
            opener(path)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(f"profile database {path} is not a valid Charon profile database: ")


def test_foreign_sqlite_file_is_rejected(tmp_path: Path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(CharonError, match="lacks the meta and measurement tables"):
        ProfileStore.open(path)


def test_other_schema_version_is_rejected(tmp_path: Path):
    path = tmp_path / "p.db"
    ProfileStore.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE name = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(CharonError, match="schema version 99"):
        ProfileStore.open(path)


def test_default_path_follows_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("CHARON_PROFILE_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"
    monkeypatch.delenv("CHARON_PROFILE_DB")
    assert default_db_path() == Path("~/.cache/charon/profile.db").expanduser()


def _writer(path: str, worker: int, count: int) -> None:
    with ProfileStore.open(path) as store:
        for i in range(count):
            # half the keys are shared between workers, half their own
            shapes = f"[[{i}]]" if i % 2 else f"[[{i}],[{worker}]]"
            store.put(measurement(OpKey("elementwise", "kind=add", shapes, "[]"), time_s=1e-3 + worker))


def test_concurrent_writers_neither_corrupt_nor_duplicate(tmp_path: Path):
    path = str(tmp_path / "shared.db")
    workers, count = 4, 60
    # fork: the writer function lives in this test module, which a spawned
    # interpreter could not import; each child opens its own connection
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, w, count)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = conn.execute("SELECT COUNT(*) FROM measurement").fetchone()[0]
    shared, own = count // 2, count - count // 2
    assert rows == shared + own * workers


def test_a_database_under_a_file_names_the_file(tmp_path: Path):
    """The message was mkdir's "File exists"."""
    (tmp_path / "plain").write_text("not a folder")
    with pytest.raises(CharonError, match=r"plain/x.sqlite: .*/plain is a file, not a folder$"):
        ProfileStore.open(tmp_path / "plain" / "x.sqlite")


@pytest.mark.parametrize("bad", [-1.0, "abc", 1e308, float("inf"), b"\x00"])
def test_an_unusable_time_is_a_miss_with_one_warning_and_is_measured_again(tmp_path: Path, capsys, bad):
    """A row edited or damaged by hand: `time_s = -1` priced a step at 0.6 ms,
    `'abc'` was an internal error, `1e308` an infinite step."""
    from charon_ir.engines.db import DbEngine
    from charon_ir.profile.store import MAX_TIME_S

    path = tmp_path / "p.db"
    other = OpKey("matmul", "", "[[2,2],[2,2],[2,2]]", '["f32","f32","f32"]')
    with ProfileStore.open(path) as store:
        assert store.put(measurement()) and store.put(measurement(other))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE measurement SET time_s = ? WHERE shapes = ?", (bad, KEY.shapes))
    with ProfileStore.open(path) as store:
        assert [m.key for m in store.measurements("cpu")] == [other]
        assert store.time_of(KEY, "cpu", "2.13.0") is None
        assert [m.key for m in store.measurements("cpu")] == [other]  # warned once, not per read
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"warning: profile database {path}: 1 row with a time "
                                                       f"that is not a number of seconds in [0, {MAX_TIME_S:g}]")
        assert DbEngine(path).table("cpu").keys() == {other}
        # measured again, the row is replaced; a usable row stays as it was
        assert store.put(measurement(time_s=2e-3)) and not store.put(measurement(other, time_s=5.0))
        assert {m.key: m.time_s for m in store.measurements("cpu")} == {KEY: 2e-3, other: 1e-3}


def test_bad_flops_or_bytes_are_a_miss(tmp_path: Path, capsys):
    path = tmp_path / "p.db"
    with ProfileStore.open(path) as store:
        store.put(measurement())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE measurement SET flops = -5")
    with ProfileStore.open(path) as store:
        assert list(store.measurements("cpu")) == [] and store.time_of(KEY, "cpu", "2.13.0") is None
    assert "1 row with a time that is not" in capsys.readouterr().err
