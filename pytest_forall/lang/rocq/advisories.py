"""The known critical soundness bugs of Rocq/Coq kernels, as data: which are in force for the installed kernel.

Sources: Rocq's own list ``dev/doc/critical-bugs.md`` (rocq-prover/rocq, read at commit 04ca3d57) and the
issues it cites; each row names its source. ``feature`` is the kernel construct the bug needs, as the judge
plugin (``forall_judge.mlg``, ``feature_findings``) reports it on the candidate's own constants:

* ``fix``: a fixpoint (the guard checker). The plugin applies a conservative structural-recursion criterion of
  its own; a candidate fixpoint that fails it is rejected while any ``fix`` advisory is in force.
* ``cofix``: a cofixpoint (the cofixpoint guard checker); same, with a conservative productivity criterion.
* ``letin``: an inductive whose constructor types have local definitions (``pack (x : nat) (g : T := t)``);
  rejected while an advisory needing it is in force (rocq#22378: conversion under such a context).
* ``variance``: a cumulative universe-polymorphic inductive (the kernel infers its variance); same (rocq#22376,
  rocq#22385).
* ``vm`` / ``native``: a conversion checked by the bytecode VM / native compilation. coqchk has neither, so a
  proof that used them is accepted only when coqchk finished and accepted it (docs/verifier.md).
* ``none``: no detector; the advisory is named in every verdict as in force and not caught.

Versions compare numerically (``8.16.1`` < ``9.0.1``); a bug is in force when ``introduced <= version`` and
(``fixed_in`` is empty or ``version < fixed_in``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

CRITICAL_BUGS = "https://github.com/rocq-prover/rocq/blob/master/dev/doc/critical-bugs.md"
#: Features the judge plugin reports (``finding <feature> <constant> <why>``).
DETECTED = ("fix", "cofix", "letin", "variance")
#: What each detected feature is, for the rejection message ("the candidate's <construct> `<constant>`").
DETECTED_CONSTRUCT = {"fix": "fixpoint in", "cofix": "cofixpoint in", "letin": "inductive",
                      "variance": "inductive"}
#: Features that need the independent checker (which has no VM and no native compiler) to finish and accept.
NEEDS_CHECKER = ("vm", "native")


@dataclass(frozen=True)
class Advisory:
    """One critical kernel bug: where it is, which versions it affects, what construct it needs, where it is told."""

    id: str
    title: str
    component: str
    introduced: str
    fixed_in: str          # "" = no release known to fix it
    feature: str           # fix | cofix | vm | native | none
    source: str

    def affects(self, version: tuple[int, ...]) -> bool:
        return parse_version(self.introduced) <= version and (
            not self.fixed_in or version < parse_version(self.fixed_in))

    def to_wire(self) -> dict[str, str]:
        return {"id": self.id, "title": self.title, "component": self.component, "introduced": self.introduced,
                "fixed_in": self.fixed_in, "feature": self.feature, "source": self.source}


def _issue(number: int) -> str:
    return f"https://github.com/rocq-prover/rocq/issues/{number}"


ADVISORIES: tuple[Advisory, ...] = (
    Advisory("rocq#20413", "guard checker forgot to check non-structural arguments of fixpoint", "guard checking",
             "8.16", "9.0.1", "fix", f"{CRITICAL_BUGS}; {_issue(20413)}; fix PR #20415"),
    Advisory("rocq#20455", "guard checker incorrectly detects match on match as returning a subterm",
             "guard checking", "8.16", "9.0.1", "fix", f"{CRITICAL_BUGS}; {_issue(20455)}; fix PR #20457"),
    Advisory("rocq#20555", "guard checker does incorrect reduction across inner fixpoint", "guard checking",
             "8.16", "9.0.1", "fix", f"{CRITICAL_BUGS}; {_issue(20555)}; fix PR #20648"),
    Advisory("rocq#21839", "guard checker sometimes does reduction in the wrong context", "guard checking",
             "8.16", "9.3", "fix", f"{CRITICAL_BUGS}; {_issue(21839)}; fix PR #21845"),
    Advisory("rocq#21682", "guard checker ignores cross calls computing uniform arguments of a nested mutual "
             "fixpoint", "guard checking", "8.20", "9.2.0", "fix", f"{CRITICAL_BUGS}; {_issue(21682)}; fix PR #21684"),
    Advisory("rocq#21683", "guard checker does not check recursive calls passed as uniform argument in a nested "
             "fixpoint", "guard checking", "9.0.1", "9.2.0", "fix", f"{CRITICAL_BUGS}; {_issue(21683)}"),
    Advisory("rocq#21701", "guard checker does not count argument-less recursive calls for uniform arguments",
             "guard checking", "8.20", "9.2.0", "fix", f"{CRITICAL_BUGS}; {_issue(21701)}"),
    Advisory("rocq#21797", "guard checker does not check arguments of recursive calls in uniformity analysis",
             "guard checking", "8.20", "9.2.0", "fix", f"{CRITICAL_BUGS}; {_issue(21797)}; fix PR #21798"),
    Advisory("rocq#22021", "guard checker sometimes forgets to check lambda domains in nested fixpoints",
             "guard checking", "8.20", "9.2.1", "fix", f"{CRITICAL_BUGS}; {_issue(22021)}; fix PR #22022"),
    Advisory("rocq#22389", "cofixpoint guard checker passes wrong rectree for nested mutual cofixpoints",
             "cofixpoints, guard checking", "8.0", "9.2.1", "cofix",
             f"{CRITICAL_BUGS}; {_issue(22389)}; fix PR #22392"),
    # Not in the critical-bugs.md version read; the issue (closed) does not say which release fixed it, and its
    # reproducer proves False on 8.16.1 here (tests/cheats/cheat/advisory_22386_cofix_let_type): kept in force.
    Advisory("rocq#22386", "cofixpoint recursive tree computed in the wrong environment (type a let-bound "
             "variable)", "cofixpoints, guard checking", "8.0", "", "cofix", _issue(22386)),
    Advisory("rocq#19402", "broken addmuldiv operation for large shifts (VM)", "bytecode VM", "8.10", "8.20", "vm",
             f"{CRITICAL_BUGS}; {_issue(19402)}; fix PR #19405"),
    Advisory("rocq#16957", "tactic code could mutate a global cache of values for section variables (VM)",
             "bytecode VM", "8.1", "8.17", "vm", f"{CRITICAL_BUGS}; {_issue(16957)}"),
    Advisory("rocq#22378", "conversion under contexts is done in the wrong environment", "lazy conversion", "8.14",
             "9.2.1", "letin", f"{CRITICAL_BUGS}; {_issue(22378)}; fix PR #22379"),
    Advisory("rocq#22376", "variance inference ignores stack of stuck irrelevant to relevant matches",
             "inductive declarations, universe polymorphism", "8.13", "9.2.1", "variance", f"{CRITICAL_BUGS}; {_issue(22376)}"),
    Advisory("rocq#22385", "incorrect variance inference with letin in constructor type",
             "inductive declarations, universe polymorphism", "8.6", "9.2.1", "variance", f"{CRITICAL_BUGS}; {_issue(22385)}"),
)


def parse_version(text: str) -> tuple[int, ...]:
    """``8.16.1`` -> (8, 16, 1); a suffix (``+rc1``, ``~beta``) is dropped. Missing parts count as 0."""
    found = re.match(r"\s*(\d+(?:\.\d+)*)", text)
    if not found:
        raise ValueError(f"not a version: {text!r}")
    parts = tuple(int(p) for p in found.group(1).split("."))
    return parts + (0,) * (3 - len(parts))


def version_of(banner: str) -> str:
    """The kernel version in ``coqc --version``'s banner (``The Coq Proof Assistant, version 8.16.1 …``), or ""."""
    found = re.search(r"version\s+(\d+\.\d+(?:\.\d+)?)", banner)
    return found.group(1) if found else ""


def in_force(version: str) -> list[Advisory]:
    """The advisories affecting ``version``; an unknown version is affected by every advisory (fail closed)."""
    return list(_in_force(version))


@functools.lru_cache(maxsize=64)
def _in_force(version: str) -> tuple[Advisory, ...]:
    """:func:`in_force`, once per version and process (each item's layers ask two or three times)."""
    try:
        parsed = parse_version(version)
    except ValueError:
        return ADVISORIES
    return tuple(a for a in ADVISORIES if a.affects(parsed))
