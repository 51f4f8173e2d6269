"""The Rocq prover of a project's items: a candidate compiled as the target's own file in the project's own build and
judged, as kernel terms, against that build (its statement, the declarations before it, its assumptions), then
``coqchk``; and the ``pytest_forall_make_prover`` hook that makes it (one built prover per options, copied per item)."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_forall.core.model import Layer, Task, sha256_bytes
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.rocq.project import ROCQ_PROVER
from pytest_forall.lang.rocq.project.layout import CoqProject
from pytest_forall.lang.rocq.project.records import PROJECT_STATEMENT_CLAUSE, context_digests, proof_digest
from pytest_forall.lang.rocq.project.sessions import ProjectSessions
from pytest_forall.lang.rocq.screen import THEOREM_KEYWORDS


class ProjectRocqProver(ProjectSessions):
    """:class:`~pytest_forall.lang.rocq.backend.RocqProver` judging a candidate against the project's own build.

    The project is copied to ``<cache>/project-rocq/<key>/src`` and built once per content key with its own
    ``_CoqProject`` (``coq_makefile`` + ``make``; ``-arg``s go to coqc only). A candidate (the target's file up
    to the target, with the target's proof changed) is compiled as that very file, in a tree of the build's
    ``.vo`` files (links) holding the candidate instead of the file; the judge plugin then dumps the baseline
    ``.vo`` and the candidate's ``.vo`` under the same logical name and compares them as kernel terms
    (:func:`~pytest_forall.lang.rocq.judge.judge_project_file`); ``coqchk -norec`` re-checks the candidate's
    ``.vo`` with the project's load path (and no ``-arg``).
    """

    name = ROCQ_PROVER
    #: the backend's statement and axiom layers read the project judge (:meth:`_judge`) under project mode's clause
    statement_clause = PROJECT_STATEMENT_CLAUSE
    judge_label = "forall-judge plugin (project mode)"

    def judged_at_once(self, task: Task, data: bytes) -> bool:
        """Whether the verdict on ``data`` is read from what this process holds, with no process and no wait: the
        project's own proof (:meth:`judged_from_records`) of a file whose build has its answer (it built) and whose
        judge dump and ``coqchk`` record are in memory (and the declared axioms' answer, if any). An item that waits
        for the build, a judge session or a record still being written gets False: its progress is shown meanwhile."""
        if not self.judged_from_records(task, data) or self.plugin is None or "project_root" not in task.meta:
            return False
        project, build = self._item_build(task)
        if self._built.get(str(build)) != "" or not (build / "built.json").is_file() or (
                self.declared and (str(build), self.project_axioms) not in self._declarations):
            return False
        vo = (self._out(project, build) / str(task.meta["project_file"])).with_suffix(".vo")
        module = str(task.meta["coq_module"])
        try:
            dump, check = self._per_vo(vo, module, "dump"), self._per_vo(vo, module, "coqchk.json")
        except OSError:
            return False
        return str(dump) in self._dumps and str(check) in self._shared_checks

    def _declaration_problem(self, task: Task, timeout: float) -> str:
        """Why the declared project axioms are not what the project's own build has (every item is then infra with
        this reason, never a silent pass), or "": each name is an axiom (``Axiom``/``Parameter``, or a lemma left
        ``Admitted``) of a file of the project, as that file's compiled ``.vo`` in the baseline build has it."""
        if not self.declared:
            return ""
        project, build, problem = self._build(task, timeout)
        if problem:
            return problem
        key = (str(build), self.project_axioms)
        with self._lock:
            if key in self._declarations:
                return self._declarations[key]
        out = self._out(project, build)
        problems: list[str] = []
        for name in self.declared:
            files = [(rel, module) for rel in project.files
                     if (module := project.logical_module(rel)) and name.startswith(module + ".")]
            why: list[str] = []
            for rel, module in files:
                if not (out / rel).with_suffix(".vo").is_file():
                    why.append(f"{rel}, where it would be, does not build")
                    continue
                dump, failed = self._file_dump(project, build, rel, module, timeout)
                if dump is None:
                    return failed  # the judge could not read the file: infra, asked again next time
                entry = next((e for _, e in dump.fields if e.split(" ")[1:2] == [name]), "")
                kind = entry.split(" ")[2] if len(entry.split(" ")) > 2 else ""
                if kind == "axiom":
                    break
                if entry:
                    why.append(f"{rel} has it as a{'n' if kind[:1] in 'aeiou' else ''} {kind or 'unreadable'} "
                               "declaration, not an axiom")
            else:
                problems.append(f"`{name}`: " + ("; ".join(why) if why else
                                                 f"no file of the project declares it ({len(files)} file(s) whose "
                                                 "logical name it extends)" if files else
                                                 "no file of the project has a logical name it extends"))
        found = "" if not problems else (
            "--forall-project-axioms: each declared name must be an axiom (Axiom, Parameter or a lemma left "
            "Admitted) of the project's own build, as the judge names it: " + "; ".join(problems))
        with self._lock:
            self._declarations[key] = found
        return found

    def fingerprint(self, task: Task) -> dict[str, str]:
        """The backend's fingerprint; none (so nothing is served from the verdict cache) while the declared project
        axioms do not hold of the project's build: each item is then judged, and is infra with the reason."""
        if self.declared and "target_path" in task.meta:
            problem = self._declaration_problem(task, 600.0)
            if problem:
                raise ValueError(problem)
        return super().fingerprint(task)

    def check_template(self, task: Task, workspace: Path, timeout: float) -> Any:
        """The project builds, the judge reads the target's file from the build, and Coq's build has the target
        where the text says it is; each failure is infra with its reason."""
        from pytest_forall.core.prover import CompileResult

        target = str(task.meta.get("target_path", ""))
        if target.rsplit(".", 1)[-1] != task.theorem_name:
            return CompileResult(ok=False, infra=(
                f"`{task.theorem_name}` is a statement derived from `{target}` (a statement audit), not in the "
                "project's build: project mode judges the project's own statements only"))
        baseline, problem = self._baseline(task, timeout)
        if baseline is None:
            return CompileResult(ok=False, infra=problem)
        problem = self._declaration_problem(task, timeout)
        if problem:
            return CompileResult(ok=False, infra=problem)
        if target not in baseline.targets:
            return CompileResult(ok=False, infra=(
                f"Coq's build of {task.meta['coq_module']} has no constant `{target}` where the text has "
                f"`{task.theorem_name}` (a name the judge cannot compare here)"))
        return CompileResult(ok=True)

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        """``coqc`` on the candidate as the target's own file, in a tree of the build's compiled files."""
        from pytest_forall.core.prover import CompileResult

        project, build, problem = self._build(task, timeout)
        if problem:
            return CompileResult(ok=False, infra=problem)
        data = candidate.read_bytes()
        rel = str(task.meta["project_file"])
        self._proofs[task.task_id] = proof_digest(task, data)
        self._candidate_vo.pop(str(workspace), None)  # compiled again: its .vo is read again
        if self._is_own(task, data, project, build):
            # the project's own proof, as the project's build compiled it: judged from the build's .vo (one judge
            # session and one coqchk per file, not one compile per lemma)
            digest = self._own[str(workspace)] = sha256_bytes(data)
            return CompileResult(ok=True, digest=digest, output="the project's own proof: compiled by "
                                 "the project's build",
                                 artifact=str((self._out(project, build) / rel).with_suffix(".vo")))
        prefix = self._for_item(task).get("prefix_tree")
        own = str(task.meta.get("own_candidate") or "")
        vo = (Path(str(prefix)) / rel).with_suffix(".vo") if prefix else None
        if vo is not None and own and data == own.encode("utf-8") and vo.is_file():
            # the project's own proof, before the first error of a file that does not build: judged from the one
            # compile of the file up to the item that may hold the error (:meth:`_broken_file_plan`)
            digest = self._own[str(workspace)] = sha256_bytes(data)
            return CompileResult(ok=True, digest=digest, artifact=str(vo), output=str(
                self._for_item(task).get("prefix_evidence")
                or "the project's own proof: compiled once with the proofs of its file before its first error"))
        self._own.pop(str(workspace), None)
        refused = self._refused_by_build(task, data, project, build)
        if refused is not None:  # the project's own proof where its file's build stopped: coqc's error there
            return refused
        return self._compile_in_tree(project, build, workspace / "tree", data, timeout, True, rel)

    def change_fields(self, task: Task, candidate: bytes | None = None) -> dict[str, str]:
        """Kernel digests for the gate (core/gating.py): ``kernel_statement``, the target's type in the project's
        build; ``kernel_type``, that type alone (no name: a renamed lemma keeps it); ``kernel_context``, the file's
        declarations before it and the files it rests on. Always, for a project item: ``cone_key`` (the item's file
        and every file it requires, as collected: what tells a break the change caused from a tool fault),
        ``admitted`` when the project leaves the proof ``Admitted``, and ``build_break`` (the file that does not
        build and its first error) when the item is infra because of it. Without the build's answer the kernel
        digests are absent (the row then falls back to the template's digest)."""
        from pytest_forall.lang.rocq.judge import statement_key

        if "target_path" not in task.meta:
            return {}
        base = {"cone_key": str(task.meta.get("cone_key") or "")}
        if task.meta.get("admitted"):
            base["admitted"] = "yes"
        broken = self._for_item(task).get("build_break")
        if broken:
            base["build_break"] = str(broken)
        if self.plugin is None:
            return base
        baseline = self._row_baseline(task)
        if baseline is None:
            return base
        found = context_digests(baseline, str(task.meta.get("deps_key", ""))).get(str(task.meta["target_path"]))
        if found is None:
            return base
        entry, context, lemmas = found
        key = statement_key(entry)
        fields = {**base, "kernel_statement": hashlib.sha256(" : ".join(key).encode()).hexdigest()[:24],
                  "kernel_type": hashlib.sha256(key[1].encode()).hexdigest()[:24],
                  "kernel_context": context, "kernel_lemmas": lemmas}
        if self.declared:  # the gate names a changed declaration as a cause (core/gating.py)
            fields["declared_axioms"] = self.project_axioms
        proof = proof_digest(task, candidate) if candidate is not None else self._proofs.get(task.task_id)
        return {**fields, "proof_digest": proof} if proof else fields

    def _row_baseline(self, task: Task) -> Any:
        """The baseline dump of :meth:`change_fields`: the one this item's verification read, else the one read for an
        earlier item of the same file as collected (its ``cone_key``: the toolchain, the build's declaration, the file
        and every file it requires), else :meth:`_baseline`'s (which stats every input of the build). A warm item's
        verdict comes from the cache under the task as collected, so its row's digests are those of the same sources
        (#18: the build's 25 inputs were stat'ed per item for the same answer). None when there is no answer."""
        found = self._for_item(task).get("baseline")
        if found is not None:
            return found[0]
        cone = str(task.meta.get("cone_key") or "")
        key = (str(task.meta.get("project_root")), str(task.meta.get("project_file")), cone,
               str(task.meta.get("deps_key") or ""), str(self.plugin), self.version(), self.toolchain.spec, self.coqc,
               self.build_command)
        baseline = self._shared_row_baselines.get(key) if cone else None
        if baseline is None:
            try:
                baseline, _ = self._baseline(task, 600.0)
            except OSError:
                return None
            if baseline is not None and cone:
                self._shared_row_baselines[key] = baseline
        return baseline

    def _installed_roots(self) -> tuple[str, ...]:
        """Logical roots of the installed libraries (the backend's list and every ``user-contrib`` directory): an
        axiom of theirs is within the rules, not strict."""
        from pytest_forall.lang.rocq.backend import coq_library_dirs

        found = list(self.info.installed_roots)
        for base in coq_library_dirs(self.coqc, self.toolchain.root)[:1]:
            contrib = base / "user-contrib"
            try:  # listed again when a library is installed or removed (the directory's mtime moves)
                info = contrib.stat()
            except OSError:
                continue
            known = self._shared_contrib.get(str(contrib))
            if known is None or known[0] != info.st_mtime_ns:
                roots = tuple(f"{d.name}." for d in sorted(contrib.iterdir()) if d.is_dir()) if contrib.is_dir() else ()
                known = self._shared_contrib[str(contrib)] = (info.st_mtime_ns, roots)
            found += known[1]
        return tuple(dict.fromkeys(found))

    def _is_own(self, task: Task, data: bytes, project: CoqProject, build: Path) -> bool:
        """``data`` is the project's own proof of the target and the build compiled the very file it came from."""
        own = str(task.meta.get("own_candidate") or "")
        if not own or data != own.encode("utf-8"):
            return False
        key = (str(build), str(task.meta["project_file"]))
        digest = self._shared_sources.get(key)
        if digest is None:
            try:
                digest = hashlib.sha256((build / "src" / key[1]).read_bytes()).hexdigest()
            except OSError:
                return False
            if key[0] in self._built:  # a finished build's copy: the same bytes from now on
                self._shared_sources[key] = digest
        if not (self._out(project, build) / str(task.meta["project_file"])).with_suffix(".vo").is_file():
            return False
        return digest == task.meta.get("file_digest")

    def judged_from_records(self, task: Task, data: bytes) -> bool:
        """``data`` is the project's own proof of the target, as its text reads: judged from the project's build (its
        judge dump and ``coqchk`` record, :meth:`compile`), no process of its own, so the verifier runs no thread
        beside its layers. (Should the build's copy of the file differ, :meth:`compile` compiles it after all: one
        layer after the other, the same verdict.)"""
        own = task.meta.get("own_candidate")
        return bool(own) and data == str(own).encode("utf-8")

    def _is_own_compiled(self, task: Task, data: bytes, digest: str = "") -> bool:
        """``data`` is the project's own proof and :meth:`compile` judged it from the build; ``digest``: its SHA-256
        when known (the compile result's, which the verifier checked against the bytes)."""
        return data == str(task.meta.get("own_candidate")).encode() and (
            digest or sha256_bytes(data)) in self._own.values()

    def _judge_candidate(self, task: Task, workspace: Path, timeout: float) -> tuple[Any, str, bool]:
        """The project judge's verdict on the compiled candidate (once per compiled file): judgement, problem,
        infra. One at a time per verification directory: the independent check, beside the layers, reads it too."""
        with self._judge_locks.setdefault(str(workspace), threading.Lock()):
            return self._judge_candidate_once(task, workspace, timeout)

    def _judge_candidate_once(self, task: Task, workspace: Path, timeout: float) -> tuple[Any, str, bool]:
        from pytest_forall.lang.rocq.judge import judge_project_file

        rel = str(task.meta["project_file"])
        target = str(task.meta["target_path"])
        module = str(task.meta["coq_module"])
        project = self._project(task)
        roots = tuple(f"{logical}." for _, _, logical in project.mappings)
        if str(workspace) in self._own:
            # asked by the statement, audit and advisory layers: judged once per item (its baseline is the item's)
            own = ("own", str(workspace), self._own[str(workspace)])
            item = self._for_item(task)
            if own not in item:
                baseline, problem = self._baseline(task, timeout)
                if baseline is None:
                    return None, problem, True
                item[own] = (judge_project_file(baseline, baseline, module, target, roots, self.info.strict_axioms,
                                                self._installed_roots(), frozenset(self.declared)), "", False)
            judged: tuple[Any, str, bool] = item[own]
            return judged
        vo = (workspace / "tree" / rel).with_suffix(".vo")
        digest = self._candidate_vo.get(str(workspace))
        if digest is None:
            if not vo.is_file():
                return None, "the candidate has no compiled .vo", False
            digest = self._candidate_vo[str(workspace)] = sha256_bytes(vo.read_bytes())
        key = (digest, task.task_id)
        if key in self._judged_project:
            return self._judged_project[key]
        baseline, problem = self._baseline(task, timeout)
        if baseline is None:
            return None, problem, True
        tree = workspace / "tree"  # the judge runs in the tree (the sandbox binds the directory it runs in)
        dump, problem = self._judge_file(self._load(project, tree, True, tree), tree, module, [target], timeout,
                                         fresh=False)
        if dump is None:
            return None, f"the judge could not read the compiled candidate: {problem}", True
        judgement = judge_project_file(baseline, dump, module, target, roots, self.info.strict_axioms,
                                       self._installed_roots(), frozenset(self.declared))
        self._judged_project[key] = (judgement, "", False)
        return self._judged_project[key]

    def _judge(self, task: Task, workspace: Path, timeout: float) -> tuple[Any, str, bool]:
        """The backend's layers that read the judge (``statement_check``, ``audit_axioms``, ``advisory_check``) read
        the project judge's findings."""
        return self._judge_candidate(task, workspace, timeout)

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        """``coqchk -norec`` on the candidate's ``.vo`` with the project's mapping (no ``-arg``: they are coqc's)."""
        if not self._has(self.coqchk):
            return Layer("independent_check", None, f"not judged: {self.coqchk} is not installed")
        project = self._project(task)
        module = str(task.meta["coq_module"])
        budget = min(timeout, self.checker_timeout or timeout)
        if str(workspace) in self._own:
            return self._with_reached_checks(task, workspace, self._check_build_file(task, budget), budget)
        tree = workspace / "tree"
        argv = [self.coqchk, "-silent", "-o", *self._load(project, tree, False, tree), "-norec", module]
        result = self._run(argv, tree, budget)
        return self._with_reached_checks(task, workspace, self._checker_layer(argv, result, budget), budget)

    def _with_reached_checks(self, task: Task, workspace: Path, layer: Layer, budget: float) -> Layer:
        """``layer`` (coqchk of the target's file), and coqchk of every other project file whose VM or native
        conversion the target reaches (``project_checks`` of the judgement): ``-norec`` loads the files the target's
        requires without checking them, so a conversion only coqc's VM checked (rocq#19402) would be trusted there.
        The build's own compiled file is checked (a candidate changes only its own file), once per file and build."""
        judgement = self._judge_candidate(task, workspace, budget)[0] if layer.ok else None
        reached = getattr(judgement, "project_checks", None)
        if not reached:
            return layer
        project, build, problem = self._build(task, budget)
        if problem:
            return Layer("independent_check", False, problem, infra=True)
        own = str(task.meta["coq_module"])
        modules = {m: rel for rel in project.files if (m := project.logical_module(rel))}
        files: dict[str, str] = {}
        for finding in reached:
            constant = finding.split(" ", 2)[1]
            module = max((m for m in modules if constant.startswith(m + ".")), key=len, default="")
            if module and module != own:
                files[module] = modules[module]
        for module, rel in sorted(files.items()):
            other = self._file_check(project, build, rel, module, budget)
            if other.ok is not True:
                return Layer("independent_check", other.ok, f"coqchk of `{module}`, whose VM or native conversions "
                             f"this proof reaches: {other.reason}", {**other.evidence, "file": module},
                             infra=other.infra)
        return Layer(layer.name, layer.ok, layer.reason, {**layer.evidence, "files_checked": sorted(files)},
                     infra=layer.infra)

    def _check_build_file(self, task: Task, budget: float) -> Layer:
        """coqchk on the build's own ``.vo`` of the target's file, once per file and build (its layer is kept)."""
        project, build, problem = self._build(task, budget)
        if problem:
            return Layer("independent_check", False, problem, infra=True)
        prefix = self._for_item(task).get("prefix_tree")
        if prefix:  # judged from the one compile of its file before the first error
            return self._file_check(project, build, str(task.meta["project_file"]), str(task.meta["coq_module"]),
                                    budget, Path(str(prefix)))
        self._prefetch(project, build, budget)
        return self._file_check(project, build, str(task.meta["project_file"]), str(task.meta["coq_module"]), budget)

    def candidate_with_prelude(self, task: Task, prelude: str, proof: str) -> str:
        """The candidate with ``prelude`` (the portfolio's ``Require``s) where helpers go: right before the target's
        statement, never before the project's own text."""
        cut = int(task.meta.get("statement_offset", 0))
        text = self.candidate_with_proof(task, proof)
        return text[:cut] + prelude + text[cut:]

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        """The text screen (defence in depth; the kernel judge decides): the file before the target's statement is
        the project's, byte for byte; from there the usual screen of one theorem (helpers before the statement,
        the statement and opener frozen, a proof free of admits and vernacular, then the template's ``End``s)."""
        from pytest_forall.lang.screens import rocq_static_layers

        if task.meta.get("own_candidate") and text == task.meta["own_candidate"]:
            # the project's own text (a doubled `Proof.`, a no-break space …): nothing for a screen of untrusted
            # text to add; the kernel judge decides, as for every candidate
            return [Layer("syntax_screen", True, "the project's own proof: its text is the project's")]
        cut = int(task.meta.get("statement_offset", 0))
        before = task.template[:cut]
        if not text.startswith(before):
            line = next((text[:i].count("\n") + 1 for i, (a, b) in enumerate(zip(before, text)) if a != b),
                        min(len(before), len(text)) and text[:len(before)].count("\n") + 1)
            return [Layer("frozen_statement", False, (
                f"line {line}: the file before `{task.theorem_name}` differs from the project's "
                f"{task.meta.get('project_file')}: only the proof may change (helpers go right before the statement)"))]
        template, candidate = task.template[cut:], text[cut:]
        keyword = str(task.meta.get("keyword") or "Lemma")
        at = re.search(rf"\b{re.escape(keyword)}\b", task.statement)
        if at is not None and (at.start() or keyword not in THEOREM_KEYWORDS):
            # the screen reads one theorem; a definition, instance or example proved in proof mode is screened as
            # one (what it declares is the kernel judge's business)
            stated = "Lemma" + task.statement[at.end():]
            template = template.replace(task.statement, stated, 1)
            candidate = candidate.replace(task.statement, stated, 1)
            task = dataclasses.replace(task, statement=stated)
        opener = str(task.meta.get("opener") or "Proof.")
        if opener != "Proof.":  # the screen knows one opener; the kernel judge compares what the opener decides
            template = template.replace(f"{opener}\nAdmitted.", "Proof.\nAdmitted.", 1)
            found = candidate.find(task.statement)
            after = found + len(task.statement) if found >= 0 else -1
            if after >= 0 and candidate[after:].lstrip().startswith(opener):
                start = after + len(candidate[after:]) - len(candidate[after:].lstrip())
                candidate = candidate[:start] + "Proof." + candidate[start + len(opener):]
        return rocq_static_layers(template, candidate, theorem_name=task.theorem_name)

    def sentence_check(self, task: Task, data: bytes, compiled: Any) -> Layer:
        """coqc's sentences from the target's statement on must be the screen's (the file before it is the
        project's own, compiled by the project's build as well)."""
        from pytest_forall.lang.rocq.sentences import sentence_structure

        if (not compiled.sentences and compiled.ok and self._is_own_compiled(task, data, compiled.digest)) or (
                task.meta.get("own_candidate") and data == str(task.meta["own_candidate"]).encode("utf-8")):
            return Layer("sentence_structure", True, "the project's own proof, compiled as the project's text")
        cut = len(task.template[:int(task.meta.get("statement_offset", 0))].encode("utf-8"))
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        if data[bom:bom + cut] != task.template.encode("utf-8")[:cut]:
            return Layer("sentence_structure", False, "the file before the target differs from the project's")
        reported = [(a - cut, b - cut, t) for a, b, t in compiled.sentences if a >= cut]
        # the .glob's declarations confirm a command coqc's report cuts off (a long attribute list)
        declared = [(a - cut, b - cut, k, n) for a, b, k, n in compiled.declarations if a >= cut]
        return sentence_structure(data[bom + cut:], reported, declared)

    def _probe_binds(self) -> list[tuple[Path, str]]:
        """The portfolio's ``coqtop`` from a toolchain's root reads the build's compiled files where they are."""
        return [(self.builds, str(self.builds))]

    def _probe_load(self, workspace: Path) -> list[str]:
        """The portfolio's ``coqtop`` has the project's load path on its build (set by :meth:`try_tactics`)."""
        return self._tactic_load.get(str(workspace), [])

    def try_tactics(self, task: Task, workspace: Path, tactics: list[str], timeout: float,
                    prelude: str = "", on_attempt: Callable[[], None] | None = None) -> tuple[str, int, str]:
        """The portfolio's tactics on the target, with the project's build on the load path."""
        project, build, problem = self._build(task, max(timeout, 600.0))
        if problem:  # nothing was tried: a turn that spent nothing, never a failed proof
            return "", 0, problem
        self._tactic_load[str(workspace)] = self._load(project, self._out(project, build), True)
        return super().try_tactics(task, workspace, tactics, timeout, prelude, on_attempt)


#: one built :class:`ProjectRocqProver` per options, environment and process, copied for each item
_PROTOTYPES: dict[str, ProjectRocqProver] = {}


def project_rocq_prover(options: dict[str, Any]) -> ProjectRocqProver:
    """A prover as ``ProjectRocqProver(options)`` makes it, for one item: pytest asks once per item, and building one
    resolves the tools on PATH, hashes the judge plugin's source and lists the sandbox binds (about 1 ms each, the
    same answer for every item of a run, #18). A copy of the first one built for the same options and environment is
    that answer; each copy has its own per-item records (:meth:`ProjectRocqProver.fresh`)."""
    key = _prototype_key(options)
    if key is None:  # an option that is not plain data: nothing to compare it by
        return ProjectRocqProver(options)
    known = _PROTOTYPES.get(key)
    if (known is None or type(known) is not ProjectRocqProver
            or (known.plugin is not None and not known.plugin.is_dir())):
        known = _PROTOTYPES[key] = ProjectRocqProver(options)
    if known.sandboxed:  # it put itself in a sandbox of its own (``forall verify``): its sandbox log is its own too
        return ProjectRocqProver(options)
    return known.fresh()


#: the options object and environment the last prototype key was made from, a copy of the options then, and the key
_LAST_KEY: dict[str, tuple[dict[str, Any], Any, dict[Any, Any], str]] = {}


def _prototype_key(options: dict[str, Any]) -> str | None:
    """The JSON of ``options`` and the environment (``PYTEST_CURRENT_TEST`` aside), or None when an option is not plain
    data. The run's one options object asked again, unchanged in an unchanged environment, gets the key it got: making
    it (43 us) was most of a copy's cost. The environment is compared by its raw bytes (``os.environ._data``: decoding
    every variable was 17 us), where this Python keeps them there."""
    raw = getattr(os.environ, "_data", None)
    environ = dict(raw) if isinstance(raw, dict) else dict(os.environ)
    for name in (b"PYTEST_CURRENT_TEST", "PYTEST_CURRENT_TEST"):  # pytest sets it for each item
        environ.pop(name, None)
    last = _LAST_KEY.get("last")
    if last is not None and last[0] is options and last[2] == environ and last[1] == options:
        return last[3]
    try:
        key = json.dumps([options, sorted(kv for kv in os.environ.items() if kv[0] != "PYTEST_CURRENT_TEST")],
                         sort_keys=True)
    except (TypeError, ValueError):
        return None
    _LAST_KEY["last"] = (options, copy.deepcopy(options), environ, key)
    return key


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> ProjectRocqProver | None:
    return project_rocq_prover(options) if name == ROCQ_PROVER else None
