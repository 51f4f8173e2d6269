"""Shared test setup: pytester, the real PutnamBench checkout, and a fast fake suite."""

from __future__ import annotations

import json
import os
import resource
import shutil
import time
from collections.abc import Callable, Generator
from pathlib import Path

# pytester runs pytest inside this process and afterwards drops every module first imported during that
# run; the cryptography bindings under the MCP server cannot be imported twice in one process, so they
# are imported here, before any pytester run, and stay.
import mcp.server.mcpserver  # noqa: F401
import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
#: The shared data folder (benchmarks, reference samples) beside the clone, wherever the clone is.
SHARED = Path(os.environ.get("FORALL_SHARED_ROOT", REPO.parent / "shared")).resolve()
PUTNAM = Path(os.environ.get("PUTNAMBENCH_ROOT", SHARED / "benchmarks" / "PutnamBench")).resolve()
EXAMPLES = Path(__file__).resolve().parent / "example_suites"


def require_path(path: Path, what: str) -> Path:
    """A missing input fails under CI (it is part of the job) and skips elsewhere, naming where it looked."""
    if not path.exists():
        message = f"{what} not found at {path} (set PUTNAMBENCH_ROOT / FORALL_SHARED_ROOT)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def require_tool(name: str) -> None:
    """A missing tool fails under CI (it must have been installed) and skips elsewhere, saying why."""
    if shutil.which(name) is None:
        message = f"{name} is not installed"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must install it: see .ci/run)")
        pytest.skip(message)


def standin_lean_project(root: Path) -> Path:
    """A Lake project at ``root`` shaped like lean_env/putnam, with a stand-in Mathlib build (tests/standin)."""
    import json

    lib = root / ".lake" / "packages" / "mathlib" / ".lake" / "build" / "lib" / "lean"
    lib.mkdir(parents=True)
    (lib / "Mathlib.olean").write_text(json.dumps({"standin": "olean", "module": "Mathlib", "imports": [],
                                                   "decls": {}}))
    for name in ("lakefile.toml", "lean-toolchain"):
        (root / name).write_text((REPO / "lean_env" / "putnam" / name).read_text())
    (root / "lake-manifest.json").write_text(json.dumps({
        "version": "1.1.0", "packagesDir": ".lake/packages", "name": "putnam", "lakeDir": ".lake",
        "packages": [{"name": "mathlib", "type": "git", "rev": "0" * 40, "inputRev": "v4.27.0"}]}))
    return root


#: Installed pytest plugins no test uses, kept out of the pytest processes the tests start (``runpytest_subprocess``,
#: ``python -m pytest`` and their xdist workers): anyio's imports trio, together 0.45 s of CPU per process of the
#: hundreds the suite starts (docs/measurements.md, "The test command, faster"). The suite itself runs with
#: ``-p no:hypothesispytest`` (scripts/test.sh) for the same reason.
UNUSED_PLUGINS = "-p no:anyio -p no:benchmark -p no:hypothesispytest"


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's own ``pytester`` (it clears ``PYTEST_ADDOPTS``), its runs started without :data:`UNUSED_PLUGINS`."""
    monkeypatch.setenv("PYTEST_ADDOPTS", UNUSED_PLUGINS)
    return pytester


@pytest.fixture
def putnam_root() -> Path:
    if not (PUTNAM / "coq" / "src").is_dir():
        pytest.fail(f"PutnamBench checkout not found at {PUTNAM}; set PUTNAMBENCH_ROOT")
    return PUTNAM


@pytest.fixture
def fake_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester dir with the fake adapter/prover/frontend conftest and a manifest of one task per outcome."""
    pytester.makeconftest((EXAMPLES / "fake_conftest.py").read_text())
    pytester.makefile(".forall.toml", suite=(EXAMPLES / "fake_suite.toml").read_text())
    return pytester


# --- where the suite's time goes ------------------------------------------------------------------------

#: Recorded cost of each test file (CPU seconds of the test process and the children it waited for, summed over
#: the file's tests): the order the workers take files in, longest first (:func:`pytest_collection_modifyitems`).
COSTS = Path(__file__).resolve().parent / "durations.json"


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """With ``FORALL_TEST_COSTS=FILE``, append one JSON line per test: its node id, wall and CPU seconds (setup,
    call and teardown; CPU of this process plus every child it waited for). A loaded machine inflates wall time,
    not CPU: ``scripts/test_costs.py`` sums the lines per file into ``tests/durations.json``."""
    out = os.environ.get("FORALL_TEST_COSTS")
    if not out:
        return (yield)
    cpu, wall = _cpu(), time.monotonic()
    try:
        return (yield)
    finally:
        line = {"test": item.nodeid, "wall": round(time.monotonic() - wall, 3), "cpu": round(_cpu() - cpu, 3)}
        with open(out, "a", encoding="utf-8") as log:
            log.write(json.dumps(line) + "\n")


#: Files whose module-scoped fixtures cost much (a library run and its replay, a prover session, an index of the
#: installed libraries, the templates of a module's runs, the judge's dump of each PutnamBench template holding a
#: fixpoint): split over two workers, both would build them — or, where the fixture's entries are built under a file
#: lock (``test_judge_masking``'s ``masked``: 36 template checks), both would walk them in step, one worker's core
#: idle while it waits on the other's lock.
ONE_WORKER = frozenset({"tests/test_judge_masking.py", "tests/test_project_apply.py", "tests/test_proof_tools.py",
                        "tests/test_protocol_e2e.py", "tests/test_retrieval.py"})


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under ``-n`` with xdist's default distribution (``load``): each test is sent alone, in the order of
    :func:`pytest_collection_modifyitems`, except that the tests of a file in :data:`ONE_WORKER` go to one worker
    together. Any other ``--dist`` is xdist's own."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class FilesKeptTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::")[0]
            return path if path in ONE_WORKER else nodeid

    config.option.loadscopereorder = False  # keep the collection's order: costliest files first
    return FilesKeptTogether(config, log)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """The costliest test files first, each file's tests kept together in their order: under ``-n 2`` the long
    files start at once and the short ones fill the end, so both workers finish together. Every worker sorts the
    same collection the same way (xdist requires it); a file not recorded yet counts as cheap."""
    try:
        costs: dict[str, float] = json.loads(COSTS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(item.nodeid.split("::")[0], index)
    items.sort(key=lambda item: (-costs.get(item.nodeid.split("::")[0], 0.0), first[item.nodeid.split("::")[0]]))


# --- what a test run shares ------------------------------------------------------------------------------

def run_shared_dir(factory: pytest.TempPathFactory, name: str) -> Path:
    """The directory ``name`` of this test run, the same for every xdist worker (their base directories are siblings
    under the run's) and new for each run (pytest's base directory is)."""
    base = factory.getbasetemp()
    where = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    where.mkdir(exist_ok=True)
    return where


@pytest.fixture(scope="session")
def shared_prover_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One prover cache directory (``cache_dir``: the judge plugin, the compiled templates and their judge dumps) for
    the whole run, for every test whose subject is not that cache: a fresh one per test rebuilt the plugin (0.3 s of
    CPU) and recompiled each template (0.2-1.5 s) in every test. Its entries are keyed by content and built under a
    file lock into a fresh directory, then renamed (``lang/rocq/judge.py``, ``cached_entry``), so the two workers
    share it safely. It holds no verdict cache: give it to a backend made directly, never as a run's
    ``--forall-cache-dir`` (a verdict served from the cache would not be checked by the test). A test about the cache
    itself (cold paths, corrupt or planted entries, cleaning, permissions) keeps its own directory."""
    return run_shared_dir(tmp_path_factory, "prover-cache")


def seed_prover_cache(warm: Path, cache: Path) -> Path:
    """A run's cache directory (``--forall-cache-dir``, by default ``reports/.cache``) seeded with copies of a warm
    backend cache's judge plugins and compiled templates, never its verdicts: the run's verdicts are still its own,
    only the template check and the plugin build find their entries made (a pytester run otherwise builds the plugin
    and compiles each template it meets again). An entry is keyed by content (``RocqProver._template_key`` names the
    plugin by its bytes, not its path) and validated by its manifest on read, so a copy is found as it is."""
    for part in ("rocq-judge", "rocq-templates"):
        if (warm / part).is_dir():
            shutil.copytree(warm / part, cache / part, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.lock", "build-*"))  # not another process's build
    return cache


# --- shared built projects ---------------------------------------------------------------------------------

FIXTURES = Path(__file__).resolve().parent / "fixtures"
#: tests/fixtures/project_rocq (``-Q theories Demo``: five proofs in three files, three admitted)
PROJECT_ROCQ = FIXTURES / "project_rocq"


def _built_and_judged(project: Path, where: Path) -> Path:
    """A cache directory at ``where`` holding ``project``'s Rocq build as its first items leave it: built, each
    file's judge dump and coqchk record written (each own proof verified, each admitted item's baseline read, and
    what runs ahead of the items waited for)."""
    import threading

    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
    from pytest_forall.suites.project import load_project

    prover = ProjectRocqProver({"cache_dir": str(where), "timeout": 300})
    for task in load_project(project, {}):
        if task.meta["own_candidate"]:
            verdict = verify_candidate(task, prover, str(task.meta["own_candidate"]).encode(), timeout=300)
            # judged (a proof resting on an admitted lemma is not strict): what is kept is the build's records
            assert verdict.verdict != "infra", (task.task_id, verdict.reason)
        else:
            baseline, problem = prover._baseline(task, 300)
            assert baseline is not None, (task.task_id, problem)
    deadline = time.monotonic() + 300  # what runs ahead has finished writing before anything is copied
    while any(t.name.startswith("forall-prefetch") and t.is_alive() for t in threading.enumerate()):
        assert time.monotonic() < deadline, [t.name for t in threading.enumerate()]
        time.sleep(0.05)
    return where


@pytest.fixture(scope="session")
def built_project_cache(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Path]:
    """``built_project_cache(project)``: the cache directory of a fixture project (``tests/fixtures/...``) as its
    first items leave it (:func:`_built_and_judged`), made once per test run (:func:`run_shared_dir`: the first
    xdist worker that asks builds it under a file lock, the other waits for it; a file's tests go to both workers,
    so made once per process it was built twice), for the tests whose claims are about a *later* item or a
    candidate's own judgement. Each test copies it (:func:`copy_project_cache`), never uses it in place. The build
    is keyed by the sources' contents, so a copy of the project anywhere finds it. A test about the first item's
    cold path (the build, the sessions ahead, their failures) builds its own."""
    import fcntl
    import hashlib

    made: dict[Path, Path] = {}

    def built(project: Path) -> Path:
        require_tool("coqc")
        require_tool("coqchk")
        if project not in made:
            shared = run_shared_dir(tmp_path_factory, "built-projects")
            name = f"{project.name}-{hashlib.sha256(str(project).encode()).hexdigest()[:8]}"
            where, done = shared / name, shared / f"{name}.done"
            with open(shared / f"{name}.lock", "w", encoding="utf-8") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not done.is_file():  # a worker that failed half-way left no marker: built again, from nothing
                    shutil.rmtree(where, ignore_errors=True)
                    shutil.copytree(project, where / "proj")
                    _built_and_judged(where / "proj", where / "cache")
                    done.touch()
            made[project] = where / "cache"
        return made[project]
    return built


@pytest.fixture
def project_rocq_cache(built_project_cache: Callable[[Path], Path]) -> Path:
    """The shared cache of :data:`PROJECT_ROCQ` (:func:`built_project_cache`): copy it, never use it in place."""
    return built_project_cache(PROJECT_ROCQ)


def copy_project_cache(built: Path, cache: Path) -> Path:
    """A test's own copy of a shared cache (:func:`built_project_cache`) at ``cache``, file times kept."""
    shutil.copytree(built, cache, symlinks=True)
    return cache
