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


def _audited(tmp_path: Path, name: str, text: str, cache: Path) -> tuple[dict[str, Any], Path]:
    """The audit frontend's item on a toy template: its result row and its audit record's directory."""
    from pytest_forall.lang.rocq.backend import RocqProver

    path = tmp_path / f"{name}.v"
    path.write_text(text)
    task = parse_coq(name, path, text)
    ctx = ItemContext(task=task, workspace_root=tmp_path / "ws", workspace_name=name,
                      audit=AuditRecord(tmp_path / "audit" / name, task),
                      prover=RocqProver({"cache_dir": str(cache)}), frontend=AuditFrontend({}),
                      reviewer=None, budget=Budget(), options={"sandbox": "none"}, run_secret=b"certificates")
    return ItemRun(ctx).run(), ctx.audit.directory


def test_an_audit_certificate_says_what_it_shows_and_still_passes_forall_verify(tmp_path: Path,
                                                                                shared_prover_cache: Path) -> None:
    """A certificate was the frozen statement and a one-line generated script: it never said its counterexample.
    Now it starts with a comment whose first line is the finding and the values found, then how it is certified;
    the accepted file, comment and all, is what ``forall verify`` re-accepts. (One audit of a toy: the comment is
    written the same way for every finding, :func:`test_the_header_of_each_finding`.)"""
    require_tool("coqtop")
    row, record = _audited(tmp_path, "wrong", FALSE, shared_prover_cache)
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


# -- the Markdown table for an upstream issue ------------------------------------------------------------------------

COMMIT = "3c9b9268ebd132d482938b8e9d242dd71fc1ebc0"


def _finding_row(tmp_path: Path, upstream: str) -> dict[str, Any]:
    record = tmp_path / "reports" / "run" / "items" / "putnam_1999_b6-coq"
    (record / "accepted" / "derived").mkdir(parents=True)
    (record / "accepted" / "STATEMENT_FALSE.v").write_text("(* certificate *)\n")
    return {"task_id": "putnam_1999_b6", "prover": "rocq", "statement_audit": "false", "digest": "ab" * 32,
            "audit_dir": str(record), "certificate": "accepted/STATEMENT_FALSE.v",
            "certificate_template": "accepted/derived/putnam_1999_b6.v", "upstream": upstream}


def _link_targets(lines: list[str]) -> list[str]:
    """Every link target of Markdown text: inline ``[text](target)``, autolinks ``<target>`` and bare URLs."""
    text = "\n".join(lines)
    return (re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"<([^>\s]+)>", text)
            + re.findall(r"(?<![(<])\b(?:https?|file)://\S+", text))


def test_the_upstream_issue_table_links_upstream_never_to_a_local_path(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The table to paste into an upstream issue named each problem by local ``reports/…`` paths only; now the
    problem links to its file in the upstream repository at the pinned commit, and no link goes anywhere local."""
    from pytest_forall.core.audit import findings_table

    monkeypatch.chdir(tmp_path)  # a run under the working directory: the table shows reports/… paths
    url = f"https://github.com/trishullab/PutnamBench/blob/{COMMIT}/coq/src/putnam_1999_b6.v"
    table = findings_table([_finding_row(tmp_path, url)])
    assert table[2].startswith(f"| [`putnam_1999_b6`]({url}) | false: "), table[2]
    targets = _link_targets(table)
    assert targets == [url], targets
    unknown = findings_table([_finding_row(tmp_path / "other", "")])  # no pinned commit known: no link at all
    assert unknown[2].startswith("| `putnam_1999_b6` | false: ") and _link_targets(unknown) == [], unknown[2]


def test_a_problem_file_knows_its_upstream_address_from_its_checkout(tmp_path: Path) -> None:
    """``upstream``: from a data copy's SOURCE.md (the repository and the commit it names) or from a git checkout
    (origin on GitHub, HEAD, the file as committed); anything else, or a file changed since, has none."""
    from pytest_forall.suites.upstream import upstream_url

    copy = tmp_path / "copy"
    (copy / "coq" / "src").mkdir(parents=True)
    problem = copy / "coq" / "src" / "putnam_1999_b6.v"
    problem.write_text("Theorem t : True.\nProof. Admitted.\n")
    assert upstream_url(str(problem)) == ""  # nothing says where it comes from
    (copy / "SOURCE.md").write_text(f"Statements from the public repository (trishullab/PutnamBench), commit\n{COMMIT} "
                                    "(2026-07-23).\n")
    assert upstream_url(str(problem)) == (f"https://github.com/trishullab/PutnamBench/blob/{COMMIT}/coq/src/"
                                          "putnam_1999_b6.v")
    clone = tmp_path / "clone"
    (clone / "src").mkdir(parents=True)
    (clone / "src" / "a.v").write_text("Theorem a : True.\nProof. Admitted.\n")
    git = ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "a"],
                 ["remote", "add", "origin", "git@github.com:owner/repo.git"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    assert upstream_url(str(clone / "src" / "a.v")) == f"https://github.com/owner/repo/blob/{head}/src/a.v"
    (clone / "src" / "a.v").write_text("Theorem a : False.\nProof. Admitted.\n")
    assert upstream_url(str(clone / "src" / "a.v")) == ""  # not the committed file: no link to it


def test_the_html_defects_table_links_the_problem_upstream(tmp_path: Path) -> None:
    """The HTML page's defects table links the problem to the same upstream address (and its certificate to the
    local file, as a page read on this machine should)."""
    from pytest_forall.cli.report_html import defects_table

    url = f"https://github.com/trishullab/PutnamBench/blob/{COMMIT}/coq/src/putnam_1999_b6.v"
    page = defects_table([_finding_row(tmp_path, url)], tmp_path)
    assert f'<td data-col="problem"><a href="{url}"><code>putnam_1999_b6</code></a></td>' in page, page
    assert '<td data-col="problem"><code>putnam_1999_b6</code></td>' in defects_table(
        [_finding_row(tmp_path / "other", "")], tmp_path)
