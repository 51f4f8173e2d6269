"""Issue 21: every Rocq toolchain a user has, for real: the host's Coq 8.16, trixie's Coq 8.20 and sid's Rocq 9.2.

The root filesystems are built by ``forall toolchain build trixie|sid DIR`` (``scripts/setup.sh`` does it once per
CI run, into ``$FORALL_TOOLCHAINS``, default /var/cache/pytest-forall); under CI a missing root fails. The verifier
corpus (``tests/cheats/``) runs in one process per toolchain (one backend, one template cache): every cheat is
rejected at the layer it is rejected at on 8.16, every honest proof accepted with the same strictness — except on
sid, whose mathcomp and Coquelicot are not installable today (the root's stamp says why): there an entry that needs
them must be ``infra`` (the template does not compile here), never a rejection.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import PUTNAM, REPO, require_path, require_tool, run_shared_dir, seed_prover_cache
from pytest_forall.core import cache as vcache
from pytest_forall.core.model import ACCEPT, INFRA, REJECT
from pytest_forall.core.verify import resolve_template, task_from_template, verify_candidate
from pytest_forall.lang.rocq.advisories import in_force
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.lang.rocq.toolchain import (
    COMPAT_NAMES,
    STAMP,
    Toolchain,
    parse_version,
    probe,
    read_stamp,
    resolve,
    version_info,
)

#: Where scripts/setup.sh builds the root filesystems (outside the repository: 1-2 GB each).
TOOLCHAINS = Path(os.environ.get("FORALL_TOOLCHAINS", "/var/cache/pytest-forall"))
CORPUS = Path(__file__).resolve().parent / "cheats"
ENTRIES = sorted(p for p in CORPUS.glob("*/*") if (p / "expect.json").is_file()
                 and json.loads((p / "expect.json").read_text()).get("prover", "rocq") == "rocq")
#: what each root is expected to run (``coqc --version``)
EXPECTED = {"trixie": (8, 20), "sid": (9, 2)}
#: libraries a sid root lacks today (apt: mathcomp needs hierarchy-builder, which needs the broken coq-elpi)
SID_MISSING = ("mathcomp", "Coquelicot", "HB")
STATIC_LAYERS = ("syntax_screen", "frozen_statement", "shadowing_guard")
#: a library a candidate may load, with the Debian package that provides it: where the root has not installed it
#: (the roots' package list does not include it today), the proof cannot elaborate there
CANDIDATE_LIBRARIES = {b"From Equations ": "libcoq-equations"}


def root(suite: str) -> Path:
    return require_path(TOOLCHAINS / suite / "usr" / "bin" / "coqc", f"the {suite} toolchain root "
                        f"(forall toolchain build {suite} {TOOLCHAINS / suite}; scripts/setup.sh builds it)").parents[2]


class Provers(dict):  # type: ignore[type-arg]
    """One sandboxed backend per toolchain, made when first asked for (a missing root fails or skips that test
    only), each with its own template cache and judge plugin (:meth:`cache`: the other tests of a toolchain use them
    too), one per test run: both xdist workers build each toolchain's plugin and templates once (the entries are
    keyed by content and built under a lock, ``judge.cached_entry``).

    Their layers run one after another (``concurrent_layers`` off): the verdict and its layers are the same
    (:func:`pytest_forall.core.verify._alongside`), but a cheat rejected by the judge no longer has coqchk run
    beside it in vain until killed (18 of the corpus's 126 coqchk runs on trixie and sid; docs/measurements.md)."""

    def __init__(self, base: Path) -> None:
        super().__init__()
        self.base = base

    def __missing__(self, name: str) -> RocqProver:
        require_tool("coqc")
        prover = RocqProver(self.options(name))
        prover.concurrent_layers = False
        assert prover.probe(self.cache(name)) == "", prover.probe(self.cache(name))
        assert prover.plugin is not None, prover.plugin_problem
        self[name] = prover
        return prover

    def cache(self, name: str) -> Path:
        return self.base / f"cache-{name}"

    def seed(self, name: str, templates: list[Path], cache: Path) -> set[str]:
        """A pytester run's cache directory ``cache`` with toolchain ``name``'s plugin and ``templates`` compiled
        (once per test run, in :meth:`cache`: where the corpus compiled them already); its verdicts its own.
        Returns the entries ``cache`` then holds (:func:`built_in`)."""
        prover = self[name]
        for template in templates:
            assert prover._template_entry(task_from_template("rocq", template), 300)[2] == "", template
        return built_in(seed_prover_cache(self.cache(name), cache))

    def options(self, name: str) -> dict[str, str]:
        """The backend options of toolchain ``name``: a backend made with them shares its plugin and templates."""
        return {"sandbox": "bwrap", "sandbox_audit_dir": str(self.cache(name) / "audit"),
                "toolchain": "" if name == "host" else str(root(name)), "cache_dir": str(self.cache(name))}


def built_in(cache: Path) -> set[str]:
    """The judge plugins and compiled templates a cache directory holds (their entries, not their locks)."""
    return {f"{part}/{entry.name}" for part in ("rocq-judge", "rocq-templates") if (cache / part).is_dir()
            for entry in (cache / part).iterdir() if entry.is_dir() and not entry.name.startswith("build-")}


@pytest.fixture(autouse=True)
def _corpus_pointers_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpus's one-line ``template`` pointers name PutnamBench files; they resolve under ``PUTNAMBENCH_ROOT``
    (:func:`resolve_template`), set here rather than left to another test's process-wide setting."""
    monkeypatch.setenv("PUTNAMBENCH_ROOT", str(PUTNAM))


@pytest.fixture(scope="module")
def provers(tmp_path_factory: pytest.TempPathFactory) -> Provers:
    return Provers(run_shared_dir(tmp_path_factory, "toolchains"))


def test_version_knowledge_lives_in_one_table() -> None:
    """Flags, stdlib prefix, checker name, plugin shim and strict axiom names per version."""
    assert parse_version("The Coq Proof Assistant, version 8.16.1 compiled with OCaml 4.13.1") == (8, 16)
    assert parse_version("The Rocq Prover, version 9.2 compiled with OCaml 5.4.1") == (9, 2)
    old, mid, new = version_info((8, 16)), version_info((8, 20)), version_info((9, 2))
    assert old.compile_flags == () and mid.compile_flags == new.compile_flags == ("-w", "-declaration-outside-section")
    assert (old.stdlib_prefix, mid.stdlib_prefix, new.stdlib_prefix) == ("Coq.", "Coq.", "Stdlib.")
    assert "Stdlib.Logic.Classical_Prop.classic" in new.strict_axioms
    assert "Coq.Logic.Classical_Prop.classic" in old.strict_axioms - new.strict_axioms
    assert (old.judge_compat, mid.judge_compat, new.judge_compat) == ("coq816", "coq820", "rocq9")
    assert new.judge_packages.startswith("rocq-runtime.") and old.judge_packages.startswith("coq-core.")
    assert all((REPO / "pytest_forall" / "lang" / "rocq" / "judge_compat" / f"{n}.ml").is_file() for n in COMPAT_NAMES)


@pytest.mark.parametrize("suite", sorted(EXPECTED))
def test_root_runs_its_own_coq_and_its_stamp_names_what_is_missing(suite: str) -> None:
    found = resolve(str(root(suite)))
    assert isinstance(found, Toolchain) and found.root == str(root(suite))
    line, info = probe(found)
    assert info is not None and info.version == EXPECTED[suite], line
    stamp = read_stamp(root(suite))
    assert stamp is not None and stamp["suite"] == suite
    installed = {line.split()[0] for line in stamp["installed"]}
    assert "coq" in installed and "libcoq-core-ocaml-dev" in installed
    if suite == "trixie":
        assert stamp["missing"] == {} and "libcoq-mathcomp-analysis" in installed
    else:  # every package the build could not install is recorded with apt's reason
        assert set(stamp["missing"]) | installed >= set(stamp["packages"])
        assert all(why for why in stamp["missing"].values())


def test_second_build_returns_at_once_from_its_stamp() -> None:
    """``forall toolchain build`` is idempotent: the same package list on the same mirror is not rebuilt."""
    before = (root("trixie") / STAMP).read_text()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "toolchain", "build", "trixie",
                           str(root("trixie"))], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 30 and "mmdebstrap" not in proc.stderr
    assert (root("trixie") / STAMP).read_text() == before
    assert "8.20" in json.loads(proc.stdout)["coqc"]


KERNEL = {"trixie": "8.20.1", "sid": "9.2"}


def _loads(source: bytes, library: str) -> bool:
    """Whether a `From`/`Require` sentence of ``source`` names ``library`` (a comment naming it loads nothing)."""
    return re.search(rb"\b(?:From|Require)\b[^.]*\b" + re.escape(library.encode()) + rb"\b", source) is not None


def _expected(entry: Path, toolchain: str) -> dict[str, object]:
    expect: dict[str, object] = json.loads((entry / "expect.json").read_text())
    advisory = expect.get("advisory") or expect.get("advisory_covered")
    sid_prover_side = toolchain == "sid" and expect.get("layer") not in STATIC_LAYERS  # static layers run first
    template = resolve_template(entry / "template").read_bytes()
    if sid_prover_side and any(_loads(template, lib) for lib in SID_MISSING):
        return {"verdict": INFRA, "layer": "template"}  # no verdict where the problem itself does not compile
    where = expect.get("in_force")  # an exploit of a bug this kernel has (and an older one refuses)
    if where and where["advisory"] in {a.id for a in in_force(KERNEL[toolchain])}:
        return {**expect, "layer": where["layer"], "advisory": where["advisory"]}
    if advisory and advisory not in {a.id for a in in_force(KERNEL[toolchain])}:
        # the exploit of a kernel bug fixed in this version: the kernel itself refuses it (any rejecting layer)
        return {**expect, "verdict": REJECT, "layer": None}
    candidate = next(entry.glob("candidate.*")).read_bytes()
    stamp = read_stamp(root(toolchain)) or {}
    installed = {line.split()[0] for line in stamp.get("installed", [])}
    if any(marker in candidate and package not in installed for marker, package in CANDIDATE_LIBRARIES.items()):
        return {"verdict": REJECT, "layer": "elaboration"}  # a proof may use only what is installed here
    if sid_prover_side and any(_loads(candidate, lib) for lib in SID_MISSING):
        return {"verdict": REJECT, "layer": "elaboration"}  # a proof may use only what is installed here
    return expect


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_verifier_corpus_on_toolchain(provers: Provers, toolchain: str, tmp_path: Path) -> None:
    """The whole corpus on one toolchain: the same verdicts (and rejecting layers) as on 8.16, each naming it."""
    require_path(PUTNAM / "coq" / "src", "PutnamBench")
    prover = provers[toolchain]
    wrong, counts = [], {ACCEPT: 0, REJECT: 0, INFRA: 0}
    for entry in ENTRIES:
        expect = _expected(entry, toolchain)
        task = task_from_template("rocq", resolve_template(entry / "template"))
        candidate = next(entry.glob("candidate.*"))
        verdict = verify_candidate(task, prover, candidate.read_bytes(), builddir=tmp_path / entry.name, timeout=300)
        counts[verdict.verdict] += 1
        first = next((layer.name for layer in verdict.layers if layer.ok is False or layer.infra), None)
        label = verdict.kernel["toolchain"]
        assert label.startswith(("coq-8.20", "rocq-9.2")) and str(root(toolchain)) in label
        # the kernel named (and the advisories in force) are the root's, never the host's coqc
        assert verdict.kernel["version"].startswith({"trixie": "8.20", "sid": "9.2"}[toolchain]), verdict.kernel
        assert ("rocq#19402" in verdict.kernel["advisories"]) is False, verdict.kernel
        if verdict.verdict != expect["verdict"] or (
                expect["verdict"] != ACCEPT and expect["layer"] is not None and first != expect["layer"]) or (
                expect["verdict"] == ACCEPT and verdict.strict is not expect["strict"]) or (
                "in_force" in expect and "advisory" in expect and str(expect["advisory"]) not in verdict.reason):
            wrong.append(f"{entry.parent.name}/{entry.name}: {verdict.verdict} strict={verdict.strict} at {first}: "
                         f"{verdict.reason[:300]} (expected {expect})")
    print(f"{toolchain}: {counts} over {len(ENTRIES)} entries")
    assert not wrong, "\n".join(wrong)


def test_the_verdict_cache_never_serves_a_verdict_across_toolchains(provers: Provers,
                                                                       tmp_path: Path) -> None:
    """One cache, one candidate, three toolchains: each toolchain's first run is a miss, its second a hit."""
    require_path(PUTNAM / "coq" / "src", "PutnamBench")
    entry = CORPUS / "valid" / "putnam_2001_a1"
    task = task_from_template("rocq", resolve_template(entry / "template"))
    data = (entry / "candidate.v").read_bytes()
    cache = vcache.VerdictCache(tmp_path / "verdicts", "readwrite")
    keys = set()
    for name in ("host", "trixie", "sid"):
        prover = provers[name]
        keys.add(json.dumps(vcache.cache_key(task, prover, data, {"timeout": 300.0, "static_only": False}),
                            sort_keys=True))
        first, hit = vcache.verify_cached(cache, task, prover, data, timeout=300.0)
        assert (first.verdict, hit) == (ACCEPT, False), (name, first.reason)
        again, hit = vcache.verify_cached(cache, task, prover, data, timeout=300.0)
        assert hit and again.kernel["toolchain"] == first.kernel["toolchain"] == prover.toolchain_label()
    assert len(keys) == 3
    assert len({json.loads(p.read_text())["body"] for p in (tmp_path / "verdicts").glob("*/*.json")}) == 3


def test_a_missing_toolchain_is_one_usage_error_naming_the_option(pytester: pytest.Pytester, tmp_path: Path) -> None:
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--forall-rocq-toolchain={tmp_path / 'nowhere'}")
    assert result.ret == 4
    errors = [line for line in result.stderr.lines if "error" in line.lower()]
    assert len(errors) == 1 and "--forall-rocq-toolchain" in errors[0] and "nowhere" in errors[0], result.stderr.str()
    (tmp_path / "empty").mkdir()
    pytester.makeini(f"[pytest]\nforall_rocq_toolchain = {tmp_path / 'empty'}\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 4 and "forall_rocq_toolchain" in result.stderr.str() and "no Coq installation" in result.stderr.str()
    entry = CORPUS / "valid" / "putnam_2001_a1"
    proc = subprocess.run([sys.executable, "-m", "pytest_forall.core.verify", "--prover", "rocq", "--template",
                           str(entry / "template"), "--candidate", str(entry / "candidate.v"), "--toolchain",
                           str(tmp_path / "nowhere")], capture_output=True, text=True, check=False,
                          env={**os.environ, "PUTNAMBENCH_ROOT": str(PUTNAM)})
    assert proc.returncode == 2 and "--toolchain" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("toolchain", ["host", "trixie", "sid"])
def test_replay_and_verify_name_the_toolchain_in_rows_junit_and_verdicts(pytester: pytest.Pytester,
                                                                          provers: Provers, toolchain: str) -> None:
    """The stored PutnamBench proofs replayed through pytest on each toolchain, and ``forall verify``: strict, with
    the toolchain in the result row, the JUnit property ``forall.toolchain`` and the verdict. (The run's cache is
    seeded with the toolchain's plugin and templates: :meth:`Provers.seed`.)"""
    require_tool("coqc")
    putnam = require_path(PUTNAM / "coq" / "src", "PutnamBench").parents[1]
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {putnam}\n")
    spec = [] if toolchain == "host" else [f"--forall-rocq-toolchain={root(toolchain)}"]
    tasks = ("putnam_2001_a1", "putnam_2008_a1")
    seeded = provers.seed(toolchain, [PUTNAM / "coq" / "src" / f"{task}.v" for task in tasks],
                          pytester.path / "reports" / ".cache")
    result = pytester.runpytest("-p", "no:cacheprovider", "--forall-frontend=replay",
                                f"--forall-proofs={Path(__file__).parent / 'data' / 'proofs'}", "-k",
                                f"({' or '.join(tasks)}) and coq", "--forall-run-id=r", "--junitxml=junit.xml", *spec)
    rows = {row["task_id"]: row for row in map(json.loads, (pytester.path / "reports" / "r" / "results.jsonl")
                                                .read_text().splitlines())}
    want = {"host": "coq-8.16", "trixie": "coq-8.20", "sid": "rocq-9.2"}[toolchain]
    for task in tasks:
        if toolchain == "sid" and task == "putnam_2008_a1":  # needs Coquelicot, not installable on sid today
            assert rows[task]["outcome"] == "infra" and "does not compile here" in rows[task]["reason"], rows[task]
        else:
            assert rows[task]["outcome"] == "strict" and rows[task]["independent"] is True, rows[task]["reason"]
        assert rows[task]["toolchain"].startswith(want), rows[task]["toolchain"]
    assert result.ret == 0
    assert built_in(pytester.path / "reports" / ".cache") == seeded  # the run found the plugin and templates made
    junit = (pytester.path / "junit.xml").read_text()
    assert junit.count('name="forall.toolchain" value="' + want) == 2
    entry = CORPUS / "valid" / ("putnam_2001_a1" if toolchain == "sid" else "putnam_2008_a1")
    proc = subprocess.run([sys.executable, "-m", "pytest_forall.core.verify", "--prover", "rocq", "--template",
                           str(entry / "template"), "--candidate", str(entry / "candidate.v"), "--json",
                           *(["--toolchain", str(root(toolchain))] if toolchain != "host" else [])],
                          capture_output=True, text=True, check=False, env={**os.environ, "PUTNAMBENCH_ROOT": str(PUTNAM)})
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 0 and verdict["verdict"] == ACCEPT and verdict["kernel"]["toolchain"].startswith(want), proc.stderr


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_every_prover_process_runs_from_the_root_sandboxed_or_not(sandbox: str, tmp_path: Path) -> None:
    """coqc/coqchk/the judge (a verdict) and the portfolio's coqtop run the root's Rocq 9.2, with and without the
    sandbox: ``Stdlib.`` exists only there, and OCaml 5's start-up survives the address-space limit."""
    require_path(PUTNAM / "coq" / "src", "PutnamBench")
    prover = RocqProver({"sandbox": sandbox, "toolchain": str(root("sid")), "cache_dir": str(tmp_path / "cache"),
                         "sandbox_audit_dir": str(tmp_path / "audit")})
    assert prover.sandboxed is (sandbox == "bwrap")
    entry = CORPUS / "valid" / "classical_excluded_middle"
    verdict = verify_candidate(task_from_template("rocq", resolve_template(entry / "template")), prover,
                               (entry / "candidate.v").read_bytes(), builddir=tmp_path / "build", timeout=300)
    assert verdict.verdict == ACCEPT and verdict.strict, verdict.reason
    assert verdict.axioms == ("Stdlib.Logic.Classical_Prop.classic",)
    work = tmp_path / "probe"
    work.mkdir()
    statement = "From Stdlib Require Import Arith.\nTheorem t : 2 + 2 = 4.\n"
    winner, _, log = prover.tactic_probe(work).run(statement, ["reflexivity"], work, 60)
    assert winner == "reflexivity", log[-500:]


def _coqc_with_judge_plugin(provers: Provers, toolchain: str,
                            tmp_path: Path) -> tuple[Callable[[list[str], Path], Any], Path]:
    """The root's ``coqc`` with the judge plugin built for it bound in (as project mode runs it; the toolchain's
    backend built it), and a fresh project directory."""
    from pytest_forall.core.proc import ProcResult
    from pytest_forall.lang.rocq.judge import PLUGIN_INSIDE
    from pytest_forall.lang.rocq.toolchain import root_prefix

    found = resolve(str(root(toolchain)))
    assert isinstance(found, Toolchain)
    plugin = provers[toolchain].plugin
    assert plugin is not None and str(plugin).startswith(str(provers.cache(toolchain)))
    work = tmp_path / "proj"
    work.mkdir()

    def run(args: list[str], cwd: Path) -> ProcResult:
        argv = [*root_prefix(found.root, cwd, [(plugin, PLUGIN_INSIDE)]), "--clearenv", "--setenv", "PATH",
                "/usr/bin:/bin", "--setenv", "HOME", str(cwd), "--setenv", "OCAMLPATH", PLUGIN_INSIDE, "--",
                "coqc", *args]
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
        return ProcResult(argv, done.returncode, done.stdout, done.stderr, 0.0)

    return run, work


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_project_judges_shared_walk_equals_one_walk_per_target_on_toolchain(provers: Provers, toolchain: str,
                                                                           tmp_path: Path) -> None:
    """The project judge's one closure walk per file (forall_judge.mlg, through each version's compat shim) gives
    every target the assumptions one `Assumptions.assumptions` per target gives, on 8.20 and on 9.2 (whose walk
    also follows an axiom's type: there an axiom typed by an axiom brings both); one session over several files
    (one walk at its end) gives each file the dump its own session gives."""
    from test_judge import SHARED_WALK_FILES

    from pytest_forall.lang.rocq.judge import run_file_dump, run_files_dump

    run, work = _coqc_with_judge_plugin(provers, toolchain, tmp_path)

    for name, text in SHARED_WALK_FILES.items():
        (work / name).write_text(text, encoding="utf-8")
        compiled = run(["-q", "-Q", ".", "P", name], work)
        assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    load = ["-Q", str(work), "P"]
    fields, problem = run_file_dump(run, work, load, "P.Top", [], fresh=False)
    assert fields is not None, problem
    targets = [path for path, entry in fields.fields if entry.startswith("const ")]
    shared, problem = run_file_dump(run, work, load, "P.Top", targets, fresh=False)
    assert shared is not None, problem
    each, problem = run_file_dump(run, work, load, "P.Top", targets, fresh=False, each=True)
    assert each is not None, problem
    assert shared.assumptions == each.assumptions and shared.findings == each.findings
    assert shared.assumptions["t1"] == ("axiom P.Deep.deep_ax",)
    assert "unsafe guarded P.Top.loop" in shared.assumptions["t10"]
    expected = ("axiom P.Deep.el_ax", "axiom P.Deep.ty_ax") if toolchain == "sid" else ("axiom P.Deep.el_ax",)
    assert shared.assumptions["t11"] == expected
    # several files in one session (their assumptions from one walk at the end) give each file its own dump
    together, problem = run_files_dump(run, work, load, [("P.Mid", ["l1", "d1"]), ("P.Top", targets)], fresh=False)
    assert not problem, problem
    mid, problem = run_file_dump(run, work, load, "P.Mid", ["l1", "d1"], fresh=False)
    assert mid is not None, problem
    assert together == {"P.Mid": mid, "P.Top": shared}
    assert mid.assumptions["l1"] == ("axiom P.Deep.deep_ax",)


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_project_judges_detectors_walk_the_projects_other_files_on_toolchain(provers: Provers, toolchain: str,
                                                                              tmp_path: Path) -> None:
    """`ForallJudgeProjectRoots` on 8.20 and 9.2: a target's detector findings include the constructs of another file
    of the project that it reaches (test_project_cross.py's file of them), not those it does not reach, nor any of an
    installed library; in one session over two files, the second file's targets see the findings too (the
    detectors' readings are kept for the session)."""
    from test_project_cross import FEATS

    from pytest_forall.lang.rocq.judge import run_file_dump, run_files_dump

    run, work = _coqc_with_judge_plugin(provers, toolchain, tmp_path)
    use = ("From P Require Import Feats.\nLemma by_cofix : 0 = 1.\nProof. destruct (ab cyc). Qed.\n"
           "Lemma by_letin : exists l : L, l = l.\nProof. exists lval. reflexivity. Qed.\n"
           "Lemma by_upoly : pid nat 0 = 0.\nProof. reflexivity. Qed.\n"
           "Lemma by_variance : exists b : box nat, b = b.\nProof. exists (Box nat 0). reflexivity. Qed.\n"
           "Lemma plain : 2 + 2 = 4.\nProof. reflexivity. Qed.\n")
    for name, text in (("Feats.v", FEATS), ("Use.v", use), ("Use2.v", use.replace("Lemma ", "Lemma u2_"))):
        (work / name).write_text(text, encoding="utf-8")
        compiled = run(["-q", "-Q", ".", "P", name], work)
        assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    targets = ["by_cofix", "by_letin", "by_upoly", "by_variance", "plain"]
    dump, problem = run_file_dump(run, work, ["-Q", str(work), "P"], "P.Use", targets, fresh=False)
    assert dump is not None, problem
    expected = {"by_cofix": "cofix P.Feats.cyc ", "by_letin": "letin P.Feats.L ", "by_upoly": "upoly P.Feats.pid ",
                "by_variance": "variance P.Feats.box "}
    for target, found in expected.items():
        assert any(f.startswith(found) for f in dump.findings.get(target, ())), (target, dump.findings)
    assert not dump.findings.get("plain"), dump.findings
    assert all(f.split()[1].startswith("P.") for fs in dump.findings.values() for f in fs), dump.findings
    both, problem = run_files_dump(run, work, ["-Q", str(work), "P"],
                                   [("P.Use", targets), ("P.Use2", [f"u2_{t}" for t in targets])], fresh=False)
    assert not problem, problem
    second = both["P.Use2"]
    assert not isinstance(second, str), second
    assert both["P.Use"] == dump
    assert {t: second.findings.get(f"u2_{t}") for t in targets} == {t: dump.findings.get(t) for t in targets}


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_project_judge_reads_a_lemmas_statement_universes_on_toolchain(provers: Provers, toolchain: str,
                                                                       tmp_path: Path) -> None:
    """`ForallJudgeFile`'s statement universes through each version's compat shim (`push_universes`): a
    universe-polymorphic lemma's relations come from its own context, a monomorphic one's from the global graph; a
    proof that puts the argument's universe under the result's adds `1 <= 2` to both (the project judge refuses it)."""
    from pytest_forall.lang.rocq.judge import run_file_dump

    run, work = _coqc_with_judge_plugin(provers, toolchain, tmp_path)

    universes = {}
    for label, proof in (("honest", "intros _. exact unit."), ("narrower", "intros A. exact A.")):
        (work / "Top.v").write_text("Unset Strict Universe Declaration.\nSet Universe Polymorphism.\n"
                                    f"Lemma poly_any : Type -> Type.\nProof. {proof} Qed.\n"
                                    "Unset Universe Polymorphism.\n"
                                    f"Lemma mono_any : Type -> Type.\nProof. {proof} Qed.\n", encoding="utf-8")
        compiled = run(["-q", "-Q", ".", "P", "Top.v"], work)
        assert compiled.returncode == 0, compiled.stdout + compiled.stderr
        dump, problem = run_file_dump(run, work, ["-Q", str(work), "P"], "P.Top", ["poly_any", "mono_any"],
                                      fresh=False)
        assert dump is not None, problem
        universes[label] = dump.universes
    for name in ("poly_any", "mono_any"):
        honest, narrower = set(universes["honest"][name]), set(universes["narrower"][name])
        assert "ulevels 1 2" in honest and "uconstraint 1 <= 2" not in honest, honest
        assert narrower - honest == {"uconstraint 1 <= 2"}, (honest, narrower)


def test_coqtop_gets_the_version_flags_a_top_level_variable_loads_on_trixie(provers: Provers, tmp_path: Path) -> None:
    """The portfolio's and the statement audit's ``coqtop`` load a template as ``coqc`` compiles it: on 8.20 with
    ``-w -declaration-outside-section``, else PutnamBench's top-level ``Variable R : realType.`` fails to load and the
    item is infra (it was, for every such problem, before)."""
    work = tmp_path / "probe"
    work.mkdir()
    statement = "Variable n : nat.\nTheorem t : n = n.\n"
    winner, _, log = provers["trixie"].tactic_probe(work).run(statement, ["reflexivity"], work, 60)
    assert winner == "reflexivity", log[-500:]


def test_statement_audit_on_trixie(pytester: pytest.Pytester) -> None:
    """The statement audit (``--forall-frontend=audit``) on 8.20, bounded to one problem (about 1-2 minutes on the
    shared 2-core machine under load): ``putnam_2017_a1`` is vacuous there too, with a certificate that passed the
    verifier on 8.20, and its row names the toolchain."""
    putnam = require_path(PUTNAM / "coq" / "src", "PutnamBench").parents[1]
    shutil.copy(REPO / "benchmarks" / "putnam" / "putnam.forall.toml", pytester.path / "putnam.forall.toml")
    pytester.makeini(f"[pytest]\nforall_putnam_root = {putnam}\n")
    pytester.runpytest("-p", "no:cacheprovider", "--forall-frontend=audit", "-k", "putnam_2017_a1 and coq",
                       "--forall-run-id=au", f"--forall-rocq-toolchain={root('trixie')}")
    rows = {row["task_id"]: row for row in map(json.loads, (pytester.path / "reports" / "au" / "results.jsonl")
                                                .read_text().splitlines())}
    assert {t: (r["outcome"], r["statement_audit"]) for t, r in rows.items()} == {
        "putnam_2017_a1": ("vacuous", "vacuous")}, {t: r["reason"][:300] for t, r in rows.items()}
    assert rows["putnam_2017_a1"]["toolchain"] == f"coq-8.20.1 (root:{root('trixie')})"
    assert (pytester.path / "reports" / "au" / "items" / "putnam_2017_a1-coq" / "accepted" / "STATEMENT_VACUOUS.v").is_file()


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_the_recursion_criterion_refuses_unsafe_shapes_on_toolchain(provers: Provers, toolchain: str,
                                                                     tmp_path: Path) -> None:
    """Issue 31: the widened recursion criterion, built against 8.20's and 9.2's kernel API (their recursive-argument
    trees differ from 8.16's), still refuses every unsafe shape of `test_judge.py` (compiled with the guard off, the
    assumption check off), while fix and cofix advisories are in force there (the toolchain's plugin and template
    cache: the corpus's)."""
    from test_judge import UNSAFE_NAMES, UNSAFE_RECURSION, NoAssumptionCheck, _with_helper

    require_path(PUTNAM / "coq" / "src", "PutnamBench")
    prover = NoAssumptionCheck(provers.options(toolchain))
    assert prover.plugin == provers[toolchain].plugin
    use = "(" + ", ".join(UNSAFE_NAMES) + ")"
    verdict = verify_candidate(task_from_template("rocq", PUTNAM / "coq" / "src" / "putnam_2001_a1.v"), prover,
                               _with_helper(UNSAFE_RECURSION, use).encode(), builddir=tmp_path / "b", timeout=300)
    layer = next(layer for layer in verdict.layers if layer.ok is False or layer.infra)
    assert layer.name == "kernel_advisories" and verdict.kernel["version"].startswith(KERNEL[toolchain]), verdict.reason
    missed = [name for name in UNSAFE_NAMES if not any(
        f.split()[0] in ("fix", "cofix") and f"ForallProblem.putnam_2001_a1.{name}" in f
        for f in layer.evidence["findings"])]
    assert not missed, (missed, layer.evidence["findings"])


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_the_module_walk_on_toolchain(provers: Provers, toolchain: str, tmp_path: Path) -> None:
    """The module walk (rocq#22387 is in force on 8.20.1 and 9.2.0), built against 8.20's and 9.2's module API (9.2's
    implementation constructors live in ``Mod_declarations``): with the screen off, rocq#22387's module subtyping and
    an included plain module are both findings (a module, and a field whose canonical name is not its own)."""
    from test_judge import CORPUS, Screenless

    require_path(PUTNAM / "coq" / "src", "PutnamBench")
    prover = Screenless(provers.options(toolchain))
    assert prover.plugin == provers[toolchain].plugin
    text = ("Module Inc. Definition h := 2. End Inc.\nInclude Inc.\n"
            + (CORPUS / "cheat" / "advisory_22387_module_letin_subtyping" / "candidate.v").read_text())
    verdict = verify_candidate(task_from_template("rocq", PUTNAM / "coq" / "src" / "putnam_2001_a1.v"), prover,
                               text.encode(), builddir=tmp_path / "b", timeout=300)
    layer = next(layer for layer in verdict.layers if layer.ok is False or layer.infra)
    assert layer.name == "kernel_advisories" and "rocq#22387" in layer.reason, verdict.reason
    found = " ".join(layer.evidence["findings"])
    assert "ForallProblem.putnam_2001_a1.Applied a module alias or functor application" in found, found
    assert "ForallProblem.putnam_2001_a1.h a constant with another canonical name" in found, found


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_a_vm_proof_needs_the_checker_to_finish_on_toolchain(provers: Provers, toolchain: str, tmp_path: Path) -> None:
    """The `vm` rows in force on 8.20.1 and 9.2.0 (rocq#13439, rocq#16891: unfixed) are covered by requiring coqchk,
    which has no VM, to finish and accept: an honest proof through a lemma checked by `vm_compute` that coqchk cannot
    finish within a 5 s budget is infra, never accepted. (The corpus's VM exploit, rocq#19402, is refused by these
    kernels themselves, so it does not show this cover here.)"""
    from test_judge import _with_helper

    require_path(PUTNAM / "coq" / "src", "PutnamBench")
    prover = RocqProver({**provers.options(toolchain), "checker_timeout": "5"})
    prover.concurrent_layers = False
    assert prover.plugin == provers[toolchain].plugin
    helper = ("From Coq Require Import Arith.\n"
              "Lemma slow : Nat.eqb (fact 10) 3628800 = true. Proof. vm_compute. reflexivity. Qed.\n")
    verdict = verify_candidate(task_from_template("rocq", PUTNAM / "coq" / "src" / "putnam_2001_a1.v"), prover,
                               _with_helper(helper, "slow").encode(), builddir=tmp_path / "b", timeout=300)
    advisories = next(layer for layer in verdict.layers if layer.name == "kernel_advisories")
    assert advisories.ok and verdict.kernel["version"].startswith(KERNEL[toolchain]), verdict.reason
    needs = advisories.evidence["requires_independent_check"]
    assert "VM conversion in `ForallProblem.putnam_2001_a1.slow`" in needs and "rocq#13439" in needs, needs
    assert "rocq#16891" in needs, needs
    first = next(layer for layer in verdict.layers if layer.ok is False or layer.infra)
    assert (verdict.verdict, first.name) == (INFRA, "independent_check"), verdict.reason


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_an_exploit_is_expected_at_the_detector_exactly_where_its_row_is_in_force(toolchain: str) -> None:
    """`in_force` in a corpus entry's expect.json: the exploit of a bug an older kernel does not have (rocq#22382,
    rocq#21682: uniform-argument inlining came with 8.20) is expected at ``kernel_advisories``, naming the row, on a
    kernel where the row is in force, and at the entry's own layer (the kernel refuses it) elsewhere —
    test_verifier_corpus_on_toolchain runs them."""
    require_path(PUTNAM / "coq" / "src", "PutnamBench")
    uniform = _expected(CORPUS / "cheat" / "advisory_22382_uniform_letin_binder", toolchain)
    assert (uniform["layer"], uniform["advisory"]) == ("kernel_advisories", "rocq#22382")
    cross = _expected(CORPUS / "cheat" / "advisory_21682_cross_call_uniform", toolchain)
    assert cross["layer"] == {"trixie": "kernel_advisories", "sid": "elaboration"}[toolchain], cross


@pytest.mark.parametrize("toolchain", ["trixie", "sid"])
def test_the_dead_code_rule_on_toolchain(provers: Provers, toolchain: str, tmp_path: Path) -> None:
    """Rule 6 of the recursion criterion (dead code, a return clause read after whd) built against 8.20's and 9.2's
    kernel API: `test_judge_dead_code.py`'s attacks (guard off) are refused and its honest shapes accepted there too;
    where the root has mathcomp (its stamp says), the installed `ssrnat.find_ex_minn` is accepted."""
    from test_judge_dead_code import MATHCOMP, SOUND, TEXT, UNSAFE, fix_findings

    from pytest_forall.lang.rocq.judge import run_file_dump

    run, work = _coqc_with_judge_plugin(provers, toolchain, tmp_path)
    (work / "A.v").write_text(TEXT, encoding="utf-8")
    compiled = run(["-q", "-Q", ".", "P", "A.v"], work)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    dump, problem = run_file_dump(run, work, ["-Q", str(work), "P"], "P.A", [*UNSAFE, *SOUND], fresh=False)
    assert dump is not None, problem
    found = fix_findings(dump)
    assert sorted(found) == sorted(UNSAFE), found
    stamp = read_stamp(root(toolchain)) or {}
    if any(str(p).startswith("libcoq-mathcomp ") for p in stamp.get("installed", [])):
        library, problem = run_file_dump(run, work, [], "mathcomp.ssreflect.ssrnat", list(MATHCOMP), fresh=False)
        assert library is not None, problem
        assert not fix_findings(library), library.findings
    else:
        assert toolchain == "sid" and "libcoq-mathcomp" in stamp.get("missing", {}), stamp.get("installed")
