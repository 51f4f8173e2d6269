"""The Rocq pack's table of known kernel bugs (issue 22): versions, sources, and how the judge uses findings."""

from __future__ import annotations

import pytest

from pytest_forall.lang.rocq import advisories
from pytest_forall.lang.rocq.advisories import ADVISORIES, in_force, parse_version, version_of
from pytest_forall.lang.rocq.judge import Dump, judge


def ids(version: str) -> set[str]:
    return {a.id for a in in_force(version)}


def test_every_advisory_is_cited_and_well_formed() -> None:
    assert len({a.id for a in ADVISORIES}) == len(ADVISORIES)
    for a in ADVISORIES:
        assert a.id.startswith("rocq#") and a.id.removeprefix("rocq#") in a.source, a
        assert a.source.startswith("https://github.com/rocq-prover/rocq/")
        assert a.feature in ("fix", "cofix", "letin", "variance", "vm", "native", "none")
        assert parse_version(a.introduced) < parse_version(a.fixed_in) if a.fixed_in else True
        assert set(a.to_wire()) == {"id", "title", "component", "introduced", "fixed_in", "feature", "source"}


def test_the_installed_kernels_advisories() -> None:
    """8.16.1 (the installed Coq) has the 8.16 guard regressions, both cofix bugs and the VM's addmuldiv bug;
    not the 8.20 uniform-parameter ones; a release past every fix has only the unfixed one."""
    found = ids("8.16.1")
    assert {"rocq#20413", "rocq#20455", "rocq#20555", "rocq#21839", "rocq#22389", "rocq#22386",
            "rocq#19402"} <= found
    assert not {"rocq#21682", "rocq#21701", "rocq#22021", "rocq#21683"} & found
    assert "rocq#20455" not in ids("9.0.1") and "rocq#20455" in ids("9.0.0")  # fixed in 9.0.1: boundary exact
    assert "rocq#21682" in ids("8.20.1") and "rocq#19402" not in ids("8.20.0")
    assert ids("9.3.0") == {"rocq#22386"}  # no release known to fix it: kept in force


def test_version_parsing_and_an_unknown_kernel_fails_closed() -> None:
    assert version_of("The Coq Proof Assistant, version 8.16.1 compiled with OCaml 4.13.1") == "8.16.1"
    assert version_of("The Rocq Prover, version 9.0.0") == "9.0.0"
    assert parse_version("8.20") == (8, 20, 0) and parse_version("9.1+rc1") == (9, 1, 0)
    assert version_of("garbage") == "" and in_force("") == list(ADVISORIES)
    with pytest.raises(ValueError):
        parse_version("dev")


def dump(findings: set[str]) -> Dump:
    return Dump("const T - : (i X 0)", frozenset(), (), frozenset(), frozenset(findings))


def test_findings_on_the_templates_own_constants_are_the_benchmarks() -> None:
    """A template constant the detectors refuse is in both records with the same digest of the same term (clause 1
    makes it identical): only what the candidate added counts (tests/test_judge_masking.py: when it does not)."""
    answer = "fix ForallProblem.p.answer body " + "0" * 32 + " a recursive call ..."
    template = dump({answer})
    candidate = dump({answer, "cofix ForallProblem.p.cyc body " + "1" * 32 + " a mutual cofixpoint"})
    judged = judge(template, candidate, set(), "p", frozenset(), ("Coq.",))
    assert judged.findings == ["cofix ForallProblem.p.cyc a mutual cofixpoint (in its body)"]
    assert judge(template, template, set(), "p", frozenset(), ("Coq.",)).findings == []


def test_detected_and_checker_features_are_disjoint() -> None:
    assert not set(advisories.DETECTED) & set(advisories.NEEDS_CHECKER)
    assert {a.feature for a in ADVISORIES} <= {*advisories.DETECTED, *advisories.NEEDS_CHECKER, "none"}
