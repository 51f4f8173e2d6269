"""The stand-in implements cited facts and nothing else: every rule of every stand-in script names the entry of
docs/lean-facts.md it implements (or says it is a test control), and every cited entry exists.

A control (`[control]`) stands for "Lean reported this" (an error, a kernel rejection) without claiming how Lean
would get there; no verdict of the backend may rest on a control's *mechanism*, only on its documented output.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STANDIN = REPO / "tests" / "standin"
SCRIPTS = [STANDIN / "lean", STANDIN / "lake", STANDIN / "checker" / "leanchecker", STANDIN / "elan-proxy",
           STANDIN / "repl"]
FACTS = (REPO / "docs" / "lean-facts.md").read_text(encoding="utf-8")
FACT_IDS = set(re.findall(r"^\*\*([A-Z]\d+) —", FACTS, re.MULTILINE))


def rules(script: Path) -> list[str]:
    """The ``RULE:`` paragraphs of a script's docstring (a rule runs until the next rule or a blank line)."""
    doc = script.read_text(encoding="utf-8").split('"""')[1]
    return [" ".join(r.split()) for r in re.findall(r"^RULE: (.*?)(?=^RULE:|^\S|\Z)", doc, re.MULTILINE | re.DOTALL)]


def cited(rule: str) -> list[str]:
    """The fact ids of a rule's trailing ``[…]`` tag, ranges such as ``L1-L10`` expanded."""
    tag = re.search(r"\[([^\]]+)\]\s*$", rule)
    assert tag, f"rule without a [fact] tag: {rule!r}"
    ids: list[str] = []
    for part in re.split(r",\s*", tag.group(1)):
        span = re.fullmatch(r"([A-Z])(\d+)-\1(\d+)", part)
        ids += [f"{span.group(1)}{n}" for n in range(int(span.group(2)), int(span.group(3)) + 1)] if span else [part]
    return ids


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_standin_rule_maps_to_a_cited_fact(script: Path) -> None:
    found = rules(script)
    assert found, f"{script} documents no RULE"
    for rule in found:
        for fact in cited(rule):
            assert fact == "control" or fact in FACT_IDS, f"{script.name}: {rule!r} cites unknown fact {fact}"


def test_every_fact_entry_quotes_its_source() -> None:
    entries = re.split(r"^\*\*(?=[A-Z]\d+ —)", FACTS, flags=re.MULTILINE)[1:]
    assert len(entries) == len(FACT_IDS) >= 30
    for entry in entries:
        assert "`" in entry and re.search(r"\.(lean|rs|cpp|md|json|yml)\b", entry), entry[:80]


def test_the_standin_implements_the_facts_the_backend_relies_on() -> None:
    """Each fact the backend's behaviour turns on has a stand-in rule, so the tests exercise it."""
    implemented = {fact for script in SCRIPTS for rule in rules(script) for fact in cited(rule)}
    needed = {"E1", "E2", "E3", "E4", "C1", "C2", "C3", "K1", "K2", "K5", "R1", "R2", "R3", "R4", "R8",
              *(f"L{n}" for n in range(1, 11)), "I1", "I2", "I3", "I4", "I6"}
    assert needed <= implemented, sorted(needed - implemented)
