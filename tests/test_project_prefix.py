"""Issue 32: a file the project's build stops in is judged from that build's own compile, saved where coqc stopped
(``lang/rocq/project/prefix.py``, ``forall_prefix.ml``), not from a second compile of the file up to the break. The
plugin changes nothing the build writes for a file that compiles, saves only after an error, and every outcome is
the one the second compile gave (docs/verifier.md, "A file that does not build")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import require_tool

GOOD = "Lemma g0 : 1 + 1 = 2.\nProof. reflexivity. Qed.\nDefinition d := 3.\nLemma g1 : d = 3.\nProof. reflexivity. Qed.\n"


def _plugin(cache: Path) -> Path:
    from pytest_forall.lang.rocq.project.prefix import prefix_plugin
    from pytest_forall.lang.rocq.toolchain import Toolchain

    entry = prefix_plugin(cache, "", Toolchain(""))
    assert entry is not None, "the prefix plugin is built for the host's Coq 8.16"
    return entry


def _coqc(cwd: Path, name: str, entry: Path | None, saved: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FORALL_PREFIX_DIR": str(saved), "OCAMLPATH": str(entry)} if entry else dict(os.environ)
    argv = ["coqc", "-q", *(["-l", str(entry / "load.v")] if entry else []), "-R", ".", "P", name]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300)


def test_the_plugin_leaves_a_compiled_file_as_it_was_and_saves_a_broken_one_up_to_its_error(tmp_path: Path) -> None:
    """With the plugin loaded, a file that compiles gets the same ``.vo`` bytes and nothing is saved; a file whose
    second proof fails is saved up to there: coqchk of the saved ``.vo`` finds the first lemma proved and the second
    (the one the error is in) as its only axiom, the third absent."""
    require_tool("coqc")
    require_tool("coqchk")
    entry = _plugin(tmp_path / "cache")
    work, saved = tmp_path / "w", tmp_path / "saved"
    work.mkdir()
    saved.mkdir()
    (work / "G.v").write_text(GOOD)
    assert _coqc(work, "G.v", None, saved).returncode == 0
    plain = (work / "G.vo").read_bytes()
    (work / "G.vo").unlink()
    loaded = _coqc(work, "G.v", entry, saved)
    assert loaded.returncode == 0, loaded.stderr
    assert (work / "G.vo").read_bytes() == plain
    assert list(saved.iterdir()) == []
    (work / "B.v").write_text("Lemma b0 : 2 = 2.\nProof. reflexivity. Qed.\nLemma b1 : 2 + 2 = 5.\nProof. reflexivity. "
                              "Qed.\nLemma b2 : 3 = 3.\nProof. reflexivity. Qed.\n")
    broken = _coqc(work, "B.v", entry, saved)
    assert broken.returncode == 1 and not (work / "B.vo").exists(), broken.stderr
    assert sorted(p.name for p in saved.iterdir()) == ["P.B.admitted", "P.B.vo"]
    assert (saved / "P.B.admitted").read_text() == "b1"  # (the proof it admitted, named in the items' evidence)
    (tmp_path / "chk").mkdir()  # (the saved file is named by its library: put back where P.B is found)
    (tmp_path / "chk" / "B.vo").write_bytes((saved / "P.B.vo").read_bytes())
    check = subprocess.run(["coqchk", "-silent", "-o", "-R", str(tmp_path / "chk"), "P", "-norec", "P.B"],
                           capture_output=True, text=True, check=False, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    said = check.stdout + check.stderr
    assert "Axioms:" in said, said
    axioms = said.split("Axioms:")[1].split("* Constants")[0]
    assert "P.B.b1" in axioms and "P.B.b0" not in axioms and "b2" not in said, said


def _judge(root: Path, cache: Path) -> tuple[dict[str, tuple[str, bool]], list[list[str]], dict[str, str]]:
    from pytest_forall.core.proc import run_command
    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.project.prover import ProjectRocqProver
    from pytest_forall.suites.project import load_project

    compiles: list[list[str]] = []

    def counting(argv: list[str], **kwargs: object) -> object:
        if any(str(a).endswith("A.v") for a in argv):
            compiles.append([str(a) for a in argv])
        return run_command(argv, **kwargs)  # type: ignore[arg-type]

    prover = ProjectRocqProver({"cache_dir": str(cache), "timeout": 300}, runner=counting)
    verdicts = {t.task_id: verify_candidate(t, prover, t.meta["own_candidate"].encode(), timeout=300)
                for t in sorted(load_project(root, {}), key=lambda t: t.task_id)}
    evidence = {k: str(next((layer.evidence.get("output", "") for layer in v.layers if layer.name == "elaboration"),
                            "")) for k, v in verdicts.items()}
    return {k: (v.verdict, v.strict) for k, v in verdicts.items()}, compiles, evidence


LEMMAS = [f"Lemma l{i} : {i} + 0 = {i}.\nProof. reflexivity. Qed.\n" for i in range(4)]


@pytest.mark.parametrize("where", ["in_a_proof", "between_items", "in_a_statement", "in_a_section"])
def test_the_saved_prefix_gives_the_outcomes_of_the_second_compile(where: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The same library judged with the plugin and without it (the second compile of the file up to the item the
    error is in): the same outcome for every item. A proof that fails: with the plugin no compile of the file at all
    (the items before it from the build's saved compile); an error between two items (nothing open to admit): the
    items before it from the saved compile too, the last one's own proof compiled as without the plugin; a statement
    that fails: the items before it from the saved compile, that item compiled on its own; a proof that fails in a
    section (the plugin saves nothing while one is open): the second compile, as without it."""
    require_tool("coqc")
    lemmas = list(LEMMAS)
    if where == "in_a_proof":
        lemmas[2] = "Lemma l2 : 2 + 0 = 2.\nProof. exact I. Qed.\n"
    elif where == "between_items":
        lemmas[1] += "Check no_such_name.\n"
    elif where == "in_a_statement":
        lemmas[2] = "Lemma l2 : 2 + 0 = no_such_name.\nProof. reflexivity. Qed.\n"
    else:  # (nothing saved while a section is open: the second compile, as without the plugin)
        lemmas[2] = "Section S.\nLemma l2 : 2 + 0 = 2.\nProof. exact I. Qed.\nEnd S.\n"
    root = tmp_path / "lib"
    root.mkdir()
    (root / "_CoqProject").write_text("-R . Br\nA.v\n")
    (root / "A.v").write_text("".join(lemmas))
    saved, saved_compiles, said = _judge(root, tmp_path / "with")
    from pytest_forall.lang.rocq.project import build

    monkeypatch.setattr(build, "prefix_plugin", lambda *args: None)
    compiled, compiled_compiles, _ = _judge(root, tmp_path / "without")
    assert saved == compiled, (saved, compiled)
    assert saved["Br__A__l0"] == ("accept", True) and saved["Br__A__l3"][0] == "infra", saved
    if where == "in_a_section":
        assert saved_compiles == compiled_compiles and saved_compiles, (saved_compiles, compiled_compiles)
        assert "saved where coqc stopped" not in said["Br__A__l0"], said
    elif where == "in_a_statement":
        # l2 declared nothing: l0 and l1 from the saved compile (before, each from its own compile after the file up
        # to l2 failed), l2's template compiled and failing as before
        assert len(saved_compiles) < len(compiled_compiles), (saved_compiles, compiled_compiles)
        assert "the build's own compile of A.v, saved where coqc stopped (no proof open there)" in said["Br__A__l0"]
    elif where == "in_a_proof":
        assert saved["Br__A__l2"] == ("reject", False), saved
        assert saved_compiles == [] and len(compiled_compiles) == 1, (saved_compiles, compiled_compiles)
        assert "the build's own compile of A.v, saved where coqc stopped (the proof of `l2` open there admitted)" \
            in said["Br__A__l0"], said
    else:
        # the error after l1's proof: l0 and l1 from the saved compile (l1 proved there), l1's own proof compiled (it
        # may hold the error as far as the build's log can say); without the plugin the file up to l1 first
        assert len(saved_compiles) == 1 and len(compiled_compiles) == 2, (saved_compiles, compiled_compiles)
        assert "the build's own compile of A.v, saved where coqc stopped (no proof open there)" in said["Br__A__l0"]


def test_a_cache_path_with_a_space_builds_without_the_plugin(tmp_path: Path) -> None:
    """make splits the build's ``COQEXTRAFLAGS`` at spaces: with the plugin's loader under such a path every coqc of
    the user's build would fail, so the build runs without it (a broken file's prefix is compiled again)."""
    from pytest_forall.lang.rocq.project.prefix import prefix_plugin
    from pytest_forall.lang.rocq.toolchain import Toolchain

    require_tool("coqc")
    assert prefix_plugin(tmp_path / "my cache", "", Toolchain("")) is None
    assert prefix_plugin(tmp_path / "cache", "", Toolchain("")) is not None
