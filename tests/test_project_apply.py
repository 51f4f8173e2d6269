"""``forall apply`` (issue 38): accepted proofs of a project's admitted lemmas land in the project's own files.

Fixture library tests/fixtures/project_rocq_apply (``-Q theories Ap``): ``Nat2.v`` has two admitted lemmas
(``double_spec``, used by the later ``double_mul``, and ``double_mono``); ``Use.v`` has three (``quad_spec`` without
an opener, ``quad_mono``, ``quad_le``). tests/fixtures/project_rocq_apply_proofs holds a replayed proof of each:
``double_spec`` and ``quad_spec`` bring a helper lemma; ``quad_mono``'s helper is named ``double_0`` (shadowing
``Nat2.double_0``, which the later ``quad_0`` uses: it builds up to its lemma, not in the whole file); ``quad_le``'s
helper is named ``aux_later``, like a later lemma of ``Use.v``.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_model_server import ScriptedModelServer

from conftest import require_tool
from pytest_forall.agents.claude_code import ClaudeCodeFrontend
from pytest_forall.cli import main
from pytest_forall.lang.rocq.splice import SpliceError, proof_splice
from pytest_forall.suites.project import load_project
from pytest_forall.suites.project_patch import Accepted, file_digest, plan_file

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROJECT = FIXTURES / "project_rocq_apply"
PROOFS = FIXTURES / "project_rocq_apply_proofs"
APPLIED = {"Ap__Nat2__double_spec", "Ap__Nat2__double_mono", "Ap__Use__quad_spec"}
HELPERS = {"Ap__Nat2__double_spec_helper", "Ap__Use__quad_helper"}
LEFT_OUT = {"Ap__Use__quad_mono", "Ap__Use__quad_le"}
BASE = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]


def _accepted(task_id: str, root: Path = PROJECT) -> Accepted:
    task = next(t for t in load_project(root, {}) if t.task_id == task_id)
    return Accepted(task_id, task_id, task.prover, root, str(task.meta["project_file"]),
                    int(task.meta["statement_offset"]), str(task.meta["file_digest"]),
                    (PROOFS / f"{task_id}.v").read_text())


def _changed_lines(old: str, new: str) -> list[int]:
    """The lines (1-based) of ``old`` that a line diff replaces or deletes, or before which it inserts."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    return [line + 1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal"
            for line in (range(i1, i2) if i2 > i1 else [i1])]


def _lemma_lines(text: str, name: str) -> range:
    """From the lemma's statement line to its ``Admitted.`` line."""
    start = text[:text.index(f"Lemma {name} ")].count("\n") + 1
    end = text[:text.index("Admitted.", text.index(f"Lemma {name} "))].count("\n") + 1
    return range(start, end + 1)


def test_a_file_s_patch_touches_only_its_lemmas_and_their_helpers() -> None:
    """Two accepted lemmas of one file: one edit each (the helper right before the statement, the proof in place of
    the admitted attempt), merged; the rest of the file byte for byte; the file still has every later lemma."""
    text = (PROJECT / "theories" / "Nat2.v").read_text()
    plan = plan_file(PROJECT, "theories/Nat2.v", text,
                     [_accepted("Ap__Nat2__double_mono"), _accepted("Ap__Nat2__double_spec")])
    assert plan.left_out == [] and [p.task_id for p in plan.applied] == ["Ap__Nat2__double_spec",
                                                                         "Ap__Nat2__double_mono"]
    new = plan.new_text
    allowed = set(_lemma_lines(text, "double_spec")) | set(_lemma_lines(text, "double_mono"))
    assert set(_changed_lines(text, new)) <= allowed, plan.diff()
    assert "Admitted." not in new and "intros n.\nAdmitted" not in new
    assert ("Lemma double_spec_helper : forall n, n + n = 2 * n.\nProof. intros n. lia. Qed.\n\n"
            "Lemma double_spec : forall n, double n = 2 * n.\nProof.\n  intros n. unfold double. "
            "apply double_spec_helper.\nQed.\n") in new
    assert new.endswith("Lemma double_mul : forall n, double n = n * 2.\nProof. intros n. rewrite double_spec. lia. "
                        "Qed.\n")  # the lemma that uses double_spec is still there, untouched
    assert plan.diff().startswith("--- a/theories/Nat2.v\n+++ b/theories/Nat2.v\n")


def test_a_lemma_without_an_opener_gets_the_candidate_s_and_a_clashing_helper_is_left_out() -> None:
    """``quad_spec`` has no ``Proof.`` in the file: the candidate's opener and proof replace ``Admitted.``;
    ``quad_le``'s helper ``aux_later`` is declared again later in the file: left out, saying so, while the rest applies."""
    text = (PROJECT / "theories" / "Use.v").read_text()
    plan = plan_file(PROJECT, "theories/Use.v", text, [_accepted("Ap__Use__quad_spec"), _accepted("Ap__Use__quad_le")])
    assert [p.task_id for p in plan.applied] == ["Ap__Use__quad_spec"]
    assert plan.left_out == [("Ap__Use__quad_le",
                              "its helper `aux_later` clashes with `aux_later` declared at line 21 of theories/Use.v")]
    assert ("Lemma quad_spec : forall n, quad n = 4 * n.\nProof.\n  intros n. apply quad_helper.\nQed.\n"
            in plan.new_text)
    assert set(_changed_lines(text, plan.new_text)) <= set(_lemma_lines(text, "quad_spec"))


def test_a_check_that_fails_leaves_that_item_out_and_keeps_the_others() -> None:
    """With a check of the whole file (``forall apply`` compiles it), an item whose file does not build is left out
    with the check's words, and the item before it is still applied."""
    text = (PROJECT / "theories" / "Use.v").read_text()
    plan = plan_file(PROJECT, "theories/Use.v", text,
                     [_accepted("Ap__Use__quad_spec"), _accepted("Ap__Use__quad_mono")],
                     check=lambda new: "double_0 has another type" if "Lemma double_0" in new else "")
    assert [p.task_id for p in plan.applied] == ["Ap__Use__quad_spec"]
    assert plan.left_out == [("Ap__Use__quad_mono", ("its proof does not build in the whole file theories/Use.v: "
                                                    "double_0 has another type"))]
    assert "Lemma double_0" not in plan.new_text


def test_a_candidate_that_is_not_a_proof_of_the_file_s_lemma_is_not_spliced() -> None:
    """Text before the lemma that is not the file's, an admitted candidate, a statement that moved: refused."""
    text = (PROJECT / "theories" / "Nat2.v").read_text()
    good = _accepted("Ap__Nat2__double_mono")
    with pytest.raises(SpliceError, match="before the lemma"):
        proof_splice(text, good.statement_offset, good.candidate.replace("n + n", "n + n + 0", 1))
    with pytest.raises(SpliceError, match="ends in Admitted"):
        head, _, tail = good.candidate.rpartition("Qed.")
        proof_splice(text, good.statement_offset, head + "Admitted." + tail)
    with pytest.raises(SpliceError, match="no statement"):
        proof_splice(text, good.statement_offset + 1, good.candidate)
    lemma = good.candidate[good.statement_offset:]
    with pytest.raises(SpliceError, match="more than once"):  # the first one inside a helper module
        proof_splice(text, good.statement_offset,
                     good.candidate[:good.statement_offset] + "Module H.\n" + lemma + "End H.\n" + lemma)
    with pytest.raises(SpliceError, match="after the lemma's proof"):
        proof_splice(text, good.statement_offset, good.candidate + "Lemma extra : True.\nProof. exact I. Qed.\n")
    assert proof_splice(text, good.statement_offset, good.candidate + "End Closing.\n").end > good.statement_offset


def test_an_admitted_lemma_in_a_section_keeps_the_template_s_opener(tmp_path: Path) -> None:
    """Coq generalises an admitted lemma over every section variable, a proved one over those it uses: the template's
    ``Proof using All.`` (which keeps the project's statement) replaces the file's ``Proof.`` with the proof; the
    template's closing ``End`` after the proof is not part of the edit."""
    (tmp_path / "_CoqProject").write_text("-R . S\nA.v\n")
    text = ("Section Sec.\nVariable n : nat.\nVariable m : nat.\nLemma l : n = n.\nProof.\n  idtac.\nAdmitted.\n"
            "Lemma k : m = m.\nProof. reflexivity. Qed.\nEnd Sec.\n")
    (tmp_path / "A.v").write_text(text)
    task = next(t for t in load_project(tmp_path, {}) if t.task_id == "S__A__l")
    assert task.template.endswith("Lemma l : n = n.\nProof using All.\nAdmitted.\nEnd Sec.\n")
    candidate = task.template.replace("Proof using All.\nAdmitted.", "Proof using All.\n  reflexivity.\nQed.")
    edit = proof_splice(text, int(task.meta["statement_offset"]), candidate)
    assert text[:edit.start] + edit.replacement + text[edit.end:] == text.replace(
        "Proof.\n  idtac.\nAdmitted.", "Proof using All.\n  reflexivity.\nQed.")


def test_a_file_with_crlf_line_ends_keeps_them(tmp_path: Path) -> None:
    """The suite reads ``\r\n`` as ``\n`` (its offsets count so); the file written back keeps its ``\r\n``."""
    from pytest_forall.suites.project_patch import write_text_as

    path = tmp_path / "A.v"
    path.write_bytes(b"Lemma a : True.\r\nAdmitted.\r\n")
    write_text_as(path, "Lemma a : True.\nProof. exact I. Qed.\n")
    assert path.read_bytes() == b"Lemma a : True.\r\nProof. exact I. Qed.\r\n"


@pytest.mark.parametrize("rel", ["../outside/B.v", "/tmp/B.v", "sub/../../B.v"])
def test_a_run_record_naming_a_file_outside_the_project_is_not_read_back(tmp_path: Path, rel: str) -> None:
    """``forall apply`` writes where an item's task record says its file is: a record (edited, or of another origin)
    naming a file outside the project's root is a problem of that item, never a path apply would write."""
    from pytest_forall.lang.project import SUITE
    from pytest_forall.suites.project_patch import read_accepted

    audit = tmp_path / "reports" / "run" / "items" / "T__B__x"
    (audit / "accepted").mkdir(parents=True)
    (audit / "accepted" / "T__B__x.v").write_text("Lemma x : True.\nProof. exact I. Qed.\n")
    meta = {"project_root": str(tmp_path / "proj"), "project_file": rel, "statement_offset": 0, "admitted": True,
            "candidate_name": "T__B__x.v", "file_digest": ""}
    (audit / "task.json").write_text(json.dumps({"suite": SUITE, "prover": "rocq", "meta": meta}))
    got = read_accepted(audit, "T__B__x")
    assert isinstance(got, str) and "outside the project" in got, got
    meta["project_file"] = "B.v"
    (audit / "task.json").write_text(json.dumps({"suite": SUITE, "prover": "rocq", "meta": meta}))
    assert isinstance(read_accepted(audit, "T__B__x"), Accepted)


# --- end to end, real coqc ----------------------------------------------------------------------------------


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", *BASE, *args], cwd=cwd, capture_output=True, text=True,
                          check=False)


def _rows(run: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    return {row["task_id"]: row for row in rows}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's cache directory: the library's build (keyed by its content) is made once for its runs."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    """A copy of the library, its library-mode run before (``reports/base``) and a replay of the stored proofs of its
    admitted lemmas (``reports/found``)."""
    require_tool("coqc")
    where = tmp_path_factory.mktemp("apply")
    (where / "pytest.ini").write_text("[pytest]\n")
    shutil.copytree(PROJECT, where / "proj")
    base = _pytest(where, "--forall-project=proj", "--forall-frontend=replay", "--forall-run-id=base",
                   f"--forall-cache-dir={cache}")
    assert base.returncode == 1, base.stdout[-3000:]  # the admitted lemmas fail: the project has no proof of them
    run = _pytest(where, "--forall-project=proj", "--forall-frontend=replay", f"--forall-proofs={PROOFS}",
                  "-m", "admitted", "--forall-run-id=found", f"--forall-cache-dir={cache}")
    assert run.returncode == 0, run.stdout[-3000:]
    return where


def test_the_run_names_each_item_s_patch_and_the_reports_list_them(found: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Every admitted lemma's honest proof is accepted; its row names its file's patch (two lemmas of one file: one
    patch), or why its proof is in none; ``forall report`` (Markdown) and its HTML page list the patches."""
    rows = _rows(found / "reports" / "found")
    assert {k: r["outcome"] for k, r in rows.items()} == dict.fromkeys(APPLIED | LEFT_OUT, "strict")
    assert {k: r.get("patch") for k, r in rows.items() if r.get("patch")} == {
        "Ap__Nat2__double_spec": "patches/theories/Nat2.v.patch",
        "Ap__Nat2__double_mono": "patches/theories/Nat2.v.patch",
        "Ap__Use__quad_spec": "patches/theories/Use.v.patch", "Ap__Use__quad_mono": "patches/theories/Use.v.patch"}
    assert "clashes with `aux_later`" in rows["Ap__Use__quad_le"]["patch_problem"]
    patch = (found / "reports" / "found" / "patches" / "theories" / "Nat2.v.patch").read_text()
    assert patch.count("--- a/theories/Nat2.v") == 1 and "+Lemma double_spec_helper" in patch and "-Admitted." in patch
    assert main(["report", str(found / "reports" / "found"), "--html", str(found / "page.html")]) == 0
    out = capsys.readouterr().out
    assert "- `patches/theories/Nat2.v.patch`: Ap__Nat2__double_mono, Ap__Nat2__double_spec" in out
    assert "not in a patch: Ap__Use__quad_le: its helper `aux_later` clashes" in out
    assert 'href="reports/found/patches/theories/Use.v.patch"' in (found / "page.html").read_text()


def test_apply_check_says_what_applies_and_writes_nothing(found: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--check`` compiles each patched file in the project's build: ``quad_mono``'s helper breaks the later
    ``quad_0`` (coqc's error named), ``quad_le``'s clashes; the rest applies; no file changes."""
    before = {p: p.read_bytes() for p in (found / "proj" / "theories").glob("*.v")}
    status = main(["apply", str(found / "reports" / "found"), "--check"])
    out = capsys.readouterr().out
    assert status == 1, out
    assert "applies: theories/Nat2.v (Ap__Nat2__double_spec, Ap__Nat2__double_mono)" in out
    assert "applies: theories/Use.v (Ap__Use__quad_spec)" in out
    assert "left out: Ap__Use__quad_mono: its proof does not build in the whole file theories/Use.v:" in out
    assert 'The term "double_0" has type' in out
    assert "left out: Ap__Use__quad_le: its helper `aux_later` clashes" in out
    assert {p: p.read_bytes() for p in before} == before


def test_apply_refuses_a_file_edited_after_the_run(found: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A project file edited after the run: exit 4, one line naming it, and nothing written (not the other file)."""
    use = found / "proj" / "theories" / "Use.v"
    nat2 = found / "proj" / "theories" / "Nat2.v"
    original, nat2_before = use.read_text(), nat2.read_bytes()
    use.write_text(original + "(* edited after the run *)\n")
    try:
        status = main(["apply", str(found / "reports" / "found")])
        captured = capsys.readouterr()
        assert status == 4
        assert captured.err.splitlines() == [f"forall apply: {use} changed since the run found; nothing written"]
        assert nat2.read_bytes() == nat2_before and use.read_text().endswith("(* edited after the run *)\n")
    finally:
        use.write_text(original)


def test_apply_writes_the_proofs_the_build_passes_and_the_gated_rejudge_shows_them_fixed(
        found: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``forall apply`` writes the three applicable proofs, leaves the two others out with their reasons, then re-judges
    the library gated against the run from before: each applied lemma ``fixed``, its helper ``new``, every other item
    ``same`` (the lemma resting on ``double_spec`` too: rules-only before, strict now); the project's own build
    (coq_makefile + make) passes; each file's diff touches only the applied lemmas and their helpers."""
    require_tool("coq_makefile")
    proj = found / "proj"
    before = {name: (proj / "theories" / name).read_text() for name in ("Nat2.v", "Use.v")}
    status = main(["apply", str(found / "reports" / "found"), "--baseline", str(found / "reports" / "base")])
    out = capsys.readouterr().out
    assert status == 0, out[-3000:]
    assert "left out: Ap__Use__quad_mono" in out and "left out: Ap__Use__quad_le" in out
    rows = _rows(found / "reports" / "found-applied")
    assert {k: r["change"] for k, r in rows.items() if k in APPLIED} == dict.fromkeys(APPLIED, "fixed")
    assert {k: r["change"] for k, r in rows.items() if k in HELPERS} == dict.fromkeys(HELPERS, "new")
    others = {k: r["change"] for k, r in rows.items() if k not in APPLIED | HELPERS}
    assert others == dict.fromkeys(others, "same") and len(others) == 7
    assert {k: r["outcome"] for k, r in rows.items() if k not in LEFT_OUT} == dict.fromkeys(set(rows) - LEFT_OUT,
                                                                                             "strict")
    assert "kernel statements: 10 of 10 items unchanged, 0 changed, 0 not read after the apply" in out
    after = {name: (proj / "theories" / name).read_text() for name in before}
    assert set(_changed_lines(before["Nat2.v"], after["Nat2.v"])) <= (
        set(_lemma_lines(before["Nat2.v"], "double_spec")) | set(_lemma_lines(before["Nat2.v"], "double_mono")))
    assert set(_changed_lines(before["Use.v"], after["Use.v"])) <= set(_lemma_lines(before["Use.v"], "quad_spec"))
    assert after["Use.v"].count("Admitted.") == 2 and "Admitted." not in after["Nat2.v"]
    assert file_digest(after["Nat2.v"]) != file_digest(before["Nat2.v"])
    build = found / "build"
    shutil.copytree(proj, build)
    made = subprocess.run("coq_makefile -f _CoqProject -o Makefile && make", shell=True, cwd=build,
                          capture_output=True, text=True, check=False)
    assert made.returncode == 0, made.stdout + made.stderr
    assert (build / "theories" / "Use.vo").is_file()


def test_a_proof_found_by_a_real_agent_cli_lands_in_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str], cache: Path) -> None:
    """End to end through a real agent CLI: Claude Code, driven by the scripted model server, writes an honest proof
    with a helper of an admitted lemma of the project; the verifier accepts it, the run's row names its patch, and
    ``forall apply`` puts it into the project, whose library-mode re-judging passes (the lemma that rests on it is
    strict now)."""
    require_tool("coqc")
    problem = ClaudeCodeFrontend().probe()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(problem)
        pytest.skip(problem)
    task_id = "Ap__Nat2__double_spec"
    proof = (PROOFS / f"{task_id}.v").read_text()
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    shutil.copytree(PROJECT, tmp_path / "proj")
    server = ScriptedModelServer({"roles": [{"name": "actor", "steps": [
        {"read": {"path": f"{task_id}.v"}}, {"write": {"path": f"{task_id}.v", "content": proof}},
        {"text": "Submitted."}]}]}).start()
    try:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-scripted")
        run = _pytest(tmp_path, "--forall-project=proj", "--forall-frontend=claude-code", "--forall-reviewer=none",
                      f"--forall-provider-url={server.url}", "--forall-max-retries=0", "-k", "double_spec",
                      "-m", "admitted", "--forall-run-id=agent", f"--forall-cache-dir={cache}",
                      "--forall-cache=off")  # the build is shared; the verdict is this run's own
    finally:
        server.stop()
    rows = _rows(tmp_path / "reports" / "agent")
    assert rows[task_id]["outcome"] == "strict", run.stdout[-3000:]
    assert rows[task_id]["patch"] == "patches/theories/Nat2.v.patch"
    assert main(["apply", str(tmp_path / "reports" / "agent")]) == 0, capsys.readouterr().out[-3000:]
    text = (tmp_path / "proj" / "theories" / "Nat2.v").read_text()
    assert "Lemma double_spec_helper" in text and "apply double_spec_helper.\nQed." in text
    assert text.count("Admitted.") == 1  # double_mono's, not found in this run
    applied = _rows(tmp_path / "reports" / "agent-applied")
    assert applied["Ap__Nat2__double_mul"]["outcome"] == applied[task_id]["outcome"] == "strict"
    assert "Ap__Nat2__double_mono" not in applied  # still admitted: -m "not admitted"


def _apply_a_helper(tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str], head: str, later: str,
                    helper: str) -> tuple[int, str]:
    """A project ``T`` (``A.v``: ``two := 2``; ``B.v``: ``head``, the admitted ``x : True``, then ``later``), a replayed
    proof of ``x`` that brings ``helper`` (accepted strict), and ``forall apply`` of that run: its status and output."""
    require_tool("coqc")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "_CoqProject").write_text("-R . T\nA.v\nB.v\n")
    (proj / "A.v").write_text("Definition two := 2.\n")
    (proj / "B.v").write_text(head + "Lemma x : True.\nProof.\nAdmitted.\n\n" + later)
    proofs = tmp_path / "proofs"
    proofs.mkdir()
    (proofs / "T__B__x.v").write_text(head + helper + "\n\nLemma x : True.\nProof.\n  exact I.\nQed.\n")
    run = _pytest(tmp_path, "--forall-project=proj", "--forall-frontend=replay", f"--forall-proofs={proofs}",
                  "-m", "admitted", "--forall-run-id=found", f"--forall-cache-dir={cache}")
    assert _rows(tmp_path / "reports" / "found")["T__B__x"]["outcome"] == "strict", run.stdout[-3000:]
    status = main(["apply", str(tmp_path / "reports" / "found")])
    return status, capsys.readouterr().out


def test_apply_flags_a_later_statement_a_helper_changed(tmp_path: Path, cache: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A helper that builds everywhere but changes what a later lemma states (``two`` declared again before it: the
    later ``l : two = 2`` now names the helper, and its proof still passes): ``forall apply`` compares every item's
    statement as the kernel reads it before and after, names the changed one and exits 1."""
    status, out = _apply_a_helper(tmp_path, cache, capsys, "From T Require Import A.\n\n",
                                  "Lemma l : two = 2.\nProof. reflexivity. Qed.\n", "Definition two := 1 + 1.")
    assert status == 1, out[-3000:]
    assert "statement changed: T__B__l: the kernel reads another statement after the apply" in out
    assert "kernel statements: 1 of 2 items unchanged, 1 changed, 0 not read after the apply" in out
    assert _rows(tmp_path / "reports" / "found-applied")["T__B__l"]["outcome"] == "strict"  # its proof still passes


def test_apply_flags_a_later_definition_a_helper_changed(tmp_path: Path, cache: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A helper that changes what a later *definition* means while every item's statement reads the same: ``two``
    declared again before the lemma, so the later ``four := two + two`` is 2, not 4, and ``l : four >= 2`` (its
    statement names ``four``, unchanged) still passes. ``forall apply`` compares every declaration the kernel has of
    the project's files (types; bodies of transparent definitions) before and after, names ``four``, exits 1."""
    later = "Definition four := two + two.\n\nLemma l : four >= 2.\nProof. unfold four, two. lia. Qed.\n"
    status, out = _apply_a_helper(tmp_path, cache, capsys, "From T Require Import A.\nRequire Import Lia.\n\n", later,
                                  "Definition two := 1.")
    assert later in (tmp_path / "proj" / "B.v").read_text()  # the file's own text is untouched ...
    assert status == 1, out[-3000:]  # ... but what it means is not: said, with the declaration named
    assert "declaration changed: B.v four: the kernel reads another declaration after the apply" in out, out[-3000:]
    assert "kernel statements: 2 of 2 items unchanged" in out
    assert _rows(tmp_path / "reports" / "found-applied")["T__B__l"]["outcome"] == "strict"  # its proof still passes


def test_items_of_one_file_finishing_at_once_make_one_patch_with_both(tmp_path: Path) -> None:
    """Two accepted lemmas of one file finishing at the same time (two pytest-xdist workers): each writes its index
    entry and makes the file's patch again under the run's lock; the patch has both, each row names it."""
    import threading

    from pytest_forall.core.accept import AuditRecord
    from pytest_forall.core.model import sha256_bytes
    from pytest_forall.suites.project_patch import record_patch

    run_dir = tmp_path / "run"
    tasks = {t.task_id: t for t in load_project(PROJECT, {})}
    results = []
    for task_id in ("Ap__Nat2__double_spec", "Ap__Nat2__double_mono"):
        record = AuditRecord(run_dir / "items" / task_id, tasks[task_id])
        data = (PROOFS / f"{task_id}.v").read_bytes()
        record.write_bytes(f"accepted/{task_id}.v", data)
        results.append({"task_id": task_id, "nodeid": task_id, "audit_dir": str(record.directory),
                        "digest": sha256_bytes(data)})
    fields: dict[str, dict[str, str]] = {}
    start = threading.Barrier(len(results))

    def finish(result: dict[str, str]) -> None:
        start.wait()
        fields[result["task_id"]] = record_patch(run_dir, result)

    threads = [threading.Thread(target=finish, args=(result,)) for result in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fields == {task_id: {"patch": "patches/theories/Nat2.v.patch"} for task_id in fields} and len(fields) == 2
    patch = (run_dir / "patches" / "theories" / "Nat2.v.patch").read_text()
    assert "+Lemma double_spec_helper" in patch and "+  intros n m H. unfold double. lia." in patch
    assert patch.count("-Admitted.") == 2


def test_a_patch_that_cannot_be_made_is_said_in_the_row_and_the_verdict_stands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook that makes the patch as an item finishes never turns the item's verdict into a crash: an error making
    the patch is the row's ``patch_problem``; an item that is not a project one gets no field."""
    from pytest_forall.plugin import patches
    from pytest_forall.suites import project_patch

    def broken(run_dir: Path, result: dict[str, str]) -> dict[str, str]:
        raise OSError("disk full")

    monkeypatch.setattr(project_patch, "record_patch", broken)
    writer = patches.PatchWriter(None)  # type: ignore[arg-type]  # the config is read only once a patch is made
    row = {"suite": "project", "outcome": "strict", "audit_dir": str(tmp_path / "run" / "items" / "x")}
    writer.pytest_forall_item_finished("x", row)
    assert row["patch_problem"] == "the patch could not be made: disk full" and row["outcome"] == "strict"
    other = {"suite": "putnam", "outcome": "strict", "audit_dir": str(tmp_path / "run" / "items" / "y")}
    writer.pytest_forall_item_finished("y", other)
    assert "patch" not in other and "patch_problem" not in other
