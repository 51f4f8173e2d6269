"""What one replay item writes (#18 point 4: a library's every proof is an item, and this machine's file operations
cost 50-120 µs each): the resume state and progress only where a resume or ``forall watch`` needs them, the audit
record's files each made once, and after a crash at any of its file operations a resumed run still ends the item as
an uninterrupted run does.

The fake prover of ``example_suites/fake_conftest.py`` judges (``OK`` compiles), named by a fingerprint here so the
verdict cache keeps its verdicts; the frontend is the real ``replay``.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pytest_forall.agents.replay import ReplayFrontend
from pytest_forall.core.accept import AuditRecord, read_acceptance
from pytest_forall.core.cache import VerdictCache
from pytest_forall.core.model import Budget, Task
from pytest_forall.core.progress import PROGRESS_FILE
from pytest_forall.core.protocol import ItemContext, ItemRun

sys.path.insert(0, str(Path(__file__).parent / "example_suites"))
from fake_conftest import FakeProver

SECRET = b"unit-test-run-secret"
#: what a row says about the proof and its judgement, the same however many crashes came before it
JUDGED = ("outcome", "stop", "reason", "digest", "axioms", "rounds", "compiles", "samples", "candidate_digest",
          "task_digest", "statement_audit")


class NamedProver(FakeProver):  # type: ignore[misc]
    """The fake prover with an environment name (so its verdicts are cached); ``during_compile`` runs mid-compile."""

    during_compile: Callable[[], None] | None = None

    def fingerprint(self, task: Task) -> dict[str, str]:
        return {"version": "fake 1", "libraries": "none"}

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        if self.during_compile is not None:
            self.during_compile()
        return super().compile(task, workspace, candidate, timeout)


class AtOnceProver(NamedProver):
    """A prover whose verdicts need no process and no wait (``judged_at_once``, as a project's own proof once its
    file's records are in memory)."""

    def judged_at_once(self, task: Task, data: bytes) -> bool:
        return True


def replay_item(tmp_path: Path, run: str, prover: Any = None) -> ItemContext:
    """One replay item of run ``run`` (its own audit dir and workspace), the stored proof ``OK``, a shared cache."""
    task = Task(task_id="t", suite="fake", track="fake", prover="fakeprover", source_path="t.txt",
                template="TEMPLATE\n", theorem_name="t")
    proofs = tmp_path / "proofs"
    proofs.mkdir(parents=True, exist_ok=True)
    (proofs / task.candidate_name).write_text("OK\n")
    return ItemContext(task=task, workspace_root=tmp_path / run / "ws", workspace_name="w",
                       audit=AuditRecord(tmp_path / run / "items" / "t", task), prover=prover or NamedProver(),
                       frontend=ReplayFrontend({"proofs": str(proofs)}), reviewer=None, budget=Budget(rounds=1),
                       options={"sandbox": "none"}, run_secret=SECRET,
                       cache=VerdictCache(tmp_path / "cache", "readwrite"))


class Crash(BaseException):
    """The process dies here (nothing after it runs, nothing catches it)."""


@contextmanager
def file_operations(monkeypatch: pytest.MonkeyPatch, crash_at: int = 0) -> Iterator[list[tuple[str, str]]]:
    """Every file written, renamed over, linked, removed or made and every directory listed, as (operation, file name),
    in order; with ``crash_at`` = n the n-th of them raises :class:`Crash` instead of happening."""
    seen: list[tuple[str, str]] = []

    def note(operation: str, path: Any) -> None:
        seen.append((operation, f"fd {path}" if isinstance(path, int) else Path(os.fsdecode(path)).name))
        if len(seen) == crash_at:
            raise Crash(seen[-1])

    real_open, real_replace, real_mkdir = io.open, os.replace, os.mkdir
    real_link, real_unlink, real_scandir, real_os_open = os.link, os.unlink, os.scandir, os.open

    def counting_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, bytes, os.PathLike)) and any(c in mode for c in "wax+"):
            note("write", file)
        return real_open(file, mode, *args, **kwargs)

    def counting_replace(src: Any, dst: Any, **kwargs: Any) -> None:
        note("rename", dst)
        real_replace(src, dst, **kwargs)

    def counting_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        note("mkdir", path)
        real_mkdir(path, *args, **kwargs)

    def counting_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            note("write", path)
        return real_os_open(path, flags, *args, **kwargs)

    def counting_link(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        note("link", dst)
        real_link(src, dst, *args, **kwargs)

    def counting_unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        note("unlink", path)
        real_unlink(path, *args, **kwargs)

    def counting_scandir(path: Any = ".") -> Any:
        note("list", path)
        return real_scandir(path)

    with monkeypatch.context() as patch:
        patch.setattr(io, "open", counting_open)
        patch.setattr(builtins, "open", counting_open)
        patch.setattr(os, "replace", counting_replace)
        patch.setattr(os, "mkdir", counting_mkdir)
        patch.setattr(os, "open", counting_os_open)
        patch.setattr(os, "link", counting_link)
        patch.setattr(os, "unlink", counting_unlink)
        patch.setattr(os, "scandir", counting_scandir)
        yield seen


def judged(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in JUDGED}


def test_a_replay_item_writes_its_state_and_progress_only_where_a_resume_or_watch_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cold (the verdict judged): progress when its verification starts and when it ends (the steps before take no
    time for a replay item), no resume state (the item ends final, and a resumed run starts it afresh either way), no
    workspace brief; warm (the verdict from the cache): no progress at all (the item ends at once; ``forall watch``
    counts it from its row), no workspace. Was: 10 renames of state and progress per cold item (6 progress, 4 state),
    3 per warm one, every audit file's directory made before it; then 3 progress renames per cold item, 2 per warm
    one (#18)."""
    ctx = replay_item(tmp_path, "cold")
    with file_operations(monkeypatch) as cold:
        row = ItemRun(ctx).run()
    assert row["outcome"] == "strict" and not row["cached"], row
    renamed = Counter(name for op, name in cold if op == "rename")
    assert renamed[PROGRESS_FILE] == 2 and "state.json" not in renamed, cold
    # with the verdict cache's entry and the key it was judged under, and the workspace's candidate (written under a
    # fresh name and renamed over the entry, never through a link the actor left: core.workspace.write_file)
    assert renamed["t.txt"] == 1 and sum(renamed.values()) == 5, cold
    written = [name for op, name in cold if op == "write"]
    # the workspace without the agent's brief; the audit record's files (6, the accepted file a link), the cache's
    # entry and key (with its HMAC key, its lock, and a first try of each before its directory is made), progress (2)
    assert "TASK.md" not in written and len(written) <= 20, written
    made = Counter(name for op, name in cold if op == "mkdir")
    assert made["t"] == 0 and all(made[d] == 1 for d in ("s0", "r1", "accepted")), cold  # each audit dir once
    progress = json.loads((ctx.audit.directory / PROGRESS_FILE).read_text())
    assert (progress["state"], progress["outcome"], progress["compiles"]) == ("finished", "strict", 1)
    assert not (ctx.audit.directory / "state.json").exists()

    warm_ctx = replay_item(tmp_path, "warm")
    with file_operations(monkeypatch) as warm:
        warm_row = ItemRun(warm_ctx).run()
    assert warm_row["cached"] and judged(warm_row) == judged(row), warm_row
    assert not any(op == "rename" for op, _ in warm), warm
    assert not (tmp_path / "warm" / "ws").exists()  # no session: no workspace
    assert sorted(p.name for p in warm_ctx.audit.directory.rglob("*")) == sorted(
        p.name for p in ctx.audit.directory.rglob("*") if p.name != PROGRESS_FILE), \
        "a warm item's audit record has a cold one's files (but the progress of a step that took long)"
    for record in (ctx.audit, warm_ctx.audit):  # the accepted file is the submission's, by a link or a copy
        assert (record.directory / "accepted" / "t.txt").read_bytes() == (record.directory / "s0/r1/t.txt").read_bytes()


def test_a_warm_replay_items_file_operations_are_its_audit_records_files_each_made_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An item whose verdict is a cache hit (a warm run's every item, #18 point 4; ~130 µs per file operation on the
    benchmark machine): its round's and the acceptance's directories made once each, its files written once each, the
    accepted file a link to the submission's, one append to the events, no progress, no directory listed. Was: 14
    writes (2 progress, 2 events appends), 2 renames, 4 mkdirs (``s0/r1`` tried before ``s0``), 4 listings (the
    tool-call count walked the record)."""
    judged_ctx = replay_item(tmp_path, "cold")
    assert not ItemRun(judged_ctx).run()["cached"]
    ctx = replay_item(tmp_path, "warm")
    with file_operations(monkeypatch) as warm:
        row = ItemRun(ctx).run()
    assert row["cached"] and row["outcome"] == "strict" and row["tool_calls"] == {"navigation": 0, "compilation": 0, "interaction": 0}
    assert Counter(op for op, _ in warm) == Counter({"write": 6, "mkdir": 3, "link": 1}), warm
    assert [name for op, name in warm if op == "mkdir"] == ["s0", "r1", "accepted"], warm
    assert sorted(name for op, name in warm if op != "mkdir") == sorted(
        ["t.txt", "candidate-verdict.json", "events.jsonl", "t.txt", "acceptance.json", "result.json", "audit.json"])
    events = [json.loads(line) for line in (ctx.audit.directory / "events.jsonl").read_text().splitlines()]
    assert [(e["kind"], e.get("submission")) for e in events] == [("submission", "candidate"), ("acceptance", None)]
    audit = json.loads((ctx.audit.directory / "audit.json").read_text())
    assert len(audit["submissions"]) == len(audit["acceptances"]) == 1 and audit["result"] == row


def test_an_audit_records_file_written_again_leaves_its_linked_twin_as_recorded(tmp_path: Path) -> None:
    """A file written over (an item run again in the same record) is a new file: the accepted file linked to the
    earlier attempt's submission keeps the bytes that were accepted. Where the file system links nothing, a copy."""
    task = Task(task_id="t", suite="fake", track="fake", prover="fakeprover", source_path="t.txt", template="x\n")
    record = AuditRecord(tmp_path / "a", task)
    first = record.write_bytes("s0/r1/t.txt", b"accepted proof\n")
    accepted = record.link_bytes("accepted/t.txt", b"accepted proof\n", first)
    assert accepted.stat().st_ino == first.stat().st_ino
    record.write_bytes("s0/r1/t.txt", b"a later, rejected attempt\n")
    assert accepted.read_bytes() == b"accepted proof\n"
    assert record.link_bytes("accepted/t.txt", b"a later one\n", first).read_bytes() == b"a later, rejected attempt\n"
    assert record.link_bytes("other/t.txt", b"copied\n", tmp_path / "gone").read_bytes() == b"copied\n"


def test_a_replay_item_judged_at_once_writes_no_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold item whose verdict the backend reads from what it holds (``judged_at_once``: a project's own proof once
    its file's records are in memory) ends within milliseconds: no progress file is written for it (was 2 renames per
    cold item, #18), its audit record is a progress-judged item's, and ``forall watch`` counts it from its row."""
    ctx = replay_item(tmp_path, "at-once", AtOnceProver())
    with file_operations(monkeypatch) as seen:
        row = ItemRun(ctx).run()
    assert row["outcome"] == "strict" and not row["cached"], row
    renamed = Counter(name for op, name in seen if op == "rename")
    # the cache's entry and key, and the workspace's candidate (core.workspace.write_file's rename) only
    assert PROGRESS_FILE not in renamed and renamed["t.txt"] == 1 and sum(renamed.values()) == 3, seen
    assert not (ctx.audit.directory / PROGRESS_FILE).exists()
    reference = replay_item(tmp_path, "waits")
    reference_row = ItemRun(reference).run()
    assert judged(row) == judged(reference_row)
    assert sorted(p.name for p in ctx.audit.directory.rglob("*")) == sorted(
        p.name for p in reference.audit.directory.rglob("*") if p.name != PROGRESS_FILE)
    audit = json.loads((ctx.audit.directory / "audit.json").read_text())
    assert len(audit["submissions"]) == len(audit["acceptances"]) == 1 and audit["result"] == row


@pytest.mark.parametrize("prover", [NamedProver, AtOnceProver])
def test_a_replay_item_cut_off_at_any_file_operation_is_resumed_to_the_row_of_an_uninterrupted_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prover: type) -> None:
    """The process dies at the n-th file operation of the item, for every n; the next run of the item (resume state
    as the dead one left it, and a cache holding whatever was written) ends it as a run never interrupted does:
    the same outcome, one round, one compile. Was: cut off while its proof was judged, the resume state (written
    after the turn) made the resumed item a second round, over the budget of one: ``failed``."""
    reference = judged(ItemRun(replay_item(tmp_path / "reference", "run", prover())).run())
    assert reference["outcome"] == "strict"
    crash_at = 1
    while True:
        base = tmp_path / f"crash-{crash_at}"
        ctx = replay_item(base, "run", prover())
        with file_operations(monkeypatch, crash_at) as seen:
            try:
                ItemRun(ctx).run()
            except Crash:
                pass
            else:
                break  # the item ended before its n-th operation: every point was tried
        assert len(seen) >= crash_at  # (a cleanup in a `finally` may run after the crash)
        resumed = ItemRun(replay_item(base, "run", prover())).run()
        assert judged(resumed) == reference, (crash_at, seen[-1], resumed["reason"])
        crash_at += 1
    assert crash_at > (20 if prover is NamedProver else 15), crash_at  # (no progress writes: fewer operations)


def test_watch_sees_a_replay_item_while_its_proof_is_judged(tmp_path: Path) -> None:
    """A verification can take long (a project's build, its judge session): the item's progress says so meanwhile."""
    prover = NamedProver()
    ctx = replay_item(tmp_path, "run", prover)
    seen: list[dict[str, Any]] = []
    prover.during_compile = lambda: seen.append(json.loads((ctx.audit.directory / PROGRESS_FILE).read_text()))
    assert ItemRun(ctx).run()["outcome"] == "strict"
    assert [(p["state"], p["activity"], p["compiles"]) for p in seen] == [("running", "verifying s0/r1", 1)], seen


def test_the_events_kept_in_memory_are_the_files(tmp_path: Path) -> None:
    """``AuditRecord.events`` is the file's content: from memory while the record wrote all of it, read back after an
    earlier run's events or another writer's line."""
    task = Task(task_id="t", suite="fake", track="fake", prover="fakeprover", source_path="t.txt", template="x\n")
    record = AuditRecord(tmp_path / "a", task)
    record.event(kind="turn", path=tmp_path, n=(1, 2))
    record.event(kind="state", action="resumed")

    def on_disk() -> list[dict[str, Any]]:
        return [json.loads(line) for line in (record.directory / "events.jsonl").read_text().splitlines()]
    assert record._events is not None and record.events() == on_disk() and len(on_disk()) == 2
    with (record.directory / "events.jsonl").open("a") as handle:
        handle.write(json.dumps({"kind": "budget", "stop": "wall"}) + "\n")  # another writer
    record.event(kind="acceptance", accepted=True)
    assert record.events() == on_disk() and len(on_disk()) == 4
    again = AuditRecord(tmp_path / "a", task)  # a resumed run: the earlier run's events are read
    again.event(kind="review", approved=False)
    assert again.events() == on_disk() and len(on_disk()) == 5


def test_the_verdict_caches_writers_need_no_lock(tmp_path: Path) -> None:
    """Entries are written to a file of the writer's own and renamed into place: threads (and processes) writing the
    same and other keys at once leave whole entries, each read back as written, and no lock or scratch file."""
    import threading

    cache = VerdictCache(tmp_path / "cache", "readwrite")
    keys = [{"kind": "test", "n": str(n % 5)} for n in range(40)]
    problems: list[str] = []

    def writer(offset: int) -> None:
        for n, key in enumerate(keys):
            cache.remember(key, {"n": key["n"], "text": "x" * 20_000})
            value = cache.value(keys[(n + offset) % len(keys)])
            if value is not None and value != {"n": keys[(n + offset) % len(keys)]["n"], "text": "x" * 20_000}:
                problems.append(repr(value)[:80])
    threads = [threading.Thread(target=writer, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert all(cache.value(key) == {"n": key["n"], "text": "x" * 20_000} for key in keys)
    left = [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file() and (p.suffix != ".json" or
                                                                               p.name.startswith(".tmp-"))]
    assert sorted(left) == [".hmac-key", ".hmac-key.lock"], left  # the key's own lock (made once), nothing else


def test_a_tasks_wire_is_asdicts(tmp_path: Path) -> None:
    """``Task.to_wire`` builds what ``dataclasses.asdict`` builds (a copy: changing it changes no task), without its
    deep copy when the task holds plain data, and by it when the task holds anything else."""
    import dataclasses
    from collections import namedtuple

    from pytest_forall.suites.project import load_project

    project = Path(__file__).resolve().parent / "fixtures" / "project_rocq"
    Pair = namedtuple("Pair", "a b")

    @dataclasses.dataclass
    class Inner:
        x: list[int]

    tasks = [*load_project(project, {}),
             Task(task_id="t", suite="s", track="k", prover="p", source_path="t", template="x",
                  context_files={"a.txt": "A"}, meta={"n": [1, (2, 3.5)], "d": {"k": None, "b": True}}),
             Task(task_id="u", suite="s", track="k", prover="p", source_path="u", template="x",
                  meta={"pair": Pair(1, [2]), "inner": Inner([1])}),
             Task(task_id="v", suite="s", track="k", prover="p", source_path="v", template="x",
                  meta={"set": frozenset({1})})]
    for task in tasks:
        wire = task.to_wire()
        assert wire == dataclasses.asdict(task) and list(wire) == list(dataclasses.asdict(task))
        assert json.dumps(wire, sort_keys=True, default=str) == json.dumps(dataclasses.asdict(task), sort_keys=True,
                                                                           default=str)
        wire["meta"]["added"] = 1
        for value in wire["meta"].values():
            if isinstance(value, list):
                value.append("added")
        assert "added" not in task.meta and all("added" not in v for v in task.meta.values() if isinstance(v, list))
    assert type(tasks[-2].to_wire()["meta"]["pair"]) is Pair  # as asdict gives it


def test_watch_counts_an_item_that_ended_without_progress_as_started(tmp_path: Path) -> None:
    """A warm item writes no progress (above): ``forall watch`` counts it started from its row, and an item a crashed
    run left "running" that a later session finished is neither running nor counted twice."""
    from pytest_forall.cli.watch import frame
    from pytest_forall.core.progress import RUN_FILE

    run = tmp_path / "run"
    ctx = replay_item(tmp_path, "cold")
    assert ItemRun(ctx).run()["outcome"] == "strict"  # a judged item: its progress says finished
    warm = replay_item(tmp_path, "warm")
    rows = [{**ItemRun(warm).run(), "nodeid": "s::warm", "audit_dir": str(run / "items" / "warm")},
            {**ItemRun(replay_item(tmp_path, "again")).run(), "nodeid": "s::stale",
             "audit_dir": str(run / "items" / "stale")}]
    assert not (warm.audit.directory / PROGRESS_FILE).exists()
    for name, state in (("stale", "running"), ("live", "running")):
        (run / "items" / name).mkdir(parents=True)
        (run / "items" / name / PROGRESS_FILE).write_text(json.dumps({"state": state, "activity": "verifying s0/r1"}))
    (run / "items" / "warm").mkdir(parents=True)
    (run / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (run / RUN_FILE).write_text(json.dumps({"selected": 4}))
    shown = "\n".join(frame(run))
    assert "4 selected, 3 started, 2 finished, 1 running" in shown, shown
    assert "live: verifying s0/r1" in shown and "stale:" not in shown, shown


def test_a_resumed_items_row_counts_the_tool_calls_of_its_earlier_sessions(tmp_path: Path) -> None:
    """The row's ``tool_calls`` sum every ``tools.json`` of the item's sessions: a resumed item's (its earlier run's
    sessions are the item's) are read; an item that opened no session with tools this run and resumes nothing lists
    no directory for them (the warm item above)."""
    from pytest_forall.core.state import ItemState, StateStore

    ctx = replay_item(tmp_path, "run")
    (ctx.audit.directory / "s0").mkdir()
    (ctx.audit.directory / "s0" / "tools.json").write_text(json.dumps({"navigation": 2, "compilation": 3}))
    StateStore(ctx.audit.directory / "state.json", SECRET, ctx.task.task_id, ctx.workspace_root / ctx.workspace_name
               ).save(ItemState(frontend="replay", sessions=["earlier"]))
    row = ItemRun(ctx).run()
    assert row["outcome"] == "strict" and row["tool_calls"] == {"navigation": 2, "compilation": 3, "interaction": 0}, row


def test_a_tasks_digest_is_the_sha256_of_its_record_and_tells_every_task_apart(tmp_path: Path) -> None:
    """``task_digest`` is the SHA-256 of the task's record (task.json's content: each long text by its own SHA-256,
    hashed past a shared start once, #18) with the names of the texts so recorded: any change to the task but its
    source path changes it, and an adapter's meta entry named like a digested text is not taken for one."""
    import hashlib
    import random

    from pytest_forall.core import cache
    from pytest_forall.core.model import LONG_TEXT, task_record, text_digests
    from pytest_forall.suites.project import load_project

    def is_long(key: str, value: Any, always: tuple[str, ...] = ()) -> bool:
        return isinstance(value, str) and (key in always or len(value) > LONG_TEXT)

    def plain_record(task: Task) -> dict[str, Any]:  # each long text hashed whole, by hashlib alone
        def digested(fields: dict[str, Any], always: tuple[str, ...] = ()) -> dict[str, Any]:
            return {(f"{k}_sha256" if is_long(k, v, always) else k):
                    (hashlib.sha256(v.encode()).hexdigest() if is_long(k, v, always) else v) for k, v in fields.items()}
        record = digested(task.to_wire(), always=("template",))
        return record | {"meta": digested(dict(record.get("meta") or {}))}

    def plain_digest(task: Task) -> str:
        wire = task.to_wire()
        names = sorted(f"{k}_sha256" for k, v in wire.items() if is_long(k, v, ("template",)))
        names += sorted(f"meta.{k}_sha256" for k, v in wire["meta"].items() if is_long(k, v))
        record = {k: v for k, v in plain_record(task).items() if k != "source_path"}
        text = json.dumps({"record": record, "digested": names}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    project = Path(__file__).resolve().parent / "fixtures" / "project_rocq"
    tasks = load_project(project, {})
    digests = set()
    for task in tasks:
        long_task = Task(**{**task.to_wire(), "template": task.template * 40, "frozen": task.template * 39,
                            "meta": {**task.meta, "own_candidate": task.template * 41}})
        assert task_record(task) == plain_record(task) and task_record(long_task) == plain_record(long_task)
        for one in (task, long_task):
            assert cache.task_digest(one) == plain_digest(one)
            digests.add(cache.task_digest(one))
    assert len(digests) == 2 * len(tasks)

    task = tasks[0]
    moved = Task(**{**task.to_wire(), "source_path": "elsewhere/A.v"})
    assert cache.task_digest(moved) == cache.task_digest(task)
    text = "Lemma x : True.\n" * 400  # longer than LONG_TEXT: recorded by its digest
    with_text = Task(**{**task.to_wire(), "meta": {**task.meta, "x": text}})
    named_like_it = Task(**{**task.to_wire(), "meta": {**task.meta, "x_sha256": hashlib.sha256(text.encode()).hexdigest()}})
    assert task_record(with_text)["meta"]["x_sha256"] == task_record(named_like_it)["meta"]["x_sha256"]
    assert cache.task_digest(with_text) != cache.task_digest(named_like_it)
    for changed in ({"template": task.template + " "}, {"frozen": task.frozen + " "}, {"statement": "other"},
                    {"meta": {**task.meta, "x": text[:-1] + "."}}, {"context_files": {"B.v": "x"}}):
        assert cache.task_digest(Task(**{**with_text.to_wire(), **changed})) != cache.task_digest(with_text), changed

    rng = random.Random(18)
    alphabet = ['"', "\\", "\n", "\t", "\x00", "\x1f", "é", "\u2028", "a", "b", " ", "/", "😀"]
    texts = ["".join(rng.choice(alphabet) for _ in range(n)) for n in (0, 5, 300, 5000)]
    texts += [texts[2] + "é😀", texts[2] + "x", texts[1], texts[3] + "z"]
    expected = {t: hashlib.sha256(t.encode()).hexdigest() for t in texts}
    assert text_digests(texts) == expected
    assert text_digests(texts) == expected  # the same objects again: from the memo
    copies = ["".join(list(t)) for t in texts]  # equal texts, other objects
    assert text_digests(copies) == expected


def test_a_cold_replay_item_makes_its_cache_key_and_reads_its_entry_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lookup before the session (which serves a warm item) and the session's submission of the same bytes are one
    lookup: one key made and one entry read per cold item, the verdict stored under that key (was: the key made and the
    entry read twice, #18). A second run of the item is served from the entry."""
    from pytest_forall.core import cache as vcache

    calls: Counter[str] = Counter()
    real_key, real_get = vcache.cache_key, VerdictCache.get

    def counted_key(*args: Any, **kwargs: Any) -> Any:
        calls["key"] += 1
        return real_key(*args, **kwargs)

    def counted_get(self: VerdictCache, key: dict[str, str]) -> Any:
        calls["get"] += 1
        return real_get(self, key)

    monkeypatch.setattr(vcache, "cache_key", counted_key)
    monkeypatch.setattr(VerdictCache, "get", counted_get)
    row = ItemRun(replay_item(tmp_path, "cold")).run()
    assert row["outcome"] == "strict" and not row["cached"] and row["cache_miss"].startswith("new proof"), row
    assert calls == Counter({"key": 1, "get": 1}), calls
    warm = ItemRun(replay_item(tmp_path, "warm")).run()
    assert warm["cached"] and judged(warm) == judged(row), warm


def test_a_rows_usage_and_budget_are_their_asdicts() -> None:
    """``Usage.to_wire`` and ``Budget.to_wire`` (in every row) are ``dataclasses.asdict``, field for field and in its
    order, built without its deep copy."""
    import dataclasses

    from pytest_forall.core.model import Usage

    for value in (Usage(), Usage(1, 2, None, 0.5), Budget(), Budget(samples=2, rounds=3, compiles=4, wall=1.5, usd=2.0)):
        wire = value.to_wire()
        assert wire == dataclasses.asdict(value) and list(wire) == list(dataclasses.asdict(value))
        assert json.dumps(wire) == json.dumps(dataclasses.asdict(value))


def test_a_judged_items_verdict_and_row_are_encoded_once_into_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold item's verdict is encoded once for the cache's entry, the submission's evidence and the acceptance (three
    times before), its row once for result.json and audit.json (twice before, #18); each file is still the canonical
    ``sort_keys`` JSON of what it holds, byte for byte, and a warm item's files are the same."""
    from pytest_forall.core.model import Verdict

    def canonical(text: str) -> str:
        return json.dumps(json.loads(text), sort_keys=True, default=str)

    encoded: Counter[str] = Counter()
    real_wire, real_dumps = Verdict.to_wire, json.dumps

    def counted_wire(self: Verdict) -> dict[str, Any]:
        encoded["verdict"] += 1
        return real_wire(self)

    def counted_dumps(value: Any, *args: Any, **kwargs: Any) -> str:
        row = value.get("result", value) if isinstance(value, dict) else None
        if isinstance(row, dict) and "task_digest" in row and "outcome" in row:  # the row, or audit.json's record of it
            encoded["row"] += 1
        return real_dumps(value, *args, **kwargs)

    monkeypatch.setattr(Verdict, "to_wire", counted_wire)
    monkeypatch.setattr(json, "dumps", counted_dumps)
    ctx = replay_item(tmp_path, "cold")
    row = ItemRun(ctx).run()
    assert row["outcome"] == "strict" and encoded == Counter({"verdict": 1, "row": 1}), encoded
    warm = replay_item(tmp_path, "warm")
    assert ItemRun(warm).run()["cached"]
    for record in (ctx.audit, warm.audit):
        for rel in ("result.json", "audit.json", "accepted/acceptance.json", "s0/r1/candidate-verdict.json"):
            text = (record.directory / rel).read_text()
            assert text == canonical(text), rel
        audit = json.loads((record.directory / "audit.json").read_text())
        assert audit["result"] == json.loads((record.directory / "result.json").read_text())
        accepted = read_acceptance(record.directory)  # the verdict named: the submission's file, not a copy
        assert "verdict" not in json.loads((record.directory / "accepted/acceptance.json").read_text())
        assert accepted["verdict"] == json.loads((record.directory / "s0/r1/candidate-verdict.json").read_text())
    entries = [p for p in (tmp_path / "cache").glob("??/*.json")]
    assert entries and all(json.loads(p.read_text())["body"] == canonical(json.loads(p.read_text())["body"])
                           for p in entries)
    assert json.loads(json.loads(entries[0].read_text())["body"])["value"] == accepted["verdict"]


def test_a_value_encoded_once_is_put_where_sort_keys_puts_it() -> None:
    """``json_with_encoded`` gives ``json.dumps(..., sort_keys=True, default=str)`` byte for byte, the key first, last,
    in the middle or alone, and a key that JSON escapes."""
    from pytest_forall.core.model import json_with_encoded

    value = {"b": [1, "é"], "a": None}
    for fields in ({}, {"a": 1}, {"z": 2}, {"a": 1, "z": Path("/p")}, {"m\"x": "y", "n": {"q": 1}}):
        for key in ("m", "m\"x2", "0", "~"):
            expected = json.dumps({**fields, key: value}, sort_keys=True, default=str)
            assert json_with_encoded(fields, key, json.dumps(value, sort_keys=True)) == expected, (fields, key)
