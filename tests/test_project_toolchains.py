"""Issue 21, the project suite on other toolchains: a real library file taken from the root's own sources (so it
matches that root's Coq and libraries: Coquelicot's ``Equiv.v`` on trixie's 8.20, the standard library's
``Lists/ListSet.v`` on sid's Rocq 9.2, which has no Coquelicot or mathcomp today) copied under a new logical name and
run in library mode with ``--forall-rocq-toolchain ROOT``. Every prover process — ``coq_makefile``/``make``,
``coqdep``, ``coqc``, the judge, ``coqchk`` — must run from the root: a ``.vo`` one Coq version made is refused by
another's ``coqc``/``coqchk``, so a single process from the host (8.16) would fail the build, the judge or the
independent check.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_project_blocks import kernel_statement
from test_project_library import BASE, results
from test_toolchains import root

from pytest_forall.core.verify import verify_candidate
from pytest_forall.lang.rocq.backend import coq_library_dirs
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
from pytest_forall.suites.project import load_project

#: Per root: a real library file from the root's own sources (directory under ``coqc -where``, file, logical name of
#: the copy, expected toolchain label): Coquelicot on trixie; on sid (no Coquelicot or mathcomp installable) a file
#: of Rocq 9.2's own standard library.
LIBRARY = {"trixie": ("user-contrib/Coquelicot", "Equiv.v", "CQ", "coq-8.20.1"),
           "sid": ("user-contrib/Stdlib/Lists", "ListSet.v", "LS", "rocq-9.2")}


def library_project(suite: str, project: Path) -> Path:
    """The root's library file as the project of its own (Coquelicot's short-name ``Require`` qualified)."""
    directory, file, logical, _ = LIBRARY[suite]
    text = (coq_library_dirs("/usr/bin/coqc", str(root(suite)))[0] / directory / file).read_text(encoding="utf-8")
    project.mkdir(parents=True)
    (project / file).write_text(text.replace("\nRequire Import Rbar Rcomplements Hierarchy.",
                                             "\nFrom Coquelicot Require Import Rbar Rcomplements Hierarchy."))
    (project / "_CoqProject").write_text(f"-R . {logical}\n{file}\n")
    return project


@pytest.mark.parametrize("suite", sorted(LIBRARY))
def test_library_mode_runs_every_process_from_the_root(pytester: pytest.Pytester, suite: str) -> None:
    """Every own proof of the library is strict on the root's Coq (sandboxed), its row names the toolchain, the
    build says which toolchain made it, and the collection's keys name the toolchain (not the host's coqc)."""
    spec = str(root(suite))
    project = library_project(suite, pytester.path / "proj")
    tasks = load_project(project, {"rocq_toolchain": spec})
    host_keys = {t.task_id: t.meta["cone_key"] for t in load_project(project, {})}
    assert all(t.meta["cone_key"] != host_keys[t.task_id] for t in tasks)
    pytester.makeini("[pytest]\n")
    run = pytester.runpytest(*BASE, "--forall-project", "proj", "--forall-frontend", "replay", "--forall-run-id", "own",
                             "-m", "not admitted", "--forall-require", "strict", "--forall-rocq-toolchain", spec,
                             "--forall-cache-dir", str(pytester.path / "cache"))
    rows = results(pytester.path, "own")
    proved = [t.task_id for t in tasks if not t.meta["admitted"]]
    assert len(proved) >= 20 and sorted(rows) == sorted(proved), run.stdout.str()[-3000:]
    assert {k: r["outcome"] for k, r in rows.items() if r["outcome"] != "strict"} == {}, \
        {k: r["reason"][:300] for k, r in rows.items() if r["outcome"] != "strict"}
    assert all(r["independent"] is True for r in rows.values())
    want = f"{LIBRARY[suite][3]} (root:{spec})"
    assert {r["toolchain"] for r in rows.values()} == {want}
    built = [json.loads(p.read_text()) for p in (pytester.path / "cache" / "project-rocq").glob("*/built.json")]
    assert [b["toolchain"] for b in built] == [want] and built[0]["ok"]
    assert run.ret == 0


def test_a_changed_statement_is_refused_on_the_root_unsandboxed(tmp_path: Path) -> None:
    """Without the sandbox (the root's tools under the harness's own bubblewrap): the project's own proof is
    strict, a proof of a changed statement is rejected, and the kernel judge alone refuses it."""
    trixie = str(root("trixie"))
    project = library_project("trixie", tmp_path / "proj")
    tasks = {t.theorem_name: t for t in load_project(project, {"rocq_toolchain": trixie})}
    prover = ProjectRocqProver({"rocq_toolchain": trixie, "cache_dir": str(tmp_path / "cache"), "timeout": 300})
    assert not prover.sandboxed and prover.probe(tmp_path) == ""
    task = tasks["domin_antisym"]
    own = verify_candidate(task, prover, str(task.meta["own_candidate"]).encode(), timeout=600)
    assert own.verdict == "accept" and own.strict, own.reason
    changed = prover.candidate_with_proof(task, "exact I.\nQed.").replace(task.statement,
                                                                         "Lemma domin_antisym : True.", 1)
    assert changed != prover.candidate_with_proof(task, "exact I.\nQed.")
    verdict = verify_candidate(task, prover, changed.encode(), timeout=600)
    assert verdict.verdict == "reject", verdict.reason
    layer = kernel_statement(prover, task, changed, tmp_path / "kernel")
    assert layer.ok is False and f"the type of `{task.meta['target_path']}` differs from the project's" in \
        layer.reason, layer.reason


def test_the_project_caches_never_serve_across_toolchains(tmp_path: Path) -> None:
    """One project, one cache directory, one verdict cache, three toolchains (the host's 8.16, trixie's 8.20,
    sid's 9.2: the project needs only the standard library): each toolchain gets its own collection keys, its own
    build (which names it) and its own verdict-cache entry (its first run a miss, its second a hit)."""
    from test_project_library import GATE_FILE

    from pytest_forall.core import cache as vcache

    project = tmp_path / "proj"
    project.mkdir()
    (project / "_CoqProject").write_text("-R . Gate\nA.v\n")
    (project / "A.v").write_text(GATE_FILE)
    cache = vcache.VerdictCache(tmp_path / "verdicts", "readwrite")
    keys, cones, labels = set(), set(), []
    for spec in ("", str(root("trixie")), str(root("sid"))):
        options = {"rocq_toolchain": spec} if spec else {}
        task = next(t for t in load_project(project, options) if t.theorem_name == "double_2")
        cones.add(task.meta["cone_key"])
        prover = ProjectRocqProver({**options, "cache_dir": str(tmp_path / "cache"), "timeout": 300})
        data = str(task.meta["own_candidate"]).encode()
        keys.add(json.dumps(vcache.cache_key(task, prover, data, {"timeout": 300.0, "static_only": False}),
                            sort_keys=True))
        first, hit = vcache.verify_cached(cache, task, prover, data, timeout=300.0)
        assert (first.verdict, first.strict, hit) == ("accept", True, False), (spec, first.reason)
        again, hit = vcache.verify_cached(cache, task, prover, data, timeout=300.0)
        assert hit and again.kernel["toolchain"] == first.kernel["toolchain"] == prover.toolchain_label()
        labels.append(prover.toolchain_label())
    assert len(keys) == len(cones) == len(set(labels)) == 3
    built = {json.loads(p.read_text())["toolchain"] for p in (tmp_path / "cache" / "project-rocq").glob("*/built.json")}
    assert built == set(labels)
