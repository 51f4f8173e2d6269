"""Acceptance and the audit record.

A candidate is accepted only when the verifier passed it, the reviewer (if any) approved the *same*
SHA-256, and the file on disk still has that digest at acceptance time. Everything that led there is
written to the item's audit directory, which lives outside the workspace.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_forall.core.model import Task, Verdict, json_with_encoded, sha256_bytes, task_record
from pytest_forall.core.review import Review

#: Directories of an item's audit record that hold files the harness did not write (an agent's HOME and TMPDIR, which its
#: sandbox can write; the copies of workspaces): whatever is read back from the record skips them.
UNRECORDED_DIRS = ("-home", "-tmp", "review-ws", "template-check")
#: The reports directory's content-addressed store of candidates and record files (:meth:`AuditRecord.write_bytes`).
BLOBS = ".blobs"


@dataclass(frozen=True)
class Acceptance:
    accepted: bool
    reason: str


def decide_acceptance(verdict: Verdict, review: Review | None, on_disk: bytes | None,
                      reviewer_required: bool) -> Acceptance:
    if not verdict.accepted:
        return Acceptance(False, verdict.reason or "verifier did not accept")
    if on_disk is None:
        return Acceptance(False, "candidate file vanished before acceptance")
    disk_digest = sha256_bytes(on_disk)
    if disk_digest != verdict.digest:
        return Acceptance(False, f"file on disk changed after verification ({disk_digest[:12]} != {verdict.digest[:12]})")
    if reviewer_required:
        if review is None:
            return Acceptance(False, "no reviewer verdict")
        if not review.approved:
            return Acceptance(False, f"reviewer: {review.reason}")
        if review.digest != verdict.digest:
            return Acceptance(False, f"reviewer approved digest {review.digest[:12]}…, not the verified "
                                     f"{verdict.digest[:12]}…")
    return Acceptance(True, "")


def read_acceptance(directory: Path) -> dict[str, Any]:
    """An item record's ``accepted/acceptance.json`` with its verdict: the one it names (``verdict_file``, the accepted
    submission's verdict file in the same record) read back, or the one it holds (a record written before issue 32,
    or a verdict that was not a submission's)."""
    record: dict[str, Any] = json.loads((directory / "accepted" / "acceptance.json").read_text(encoding="utf-8"))
    if "verdict" not in record and "verdict_file" in record:
        record["verdict"] = json.loads((directory / str(record["verdict_file"])).read_text(encoding="utf-8"))
    return record


#: Event kinds gathered into ``audit.json`` (in order of occurrence, across resumed runs).
AUDIT_SECTIONS = {"turn": "turns", "submission": "submissions", "review": "reviews", "acceptance": "acceptances",
                  "state": "state", "budget": "budget"}


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write_file(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` (``mode``: ``os.O_TRUNC`` to write over a file, ``os.O_EXCL`` to refuse one) holding ``data``:
    open, write, close (a Python file object adds a stat, an ioctl, two seeks and its buffers to each, #18)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | mode, 0o666)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _link(source: Path, path: Path) -> None:
    """``path`` made a hard link to ``source``; a file already there (a re-run item's earlier one) is replaced."""
    try:
        os.link(source, path)
    except FileExistsError:
        path.unlink()
        os.link(source, path)


class AuditRecord:
    """Writes one item's evidence: candidates per round, verdicts, reviews, the final acceptance.

    ``events.jsonl`` is the append-only history (it survives interrupted and resumed runs);
    ``audit.json`` is its index, rewritten when the item ends: every turn (role, session, prompt and
    transcript files, usage and cost, the prover commands it ran), every submission (its SHA-256, the saved
    bytes, the verifier's evidence), every review (the digest shown, the verdict and digest returned) and
    every acceptance decision, next to the item's result.
    """

    def __init__(self, directory: Path, task: Task, blobs: Path | None = None) -> None:
        self.directory = directory
        #: the reports directory's content-addressed store (``<reports>/.blobs``): a candidate's bytes, and a JSON
        #: file's, are kept there once, whatever the number of items, runs and rounds that wrote them, each record's
        #: file a hard link to it (:meth:`write_bytes`; issue 32: a library's reports grew by copies every run). The
        #: appended files (``events.jsonl``, a sandbox's log) and ``progress.json`` are never links.
        self.blobs = blobs
        directory.mkdir(parents=True, exist_ok=True)
        #: the directories of the record made (or found) by this process: each is made once, not before each file
        self._dirs = {directory}
        #: events.jsonl as read back, while this record wrote all of it (its size then): None once unknown
        self._events: list[dict[str, Any]] | None = None
        self._events_size = 0
        self.write_json("task.json", task_record(task))

    def _dir_of(self, path: Path) -> Path:
        """``path`` once its directory exists: each missing directory made once, from the top (a ``mkdir(parents=True)``
        of ``s0/r1`` first fails on the missing ``s0``, then makes it, then ``s0/r1`` again: three calls for two)."""
        missing: list[Path] = []
        parent = path.parent
        while parent not in self._dirs and parent != parent.parent:
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            directory.mkdir(exist_ok=True)
            self._dirs.add(directory)
        return path

    def subdir(self, rel: str) -> Path:
        """The record's directory ``rel``, made (once) when missing: a session's audit directory."""
        return self._dir_of(self.directory / rel / "_").parent

    def write_json(self, rel: str, data: Any) -> Path:
        # no indent: json's C encoder runs only without one (indented, the five files of an item cost it 0.6 ms
        # against 0.2 ms, #18); any JSON reader (``python -m json.tool``, ``jq``) shows it indented
        return self.write_encoded(rel, json.dumps(data, sort_keys=True, default=str))

    def write_encoded(self, rel: str, text: str) -> Path:
        """:meth:`write_json` of a value given as its JSON text already (encoded once for several files, #18). With a
        store, the file is a link to its blob like a candidate (:meth:`write_bytes`): a warm run's item writes the same
        task, verdict, acceptance and result as the run before, each kept once (issue 32: 11 MB per warm run of 200
        items, all of it copies)."""
        if self.blobs is not None:
            return self.write_bytes(rel, text.encode("utf-8"))
        path = self._dir_of(self.directory / rel)
        _write_file(path, text.encode("utf-8"), os.O_TRUNC)
        return path

    def write_bytes(self, rel: str, data: bytes) -> Path:
        """A new file ``rel`` holding ``data``: one written over (a re-run item) is replaced, never rewritten in place,
        so a file linked to it (:meth:`link_bytes`) keeps what it recorded."""
        path = self._dir_of(self.directory / rel)
        if self.blobs is not None and self._link_blob(path, data):
            return path
        try:
            _write_file(path, data, os.O_EXCL)
        except FileExistsError:
            path.unlink()
            _write_file(path, data, os.O_EXCL)
        return path

    def _link_blob(self, path: Path, data: bytes) -> bool:
        """``path`` made a hard link to the blob of ``data`` (written first when the store has none of its size); False
        where the store cannot be used (another file system, no links, too many links): the caller writes a file.
        A blob is only ever replaced whole (a new file renamed over it), never written in place, so every record
        linked to it keeps the bytes it recorded."""
        assert self.blobs is not None
        digest = sha256_bytes(data)
        blob = self.blobs / digest[:2] / digest
        try:
            try:
                known = os.stat(blob).st_size == len(data)
            except FileNotFoundError:
                known = False
            if not known:
                blob.parent.mkdir(parents=True, exist_ok=True)
                fresh = blob.with_name(f".{digest}.{os.getpid()}.{threading.get_ident()}")
                _write_file(fresh, data, os.O_TRUNC)
                os.replace(fresh, blob)
            _link(blob, path)
        except OSError:
            return False
        return True

    def link_bytes(self, rel: str, data: bytes, same: Path) -> Path:
        """:meth:`write_bytes` of ``data`` that ``same`` (a file of this record) already holds: a hard link to it (one
        call instead of a file's creation and its bytes, #18), else a copy where the file system links nothing."""
        path = self._dir_of(self.directory / rel)
        try:
            _link(same, path)
        except OSError:
            return self.write_bytes(rel, data)
        return path

    def write_acceptance(self, fields: dict[str, Any], verdict_file: Path | None,
                         verdict_text: Callable[[], str]) -> Path:
        """``accepted/acceptance.json``: ``fields`` and the accepted verdict, named by ``verdict_file`` (the
        submission's verdict file of this record, which holds it: issue 32, the same 11 KB were kept twice per item;
        :func:`read_acceptance` reads it back whole), else held (``verdict_text()``, its JSON as encoded once)."""
        if verdict_file is not None:
            return self.write_json("accepted/acceptance.json", {**fields, "verdict_file": self.relative(verdict_file)})
        return self.write_encoded("accepted/acceptance.json", json_with_encoded(fields, "verdict", verdict_text()))

    def relative(self, path: str | Path) -> str:
        """A path inside the audit dir as written in the record (relative, so the record can be moved)."""
        text, base = str(path if isinstance(path, Path) else Path(path)), str(self.directory)
        if text == base:
            return "."
        # as ``Path.relative_to`` (lexical), by the text: every submission and turn asks (#18)
        return text[len(base) + 1:] if text.startswith(base) and text[len(base)] == os.sep else text

    def event(self, **fields: Any) -> None:
        """Append one line to events.jsonl: the item's history in order."""
        self.append_events(fields)

    def append_events(self, *events: dict[str, Any]) -> None:
        """Append one line per event to events.jsonl, all in one write (events that happen together, #18)."""
        lines = "".join(json.dumps(fields, sort_keys=True, default=str) + "\n" for fields in events)
        fd = os.open(self.directory / "events.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            # the file as this record left it (empty before its first event): its events are known without reading
            # it back; anything else (an earlier run's events, another writer) is read when asked for
            size = os.lseek(fd, 0, os.SEEK_END)
            known = size == self._events_size and (self._events is not None or self._events_size == 0)
            _write_all(fd, lines.encode("utf-8"))
            self._events_size = os.lseek(fd, 0, os.SEEK_CUR)
        finally:
            os.close(fd)
        if known:
            self._events = [*(self._events or []), *(json.loads(line) for line in lines.splitlines())]
        else:
            self._events = None

    def events(self) -> list[dict[str, Any]]:
        if self._events is not None:
            return list(self._events)
        path = self.directory / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def summarize(self, result: dict[str, Any], encoded: str | None = None) -> Path:
        """Write ``audit.json``: the result and the history grouped by kind. ``encoded``: the result's JSON text already
        (result.json's), put where ``sort_keys`` puts it: the same bytes, the row not encoded again (#18)."""
        record: dict[str, Any] = {"result": result, **{section: [] for section in AUDIT_SECTIONS.values()}}
        for event in self.events():
            section = AUDIT_SECTIONS.get(str(event.get("kind")))
            if section:
                record[section].append(event)
        if encoded is None:
            return self.write_json("audit.json", record)
        del record["result"]
        return self.write_encoded("audit.json", json_with_encoded(record, "result", encoded))
