"""What a finding's record tells a maintainer without help (issue 33, item 17): an audit certificate says in its
first line what it shows and how it is certified, and still passes ``forall verify``; the Markdown table for an
upstream issue links the problem upstream, never to a local path."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, require_tool
from pytest_forall.agents.portfolio import AuditFrontend
from pytest_forall.core.accept import AuditRecord
from pytest_forall.core.model import Budget
from pytest_forall.core.protocol import ItemContext, ItemRun
from pytest_forall.lang.rocq.problem import parse_coq

#: false for n = 1
FALSE = "Require Import Arith.\nTheorem wrong (n : nat) (h : n > 0) : n * n > n.\nProof. Admitted.\n"


def _audited(tmp_path: Path, name: str, text: str) -> tuple[dict[str, Any], Path]:
    """The audit frontend's item on a toy template: its result row and its audit record's directory."""
    from pytest_forall.lang.rocq.backend import RocqProver

    path = tmp_path / f"{name}.v"
    path.write_text(text)
    task = parse_coq(name, path, text)
    ctx = ItemContext(task=task, workspace_root=tmp_path / "ws", workspace_name=name,
                      audit=AuditRecord(tmp_path / "audit" / name, task),
                      prover=RocqProver({"cache_dir": str(tmp_path / "cache")}), frontend=AuditFrontend({}),
                      reviewer=None, budget=Budget(), options={"sandbox": "none"}, run_secret=b"certificates")
    return ItemRun(ctx).run(), ctx.audit.directory


def test_an_audit_certificate_says_what_it_shows_and_still_passes_forall_verify(tmp_path: Path) -> None:
    """A certificate was the frozen statement and a one-line generated script: it never said its counterexample.
    Now it starts with a comment whose first line is the finding and the values found, then how it is certified;
    the accepted file, comment and all, is what ``forall verify`` re-accepts. (One audit of a toy: the comment is
    written the same way for every finding, :func:`test_the_header_of_each_finding`.)"""
    require_tool("coqtop")
    row, record = _audited(tmp_path, "wrong", FALSE)
    assert row["outcome"] == "statement_false", row["reason"]
    certificate = (record / row["certificate"]).read_text()
    assert re.match(r"\(\* statement_false: the statement is false for n := 1 \(by [\w-]+\)\.\n", certificate), \
        certificate[:400]
    header = certificate[:certificate.index("*)")]
    assert "How it is certified: by the verifier" in header and "coqchk re-checks" in header, header
    assert f"--template derived/{Path(row['certificate_template']).name} --candidate " \
           f"{Path(row['certificate']).name}" in " ".join(header.split()), header
    checked = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "verify", "--prover", "rocq",
                              "--template", str(record / row["certificate_template"]),
                              "--candidate", str(record / row["certificate"])],
                             capture_output=True, text=True, cwd=REPO, timeout=600, check=False)
    assert checked.returncode == 0 and "verdict: accept" in checked.stdout, checked.stdout + checked.stderr
    assert f"sha256={row['digest']}" in checked.stdout  # the very file the run accepted, comment included


@pytest.mark.parametrize(("finding", "described", "first"), [
    ("false", "x := 2, y := (3 * 1) (by closers)",
     "statement_false: the statement is false for x := 2, y := (3 * 1) (by closers)."),
    ("false", "no variable instantiated (by lia)",
     "statement_false: the statement is false (no variable instantiated (by lia))."),
    ("vacuous", "by zero-witness", "vacuous: the statement's hypotheses contradict each other (found by zero-witness)."),
    ("inner_vacuous", "by closers",
     "inner_vacuous: a premise inside the statement's conclusion can never hold (found by closers)."),
    ("false", "f := (fun x => x *) (by ( *odd*) )",
     "statement_false: the statement is false for f := (fun x => x * ) (by ( *odd* ) )."),
])
def test_the_header_of_each_finding(tmp_path: Path, finding: str, described: str, first: str) -> None:
    """Each finding's first line names its class (the outcome the item ends with) and what was found; a value that
    holds a comment delimiter cannot end the comment early (the certificate would not compile)."""
    from pytest_forall.core.audit import derived_tasks
    from pytest_forall.lang.rocq.certificate import certificate_header

    text = "Require Import Arith.\nTheorem t (n : nat) (h : n > 0) : n = 1.\nProof. Admitted.\n"
    path = tmp_path / "t.v"
    path.write_text(text)
    task = parse_coq("t", path, text)
    derived = derived_tasks(task)
    # (this statement has no inner premise: the header takes only the derived task's theorem and file names)
    header = certificate_header(task, finding, derived.get(finding, derived["vacuous"]), described)
    assert header.startswith(f"(* {first}\n"), header
    assert header.endswith(" *)\n") and header.count("*)") == 1 and header.count("(*") == 1, header
