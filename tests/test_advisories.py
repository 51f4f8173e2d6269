"""The Rocq pack's table of known kernel bugs (issues 22, 31): versions, sources, coverage, and how the judge uses
findings; the table read against Rocq's own list, pinned in ``tests/data/rocq_critical_bugs.json``."""

from __future__ import annotations

import json
from pathlib import Path

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
        assert a.coverage in advisories.COVERAGES and a.covered_by, a
        assert a.feature in {"detector": (*advisories.DETECTED, *advisories.NEEDS_CHECKER),
                             "refused": tuple(advisories.REFUSED), "impossible": ("plugin-or-vo",)}[a.coverage], a
        assert parse_version(a.introduced) < parse_version(a.fixed_in) if a.fixed_in else True
        assert set(a.to_wire()) == {"id", "title", "component", "introduced", "fixed_in", "feature", "source",
                                    "coverage", "covered_by"}


def test_the_installed_kernels_advisories() -> None:
    """8.16.1 (the installed Coq) has the 8.16 guard regressions, both cofix bugs and the VM's addmuldiv bug;
    not the 8.20 uniform-parameter ones; a release past every fix has only the unfixed one."""
    found = ids("8.16.1")
    assert {"rocq#20413", "rocq#20455", "rocq#20555", "rocq#21839", "rocq#22389", "rocq#22386",
            "rocq#19402"} <= found
    assert not {"rocq#21682", "rocq#21701", "rocq#22021", "rocq#21683"} & found
    assert "rocq#20455" not in ids("9.0.1") and "rocq#20455" in ids("9.0.0")  # fixed in 9.0.1: boundary exact
    assert "rocq#21682" in ids("8.20.1") and "rocq#19402" not in ids("8.20.0")
    assert ids("9.3.0") == {"rocq#22386", "rocq#22382", "rocq#22024", "rocq#12155", "rocq#16646", "rocq#13439",
                            "rocq#16891", "rocq#12439", "rocq#22352", "rocq#22456"}  # no release known to fix them


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
    assert not {*advisories.DETECTED, *advisories.NEEDS_CHECKER} & set(advisories.REFUSED)


# --- issue 31: the table against Rocq's own list ---------------------------------------------------------------

PINNED = Path(__file__).resolve().parent / "data" / "rocq_critical_bugs.json"
CHEATS = Path(__file__).resolve().parent / "cheats" / "cheat"
#: The kernels the project supports (docs/toolchains.md): the host's Coq, trixie's and sid's.
SUPPORTED = ("8.16.1", "8.20.1", "9.2.0")
#: The rows issue 31 found missing: each needs an exploit (or its shape) in the corpus that the verifier refuses.
NEW_ROWS = ("rocq#21696", "rocq#21688", "rocq#21051", "rocq#21685", "rocq#21702", "rocq#22387", "rocq#7609",
            "rocq#21736", "rocq#21053", "rocq#19861", "rocq#22380", "rocq#22391", "rocq#21972", "rocq#21698",
            "rocq#21697", "rocq#12155", "rocq#16646", "rocq#13439", "rocq#16891", "rocq#12439")


def pinned() -> dict:
    return json.loads(PINNED.read_text())


def _affects(entry: dict, version: str) -> bool:
    return parse_version(entry["introduced"]) <= parse_version(version) and (
        not entry["fixed_in"] or parse_version(version) < parse_version(entry["fixed_in"]))


def missing_rows(table: tuple[advisories.Advisory, ...]) -> list[str]:
    """The pinned entries affecting a supported kernel that no row of ``table`` keeps in force there."""
    data = pinned()
    rows = {a.id: a for a in table}
    return [f"{entry['id']} ({entry['title']}) on {version}"
            for entry in [*data["entries"], *data["tracker_entries"]] for version in SUPPORTED
            if _affects(entry, version) and not (entry["id"] in rows
                                                 and rows[entry["id"]].affects(parse_version(version)))]


def test_every_pinned_entry_affecting_a_supported_kernel_has_a_row() -> None:
    """Rocq's critical-bugs.md (every entry, pinned at a commit) and the tracker's critical issues since: an entry
    whose range includes a supported kernel must have a row, in force on that kernel at least as long. The check
    itself fails on a table that lacks one (rocq#21053 removed, or ended early)."""
    data = pinned()
    assert data["commit"] == advisories.CRITICAL_BUGS_COMMIT and data["commit"] in data["source"]
    missing = missing_rows(ADVISORIES)
    assert not missing, (f"critical-bugs.md at rocq-prover/rocq@{data['commit']}: entries affecting a supported "
                         f"kernel with no row in force in advisories.py: {missing}")
    import dataclasses
    without = tuple(a for a in ADVISORIES if a.id != "rocq#21053")
    assert [m for m in missing_rows(without) if m.startswith("rocq#21053 ")] != []
    shortened = tuple(dataclasses.replace(a, fixed_in="8.20") if a.id == "rocq#21053" else a for a in ADVISORIES)
    assert any(m.startswith("rocq#21053 ") and m.endswith("on 8.20.1") for m in missing_rows(shortened))


def test_pinned_list_is_complete_and_well_formed() -> None:
    """Every entry of the list at that commit (85: the fixed, the unfixed and the probably unexploitable ones), with
    its ranges and the fields it was read from; no id twice; the table's rows all come from it or the tracker."""
    data = pinned()
    entries = data["entries"]
    assert len(entries) == 85 and len({e["id"] for e in entries}) == len(entries)
    for e in entries:
        assert {"id", "title", "section", "component", "introduced", "fixed_in", "upstream_impacted",
                "upstream_fixed"} <= set(e), e
        parse_version(e["introduced"])
        assert not e["fixed_in"] or parse_version(e["fixed_in"]) >= parse_version(e["introduced"]), e
    known = {e["id"] for e in entries} | {e["id"] for e in data["tracker_entries"]}
    assert {a.id for a in ADVISORIES} <= known
    by_id = {e["id"]: e for e in [*entries, *data["tracker_entries"]]}
    for a in ADVISORIES:  # a row never claims a narrower range than the list
        assert parse_version(a.introduced) <= parse_version(by_id[a.id]["introduced"]), a.id
        assert (not a.fixed_in) or (by_id[a.id]["fixed_in"] and parse_version(a.fixed_in) >= parse_version(
            by_id[a.id]["fixed_in"])), a.id


def test_the_gap_the_review_found_is_closed() -> None:
    """The entries issue 31's review found without a row, by kernel."""
    assert {"rocq#21696", "rocq#21688", "rocq#21051", "rocq#21685", "rocq#21702", "rocq#22387", "rocq#7609",
            "rocq#21736", "rocq#21053"} <= ids("8.16.1") & ids("8.20.1")
    assert "rocq#19861" in ids("8.16.1") and "rocq#19861" not in ids("8.20.1")  # 8.20.1's coqc refuses it
    assert {"rocq#22380", "rocq#22391", "rocq#21972"} <= ids("8.20.1") & ids("9.2.0")
    assert {"rocq#21698", "rocq#21697"} <= ids("8.20.1") - ids("9.2.0")
    assert {"rocq#12155", "rocq#16646", "rocq#13439", "rocq#16891", "rocq#12439"} <= ids("9.3.0")


def test_every_new_row_names_a_corpus_entry_the_verifier_refuses() -> None:
    """Each row's ``exploit`` is a cheat of ``tests/cheats`` (run through ``forall verify`` by test_verify_cli): a
    rejected or infra verdict; a detector row's own exploit (when it is the row's) is rejected at the layer named."""
    for a in ADVISORIES:
        if a.id in NEW_ROWS:
            assert a.exploit, a.id
        for name in a.exploit.split():
            expect = json.loads((CHEATS / name / "expect.json").read_text())
            assert expect["verdict"] in ("reject", "infra"), (a.id, name)
            named = {expect.get("advisory"), expect.get("advisory_covered")}
            if a.id in named and a.coverage == "detector":
                assert expect.get("kernel_layer") == "kernel_advisories" or expect["layer"] == "independent_check", a.id


def test_upoly_detector_rows_are_in_force_exactly_where_the_substitution_bugs_are() -> None:
    """Universe-polymorphic declarations are refused on 8.16.1 and 8.20.1 (rocq#21688) and 9.2.0 (rocq#22380 …),
    allowed again once no universe-substitution advisory is in force."""
    def upoly(version: str) -> set[str]:
        return {a.id for a in in_force(version) if a.feature == "upoly"}
    assert upoly("8.16.1") == {"rocq#21688"}
    assert upoly("9.2.0") == {"rocq#22380", "rocq#22391", "rocq#21972"}
    assert upoly("9.2.1") == set() and upoly("8.13.0") == set()


def test_docs_table_has_every_row_with_its_coverage() -> None:
    """docs/verifier.md's advisory table lists every row, with its coverage and kernels, so the doc stays true."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "verifier.md").read_text()
    for a in ADVISORIES:
        line = next((row for row in doc.splitlines() if row.startswith(f"| {a.id} |")), "")
        assert line, f"{a.id} has no row in docs/verifier.md"
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2] == f"`{a.feature}`" and cells[7] == a.coverage, line
        assert cells[4:7] == ["yes" if a.affects(parse_version(v)) else "–" for v in SUPPORTED], line


def test_the_tracker_since_the_pinned_commit_has_rows() -> None:
    """Session 16's refresh: the tracker's critical issues and the open pull requests that change the list since the
    commit read are pinned with their source and have rows, each cited from the tracker (not from the list, which does
    not have them); rocq#22382 is in force exactly on the kernels with uniform-argument inlining (8.20 on), the
    crafted-.vo ones are `impossible`."""
    data = pinned()
    tracker = {e["id"]: e for e in data["tracker_entries"]}
    assert {"rocq#22386", "rocq#22382", "rocq#22024", "rocq#22352", "rocq#22456"} <= set(tracker)
    assert "9b9978d3" in data["checked"] and "#22374" in data["checked"]
    rows = {a.id: a for a in ADVISORIES}
    for number in ("22382", "22024", "22352", "22456"):
        row = rows[f"rocq#{number}"]
        assert number in row.source and advisories.CRITICAL_BUGS not in row.source, row
    assert "rocq#22382" not in ids("8.16.1") and "rocq#22382" in ids("8.20.1") & ids("9.2.0")
    assert "rocq#22024" in ids("8.16.1") & ids("8.20.1") & ids("9.2.0")
    assert rows["rocq#22352"].coverage == rows["rocq#22456"].coverage == "impossible"
    assert rows["rocq#22382"].exploit == "advisory_22382_uniform_letin_binder"
    expect = json.loads((CHEATS / "advisory_22382_uniform_letin_binder" / "expect.json").read_text())
    assert expect["in_force"] == {"advisory": "rocq#22382", "layer": "kernel_advisories"}
