"""Issue 32: the gate accounts for every baseline item (present, removed, renamed, now admitted, not selected) and
fails on a lost pass or a build the change broke, naming the item or the file; the fake suite covers the plugin's
bookkeeping, a small Rocq library (real coqc) the kernel's part (renames, admitted lemmas, build breaks)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml

from conftest import EXAMPLES, require_tool
from pytest_forall.core.gating import account, annotate, broken_by_change, change

FAKE = ["-p", "no:cacheprovider", "--forall-sandbox=none"]
#: the fake suite, where a behaviour naming ADMITTED makes the item an ``admitted`` one (as the project suite does)
FAKE_CONFTEST = (EXAMPLES / "fake_conftest.py").read_text().replace(
    'template=f"{behaviour}\\n", theorem_name=tid, frozen="")',
    'template=f"{behaviour}\\n", theorem_name=tid, frozen="", '
    'meta={"markers": ["admitted"]} if "ADMITTED" in behaviour else {})')
SUITE = 'adapter = "fake"\n[tasks]\nt_a = "STRICT"\nt_b = "STRICT"\nt_c = "STRICT"\nt_open = "FAIL"\n'


@pytest.fixture
def fake(pytester: pytest.Pytester) -> pytest.Pytester:
    assert "ADMITTED" in FAKE_CONFTEST
    pytester.makeconftest(FAKE_CONFTEST)
    pytester.makefile(".forall.toml", suite=SUITE)
    return pytester


def _run(pytester: pytest.Pytester, run_id: str, *extra: str) -> pytest.RunResult:
    return pytester.runpytest(*FAKE, "--forall-frontend=fake", f"--forall-run-id={run_id}", *extra)


def _gate(pytester: pytest.Pytester, run_id: str, *extra: str) -> tuple[pytest.RunResult, dict]:
    result = _run(pytester, run_id, "--forall-baseline=reports/base", "--forall-gate=regressions", *extra)
    path = pytester.path / "reports" / run_id / "gate.json"
    return result, json.loads(path.read_text()) if path.is_file() else {}


def test_a_removed_pass_fails_the_gate_by_name_unless_allowed(fake: pytest.Pytester) -> None:
    assert _run(fake, "base").ret == 1  # t_open fails
    fake.makefile(".forall.toml", suite=SUITE.replace('t_b = "STRICT"\n', ""))
    result, gate = _gate(fake, "removed", "--junitxml=removed.xml")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "LOST t_b: strict in the baseline, removed" in out
    assert "1 baseline pass(es) lost (t_b removed)" in out and "gate (--forall-gate=regressions): FAILED" in out
    assert gate["removed"] == ["t_b"] and gate["lost"] == ["t_b (removed)"] and gate["exitstatus"] == 1
    props = {p.name: p.value for suite in JUnitXml.fromfile(str(fake.path / "removed.xml"))
             for p in suite.properties()}
    assert props["forall.gate.lost"] == "t_b (removed)" and props["forall.gate.removed"] == "t_b"
    # the maintainer lets it go: on the command line (by task id), or in the repository's ini file (by key)
    allowed, gate = _gate(fake, "allowed", "--forall-gate-allow-removed=t_b")
    assert allowed.ret == 0 and "allowed: t_b removed" in allowed.stdout.str() and gate["allowed"] == ["t_b (removed)"]
    fake.makeini("[pytest]\nforall_gate_allow_removed =\n    fake::fake::t_b\n")
    assert _gate(fake, "ini")[0].ret == 0
    fake.makeini("[pytest]\n")
    # a failure in the baseline that is gone is listed, not a loss
    fake.makefile(".forall.toml", suite=SUITE.replace('t_open = "FAIL"\n', ""))
    result, gate = _gate(fake, "open-gone")
    assert result.ret == 0 and gate["removed"] == ["t_open"] and gate["lost"] == []
    assert "removed: t_open (not a pass in the baseline: failed)" in result.stdout.str()


def test_deselected_items_are_not_lost_but_a_deselected_admitted_one_is(fake: pytest.Pytester) -> None:
    _run(fake, "base")
    # -k and --forall-shard deselect: not judged, not lost
    result, gate = _gate(fake, "subset", "-k", "t_a or t_open")
    assert result.ret == 0 and gate["not_selected"] == 2 and gate["lost"] == [], result.stdout.str()
    result, gate = _gate(fake, "shard", "--forall-shard=1/3")  # t_a and t_c
    assert result.ret == 0 and gate["not_selected"] == 2 and gate["lost"] == []
    # the proof of t_c is now admitted and -m "not admitted" deselects it: a lost pass, named
    fake.makefile(".forall.toml", suite=SUITE.replace('t_c = "STRICT"', 't_c = "STRICT ADMITTED"'))
    result, gate = _gate(fake, "admitted", "-m", "not admitted")
    assert result.ret == 1 and gate["now_admitted"] == ["t_c"] and gate["lost"] == ["t_c (now admitted)"]
    assert "LOST t_c: strict in the baseline, now admitted" in result.stdout.str()
    # selected, whatever this run makes of it (the fake actor proves it: a pass is no loss)
    assert _gate(fake, "admitted-run")[0].ret == 0
    # under xdist the controller collects nothing: each worker's collection reaches it
    result, gate = _gate(fake, "xdist", "-n", "2", "-m", "not admitted")
    assert result.ret == 1 and gate["lost"] == ["t_c (now admitted)"], result.stdout.str()


def test_accounting_and_build_break_rules() -> None:
    """The rules on rows alone: a rename is the kernel's type under another name; an admitted proof is a regression
    even when its row is infra; a build break is the change's only when the sources moved and the environment did
    not."""
    def row(task: str, outcome: str, **more: str) -> dict[str, str]:
        return {"suite": "project", "track": "coq", "task_id": task, "nodeid": f"p::{task}[coq]", "outcome": outcome,
                **more}

    baseline = {f"project::coq::{r['task_id']}": r for r in (row("L__a", "strict", kernel_type="T1"),
                                                               row("L__b", "strict", kernel_type="T2"),
                                                               row("L__c", "strict", kernel_type="T3"))}
    rows = [row("L__a", "strict", kernel_type="T1"), row("L__b2", "strict", kernel_type="T2")]
    found = account(baseline, rows, {}, True)
    assert found.renamed == {"project::coq::L__b": "p::L__b2[coq]"} and found.removed == ["project::coq::L__c"]
    assert sorted(found.lost) == ["project::coq::L__b", "project::coq::L__c"]
    assert found.how("project::coq::L__b") == "renamed to L__b2[coq]"
    assert account(baseline, rows, {}, True, ["L.c", "L__b"]).lost == []
    # another suite's baseline items are not collected here: not judged, not lost
    assert account({"fake::fake::x": row("x", "strict")}, rows, {}).not_collected == ["fake::fake::x"]

    assert change(row("a", "strict"), row("a", "infra", admitted="yes")) == "regressed"
    assert change(row("a", "failed"), row("a", "infra", admitted="yes")) == "unconfirmed"
    before = row("a", "strict", cone_key="k1", environment="e")
    assert broken_by_change(before, row("a", "infra", cone_key="k2", environment="e", build_break="A.v:1: x")) == \
        "A.v:1: x"
    assert broken_by_change(before, row("a", "infra", cone_key="k1", environment="e", build_break="A.v:1: x")) == ""
    assert broken_by_change(before, row("a", "infra", cone_key="k2", environment="f", build_break="A.v:1: x")) == ""
    now = row("a", "infra", cone_key="k2", environment="e", build_break="A.v:1: x")
    annotate({"project::coq::a": before}, now)
    assert now["change"] == "unconfirmed" and now["breaks_build"] == "A.v:1: x"


# -- a small library, real coqc -----------------------------------------------------------------------------

BASE_V = """Definition double (n : nat) : nat := n + n.

Lemma double_0 : double 0 = 0.
Proof. reflexivity. Qed.

Lemma double_1 : double 1 = 2.
Proof. reflexivity. Qed.

Lemma unused : 2 + 2 = 4.
Proof. reflexivity. Qed.
"""
USE_V = """From Gate Require Import Base.

Lemma use_0 : double 0 + 0 = 0.
Proof. rewrite double_0. reflexivity. Qed.
"""
ROCQ = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]


def _library(pytester: pytest.Pytester, logical: str, files: dict[str, str]) -> Path:
    """A library in ``lib/`` of the pytester directory (``-Q theories LOGICAL``, each of ``files`` under
    ``theories/``, in that order): its ``theories/`` directory."""
    require_tool("coqc")
    theories = pytester.path / "lib" / "theories"
    theories.mkdir(parents=True)
    (theories.parent / "_CoqProject").write_text(f"-Q theories {logical}\n" + "".join(f"theories/{name}\n"
                                                                                        for name in files))
    for name, text in files.items():
        (theories / name).write_text(text)
    pytester.makeini("[pytest]\n")
    return theories


def test_delete_rename_admit_and_an_early_break_each_fail_the_gate_by_name(pytester: pytest.Pytester) -> None:
    base = _library(pytester, "Gate", {"Base.v": BASE_V, "Use.v": USE_V}) / "Base.v"
    args = [*ROCQ, "--forall-project", "lib", "--forall-frontend", "replay", "-m", "not admitted",
            "--forall-require", "strict"]

    def gate(run_id: str, text: str, *extra: str) -> tuple[pytest.RunResult, dict]:
        base.write_text(text)
        run = pytester.runpytest(*args, "--forall-run-id", run_id, "--forall-baseline", "reports/base",
                                 "--forall-gate", "regressions", *extra)
        return run, json.loads((pytester.path / "reports" / run_id / "gate.json").read_text())

    first = pytester.runpytest(*args, "--forall-run-id", "base")
    assert first.ret == 0, first.stdout.str()

    deleted, record = gate("delete", BASE_V.replace("Lemma double_1 : double 1 = 2.\nProof. reflexivity. Qed.\n", ""))
    assert deleted.ret == 1 and record["lost"] == ["Gate__Base__double_1 (removed)"], deleted.stdout.str()
    assert "LOST Gate__Base__double_1" in deleted.stdout.str()
    allowed, record = gate("allowed", BASE_V.replace("Lemma double_1 : double 1 = 2.\nProof. reflexivity. Qed.\n", ""),
                           "--forall-gate-allow-removed", "Gate.Base.double_1")
    assert allowed.ret == 0 and record["allowed"] == ["Gate__Base__double_1 (removed)"], allowed.stdout.str()

    renamed, record = gate("rename", BASE_V.replace("double_1 :", "double_one :"))
    assert renamed.ret == 1 and record["renamed"] == {"Gate__Base__double_1": "Gate__Base__double_one[coq]"}
    assert "renamed to Gate__Base__double_one" in renamed.stdout.str()

    admitted, record = gate("admit", BASE_V.replace("Lemma unused : 2 + 2 = 4.\nProof. reflexivity. Qed.",
                                                    "Lemma unused : 2 + 2 = 4.\nProof. Admitted."))
    assert admitted.ret == 1 and record["lost"] == ["Gate__Base__unused (now admitted)"], admitted.stdout.str()

    # a rules-only regression names what it rests on now: the admitted lemma, by its kernel name
    rules, record = gate("rules", BASE_V.replace("Lemma double_0 : double 0 = 0.\nProof. reflexivity. Qed.",
                                                 "Lemma double_0 : double 0 = 0.\nProof. Admitted."))
    regressed = [line for line in rules.stdout.str().splitlines() if line.startswith("REGRESSED")]
    assert rules.ret == 1 and len(regressed) == 1 and "Gate__Use__use_0" in regressed[0], rules.stdout.str()
    assert "strict -> rules_only" in regressed[0] and "rests on Gate.Base.double_0" in regressed[0], regressed
    assert record["lost"] == ["Gate__Base__double_0 (now admitted)"]

    broken, record = gate("break", "Foo Bar.\n" + BASE_V)
    out = broken.stdout.str()
    assert broken.ret == 1, out
    assert record["breaks_build"] and record["breaks_build"][0].startswith("theories/Base.v:1:"), record
    assert "the change breaks the build (theories/Base.v:1:" in out and "BUILD BROKEN by the change" in out
    rows = [json.loads(line) for line in (pytester.path / "reports" / "break" / "results.jsonl").read_text().split("\n")
            if line]
    assert {r["outcome"] for r in rows} == {"infra"} and {r["change"] for r in rows} == {"unconfirmed"}
    # Use.v requires the broken file: its item names the same file and error
    use = next(r for r in rows if r["task_id"] == "Gate__Use__use_0")
    assert use["breaks_build"].startswith("theories/Base.v:1:") and "COQDEP" not in use["reason"]

    # the earlier catch still holds: a broken proof is a regression
    proof, _ = gate("proof", BASE_V.replace("double 1 = 2.\nProof. reflexivity.", "double 1 = 2.\nProof. exact I."))
    assert proof.ret == 1 and "REGRESSED" in proof.stdout.str()
    # the verdict cache says why each was judged again: the edited proof changed; the one after it did not
    rows = {json.loads(line)["task_id"]: json.loads(line)
            for line in (pytester.path / "reports" / "proof" / "results.jsonl").read_text().splitlines()}
    assert rows["Gate__Base__double_1"]["cache_miss"].startswith("proof changed"), rows["Gate__Base__double_1"]
    assert rows["Gate__Base__unused"]["cache_miss"].startswith("unchanged proof, its context changed"), \
        rows["Gate__Base__unused"]["cache_miss"]


def test_a_broken_proof_is_judged_from_one_compile_of_the_file_before_it(tmp_path: Path) -> None:
    """A file whose fourth proof of six is broken: the three before it are judged strict from the build's own compile
    of the file, saved where it stopped (the fourth admitted: ``project/prefix.py``; no compile of the file again,
    not one compile each), the fourth is failed, the two after it infra naming the file's first error without any
    compile (the build stopped there)."""
    require_tool("coqc")
    from pytest_forall.core.proc import run_command
    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
    from pytest_forall.suites.project import load_project

    root = tmp_path / "lib"
    root.mkdir()
    (root / "_CoqProject").write_text("-R . Br\nA.v\n")
    proofs = [f"Lemma l{i} : {i} + 0 = {i}.\nProof. reflexivity. Qed.\n" for i in range(6)]
    proofs[3] = "Lemma l3 : 3 + 0 = 3.\nProof. exact I. Qed.\n"
    (root / "A.v").write_text("".join(proofs))
    compiles: list[list[str]] = []
    ran: list[tuple[str, float, float]] = []  # (the tool, its start, its end)

    def counting(argv: list[str], **kwargs: object) -> object:
        if any(str(a).endswith("A.v") for a in argv):
            compiles.append([str(a) for a in argv])
        started = time.monotonic()
        try:
            return run_command(argv, **kwargs)  # type: ignore[arg-type]
        finally:
            tool = "judge" if any("ForallJudge" in str(a) for a in argv) else Path(str(argv[0])).name
            ran.append((tool, started, time.monotonic()))

    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300}, runner=counting)
    verdicts = {t.task_id: verify_candidate(t, prover, t.meta["own_candidate"].encode(), timeout=300)
                for t in sorted(load_project(root, {}), key=lambda t: t.task_id)}
    outcome = {k: (v.verdict, v.strict) for k, v in verdicts.items()}
    assert outcome == {"Br__A__l0": ("accept", True), "Br__A__l1": ("accept", True), "Br__A__l2": ("accept", True),
                       "Br__A__l3": ("reject", False), "Br__A__l4": ("infra", False), "Br__A__l5": ("infra", False)}, \
        {k: v.reason for k, v in verdicts.items()}
    assert "A.v:8:" in verdicts["Br__A__l5"].reason and "before `l5`" in verdicts["Br__A__l5"].reason
    # l3's own proof is refused where the build stopped, with coqc's error there, at its line in the candidate
    refused = next(layer for layer in verdicts["Br__A__l3"].layers if layer.name == "elaboration")
    assert refused.ok is False and 'The term "I" has type "True"' in refused.reason, refused.reason
    assert verdicts["Br__A__l3"].reason.startswith("elaboration: Br__A__l3.v:9:"), verdicts["Br__A__l3"].reason
    # nothing besides the build's own compile: the items before l3 from its saved prefix (issue 32: before, one compile
    # of the file up to l3 again); l3's own proof is the build's text, and the build's located error in it is coqc's
    # verdict on it (not compiled again)
    assert compiles == [], compiles
    said = next(layer for layer in verdicts["Br__A__l0"].layers if layer.name == "elaboration").evidence["output"]
    assert ("the build's own compile of A.v, saved where coqc stopped (the proof of `l3` open there admitted), for the "
            "3 items before it") in said
    assert next(layer for layer in verdicts["Br__A__l0"].layers if layer.name == "independent_check").ok is True
    # the shared compile's coqchk ran beside its judge session, not after it
    (judge,), (check,) = [r for r in ran if r[0] == "judge"], [r for r in ran if r[0] == "coqchk"]
    assert check[1] < judge[2] and judge[1] < check[2], ran
    # another proof of l3 is compiled and judged as ever
    l3 = next(t for t in load_project(root, {}) if t.task_id == "Br__A__l3")
    fixed = verify_candidate(l3, prover, l3.meta["own_candidate"].replace("exact I.", "reflexivity.").encode(),
                             timeout=300)
    assert (fixed.verdict, fixed.strict) == ("accept", True), fixed.reason
    assert len(compiles) == 1, compiles
    # an error there that may be the machine's (here the build's log says the stack overflowed) is compiled again
    for log in (tmp_path / "cache" / "project-rocq").glob("*/build.log"):
        log.write_text(log.read_text().replace('The term "I" has type', "Stack overflow. The term"))
    again = verify_candidate(l3, prover, l3.meta["own_candidate"].encode(), timeout=300)
    assert again.verdict == "reject" and 'The term "I" has type "True"' in again.reason, again.reason
    assert len(compiles) == 2, compiles


def test_the_shared_compiles_coqchk_is_waited_for_when_it_outlasts_the_judge_session(tmp_path: Path) -> None:
    """The coqchk of the one compile of a broken file's prefix runs beside its judge session; when it takes longer
    (here held back 4 s; a file of proofs by reflection: 3.5 s of coqchk to the session's 0.8 s), it is waited for,
    not killed with the session and started again by the first item (issue 32: its CPU spent twice)."""
    require_tool("coqc")
    from pytest_forall.core.proc import run_command
    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
    from pytest_forall.suites.project import load_project

    root = tmp_path / "lib"
    root.mkdir()
    (root / "_CoqProject").write_text("-R . Slow\nA.v\n")
    (root / "A.v").write_text("".join(f"Lemma l{i} : {i} + 0 = {i}.\nProof. {'exact I' if i == 2 else 'reflexivity'}."
                                      " Qed.\n" for i in range(4)))
    checks: list[str] = []

    def slow_checker(argv: list[str], **kwargs: object) -> object:
        if any(Path(str(a)).name == "coqchk" for a in argv):
            checks.append(" ".join(str(a) for a in argv))
            time.sleep(4)
        return run_command(argv, **kwargs)  # type: ignore[arg-type]

    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300}, runner=slow_checker)
    verdicts = {t.task_id: verify_candidate(t, prover, t.meta["own_candidate"].encode(), timeout=300)
                for t in sorted(load_project(root, {}), key=lambda t: t.task_id)}
    assert {k: (v.verdict, v.strict) for k, v in verdicts.items()} == {
        "Slow__A__l0": ("accept", True), "Slow__A__l1": ("accept", True), "Slow__A__l2": ("reject", False),
        "Slow__A__l3": ("infra", False)}, {k: v.reason for k, v in verdicts.items()}
    assert len(checks) == 1, checks


def _own_verdicts(tmp_path: Path, logical: str, text: str) -> dict[str, Any]:
    """Each item of a one-file library (``A.v`` holding ``text``) judged on its own proof, by task id."""
    require_tool("coqc")
    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
    from pytest_forall.suites.project import load_project

    root = tmp_path / "lib"
    root.mkdir()
    (root / "_CoqProject").write_text(f"-R . {logical}\nA.v\n")
    (root / "A.v").write_text(text)
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300})
    return {t.task_id: verify_candidate(t, prover, t.meta["own_candidate"].encode(), timeout=300)
            for t in sorted(load_project(root, {}), key=lambda t: t.task_id)}


def test_a_break_after_a_proof_leaves_that_proof_compiled(tmp_path: Path) -> None:
    """The build stops at a definition after l1's proof: l1 is the item the shared compile stops at, and its own
    proof, which the build compiled without error, is compiled and accepted (never refused for the error after it)."""
    verdicts = _own_verdicts(tmp_path, "Af", "Lemma l0 : 0 = 0.\nProof. reflexivity. Qed.\nLemma l1 : 1 = 1.\n"
                             "Proof. reflexivity. Qed.\nDefinition bad : nat := true.\nLemma l2 : 2 = 2.\n"
                             "Proof. reflexivity. Qed.\n")
    assert {k: (v.verdict, v.strict) for k, v in verdicts.items()} == {
        "Af__A__l0": ("accept", True), "Af__A__l1": ("accept", True), "Af__A__l2": ("infra", False)}, \
        {k: v.reason for k, v in verdicts.items()}


def test_a_broken_statement_leaves_the_proofs_before_it_judged(tmp_path: Path) -> None:
    """The error in an item's statement (not its proof): the shared compile of the file up to that item fails, and
    each item before it is judged from its own template, as before (never infra for a break after it)."""
    verdicts = _own_verdicts(tmp_path, "St", "Lemma l0 : 0 = 0.\nProof. reflexivity. Qed.\nLemma l1 : 1 = 1.\n"
                             "Proof. reflexivity. Qed.\nLemma l2 : no_such_name = 2.\nProof. reflexivity. Qed.\n")
    assert {k: v.verdict for k, v in verdicts.items()} == {"St__A__l0": "accept", "St__A__l1": "accept",
                                                           "St__A__l2": "infra"}, {k: v.reason for k, v in verdicts.items()}


def test_a_users_build_that_stops_at_a_files_error_names_that_file(tmp_path: Path) -> None:
    """A user's own build (a Makefile) that compiled nothing because the first file does not parse: coqc's located
    error makes it the project's text, not a tool fault; each item names the file and its first error (what the gate
    attributes to the change), not only `make exited 2`."""
    require_tool("coqc")
    require_tool("make")
    from test_project_build import A_V, make_project

    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
    from pytest_forall.suites.project import load_project

    root = make_project(tmp_path / "mk")
    (root / "theories" / "A.v").write_text("Foo Bar.\n" + A_V)
    prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300, "project_build": "make"})
    for task in load_project(root, {"project_build": "make"}):
        verdict = verify_candidate(task, prover, task.meta["own_candidate"].encode(), timeout=300)
        assert verdict.verdict == "infra", verdict.reason
        assert prover.change_fields(task).get("build_break", "").startswith("theories/A.v:1:"), verdict.reason


WARM_B = "Lemma base : 0 = 0.\nProof. reflexivity. Qed.\n"
WARM_A = ("Require Import Wr.B.\nAxiom cheat : forall P : Prop, P.\nLemma l0 : 0 = 0.\nProof. exact base. Qed.\n"
          "Ltac t := reflexivity.\n" + "".join(f"Lemma l{i} : {i} + 0 = {i}.\nProof. {'t' if i == 1 else 'reflexivity'}."
                                                " Qed.\n" for i in range(1, 5)))


def test_a_proof_broken_after_a_run_is_judged_from_that_runs_compile_of_the_same_bytes(tmp_path: Path) -> None:
    """The maintainer's case: a run on the library, then an edit breaks `l3`. `l0`-`l2` are judged from the last
    build's compiled A.v (the file's bytes up to the next item the same, the files it requires compiled to the same
    bytes, the same toolchain and declaration): no compile, no judge session, no coqchk; `l3` failed with coqc's
    error, `l4` infra. The same break after a dependency's meaning changed (B.v's lemma admitted), or after A.v's text
    before an item changed (its tactic now an axiom), is judged from one compile of the new text, never from the last
    build's: those items are not strict."""
    require_tool("coqc")
    from pytest_forall.core.proc import run_command
    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
    from pytest_forall.suites.project import load_project

    root = tmp_path / "lib"
    root.mkdir()
    (root / "_CoqProject").write_text("-R . Wr\nB.v\nA.v\n")
    ran: list[str] = []  # each tool the verification ran (the build's own make is not the prover's)

    def counting(argv: list[str], **kwargs: object) -> object:
        words = [str(a) for a in argv]
        ran.append("judge" if any("ForallJudge" in w for w in words) else
                   "compile A.v" if any(w.endswith("A.v") for w in words) else Path(words[0]).name)
        return run_command(argv, **kwargs)  # type: ignore[arg-type]

    def judged(a_text: str, b_text: str = WARM_B) -> dict[str, Any]:
        (root / "A.v").write_text(a_text)
        (root / "B.v").write_text(b_text)
        ran.clear()
        prover = ProjectRocqProver({"cache_dir": str(tmp_path / "cache"), "timeout": 300}, runner=counting)
        return {t.task_id: verify_candidate(t, prover, t.meta["own_candidate"].encode(), timeout=300)
                for t in sorted(load_project(root, {}), key=lambda t: t.task_id) if t.task_id.startswith("Wr__A")}

    first = judged(WARM_A)
    assert {(v.verdict, v.strict) for v in first.values()} == {("accept", True)}, {k: v.reason for k, v in first.items()}
    broken_a = WARM_A.replace("l3 : 3 + 0 = 3.\nProof. reflexivity.", "l3 : 3 + 0 = 3.\nProof. exact I.")
    broken = judged(broken_a)
    assert {k: (v.verdict, v.strict) for k, v in broken.items()} == {
        "Wr__A__l0": ("accept", True), "Wr__A__l1": ("accept", True), "Wr__A__l2": ("accept", True),
        "Wr__A__l3": ("reject", False), "Wr__A__l4": ("infra", False)}, {k: v.reason for k, v in broken.items()}
    assert 'The term "I" has type "True"' in broken["Wr__A__l3"].reason, broken["Wr__A__l3"].reason
    assert "before `l4`" in broken["Wr__A__l4"].reason, broken["Wr__A__l4"].reason
    # the earlier items' evidence is the kernel's, read from the last build's records: no process ran for them
    assert "compile A.v" not in ran and "judge" not in ran and "coqchk" not in ran, ran
    check = next(layer for layer in broken["Wr__A__l0"].layers if layer.name == "independent_check")
    assert check.ok is True, check

    # the lemma l0 rests on is now admitted in B.v (A.v's bytes as before): l0 is not strict, from the new build's own
    # compile of A.v (saved where it stopped: no compile of A.v besides the build's; before session 16, one more)
    dep = judged(broken_a, WARM_B.replace("Proof. reflexivity. Qed.", "Admitted."))
    assert (dep["Wr__A__l0"].verdict, dep["Wr__A__l0"].strict) == ("accept", False), dep["Wr__A__l0"].reason
    assert ran.count("judge") == 1 and "compile A.v" not in ran and dep["Wr__A__l2"].strict, \
        (ran, dep["Wr__A__l2"].reason)
    # A.v's tactic before l1 is now an axiom (l1's own bytes as before): l1 is not strict, from the new build's compile
    text = judged(broken_a.replace("Ltac t := reflexivity.", "Ltac t := apply cheat."))
    assert (text["Wr__A__l1"].verdict, text["Wr__A__l1"].strict) == ("accept", False), text["Wr__A__l1"].reason
    assert ran.count("judge") == 1 and "compile A.v" not in ran and text["Wr__A__l0"].strict, \
        (ran, text["Wr__A__l0"].reason)


#: a 50-proof file of the library fixture below (cheap proofs: the file's shape, not its cost, is what is tested)
LATE_V = "Definition double (n : nat) : nat := n + n.\n\n" + "".join(
    f"Lemma l{i} : double {i} = {i} + {i}.\nProof. reflexivity. Qed.\n\n" for i in range(50))


def test_a_late_break_in_a_fifty_proof_file_with_no_earlier_build_fails_the_gate_naming_the_file(
        pytester: pytest.Pytester) -> None:
    """Issue 32, cold: a 50-proof library file whose 41st proof breaks, judged with no earlier build in the cache.
    The 40 items before the break are strict, each naming its evidence (the build's own compile of the file, saved
    where it stopped with `l40` admitted, that .vo's judge dump and coqchk); `l40` is failed with coqc's error where the build stopped; the
    9 after it are unconfirmed naming the file and its first error; the gate fails, naming both."""
    big = _library(pytester, "Late", {"Big.v": LATE_V}) / "Big.v"
    args = [*ROCQ, "--forall-project", "lib", "--forall-frontend", "replay"]
    first = pytester.runpytest(*args, "--forall-run-id", "base", f"--forall-cache-dir={pytester.path / 'c1'}")
    assert first.ret == 0, first.stdout.str()
    broken_text = LATE_V.replace("l40 : double 40 = 40 + 40.\nProof. reflexivity.", "l40 : double 40 = 40 + 40.\n"
                                 "Proof. exact I.")
    big.write_text(broken_text)
    line = broken_text[:broken_text.index("exact I.")].count("\n") + 1
    # a fresh cache: no earlier build of the file, the cold path (the build's compile of the file, saved at the break)
    run = pytester.runpytest(*args, "--forall-run-id", "break", f"--forall-cache-dir={pytester.path / 'c2'}",
                             "--forall-baseline", "reports/base", "--forall-gate", "regressions")
    out = run.stdout.str()
    rows = {r["task_id"]: r for r in (json.loads(x) for x in
                                      (pytester.path / "reports" / "break" / "results.jsonl").read_text().splitlines())}
    outcome = {k: r["outcome"] for k, r in rows.items()}
    assert outcome == {**{f"Late__Big__l{i}": "strict" for i in range(40)}, "Late__Big__l40": "failed",
                       **{f"Late__Big__l{i}": "infra" for i in range(41, 50)}}, outcome
    assert run.ret == 1 and "REGRESSED" in out, out
    assert 'The term "I" has type "True"' in rows["Late__Big__l40"]["reason"], rows["Late__Big__l40"]["reason"]
    for i in range(41, 50):  # the file and its first error, nothing compiled for them
        assert rows[f"Late__Big__l{i}"]["reason"].startswith(f"template: theories/Big.v:{line}:"), rows[
            f"Late__Big__l{i}"]["reason"]
        assert rows[f"Late__Big__l{i}"]["change"] == "unconfirmed", rows[f"Late__Big__l{i}"]
    gate = json.loads((pytester.path / "reports" / "break" / "gate.json").read_text())
    assert gate["breaks_build"] and gate["breaks_build"][0].startswith(f"theories/Big.v:{line}:"), gate
    # the evidence each item before the break names: the build's compile saved at l40, its .vo's judge and coqchk
    for i in (0, 39):
        audit = pytester.path / "reports" / "break" / "items" / f"Late__Big__l{i}-coq" / "s0" / "r1"
        layers = {layer["name"]: layer for layer in json.loads((audit / "candidate-verdict.json").read_text())["layers"]}
        said = layers["elaboration"]["output"]
        assert f"before theories/Big.v:{line}, where the build stopped" in said, said
        assert ("the build's own compile of theories/Big.v, saved where coqc stopped (the proof of `l40` open there "
                "admitted), for the 40 items before it") in said, said
        assert layers["independent_check"]["ok"] is True, layers["independent_check"]
