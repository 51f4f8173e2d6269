"""A run directory's owner and history: one live controller per run, and every session of it kept.

Issue 19: a resume started while the first controller still ran re-ran a running item (two final rows for it),
and every session overwrote ``run.json``. Now the controller of a session holds an exclusive ``flock`` on
``<run>/.owner`` for its whole life (the kernel drops it when the process dies, however it dies) and writes its
pid, host and start time into that file; a second controller that cannot take the lock is refused, naming them.
``run.json`` keeps one entry per session (start, end, pid, host, selection, exit status) in ``sessions``; its
top-level fields mirror the current session, which is what ``forall watch`` reads.

Issue 33: a resume without ``-k`` ran every item of the suite, not the run's. Each session records its
``selection`` (paths, ``-k``, ``-m`` and the suite options that choose items); a later session takes each part it
does not give from the run's, and one that gives a different part is refused unless it asks for a new selection.
Issue 33, item 17: a session's ``started``/``finished`` are ISO 8601 UTC text; a run.json written before held epoch
floats in ``started_at``/``finished_at``, which :func:`moment` and :func:`has_finished` still read.
"""

from __future__ import annotations

import calendar
import fcntl
import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from pytest_forall.core.progress import RUN_FILE, write_json_atomic

OWNER_FILE = ".owner"
#: shared-locked by every xdist worker that runs an item: workers outlive a SIGKILLed controller for as long as
#: their item runs, and a new controller must not run the same items beside them
WORKERS_FILE = ".workers"
RESULTS_FILE = "results.jsonl"
#: run.json's top-level fields that mirror the current session (what readers before ``sessions`` used)
MIRRORED = ("started", "finished", "selected", "host", "pid", "exitstatus", "selection")
#: the epoch fields of a run.json from before issue 33 (read, never written)
LEGACY_TIMES = ("started_at", "finished_at")
UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_text(epoch: float) -> str:
    """``epoch`` as a person reads it and tools parse it: ISO 8601 UTC to the second (``2026-12-07T09:12:30Z``)."""
    return time.strftime(UTC_FORMAT, time.gmtime(epoch))


def moment(entry: dict[str, Any], part: str) -> float | None:
    """The epoch of a session's (or run.json's top level's) ``part``, ``started`` or ``finished``: its ISO 8601 UTC
    text, or in a run.json written before that text the epoch float ``<part>_at``; None when it has none."""
    value = entry.get(part)
    if isinstance(value, str):
        try:
            return float(calendar.timegm(time.strptime(value, UTC_FORMAT)))
        except ValueError:
            return None
    legacy = entry.get(f"{part}_at")
    return float(legacy) if isinstance(legacy, (int, float)) and not isinstance(legacy, bool) else None


def has_finished(meta: dict[str, Any]) -> bool:
    """Whether run.json (its top level: the current session) says the run finished."""
    return moment(meta, "finished") is not None

#: what chooses a run's items, each part as the command line spells it: ``paths`` (relative to the rootdir,
#: ``::`` parts kept), ``keyword`` (-k), ``markexpr`` (-m), and the options ``--forall-<part>`` of the others
SELECTION = ("paths", "keyword", "markexpr", "shard", "subset", "project")


class RunBusy(Exception):
    """The run is owned by a live controller; the message names its pid, host and start."""


def is_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a run (a session began there): its ``run.json`` or ``results.jsonl`` exists."""
    return (run_dir / RUN_FILE).is_file() or (run_dir / RESULTS_FILE).is_file()


def describe_owner(info: dict[str, Any]) -> str:
    since = info.get("since")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(since))) if isinstance(since, (int, float)) else "?"
    return f"by a live controller: pid {info.get('pid', '?')} on host {info.get('host', '?')}, since {when}"


class RunOwner:
    """The exclusive lock on ``<run>/.owner``; held until :meth:`release` or the process ends."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock or raise :class:`RunBusy`; OSError when the file cannot be made (the caller says where)."""
        if self._fd is not None:
            return
        path = self.run_dir / OWNER_FILE
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                info = _read_info(fd)
                os.close(fd)
                raise RunBusy(describe_owner(info)) from None
            try:  # a run moved aside (restart) between open and lock: the lock must be on the file at ``path``
                mine, there = os.fstat(fd), os.stat(path)
                if (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino):
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        if not _free(self.run_dir / WORKERS_FILE):
            os.close(fd)
            raise RunBusy(f"by worker processes of an earlier session, which hold {self.run_dir / WORKERS_FILE} (the "
                          f"workers of a killed controller, still in their items; `fuser {WORKERS_FILE}` names them)")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor drops the flock
            self._fd = None


def _free(path: Path) -> bool:
    """Whether no process holds a lock on ``path`` (taken exclusively for a moment, then let go)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


class WorkerHold:
    """A worker's shared lock on ``<run>/.workers``, taken when it first runs an item, held until it exits."""

    def __init__(self) -> None:
        self._fd: int | None = None

    def take(self, run_dir: Path) -> None:
        if self._fd is None:
            fd = os.open(run_dir / WORKERS_FILE, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fcntl.flock(fd, fcntl.LOCK_SH)
            self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _read_info(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def move_aside(run_dir: Path) -> Path:
    """Rename ``run_dir`` to the first free ``<run id>.old-<n>`` beside it (nothing recorded is deleted)."""
    number = 1
    while (target := run_dir.with_name(f"{run_dir.name}.old-{number}")).exists():
        number += 1
    os.rename(run_dir, target)
    return target


def _tree_bytes(path: Path, seen: set[tuple[int, int]]) -> int:
    """The bytes of the files under ``path``, each inode counted once over every call sharing ``seen``."""
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                info = os.lstat(os.path.join(directory, name))
            except OSError:
                continue
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


def prune_runs(reports: Path, keep: int, protect: tuple[str, ...] = (), blobs: str = ".blobs") -> list[str]:
    """Retention for a reports directory (``forall report --prune``, issue 32): every run but the ``keep`` newest (by
    the time its run.json or results.jsonl was last written) and those named in ``protect`` (a baseline such as
    ``main``) is deleted, a run in use (its owner lock held) never; then every blob of the store that no record links
    any more. Returns one line per thing done, the last one the bytes freed."""
    runs = sorted((d for d in reports.iterdir() if d.is_dir() and not d.name.startswith(".") and is_run(d)),
                  key=lambda d: max((f.stat().st_mtime for f in (d / RUN_FILE, d / RESULTS_FILE) if f.is_file()),
                                    default=0.0), reverse=True)
    lines: list[str] = []
    seen: set[tuple[int, int]] = set()
    before = _tree_bytes(reports, seen)
    for run in runs[max(keep, 0):]:
        if run.name in protect:
            lines.append(f"kept {run.name} (protected)")
            continue
        owner = RunOwner(run)
        try:
            owner.acquire()
        except (RunBusy, OSError) as exc:
            lines.append(f"kept {run.name}: in use {exc}")
            continue
        try:
            shutil.rmtree(run)
            lines.append(f"deleted {run.name}")
        finally:
            owner.release()
    store = reports / blobs
    removed = 0
    if store.is_dir():
        for directory, _, files in os.walk(store):
            for name in files:
                path = os.path.join(directory, name)
                try:
                    info = os.lstat(path)
                    if info.st_nlink <= 1 and (not name.startswith(".") or time.time() - info.st_mtime > 3600):
                        os.unlink(path)  # no record links it (or a write that never finished)
                        removed += 1
                except OSError:
                    continue
    after = _tree_bytes(reports, set())
    lines.append(f"{removed} unlinked blob(s) removed; {reports}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")
    return lines


def read_meta(run_dir: Path) -> dict[str, Any]:
    """``run.json`` of ``run_dir`` ({} when missing or unreadable: a run interrupted before it was written)."""
    try:
        meta = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def recorded_selection(meta: dict[str, Any]) -> dict[str, Any]:
    """The run's selection: the last session's ``selection``; for a run.json from before it was recorded, the parts
    its sessions kept (``-k``, ``-m``, shard). A part missing here is unknown and constrains nothing."""
    if isinstance(meta.get("selection"), dict):
        return {k: v for k, v in meta["selection"].items() if k in SELECTION}
    sessions = meta.get("sessions") if isinstance(meta.get("sessions"), list) else []
    last = sessions[-1] if sessions and isinstance(sessions[-1], dict) else meta
    return {k: last[k] for k in ("keyword", "markexpr", "shard") if k in last}


def merge_selection(recorded: dict[str, Any], given: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(this session's selection, the parts it gives that differ from the run's): a part not given is the run's."""
    effective, differ = {}, []
    for part in SELECTION:
        mine, theirs = given.get(part) or _empty(part), recorded.get(part)
        if mine == _empty(part):
            effective[part] = theirs if theirs is not None else mine
        else:
            effective[part] = mine
            if theirs is not None and mine != theirs:
                differ.append(part)
    return effective, differ


def _empty(part: str) -> Any:
    return [] if part == "paths" else ""


#: how each part of a selection is given on the command line
SELECTION_FLAGS = {"paths": "paths", "keyword": "-k", "markexpr": "-m", "shard": "--forall-shard",
                   "subset": "--forall-subset", "project": "--forall-project"}


def describe_selection(selection: dict[str, Any], parts: tuple[str, ...] | list[str] = SELECTION, *,
                       absent: bool = False) -> str:
    """A selection as one would type it (``benchmarks/putnam -k 'a or b' -m coq``); a part not given is left out,
    or with ``absent`` said (``no -k``); nothing at all is ``everything collected``."""
    import shlex

    words: list[str] = []
    for part in parts:
        value, flag = selection.get(part), SELECTION_FLAGS[part]
        if not value:
            words += [f"no {flag}"] if absent else []
        elif part == "paths":
            words += [str(path) for path in value]
        elif part in ("keyword", "markexpr"):
            words.append(f"{flag} {shlex.quote(str(value))}")
        else:
            words.append(f"{flag}={shlex.quote(str(value))}")
    return " ".join(words) or "everything collected (no paths, -k, -m, --forall-shard, --forall-subset, --forall-project)"


class RunLog:
    """``run.json`` of one run, appended to by each session: earlier sessions are read back and kept."""

    def __init__(self, run_dir: Path, run_id: str) -> None:
        self.path = run_dir / RUN_FILE
        self.meta: dict[str, Any] = {"run_id": run_id, "sessions": []}

    def begin(self, session: dict[str, Any]) -> None:
        """Start this process's session after every one already recorded (a run.json from before sessions
        were kept becomes the first session)."""
        try:
            earlier = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            earlier = None
        if isinstance(earlier, dict):
            sessions = earlier.get("sessions")
            if not isinstance(sessions, list):
                sessions = ([{k: earlier.get(k) for k in (*MIRRORED, *LEGACY_TIMES) if k in earlier}]
                            if moment(earlier, "started") is not None else [])
            # the top level mirrors this session: an older file's epochs there are its last session's, not this one's
            kept = {k: v for k, v in earlier.items() if k not in LEGACY_TIMES}
            self.meta = {**kept, "run_id": self.meta["run_id"], "sessions": list(sessions)}
        self.meta["sessions"].append({"started": utc_text(time.time()), "finished": None, "exitstatus": None,
                                      "pid": os.getpid(), "host": socket.gethostname(), **session})
        self.update()

    def update(self, **fields: Any) -> None:
        """Set fields of the current session and write the file (atomically: a reader sees old or new)."""
        current = self.meta["sessions"][-1]
        current.update(fields)
        self.meta.update({k: current.get(k) for k in MIRRORED})
        write_json_atomic(self.path, self.meta)
