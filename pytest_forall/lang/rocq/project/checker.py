"""``coqchk`` of the project's build: one ``coqchk -norec`` over every file with items (the standard library loaded
once), each file alone when that fails, each file's layer stored beside the build by its compiled file's digest."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_forall.core.model import Layer
from pytest_forall.lang.rocq.backend import coqchk_layer
from pytest_forall.lang.rocq.project.build import ProjectBuilds
from pytest_forall.lang.rocq.project.layout import CoqProject


class ProjectChecks(ProjectBuilds):
    """The ``coqchk`` records of the build's compiled files (the project's own proofs are checked once per file)."""

    def _file_checks(self, project: CoqProject, build: Path, files: list[tuple[str, str]], budget: float,
                     ready: Callable[[], None] = lambda: None) -> None:
        """``coqchk -norec`` of every file in one process, each file's record the shared check's layer when it passed;
        when it did not, each file is checked alone (:meth:`_file_check`: which file fails is that file's verdict)."""
        src = self._out(project, build)
        stored = {rel: self._per_vo((src / rel).with_suffix(".vo"), module, "coqchk.json") for rel, module in files}
        (self.builds / "by-vo").mkdir(exist_ok=True)
        with contextlib.ExitStack() as held:
            for rel in sorted(stored, key=lambda r: str(stored[r])):
                held.enter_context(FileLock(str(stored[rel]) + ".lock"))
            ready()
            todo = [(rel, module) for rel, module in files if not stored[rel].is_file()]
            if len(todo) > 1:
                argv = [self.coqchk, "-silent", "-o", *self._load(project, src, False),
                        *(x for _, module in todo for x in ("-norec", module))]
                result = self._run(argv, src, budget * len(todo))
                layer = self._checker_layer(argv, result, budget * len(todo))
                if layer.ok is True:
                    for rel, _ in todo:
                        stored[rel].write_text(json.dumps({"ok": True, "reason": layer.reason,
                                                           "evidence": layer.evidence}), encoding="utf-8")
        for rel, module in files:  # what the shared check did not record: one coqchk per file
            self._file_check(project, build, rel, module, budget)

    def _file_check(self, project: CoqProject, build: Path, rel: str, module: str, budget: float,
                    src: Path | None = None) -> Layer:
        """coqchk on one compiled file of the build (or of ``src``, a tree of it); its layer is stored beside it unless
        it is infra."""
        src = src or self._out(project, build)
        vo = (src / rel).with_suffix(".vo")
        stored = self._per_vo(vo, module, "coqchk.json")
        known = self._shared_checks.get(str(stored))  # content-addressed, as the judge dumps
        if known is not None:
            record = json.loads(known)
            return Layer("independent_check", record["ok"], record["reason"], record["evidence"])
        stored.parent.mkdir(exist_ok=True)
        with FileLock(str(stored) + ".lock"):
            if stored.is_file():
                text = stored.read_text(encoding="utf-8")
                record = json.loads(text)
                self._shared_checks[str(stored)] = text
                return Layer("independent_check", record["ok"], record["reason"], record["evidence"])
            argv = [self.coqchk, "-silent", "-o", *self._load(project, src, False), "-norec", module]
            result = self._run(argv, src, budget)
            layer = self._checker_layer(argv, result, budget, build=True)
            if layer.ok is not None and not layer.infra:
                stored.write_text(json.dumps({"ok": layer.ok, "reason": layer.reason, "evidence": layer.evidence}),
                                  encoding="utf-8")
            return layer

    def _checker_layer(self, argv: list[str], result: Any, budget: float, build: bool = False) -> Layer:
        """The ``coqchk`` layer of ``result``; ``build``: of a file of the project's build (the project's own, not a
        candidate's), where a killed check (the run ending under it, the machine) is infra, never a rejection and
        never stored. A candidate's check killed from outside is infra too (:func:`coqchk_layer`); killed by its own
        memory limit it is a rejection: a candidate must not choose its layer. coqchk's own fatal error on an anomaly
        exits 129, which reads as signal 1 from a sandbox: with its "Fatal Error:" printed, it is coqchk's verdict on
        the file (rocq#19402's VM conversion, checked without a VM), not an accident."""
        verdict = result.returncode == 129 and "Fatal Error:" in result.stderr + result.stdout and not result.timed_out
        return coqchk_layer(argv, result, budget,
                            infra_accident="coqchk of the project's build" if build and not verdict else "")
