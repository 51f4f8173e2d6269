"""Project mode's per-item fast paths (#18 point 4) give what the slow paths give.

The fixture project (tests/fixtures/project_rocq, `-Q theories Demo`) has five proofs in three files, three of them
admitted with a stored proof in tests/fixtures/project_rocq_proofs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import copy_project_cache, require_tool
from pytest_forall.core.cache import VerdictCache, cache_key, harness_version
from pytest_forall.core.model import Task
from pytest_forall.lang.rocq.project import ahead as project_ahead
from pytest_forall.lang.rocq.project import build as project_build
from pytest_forall.lang.rocq.project import items as project_items
from pytest_forall.lang.rocq.project import prover as project_prover
from pytest_forall.lang.rocq.project import records as project_records
from pytest_forall.lang.rocq.project.items import rocq_proofs
from pytest_forall.lang.rocq.project.prover import ProjectRocqProver, pytest_forall_make_prover
from pytest_forall.suites.project import load_project

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROJECT = FIXTURES / "project_rocq"
PROOFS = FIXTURES / "project_rocq_proofs"
BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
#: what a row says about the proof and its judgement (timings, paths and the worker aside)
JUDGED = ("outcome", "stop", "reason", "digest", "axioms", "project_axioms", "independent", "candidate_digest",
          "task_digest", "kernel_statement", "kernel_context", "kernel_lemmas", "proof_digest", "environment",
          "verifier", "kernel", "toolchain")


def _copied(tmp_path: Path, built: Path) -> tuple[Path, list[Task]]:
    """The fixture project copied under ``tmp_path`` with a copy of its cache as its first items leave it
    (``project_rocq_cache``: built, every file judged and checked) at ``tmp_path / "cache"`` (its edits and records
    stay the test's own), and its items: for a test about what a later item does."""
    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    copy_project_cache(built, tmp_path / "cache")
    return project, load_project(project, {})


def test_a_provers_copy_is_the_prover_its_options_build(tmp_path: Path) -> None:
    """pytest asks for a prover per item; the project suite hands out copies of the first it built for the same
    options and environment. A copy has every attribute a fresh construction has (so the same cache key and
    settings), its own per-item records, and other options give another prover."""
    require_tool("coqc")
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300}
    first, second = pytest_forall_make_prover("rocq-project", options), pytest_forall_make_prover("rocq-project", options)
    built = ProjectRocqProver(options)
    assert type(first) is ProjectRocqProver and first is not second
    assert vars(first) == vars(built) == vars(second)
    for name, value in vars(first).items():  # per-item containers are the copy's own; the class's shared ones shared
        if isinstance(value, (dict, list, set)):
            shared = any(value is getattr(ProjectRocqProver, n) for n in dir(ProjectRocqProver) if n.startswith("_shared"))
            assert (value is getattr(second, name)) == shared, name
    first._own["x"] = "y"
    assert "x" not in second._own and "x" not in pytest_forall_make_prover("rocq-project", options)._own
    task = load_project(PROJECT, {})[0]
    data = str(task.meta["own_candidate"] or "x").encode()
    assert cache_key(task, first, data, {"t": 1}) == cache_key(task, built, data, {"t": 1})
    declared = pytest_forall_make_prover("rocq-project", {**options, "project_axioms": ["Demo.Base.ax"]})
    assert declared.project_axioms == "Demo.Base.ax" and first.project_axioms == ""
    assert cache_key(task, declared, data, {"t": 1}) != cache_key(task, first, data, {"t": 1})


def test_a_provers_copy_follows_its_options_changed_in_place_and_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The prototype is found again for the run's one options object without remaking its key, yet an option changed
    in place, or a changed environment variable, gives a prover built from them; pytest's per-item variable does not."""
    require_tool("coqc")
    monkeypatch.setattr(project_prover, "_PROTOTYPES", {})
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300}
    first = pytest_forall_make_prover("rocq-project", options)
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "another item (call)")
    assert pytest_forall_make_prover("rocq-project", options).mem_mb == first.mem_mb and len(project_prover._PROTOTYPES) == 1
    options["prover_mem_mb"] = 1024
    assert pytest_forall_make_prover("rocq-project", options).mem_mb == 1024 and len(project_prover._PROTOTYPES) == 2
    monkeypatch.setenv("FORALL_TEST_SOME_VARIABLE", "1")
    assert pytest_forall_make_prover("rocq-project", options).mem_mb == 1024 and len(project_prover._PROTOTYPES) == 3
    assert pytest_forall_make_prover("rocq-project", dict(options)).mem_mb == 1024 and len(project_prover._PROTOTYPES) == 3


def test_a_prover_that_sandboxes_itself_is_built_for_each_caller(tmp_path: Path) -> None:
    """``forall verify`` builds a prover that puts itself in a sandbox with a sandbox log of its own: never a copy."""
    require_tool("coqc")
    require_tool("bwrap")
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300, "sandbox": "bwrap",
               "sandbox_audit_dir": str(tmp_path / "log")}
    first, second = pytest_forall_make_prover("rocq-project", options), pytest_forall_make_prover("rocq-project", options)
    assert first.sandboxed and second.sandboxed, first.sandbox_problem
    assert first.runner is not second.runner


def test_lexed_proofs_kept_in_the_cache_equal_lexing_and_nothing_else_is_served(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A file's lexed proofs come from the cache (HMAC entry keyed by the text's SHA-256 and pytest-forall's sources)
    only as lexing gives them; a planted entry, another text or another pytest-forall version is lexed again."""
    store = VerdictCache(tmp_path / "verdicts", "readwrite")
    texts = [p.read_text(encoding="utf-8") for p in sorted((PROJECT / "theories").glob("*.v"))]
    monkeypatch.setattr(project_items, "_PROOFS", {})
    lexed = [project_items._proofs_of(text, store) for text in texts]
    assert lexed == [rocq_proofs(text) for text in texts] and all(lexed)

    calls: list[str] = []

    def counting(text: str) -> list[project_items.RocqProof]:
        calls.append(text)
        return rocq_proofs(text)
    monkeypatch.setattr(project_items, "rocq_proofs", counting)
    monkeypatch.setattr(project_items, "_PROOFS", {})
    assert [project_items._proofs_of(text, store) for text in texts] == lexed and calls == []  # all from the cache

    edited = texts[0].replace("Lemma", "Lemma  ", 1)  # another text: its own entry, lexed
    monkeypatch.setattr(project_items, "_PROOFS", {})
    assert project_items._proofs_of(edited, store) == rocq_proofs(edited) and calls == [edited]

    import hashlib

    entry = {"kind": "rocq-proofs", "text": hashlib.sha256(texts[1].encode()).hexdigest(), "harness": harness_version()}
    stored = json.loads(store._path(entry).read_text())
    body = json.loads(stored["body"])
    body["value"][0]["name"] = "planted"  # a changed value without the key's HMAC
    store._path(entry).write_text(json.dumps({"body": json.dumps(body, sort_keys=True), "mac": stored["mac"]}))
    monkeypatch.setattr(project_items, "_PROOFS", {})
    assert project_items._proofs_of(texts[1], store) == lexed[1] and calls[-1] == texts[1]

    import pytest_forall.core.cache as cache_module

    monkeypatch.setattr(cache_module, "harness_version", lambda: "another pytest-forall")
    monkeypatch.setattr(project_items, "_PROOFS", {})
    calls.clear()
    assert project_items._proofs_of(texts[2], store) == lexed[2] and calls == [texts[2]]


def _rows(path: Path, run_id: str) -> dict[str, dict]:
    lines = (path / "reports" / run_id / "results.jsonl").read_text().splitlines()
    return {json.loads(line)["task_id"]: json.loads(line) for line in lines}


def test_two_xdist_workers_give_the_rows_of_one_process(pytester: pytest.Pytester, project_rocq_cache: Path) -> None:
    """``-n 2``: one build for both workers, every item's row present once, and every row's judgement (outcome,
    digests, axioms, kernel fields) the one a single process gives, cold and then warm from the verdict cache. (The
    single process judges from a copy of the project's build made beforehand: the two workers' cache starts empty.)"""
    require_tool("coqc")
    require_tool("coqchk")
    shutil.copytree(PROJECT, pytester.path / "proj")
    proofs = pytester.path / "proofs"  # the stored proofs of the admitted lemmas, the project's own of the others
    shutil.copytree(PROOFS, proofs)
    for task in load_project(PROJECT, {}):
        if not task.meta["admitted"]:
            (proofs / task.candidate_name).write_text(str(task.meta["own_candidate"]), encoding="utf-8")
    pytester.makeini("[pytest]\n")
    args = [*BASE, "--forall-project", "proj", "--forall-frontend", "replay", "--forall-proofs", str(proofs)]
    copy_project_cache(project_rocq_cache, pytester.path / "cache-one")
    one = pytester.runpytest_subprocess(*args, "--forall-run-id", "one", "--forall-cache-dir", "cache-one")
    assert one.ret == 0, one.stdout.str()[-3000:]
    runs = {}
    for run_id in ("cold", "warm"):
        result = pytester.runpytest_subprocess(*args, "-n", "2", "--forall-run-id", run_id,
                                               "--forall-cache-dir", "cache-two")
        assert result.ret == 0, result.stdout.str()[-3000:]
        runs[run_id] = _rows(pytester.path, run_id)
    single = _rows(pytester.path, "one")
    assert len(single) == 5 and all(r["outcome"] == "strict" for r in single.values()), single
    for run_id, rows in runs.items():
        assert sorted(rows) == sorted(single), run_id
        assert {r["worker"] for r in rows.values()} == {"gw0", "gw1"}, run_id
        for task_id, row in rows.items():
            assert {k: row.get(k) for k in JUDGED} == {k: single[task_id].get(k) for k in JUDGED}, (run_id, task_id)
    assert not any(r["cached"] for r in runs["cold"].values()) and all(r["cached"] for r in runs["warm"].values())
    builds = [p for p in (pytester.path / "cache-two" / "project-rocq").iterdir() if p.is_dir() and p.name != "by-vo"]
    assert len(builds) == 1, builds  # one build, shared by the two workers
    dumps = sorted(p.name.split(".")[1] for p in (pytester.path / "cache-two" / "project-rocq" / "by-vo").glob("*.dump"))
    assert dumps == ["Base", "Lemmas", "More"], dumps  # each file's judge dump made once


def test_under_xdist_each_worker_starts_its_own_share_of_the_sessions_ahead(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``-n 2`` every worker computes the same groups of files (one per core) and starts only its own, and one
    worker runs the shared coqchk: the second worker's group is judged on its core, not queued behind the first
    worker's locks; what a worker did not start ahead it still judges on its own items' demand."""
    import time

    from pytest_forall.core.verify import verify_candidate

    require_tool("coqc")
    require_tool("coqchk")
    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    tasks = {t.task_id: t for t in load_project(project, {})}
    monkeypatch.setattr(ProjectRocqProver, "_prefetch_workers", lambda self: 2)
    # the share comes from the plugin (xdist's workerinput), not the environment, which a nested run inherits
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300, "worker_share": [1, 2]})
    ahead: list[str] = []
    checks: list[list[str]] = []
    judge_file, judge_files, run = prover._judge_file, prover._judge_files, prover._run

    def one(load: list[str], parent: Path, module: str, *rest: object, **kw: object) -> object:
        if parent.name == "judge" and threading_name().startswith("forall-prefetch"):
            ahead.append(module)
        return judge_file(load, parent, module, *rest, **kw)  # type: ignore[arg-type]

    def shared(load: list[str], parent: Path, files: list[tuple[str, list[str]]], *rest: object) -> object:
        ahead.extend(module for module, _ in files)
        return judge_files(load, parent, files, *rest)  # type: ignore[arg-type]

    def running(argv: list[str], cwd: Path, *rest: object, **kw: object) -> object:
        if argv[0] == prover.coqchk and "tree" not in cwd.parts and threading_name().startswith("forall-prefetch"):
            checks.append([argv[i + 1] for i, word in enumerate(argv) if word == "-norec"])
        return run(argv, cwd, *rest, **kw)  # type: ignore[arg-type]
    prover._judge_file, prover._judge_files, prover._run = one, shared, running  # type: ignore[method-assign]

    first = tasks["Demo__Base__double_S"]
    assert verify_candidate(first, prover, str(first.meta["own_candidate"]).encode(), timeout=300).verdict == "accept"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not ahead:
        time.sleep(0.2)
    out = prover._out(prover._project(first), prover._build(first, 300)[1])
    sizes = sorted(("Base", "Lemmas", "More"), key=lambda m: -(out / "theories" / f"{m}.vo").stat().st_size)
    assert ahead == [f"Demo.{sizes[1]}"], (ahead, sizes)  # gw1 of 2: the second group of two, alone
    assert checks == []  # two groups, two workers: gw0 runs the coqchk
    for task_id, task in tasks.items():  # the other files on demand: every verdict as ever
        data = (PROOFS / f"{task_id}.v").read_bytes() if task.meta["admitted"] else str(task.meta["own_candidate"]).encode()
        assert verify_candidate(task, prover, data, timeout=300).verdict == "accept", task_id


def threading_name() -> str:
    import threading

    return threading.current_thread().name


def test_one_items_verification_reads_the_project_and_stats_its_sources_once(tmp_path: Path, project_rocq_cache: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest makes a prover per item and asks it for the baseline from every layer (template, compile, statement,
    audit, advisories, coqchk, the gate's digests): one item's verification reads ``_CoqProject`` at most once (not
    again while it is unchanged), stats each build input once, judges the candidate once and makes no record
    directory once they exist; the next item, with its own prover, stats them again, so an edit between items is seen
    (an edited ``_CoqProject`` is read again). Every verdict is the one a prover that re-reads everything gives:
    ``strict``."""
    import os
    import pathlib

    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq import judge

    require_tool("coqc")
    require_tool("coqchk")
    project, tasks = _copied(tmp_path, project_rocq_cache)
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300}
    sources = {project / rel for rel in project_build.read_coqproject(project).files}

    def candidate(task: Task) -> bytes:
        return (PROOFS / f"{task.task_id}.v").read_bytes() if task.meta["admitted"] else \
            str(task.meta["own_candidate"]).encode()

    counts: dict[str, int] = {}

    def counted(name: str, wrapped: object) -> object:
        def call(*args: object, **kwargs: object) -> object:
            counts[name] = counts.get(name, 0) + 1
            return wrapped(*args, **kwargs)  # type: ignore[operator]
        return call
    stat, mkdir = os.stat, pathlib.Path.mkdir

    def stat_counted(path: object, *args: object, **kwargs: object) -> object:  # a Path's stat too (os.stat)
        named = Path(os.fsdecode(path)) if isinstance(path, (str, bytes, os.PathLike)) else None
        if named in sources:
            counts[f"stat {named.name}"] = counts.get(f"stat {named.name}", 0) + 1
        return stat(path, *args, **kwargs)  # type: ignore[arg-type]

    def mkdir_counted(self: pathlib.Path, *args: object, **kwargs: object) -> None:
        if str(self).startswith(str(tmp_path / "cache" / "project-rocq")):
            counts["mkdir"] = counts.get("mkdir", 0) + 1
        mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    def verify(task: Task) -> None:
        prover = pytest_forall_make_prover("rocq-project", options)
        counts.clear()
        with monkeypatch.context() as patched:
            patched.setattr(project_build, "read_coqproject", counted("read_coqproject", project_build.read_coqproject))
            patched.setattr(project_build, "build_inputs", counted("build_inputs", project_build.build_inputs))
            patched.setattr(judge, "judge_project_file", counted("judge_project_file", judge.judge_project_file))
            patched.setattr(os, "stat", stat_counted)
            patched.setattr(pathlib.Path, "mkdir", mkdir_counted)
            verdict = verify_candidate(task, prover, candidate(task), timeout=300)
            fields = prover.change_fields(task, candidate(task))
        assert verdict.verdict == "accept" and verdict.strict, (task.task_id, verdict.reason)
        assert fields.get("kernel_statement") and fields.get("proof_digest"), fields

    for task in tasks:  # the first pass reads the build's records; then every item as a warm process has it
        verify(task)
    for task in tasks:
        verify(task)
        assert counts.get("read_coqproject", 0) <= 1, (task.task_id, counts)
        assert counts.get("build_inputs") == 1, (task.task_id, counts)
        assert all(counts.get(f"stat {path.name}") == 1 for path in sources), (task.task_id, counts)
        assert counts.get("judge_project_file") == 1, (task.task_id, counts)
        assert "mkdir" not in counts, (task.task_id, counts)
    declared = project / "_CoqProject"
    declared.write_text(declared.read_text() + "# edited between two items\n")
    verify(tasks[0])
    assert counts.get("read_coqproject") == 1, counts


def test_a_warm_items_row_digests_read_no_build_input_once_its_file_was_read(tmp_path: Path, project_rocq_cache: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm item (its verdict from the cache) still gets the gate's kernel digests (``change_fields``): from the
    baseline an earlier item of the same file, as collected, was given, without reading ``_CoqProject`` or stating the
    build's inputs again (#18: 25 stats per item on Coquelicot). The digests are the ones a prover that looks
    everything up gives; the same file collected with other contents (another ``cone_key``) is looked up afresh.
    Was: every item stated every input of the build."""
    require_tool("coqc")
    require_tool("coqchk")
    _, tasks = _copied(tmp_path, project_rocq_cache)
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300}
    by_file: dict[str, list[Task]] = {}
    for task in tasks:
        by_file.setdefault(str(task.meta["project_file"]), []).append(task)
    first, second = next(group for group in by_file.values() if len(group) >= 2)[:2]
    monkeypatch.setattr(ProjectRocqProver, "_shared_row_baselines", {}, raising=False)
    looked_up = pytest_forall_make_prover("rocq-project", options).change_fields(first)  # reads the build
    assert looked_up.get("kernel_statement") and looked_up.get("kernel_context"), looked_up
    full = ProjectRocqProver(options).change_fields(second)  # (a prover of its own: its build's lookup)

    reads: list[str] = []
    build_inputs, read_coqproject = project_build.build_inputs, project_build.read_coqproject

    def counted_inputs(*args: object, **kwargs: object) -> list[str]:
        reads.append("build_inputs")
        return build_inputs(*args, **kwargs)  # type: ignore[arg-type]

    def counted_read(*args: object, **kwargs: object) -> project_build.CoqProject:
        reads.append("read_coqproject")
        return read_coqproject(*args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(project_build, "build_inputs", counted_inputs)
    monkeypatch.setattr(project_build, "read_coqproject", counted_read)
    warm = pytest_forall_make_prover("rocq-project", options).change_fields(second)
    assert warm == full and reads == [], (warm, full, reads)

    recollected = Task(**{**second.to_wire(), "meta": {**second.meta, "cone_key": "another content"}})
    relooked = pytest_forall_make_prover("rocq-project", options).change_fields(recollected)
    # the row's cone_key is the task's as collected (the gate's); the digests are the same build's
    assert relooked == {**full, "cone_key": "another content"}, (relooked, full)
    assert "build_inputs" in reads, reads  # looked up: the build's inputs stated again


def test_the_projects_own_proof_is_judged_without_a_thread_per_layer(tmp_path: Path, project_rocq_cache: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A replayed candidate that is the project's own proof is judged from the build's records (no process of its
    own): the verifier starts no thread beside its layers for it (two per item before, #18 cold path); a stored proof
    of an admitted lemma is compiled, its compile beside the template check and coqchk beside the audit as ever. Every
    verdict is ``strict``, with the layers a concurrent verification gives."""
    import threading

    from pytest_forall.core import verify as verify_module
    from pytest_forall.core.verify import verify_candidate

    require_tool("coqc")
    require_tool("coqchk")
    _, tasks = _copied(tmp_path, project_rocq_cache)
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300}
    started: list[str] = []
    start = threading.Thread.start

    def counted(self: threading.Thread) -> None:
        started.append(self.name)
        start(self)
    monkeypatch.setattr(threading.Thread, "start", counted)
    monkeypatch.setattr(verify_module, "_idle_core", lambda: True)  # coqchk beside the audit needs an idle core

    def layers(task: Task, concurrent: bool) -> tuple[list[str], list[str]]:
        prover = pytest_forall_make_prover("rocq-project", options)
        prover.concurrent_layers = concurrent
        data = (PROOFS / f"{task.task_id}.v").read_bytes() if task.meta["admitted"] else \
            str(task.meta["own_candidate"]).encode()
        started.clear()
        verdict = verify_candidate(task, prover, data, timeout=300)
        assert verdict.verdict == "accept" and verdict.strict, (task.task_id, verdict.reason)
        return [f"{layer.name} {layer.ok} {layer.reason}" for layer in verdict.layers], \
            [name for name in started if name.startswith("forall-layer")]

    for task in tasks:  # the first pass reads the build's records (built and judged: the shared cache)
        layers(task, True)
    own = [t for t in tasks if not t.meta["admitted"]]
    stored = [t for t in tasks if t.meta["admitted"]]
    assert own and stored
    for task in own:
        found, threads = layers(task, True)
        assert threads == [], (task.task_id, threads)
        assert found == layers(task, False)[0], task.task_id
    for task in stored:
        found, threads = layers(task, True)
        assert len(threads) == 2, (task.task_id, threads)
        assert found == layers(task, False)[0], task.task_id


def test_the_collection_starts_the_build_and_the_items_use_it(tmp_path: Path) -> None:
    """A pytest run that will run items (``build_ahead``, not ``--collect-only``) starts the project's build as the
    collection finds the project, so the collection's lexing runs while coqc compiles (#18 cold path): the build
    finishes with no item asking, the items wait for it and judge from it (one build), every verdict ``strict``.
    Without ``build_ahead`` the collection builds nothing."""
    import time

    from pytest_forall.core.verify import verify_candidate

    require_tool("coqc")
    require_tool("coqchk")
    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    builds = tmp_path / "cache" / "project-rocq"
    quiet = {"cache_dir": str(tmp_path / "quiet"), "timeout": 300}
    load_project(project, quiet)
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300, "build_ahead": True}
    tasks = load_project(project, options)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list(builds.glob("*/built.json")):
        time.sleep(0.2)
    assert [json.loads(p.read_text())["ok"] for p in builds.glob("*/built.json")] == [True]
    assert not (tmp_path / "quiet" / "project-rocq").is_dir() or not list(
        (tmp_path / "quiet" / "project-rocq").glob("*/src"))
    for task in tasks:
        prover = pytest_forall_make_prover("rocq-project", options)
        data = (PROOFS / f"{task.task_id}.v").read_bytes() if task.meta["admitted"] else \
            str(task.meta["own_candidate"]).encode()
        verdict = verify_candidate(task, prover, data, timeout=300)
        assert verdict.verdict == "accept" and verdict.strict, (task.task_id, verdict.reason)
    assert len([p for p in builds.iterdir() if p.is_dir() and p.name != "by-vo"]) == 1


def test_a_build_started_ahead_is_killed_when_the_run_ends(tmp_path: Path) -> None:
    """A build the collection started and no item waited for (``-k`` selecting nothing, Ctrl-C) is killed when the
    process exits (:func:`stop_ahead`, registered at exit), its thread ends, and nothing says it finished: the next
    run builds again. No process of it outlives the run."""
    import os
    import threading
    import time

    require_tool("coqc")
    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    pid = tmp_path / "build.pid"
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300, "build_ahead": True,
               "project_build": f"echo $$ > {pid}; exec sleep 120"}
    load_project(project, options)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (pid.is_file() and pid.read_text().strip()):
        time.sleep(0.1)
    build = int(pid.read_text())
    os.kill(build, 0)  # running
    assert any(t.name == "forall-build-ahead" and t.is_alive() for t in threading.enumerate())
    started = time.monotonic()
    project_ahead.stop_ahead()
    assert time.monotonic() - started < 10
    assert not any(t.name == "forall-build-ahead" and t.is_alive() for t in threading.enumerate())
    with pytest.raises(ProcessLookupError):
        os.kill(build, 0)
    assert not list((tmp_path / "cache" / "project-rocq").glob("*/built.json"))


def test_a_killed_coqchk_of_the_build_is_infra_and_not_kept(tmp_path: Path) -> None:
    """``coqchk`` of a build's file killed under the run (its end, Ctrl-C, the machine) says nothing about the file:
    the layer is infra with the accident, never a rejection, and no record of it is kept (the next item runs it
    again), so killing the checks still running ahead at exit never leaves a false verdict. A candidate's own coqchk
    killed from outside is infra too (never "not judged", which would accept); killed by its own memory limit it
    stays a rejection (a candidate must not choose its layer), not kept."""
    from pytest_forall.core.proc import ProcResult

    require_tool("coqc")
    require_tool("coqchk")
    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    task = load_project(project, {})[0]
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    project_, build, problem = prover._build(task, 300)
    assert not problem, problem
    run = prover._run
    prover._run = lambda argv, cwd, *rest, **kw: ProcResult(list(argv), -9, "", "", 0.1) \
        if argv[0] == prover.coqchk else run(argv, cwd, *rest, **kw)  # type: ignore[method-assign]
    rel, module = str(task.meta["project_file"]), str(task.meta["coq_module"])
    layer = prover._file_check(project_, build, rel, module, 300)
    assert layer.ok is False and layer.infra and layer.evidence.get("accident") == "killed by signal 9", layer
    killed = ProcResult(["coqchk"], -9, "", "", 0.1)
    assert prover._checker_layer(["coqchk"], killed, 300).infra  # a candidate's, killed by the machine
    own_limit = ProcResult(["coqchk"], 137, "", "", 0.1, extra={"oom": True})  # the sandbox's memory cgroup
    layer = prover._checker_layer(["coqchk"], own_limit, 300)
    assert layer.ok is False and not layer.infra and layer.evidence["accident"] == "killed by signal 9", layer
    assert not list((tmp_path / "cache" / "project-rocq" / "by-vo").glob("*.coqchk.json"))
    prover._run = run  # type: ignore[method-assign]
    assert prover._file_check(project_, build, rel, module, 300).ok is True


def test_the_projects_own_proof_makes_no_directory_per_item(tmp_path: Path, project_rocq_cache: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifier's copy of a candidate judged from the build's records (the project's own proof: nothing is
    compiled) goes to one scratch directory per thread, made once: a cold item makes and removes no directory of its
    own (two made and two removed per item before: ``mkdtemp`` and ``cand``); its verdict's layers are the ones a
    directory of its own gives, and a compiled candidate still gets a directory of its own, removed after."""
    import os

    from pytest_forall.core import verify
    from pytest_forall.core.verify import verify_candidate

    require_tool("coqc")
    require_tool("coqchk")
    _, tasks = _copied(tmp_path, project_rocq_cache)
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300}
    calls: list[str] = []
    mkdir, rmdir = os.mkdir, os.rmdir

    def counted_mkdir(path: object, *args: object, **kwargs: object) -> None:
        mkdir(path, *args, **kwargs)  # type: ignore[arg-type]
        calls.append(f"mkdir {path}")  # (made: an existing directory raises first)

    def counted_rmdir(path: object, *args: object, **kwargs: object) -> None:
        calls.append(f"rmdir {path}")
        rmdir(path, *args, **kwargs)  # type: ignore[arg-type]

    def verify_one(task: Task, builddir: Path | None = None) -> tuple[list[str], list[str]]:
        prover = pytest_forall_make_prover("rocq-project", options)
        data = (PROOFS / f"{task.task_id}.v").read_bytes() if task.meta["admitted"] else \
            str(task.meta["own_candidate"]).encode()
        calls.clear()
        with monkeypatch.context() as patched:
            patched.setattr(os, "mkdir", counted_mkdir)
            patched.setattr(os, "rmdir", counted_rmdir)
            verdict = verify_candidate(task, prover, data, builddir=builddir, timeout=300)
        assert verdict.verdict == "accept" and verdict.strict, (task.task_id, verdict.reason)
        return [f"{layer.name} {layer.ok} {layer.reason}" for layer in verdict.layers], list(calls)

    for task in tasks:  # the first pass reads the build's records; the scratch directory is made once
        verify_one(task)
    scratch = set(getattr(verify, "_SCRATCH", {}).values())
    for task in tasks:
        layers, made = verify_one(task)
        if task.meta["admitted"]:  # a stored proof: compiled in a directory of its own, removed after
            assert any(c.startswith("mkdir") and "forall-build-" in c for c in made), made
            assert any(c.startswith("rmdir") and "forall-build-" in c for c in made), made
            continue
        assert not [c for c in made if "forall-build-" in c], made
        own = tmp_path / "own" / task.task_id
        own.mkdir(parents=True)
        assert layers == verify_one(task, builddir=own)[0], task.task_id
    assert set(verify._SCRATCH.values()) == scratch and all(not any((d / "cand").iterdir()) for d in scratch)


def test_judging_the_builds_own_file_against_itself_is_the_full_comparison(tmp_path: Path, project_rocq_cache: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The own proof is judged with the build's dump as both baseline and candidate: the judge skips comparing the
    file's declarations with themselves and reads the file's names once per dump, not once per item; each judgement
    is the one a copy of the dump (the full comparison) gives."""
    import copy

    from pytest_forall.lang.rocq import judge

    require_tool("coqc")
    _, tasks = _copied(tmp_path, project_rocq_cache)
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    names = judge._entry_name
    calls: list[str] = []
    monkeypatch.setattr(judge, "_entry_name", lambda entry: calls.append(entry) or names(entry))
    for rel in sorted({str(t.meta["project_file"]) for t in tasks}):
        mine = [t for t in tasks if t.meta["project_file"] == rel]
        baseline, problem = prover._baseline(mine[0], 300)
        assert baseline is not None, problem
        calls.clear()
        own = [judge.judge_project_file(baseline, baseline, str(t.meta["coq_module"]), str(t.meta["target_path"]),
                                        ("Demo.",), prover.info.strict_axioms, (), frozenset()) for t in mine]
        assert len(calls) <= len(baseline.fields) + sum(len(baseline.assumptions.get(str(t.meta["target_path"]), ()))
                                                        + 1 for t in mine), (rel, len(calls))
        full = [judge.judge_project_file(baseline, copy.deepcopy(baseline), str(t.meta["coq_module"]),
                                         str(t.meta["target_path"]), ("Demo.",), prover.info.strict_axioms, (),
                                         frozenset()) for t in mine]
        assert own == full, rel


def test_ctrl_c_during_the_build_started_ahead_leaves_no_process(tmp_path: Path) -> None:
    """Ctrl-C while the first item waits for the build the collection started: pytest ends at once (exit 2, no row is
    recorded as a verdict) and the build's processes are killed with it, not left running behind the run."""
    import os
    import signal
    import subprocess
    import sys
    import time

    require_tool("coqc")
    shutil.copytree(PROJECT, tmp_path / "proj")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    pid = tmp_path / "build.pid"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    run = subprocess.Popen([sys.executable, "-m", "pytest", *BASE, "-q", "--forall-project", "proj",
                            "--forall-frontend", "replay", "--forall-project-build", f"echo $$ > {pid}; exec sleep 120"],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (pid.is_file() and pid.read_text().strip()):
            time.sleep(0.1)
        build = int(pid.read_text())
        os.kill(build, 0)
        time.sleep(1)  # the first item is waiting for the build now
        run.send_signal(signal.SIGINT)
        out, _ = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 2, out[-2000:]
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.kill(build, 0)


def test_only_an_item_that_waits_shows_its_progress(pytester: pytest.Pytester) -> None:
    """A cold run of a file's own proofs: the first item waits for the build (started at collection), its judge session
    and coqchk, and shows its progress meanwhile (``forall watch``); the file's later items are judged from what the
    process holds (``judged_at_once``) and write no progress (was: two renames of progress.json per item, #18). Every
    item's audit record is complete; a candidate that must be compiled is never judged at once."""
    from pytest_forall.core.verify import verify_candidate

    require_tool("coqc")
    require_tool("coqchk")
    project = pytester.path / "proj"
    project.mkdir()
    (project / "_CoqProject").write_text("-R . Once\nA.v\n")
    (project / "A.v").write_text("".join(f"Lemma l{n} : {n} = {n}.\nProof. reflexivity. Qed.\n" for n in range(4)))
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess(*BASE, "--forall-project", "proj", "--forall-frontend", "replay",
                                           "--forall-run-id", "cold", "--forall-cache-dir", "cache", "-p", "no:randomly")
    assert result.ret == 0, result.stdout.str()[-3000:]
    lines = (pytester.path / "reports" / "cold" / "results.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["task_id"].rsplit("_", 1)[-1] for r in rows] == ["l0", "l1", "l2", "l3"], rows
    assert all(r["outcome"] == "strict" and not r["cached"] for r in rows), rows
    shown = []
    for row in rows:
        audit = Path(row["audit_dir"])
        record = json.loads((audit / "audit.json").read_text())
        assert len(record["submissions"]) == len(record["acceptances"]) == 1 and record["result"]["outcome"] == "strict"
        assert (audit / "accepted" / "acceptance.json").is_file() and (audit / "result.json").is_file()
        if (audit / "progress.json").exists():
            shown.append(row["task_id"])
            assert json.loads((audit / "progress.json").read_text())["state"] == "finished"
    assert shown == [rows[0]["task_id"]], shown

    task = load_project(project, {})[0]
    prover = pytest_forall_make_prover("rocq-project", {"cache_dir": str(pytester.path / "cache"), "timeout": 300})
    own = str(task.meta["own_candidate"]).encode()
    assert not prover.judged_at_once(task, own)  # this process holds none of the file's records yet: it reads them
    assert verify_candidate(task, prover, own, timeout=300).strict
    assert prover.judged_at_once(task, own)
    assert not prover.judged_at_once(task, own.replace(b"reflexivity", b"now reflexivity"))
    fresh = pytest_forall_make_prover("rocq-project", {"cache_dir": str(pytester.path / "other"), "timeout": 300})
    assert not fresh.judged_at_once(load_project(project, {})[0], own)  # another cache: not built there


def test_the_verifier_hashes_a_candidates_bytes_once_and_the_backend_once(tmp_path: Path, project_rocq_cache: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate's bytes are hashed once by the verifier (its digest, passed on; the copy compiled is compared by its
    bytes) and once by the project backend (the digest it judged from the build), for the project's own proof and for a
    compiled one (was: six times for the own proof, #18); the verdicts are strict either way."""
    from pytest_forall.core import verify
    from pytest_forall.core.verify import verify_candidate

    require_tool("coqc")
    require_tool("coqchk")
    _, tasks = _copied(tmp_path, project_rocq_cache)
    options = {"cache_dir": str(tmp_path / "cache"), "timeout": 300}
    hashed: list[bytes] = []
    for module in (verify, project_prover, project_records):
        real = module.sha256_bytes
        monkeypatch.setattr(module, "sha256_bytes", lambda data, real=real: (hashed.append(data), real(data))[1])
    for task in tasks:
        data = (PROOFS / f"{task.task_id}.v").read_bytes() if task.meta["admitted"] else \
            str(task.meta["own_candidate"]).encode()
        for _ in range(2):  # the first reads the build's records into this process; the second as a later item
            hashed.clear()
            verdict = verify_candidate(task, pytest_forall_make_prover("rocq-project", options), data, timeout=300)
            assert verdict.verdict == "accept" and verdict.strict, (task.task_id, verdict.reason)
        assert hashed.count(data) <= 2, (task.task_id, task.meta["admitted"], hashed.count(data))
