"""The comment an audit certificate starts with: what it shows, in one line a person reads, and how it is certified.

Issue 33, item 17: a certificate was a generated one-line script after the frozen statement; whoever opened it
(a maintainer reading an upstream issue) learnt neither the counterexample nor why to believe it. The comment is
a description only: what certifies the finding is the verifier's check of the proof below it, which ignores
comments, so the comment can neither make a certificate pass nor fail.
"""

from __future__ import annotations

from pytest_forall.core.audit import AUDIT_FALSE, CLAIM_BY_FINDING
from pytest_forall.core.model import Task

#: what each finding's first line says before the search's description of it
SAYS = {"statement_false": "the statement is false", "vacuous": "the statement's hypotheses contradict each other",
        "inner_vacuous": "a premise inside the statement's conclusion can never hold"}


def _comment_safe(text: str) -> str:
    """``text`` on one line that cannot end (or nest) the Rocq comment it is put in."""
    return " ".join(text.replace("(*", "( *").replace("*)", "* )").split())


def certificate_header(task: Task, finding: str, derived: Task, described: str) -> str:
    """The comment block a search's certificate for ``finding`` of ``task`` starts with. Its first line is the
    finding's class and the search's one-line description (:func:`describe`: the values a refutation found, or the
    strategy); the others say how the finding is certified and how to repeat the check."""
    claim = CLAIM_BY_FINDING[finding]
    says = SAYS.get(claim.outcome, claim.shows)
    if finding == AUDIT_FALSE and ":=" in described:
        said = f"{says} for {described}"
    else:
        said = f"{says} ({'found ' if described.startswith('by ') else ''}{described})" if described else says
    lines = [
        f"{claim.outcome}: {said}.",
        f"This file is the audit's certificate for {task.task_id}: it {claim.shows} ({derived.theorem_name}).",
        "How it is certified: by the verifier, not by the search that wrote it. The finding stands only because",
        "this file passed the check every proof gets: it compiles against the derived template (kept beside it",
        f"as derived/{derived.candidate_name}), which restates the problem's frozen statement, the kernel's",
        "Print Assumptions lists no axiom the verifier does not allow, and coqchk re-checks the compiled file.",
        (f"Repeat the check from this file's directory: forall verify --prover {task.prover} --template "
         f"derived/{derived.candidate_name} --candidate {claim.stem}.v"),
    ]
    return "(* " + "\n   ".join(_comment_safe(line) for line in lines) + " *)\n"
