"""The judge's sessions over the project's build: each compiled file's dump (one session per file, whatever the
number of its items), the sessions started ahead of the items after a build, and the baseline of an item whose file
does not build (its template compiled, one compile for the items before the file's first error)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_forall.core.model import Task
from pytest_forall.core.proc import in_background
from pytest_forall.lang.rocq.project.ahead import start_ahead
from pytest_forall.lang.rocq.project.checker import ProjectChecks
from pytest_forall.lang.rocq.project.items import has_items, line_offsets, rocq_tasks_of_file
from pytest_forall.lang.rocq.project.layout import CoqProject
from pytest_forall.lang.rocq.project.records import stored_dump

#: a build error that may be the machine's, not the file's: no evidence about the file's text
MACHINE_ERRORS = r"Stack overflow|[Oo]ut of memory|Timeout|[Tt]imed out|Killed"


class ProjectSessions(ProjectChecks):
    """The judge dumps of the build's files (the baseline every candidate of a file is compared with)."""

    def _judge_file(self, load: list[str], parent: Path, module: str, targets: list[str],
                    timeout: float, fresh: bool = True) -> tuple[Any, str]:
        """The judge's dump of one module of the build or of a candidate's tree (coqc as the benchmark judge runs it)."""
        from pytest_forall.lang.rocq.judge import run_file_dump

        return run_file_dump(self._judge_run(timeout), parent, load, module, targets, fresh)

    def _judge_files(self, load: list[str], parent: Path, files: list[tuple[str, list[str]]],
                     timeout: float) -> tuple[dict[str, Any], str]:
        """:meth:`_judge_file` of several files of the build in one session (per module its dump or why not)."""
        from pytest_forall.lang.rocq.judge import run_files_dump

        return run_files_dump(self._judge_run(timeout), parent, load, files)

    def _baseline(self, task: Task, timeout: float) -> tuple[Any, str]:
        """The judge's dump of the target's file in the baseline build, once per file and build (cached beside it:
        one prover session per file, whatever the number of its items), found once per item (every layer asks)."""
        if self.plugin is None:
            return None, f"the kernel judge is unavailable: {self.plugin_problem}"
        item = self._for_item(task)
        if "baseline" not in item:
            if "build_break" in item:  # the project's sources do not build: the same answer for this item
                return None, str(item["build_break_reason"])
            found = self._find_baseline(task, timeout)
            if found[0] is None:
                return found  # (asked again: an infra reason may pass)
            item["baseline"] = found
        baseline: tuple[Any, str] = item["baseline"]
        return baseline

    def _find_baseline(self, task: Task, timeout: float) -> tuple[Any, str]:
        project, build, problem = self._build(task, timeout)
        if problem:
            return None, problem
        module = str(task.meta["coq_module"])
        rel = str(task.meta["project_file"])
        vo = (self._out(project, build) / rel).with_suffix(".vo")
        if not vo.is_file():
            plan = self._broken_file_plan(task, project, build)
            if plan is not None and isinstance(plan, str):  # after the file's first error: it cannot build there
                return None, plan
            if plan is not None:
                # before it: the compile of an earlier build of the same bytes, else one compile of the file up to
                # the first item that may hold it
                earlier = self._earlier_baseline(task, project, build, plan[0], timeout)
                if earlier is not None:
                    return earlier
                found = self._template_baseline(plan[0], project, build, timeout, plan[1], for_task=task,
                                                saved=self._saved_prefix(plan[0], project, build))
                if found[0] is not None or plan[0].task_id == task.task_id:
                    return found
                item = self._for_item(task)  # (the error is in that item's statement: each before it on its own)
                for key in ("build_break", "build_break_reason", "prefix_tree", "prefix_evidence"):
                    item.pop(key, None)
            return self._template_baseline(task, project, build, timeout)
        self._prefetch(project, build, timeout)
        return self._file_dump(project, build, rel, module, timeout)

    def _file_dump(self, project: CoqProject, build: Path, rel: str, module: str, timeout: float) -> tuple[Any, str]:
        """The judge's dump of one compiled file of the build (one session for all its items), stored beside it."""
        from pytest_forall.lang.rocq.judge import parse_file_dump

        judged = build / "judge"
        vo = (self._out(project, build) / rel).with_suffix(".vo")
        # keyed by the compiled file itself (its bytes name its dependencies' digests too): an unchanged file of an
        # edited project is not dumped again
        stored = self._per_vo(vo, module, "dump")
        if str(stored) in self._dumps:  # content-addressed: the same record for the life of the process
            return self._dumps[str(stored)], ""
        stored.parent.mkdir(exist_ok=True)
        with FileLock(str(stored) + ".lock"):
            if stored.is_file():
                parsed = parse_file_dump(stored.read_text(encoding="utf-8"), "stored")
                if not isinstance(parsed, str):
                    self._dumps[str(stored)] = parsed
                    return parsed, ""
            judged.mkdir(exist_ok=True)
            targets = [str(t.meta["target_path"]) for t in rocq_tasks_of_file(project, rel)]
            dump, problem = self._judge_file(self._load(project, self._out(project, build), True), judged, module,
                                             targets,
                                             max(timeout, 300.0))
            if dump is None:
                return None, f"the judge could not read the project's own build of {module}: {problem}"
            stored.write_text(stored_dump(dump), encoding="utf-8")
            self._dumps[str(stored)] = dump
            return dump, ""

    def _prefetch_workers(self) -> int:
        """How many judge sessions run ahead after a build, over every process of the run (0: none ahead): one, beside
        the one ``coqchk``. A session's start (the plugin, the libraries) is most of a small file's time (1.7 s of
        Coquelicot's 4.6 s over all its files, alone), and the ``coqchk`` over every file takes longer than one session
        over them: a second session only took a core from it (#18: the items waited as long, for 1.7 s more CPU).
        Under pytest-xdist one worker starts the session and another the ``coqchk`` (:func:`worker_share`)."""
        return 1

    def _prefetch(self, project: CoqProject, build: Path, timeout: float) -> None:
        """Once per build and process, ahead of the items: the judge dumps and ``coqchk -norec`` of every compiled file
        with items, so that a cold run pays them side by side rather than one file at a time as the items come (#18).
        The files are judged in :meth:`_prefetch_workers` sessions (one), each session over a group of files (the
        plugin and the libraries they share loaded once per group, not per file), and checked by one ``coqchk`` over
        all of them (the standard library loaded once); under pytest-xdist each worker starts its own share of the
        groups and one of them the ``coqchk``. Everything started here is killed at exit (:func:`stop_ahead`): a run
        that needed fewer files leaves no process behind. Each result goes where the lazy path looks
        (the per-file records under their file locks, so another xdist worker never repeats a file). When a shared
        session or the shared coqchk fails, nothing of it is recorded and each of its files is run alone, so a file's
        failure stays that file's (its items get their own file's reason, never another file's)."""
        workers = self._prefetch_workers()
        with self._lock:
            if workers <= 0 or str(build) in self._prefetched:
                return
            self._prefetched.add(str(build))
        out = self._out(project, build)
        files = [(rel, str(module)) for rel in project.files
                 if (out / rel).with_suffix(".vo").is_file() and (module := project.logical_module(rel))
                 and has_items(project, rel)]
        if not files:
            return
        budget = min(timeout, self.checker_timeout or timeout)
        # balanced groups, the biggest compiled files first (a file's session time grows with it)
        ordered = sorted(files, key=lambda f: -(out / f[0]).with_suffix(".vo").stat().st_size)
        groups: list[list[tuple[str, str]]] = [ordered[i::workers] for i in range(min(workers, len(ordered)))]
        # under pytest-xdist every worker computes the same groups and starts only its own (another worker's group
        # is not waited for behind its locks: that worker judges it on its core), and one worker runs the coqchk
        index, count = self.worker_share
        checker = len(groups) % count == index
        groups = groups[index::count]

        def judge(group: list[tuple[str, str]], ready: threading.Event) -> None:
            # ahead of need only: a failure here is left for the item's own call to run again and report
            with contextlib.suppress(Exception):
                if self.plugin is not None:
                    self._file_dumps(project, build, group, timeout, ready.set)
            ready.set()

        def check(ready: threading.Event) -> None:
            with contextlib.suppress(Exception):
                self._file_checks(project, build, files, budget, ready.set)
            ready.set()

        jobs: list[Callable[[threading.Event], None]] = [
            lambda ready, g=group: judge(g, ready) for group in groups]  # type: ignore[misc]
        if checker and self._has(self.coqchk):
            jobs.append(check)
        started = []
        for n, job in enumerate(jobs):
            # a run that needs fewer files (``-k``, ``-x``) does not wait at exit for the others: killed (stop_ahead)
            ready = threading.Event()
            start_ahead(f"forall-prefetch-{n}", job, ready)
            started.append(ready)
        for ready in started:  # the shared sessions hold their files' locks before the caller asks for its file
            ready.wait(60)

    def _file_dumps(self, project: CoqProject, build: Path, group: list[tuple[str, str]], timeout: float,
                    ready: Callable[[], None] = lambda: None) -> None:
        """The judge dumps of a group of compiled files in one session, each stored as :meth:`_file_dump` stores it;
        the files the session gave no dump are then dumped one by one (each its own session and its own reason)."""
        from pytest_forall.lang.rocq.judge import FileDump

        judged = build / "judge"
        judged.mkdir(exist_ok=True)
        out = self._out(project, build)
        stored = {rel: self._per_vo((out / rel).with_suffix(".vo"), module, "dump") for rel, module in group}
        (self.builds / "by-vo").mkdir(exist_ok=True)
        with contextlib.ExitStack() as held:
            for rel in sorted(stored, key=lambda r: str(stored[r])):  # one order for every process: no deadlock
                held.enter_context(FileLock(str(stored[rel]) + ".lock"))
            ready()
            todo = [(rel, module) for rel, module in group
                    if str(stored[rel]) not in self._dumps and not stored[rel].is_file()]
            if len(todo) > 1:
                dumps, _ = self._judge_files(self._load(project, out, True), judged, [
                    (module, [str(t.meta["target_path"]) for t in rocq_tasks_of_file(project, rel)])
                    for rel, module in todo], max(timeout, 300.0) * len(todo))
                for rel, module in todo:
                    dump = dumps.get(module)
                    if isinstance(dump, FileDump):
                        stored[rel].write_text(stored_dump(dump), encoding="utf-8")
                        self._dumps[str(stored[rel])] = dump
        for rel, module in group:  # what the shared session did not give: one session per file
            self._file_dump(project, build, rel, module, timeout)

    def _broken_file_plan(self, task: Task, project: CoqProject, build: Path) -> str | tuple[Task, list[str]] | None:
        """How an item of a file the build could not compile is judged from the line of the file's first error (as
        the build printed it), with one compile for all the items before it (issue 32: each was compiled from its own
        prefix, 50 compiles where ``make`` stops at once):

        * an item whose statement starts after that line: the reason it is infra (the file up to it holds the failing
          sentence, which fails there as in the build: coqc runs a file's sentences in order), nothing compiled;
        * an item whose proof ends before that line (the next item starts before it), and the first item that may
          hold the error: (that first item, the targets of all of them): all are judged from one compile of that
          item's template (the file up to it, it admitted); the own proofs of those before it from that compiled
          file as from the build's, that item's own proof compiled as a candidate (it fails where the build did);
        * else (no located error, a file it requires that did not build, a file changed since its collection):
          None, the item's own template (:meth:`_template_baseline`)."""
        if self._unbuilt_dep(task, project, build):
            return None
        rel = str(task.meta["project_file"])
        line = int(dict(self._missing_record(build).get("lines") or {}).get(rel) or 0)
        if line <= 0:
            return None
        key = (str(build), rel)
        plan = self._shared_plans.get(key)
        if plan is None:
            try:
                text = (project.root / rel).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            starts = line_offsets(text)
            if line > len(starts):
                return None
            first, after = starts[line - 1], starts[line] if line < len(starts) else len(text)
            tasks = sorted(rocq_tasks_of_file(project, rel), key=lambda t: int(t.meta["statement_offset"]))
            offsets = [int(t.meta["statement_offset"]) for t in tasks]
            before = [t for t, nxt in zip(tasks, offsets[1:]) if nxt <= first]
            holder = tasks[len(before)] if len(before) < len(tasks) else None
            # what each judgement rests on, in bytes of the file: an item before the error, the file up to the next
            # item (its proof included); the holder, the file up to its statement's end (its baseline). Not for an
            # item in a section or module: what it declares is fixed only at the block's end, after the error
            ends = {t.task_id: nxt for t, nxt in zip(before, offsets[1:])}
            if holder is not None:
                ends[holder.task_id] = int(holder.meta["statement_offset"]) + len(holder.statement)
            bounds = {t.task_id: len(text[:ends[t.task_id]].encode("utf-8")) for t in [*before, *([holder] if holder else [])]
                      if not t.meta.get("sections") and not t.meta.get("modules")}
            plan = (first, after, holder, [t.task_id for t in before],
                    [str(t.meta["target_path"]) for t in [*before, *([holder] if holder else [])]], bounds)
            self._shared_plans[key] = plan
        _, after, holder, before_ids, targets, _ = plan
        error = str(dict(self._missing_record(build).get("errors") or {}).get(rel) or f"{rel}:{line}: error")
        if int(task.meta["statement_offset"]) >= after:
            return self._build_break(task, error, f"{error} ({rel} does not build in the project: it stops there, "
                                                  f"before `{task.theorem_name}`)")
        if holder is None or holder.meta.get("file_digest") != task.meta.get("file_digest"):
            return None  # (the file changed since this item was collected: its own template)
        if task.task_id in before_ids or task.task_id == holder.task_id:
            return holder, targets
        return None

    def _break_at(self, build: Path, rel: str) -> str:
        """Where the build of ``rel`` stopped, as its log located it (``A.v:123``), for the evidence an item names."""
        line = dict(self._missing_record(build).get("lines") or {}).get(rel)
        return f"{rel}:{line}, where the build stopped" if line else f"{rel}'s first error"

    def _earlier_baseline(self, task: Task, project: CoqProject, build: Path, holder: Task,
                          timeout: float) -> tuple[Any, str] | None:
        """The baseline of an item of a file this build could not compile, before its first error, from an earlier
        build's compile of that file (:meth:`_earlier_compile`), or None (then from one compile of the file up to
        the error, :meth:`_template_baseline`). The earlier build compiled the same bytes of the file up to the end of
        what the item's judgement rests on (:meth:`_broken_file_plan`'s bounds), under files it requires compiled to
        the same bytes, with the same toolchain, libraries and build declaration: coqc runs a file's sentences in
        order, so what it declared there is what it would declare now, and the kernel's own records of that compile
        (the judge's dump of its ``.vo``, its ``coqchk``) are this item's evidence. An item before the holder is
        judged from that ``.vo`` as from the build's (``prefix_tree``); the holder takes its baseline (its statement
        and what is before it) from there, its own proof refused by the build's error or compiled (issue 32: a
        maintainer's run after an edit broke one proof compiles nothing of the file before it)."""
        plan = self._shared_plans.get((str(build), str(task.meta["project_file"])))
        bound = plan[5].get(task.task_id) if plan is not None else None
        if bound is None:
            return None
        rel, module = str(task.meta["project_file"]), str(task.meta["coq_module"])
        earlier = self._earlier_compile(project, build, rel, [str(d) for d in task.meta.get("deps") or []])
        if earlier is None or earlier[2] != task.meta.get("file_digest") or bound > earlier[1]:
            return None
        dump, _ = self._file_dump(project, earlier[0], rel, module, timeout)
        if dump is None or str(task.meta["target_path"]) not in dump.targets:
            return None  # (asked of the earlier build's compile, which has no answer for it: compiled now)
        if holder.task_id != task.task_id:
            item = self._for_item(task)
            item["prefix_tree"] = str(self._out(project, earlier[0]))
            item["prefix_evidence"] = (
                f"the project's own proof, before {self._break_at(build, rel)}: judged from the compile of {rel} "
                f"in the earlier build {earlier[0].name} (the same bytes up to the next item, the files it requires "
                "compiled to the same bytes): that .vo's judge dump and coqchk")
        return dump, ""

    def _earlier_compile(self, project: CoqProject, build: Path, rel: str,
                         deps: list[str]) -> tuple[Path, int, str] | None:
        """(an earlier build that compiled ``rel``, how many leading bytes its copy of ``rel`` shares with this
        build's, the SHA-256 of this build's copy), or None; once per build and file. The earlier build is the one
        this build was made from (``built.json``'s ``previous``), or the one that one was made from, up to eight
        back, the first that compiled ``rel`` with the same declaration, toolchain and libraries, and in which every
        project file ``rel`` requires (``deps``, its ``coqdep`` cone) is compiled to the same bytes as here."""
        key = (str(build), rel)
        with self._lock:
            if key in self._shared_earlier:
                return self._shared_earlier[key]
        found: tuple[Path, int, str] | None = None
        out = self._out(project, build)
        mine = {dep: _file_digest((out / dep).with_suffix(".vo")) for dep in deps}
        try:
            here = (build / "src" / rel).read_bytes()
        except OSError:
            here = b""
        step, declared, version = build, self._declared(project), self.version()
        for _ in range(8 if here and all(mine.values()) else 0):
            try:
                name = str(json.loads((step / "built.json").read_text(encoding="utf-8")).get("previous") or "")
                step = self.builds / name
                record = json.loads((step / "built.json").read_text(encoding="utf-8")) if name else {}
            except (OSError, ValueError):
                break
            if not name:
                break
            there = self._out(project, step)
            if not (record.get("ok") and record.get("root") == str(project.root) and record.get("declared") == declared
                    and record.get("version") == version and (there / rel).with_suffix(".vo").is_file()
                    and all(_file_digest((there / dep).with_suffix(".vo")) == mine[dep] for dep in deps)):
                continue
            try:
                theirs = (step / "src" / rel).read_bytes()
            except OSError:
                continue
            found = (step, _shared_start(here, theirs), hashlib.sha256(here).hexdigest())
            break
        with self._lock:
            self._shared_earlier[key] = found
        return found

    def _refused_by_build(self, task: Task, data: bytes, project: CoqProject, build: Path) -> Any:
        """The compile result of ``data`` read from the build, or None (compile it): when ``data`` is the project's own
        proof of the item the build of its file stopped in (:meth:`_broken_file_plan`'s holder), the build compiled
        that very text (its copy has the digest the item was collected from) and coqc's first error there falls in
        the proof (after the statement, before the proof's end), the candidate holds the same sentences up to the
        failing one, so coqc fails on it there with the same message: that error, moved to its line in the
        candidate, is the compile's (issue 32: one compile less per broken file). Not for an error that may be the
        machine's (stack, memory, a ``Timeout``): that one is compiled again."""
        from pytest_forall.core.prover import CompileResult
        from pytest_forall.lang.rocq.backend import parse_coq_messages

        own = str(task.meta.get("own_candidate") or "").encode("utf-8")
        rel = str(task.meta["project_file"])
        if not own or data != own or (self._out(project, build) / rel).with_suffix(".vo").is_file():
            return None
        plan = self._broken_file_plan(task, project, build)
        if not isinstance(plan, tuple) or plan[0].task_id != task.task_id:
            return None
        known = self._files_own_error(task, build)
        if known is None:
            return None
        text, (line, first, last, message) = known
        frozen = task.frozen.encode("utf-8")
        opener = str(task.meta.get("opener") or "Proof.")
        closing = task.template[len(task.frozen) + len("Admitted.\n"):].encode("utf-8")
        body = own[len(frozen):len(own) - len(closing) - 1]
        statement_end = len(frozen) - len(f"\n{opener}\n".encode())
        starts = [0, *(m.end() for m in re.finditer(b"\n", text))]
        if not body.strip() or line > len(starts) or text[:statement_end] != frozen[:statement_end]:
            return None
        at = starts[line - 1] + first
        body_start = text.find(body, statement_end)
        if body_start < 0 or not statement_end <= at < body_start + len(body) or (
                at < body_start and text[statement_end:body_start].split() != opener.encode().split()):
            return None  # (an error past the proof, or in an opener the candidate does not have as written)
        moved = len(frozen) + (at - body_start) if at >= body_start else statement_end + 1
        line_start = own.rfind(b"\n", 0, moved) + 1
        where, candidate_line = moved - line_start, own.count(b"\n", 0, moved) + 1
        output = (f'File "./{rel}", line {candidate_line}, characters {where}-{where + last - first}:'
                  f"\n{message}\n(coqc's error where the project's build stopped, {rel} line {line}: the candidate is "
                  "the build's own text up to there, not compiled again)")
        return CompileResult(ok=False, digest=hashlib.sha256(data).hexdigest(), messages=parse_coq_messages(output),
                             output=output)

    def _saved_prefix(self, holder: Task, project: CoqProject, build: Path) -> Path | None:
        """The ``.vo`` the build's own coqc of ``holder``'s file saved when it stopped at its error (``prefix.py``),
        or None (then the file up to ``holder`` is compiled again): only when the build compiled the bytes the items
        were collected from and its first error is coqc's own, located in that file (not the machine's: stack,
        memory, a ``Timeout``, after which the state it saved is not the file's)."""
        saved = build / "prefix" / f"{holder.meta['coq_module']}.vo"
        if project.tool != "coq_makefile" or self.build_command or not saved.is_file():  # (only that build saves)
            return None
        return saved if self._files_own_error(holder, build) is not None else None

    @staticmethod
    def _files_own_error(task: Task, build: Path) -> tuple[bytes, tuple[int, int, int, str]] | None:
        """(the build's copy of ``task``'s file, coqc's first error in it: line, columns, message) when that copy is
        the text the items were collected from and the error is coqc's on that text, not one the machine may cause
        (stack, memory, a ``Timeout``); else None."""
        from pytest_forall.lang.rocq.project.build import located_build_error

        rel = str(task.meta["project_file"])
        try:
            text = (build / "src" / rel).read_bytes()
            found = located_build_error((build / "build.log").read_text(encoding="utf-8"), rel)
        except (OSError, UnicodeDecodeError):
            return None
        if found is None or hashlib.sha256(text).hexdigest() != task.meta.get("file_digest") or re.search(
                MACHINE_ERRORS, found[3]):
            return None
        return text, found

    def _check_prefix(self, project: CoqProject, build: Path, rel: str, module: str, timeout: float,
                      tree: Path) -> None:
        """``coqchk`` of the file compiled up to the item its build stopped in (:meth:`_template_baseline`), recorded
        as :meth:`_file_check` records it; ahead of need only: a failure is left for the items' own call to report."""
        with contextlib.suppress(Exception):
            self._file_check(project, build, rel, module, min(timeout, self.checker_timeout or timeout), tree)

    def _template_baseline(self, task: Task, project: CoqProject, build: Path, timeout: float,
                           targets: list[str] | None = None, for_task: Task | None = None,
                           saved: Path | None = None) -> tuple[Any, str]:
        """The baseline of an item whose file does not build in the project: the item's template (the file up to
        the target, the target admitted) compiled as that file and dumped; infra when a file it rests on, or the
        file before the target, does not build. ``targets``/``for_task``: the dump of ``task``'s template for every
        item before it (:meth:`_broken_file_plan`), asked for ``for_task``, whose own proof is then judged from that
        compiled file (its tree is kept beside the dump). ``saved``: the build's own compile of the file, saved at
        its error (the proof open there admitted: :meth:`_saved_prefix`), in place of that compile when its dump
        declares every target, or every one but ``task``'s for the items before it (else compiled, as without it)."""
        from pytest_forall.lang.rocq.judge import parse_file_dump

        asker = for_task or task
        problem = self._unbuilt_dep(asker, project, build)
        if problem:
            return None, problem
        item = self._for_item(asker)
        module = str(task.meta["coq_module"])
        target = str(task.meta["target_path"])
        targets = targets or [target]
        items = build / "judge" / "items"
        items.mkdir(parents=True, exist_ok=True)
        named = hashlib.sha256("\0".join([task.template, *targets, *(["saved"] if saved else [])]).encode()
                               ).hexdigest()[:16]
        stored = items / f"{task.task_id}.{named}.dump"
        kept = items / f"{task.task_id}.{named}.tree"  # the compiled file the items before the target are judged from
        shared = len(targets) > 1
        if shared and for_task is not None and for_task.task_id != task.task_id:
            item["prefix_tree"] = str(kept)  # (not the template's own item: its proof is the one left admitted there)
            rel = str(task.meta["project_file"])
            item["prefix_evidence"] = (
                f"the project's own proof, before {self._break_at(build, rel)}: judged from "
                + (f"the build's own compile of {rel}, saved where coqc stopped ({_admitted(saved)}), "
                   if saved else f"one compile of {rel} up to `{task.theorem_name}` (it admitted) ")
                + f"for the {len(targets) - 1} items before it, that .vo's judge dump and coqchk")

        def usable(dump: Any) -> bool:
            """A dump of the saved compile that declares every target, or every one but ``task``'s for another item
            (the error in ``task``'s statement: nothing of it was declared; ``task`` is then compiled on its own)."""
            missing = {t for t in targets if t not in dump.targets}
            return not missing or (missing == {target} and asker.task_id != task.task_id)

        with FileLock(str(stored) + ".lock"):
            if stored.is_file() and (not shared or kept.is_dir()):
                parsed = parse_file_dump(stored.read_text(encoding="utf-8"), "stored")
                if not isinstance(parsed, str) and (saved is None or usable(parsed)):
                    return parsed, ""
                if not isinstance(parsed, str):
                    return self._template_baseline(task, project, build, timeout, targets, for_task)
            work = Path(tempfile.mkdtemp(prefix="template-", dir=items))
            try:
                tree = work / "tree"
                if saved is not None:
                    rel = str(task.meta["project_file"])
                    self._link_compiled(project, build, tree, rel)
                    (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(saved, (tree / rel).with_suffix(".vo"))
                    compiled = None
                else:
                    compiled = self._compile_in_tree(project, build, tree, task.template.encode(), timeout, False,
                                                     str(task.meta["project_file"]))
                if compiled is not None and not compiled.ok:
                    rel = str(task.meta["project_file"])
                    reason = (compiled.infra or compiled.first_error_at(rel)).strip()
                    located = reason if reason.startswith(rel) else f"{rel}: {reason}"
                    found = (f"{located[:600]} ({rel} does not build in the project, nor does the file up to "
                             f"`{task.theorem_name}` with it admitted)")
                    if not compiled.infra:  # the file's own text does not compile (not a tool fault)
                        self._build_break(asker, located[:300], found)
                    return None, found
                # the items before the target are checked from this compile: its coqchk runs beside the judge
                # session (each a core; the check's record is named by the compiled file's digest, found again once
                # the tree is kept), not after it (issue 32)
                check = in_background(self._check_prefix, project, build, str(task.meta["project_file"]), module,
                                      timeout, tree) if shared and self._has(self.coqchk) else contextlib.nullcontext()
                with check as checking:
                    dump, problem = self._judge_file(self._load(project, tree, True, tree), tree, module, targets,
                                                     timeout, fresh=False)
                    if dump is not None and checking is not None:
                        # waited for, not cancelled with the block: the items before the target need this check,
                        # and a coqchk that outlasts the judge session (a file of proofs by reflection: 3.5 s of
                        # coqchk to the session's 0.8) was killed here and started again by the first item
                        with contextlib.suppress(Exception):
                            checking.result()
                if saved is not None and (dump is None or not usable(dump)):
                    # the saved compile does not declare what this item needs: the file up to `task` compiled
                    if dump is not None and shared:  # (kept for the items it does serve)
                        shutil.rmtree(kept, ignore_errors=True)
                        os.rename(tree, kept)
                        stored.write_text(stored_dump(dump), encoding="utf-8")
                    return self._template_baseline(task, project, build, timeout, targets, for_task)
                if dump is None:
                    return None, f"the judge could not read the project's file up to `{task.theorem_name}`: {problem}"
                if shared:
                    shutil.rmtree(kept, ignore_errors=True)
                    os.rename(tree, kept)
                stored.write_text(stored_dump(dump), encoding="utf-8")
                return dump, ""
            finally:
                shutil.rmtree(work, ignore_errors=True)


def _admitted(saved: Path) -> str:
    """What the prefix plugin admitted before saving ``saved`` (its note beside it), in words."""
    try:
        name = saved.with_suffix(".admitted").read_text(encoding="utf-8").strip()
    except OSError:
        name = ""
    return f"the proof of `{name}` open there admitted" if name else "no proof open there"


def _file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes, "" when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _shared_start(one: bytes, other: bytes) -> int:
    """How many leading bytes ``one`` and ``other`` share (bisected over slices: no loop over the bytes in Python)."""
    low, high = 0, min(len(one), len(other))
    while low < high:
        middle = (low + high + 1) // 2
        if one[:middle] == other[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
