"""The numbers of a run, from its result rows: the one aggregation behind every view of a run.

The terminal summary, ``forall report`` (terminal and ``--html``) and ``forall watch`` all print what
:func:`aggregate` computes, so no two views of a run can disagree. The Table-1 view (the seed paper's:
one row per configuration) is a list of :class:`Column`; another field of the results (a cache flag, a
baseline change) becomes a column by appending to :data:`CONFIG_COLUMNS` or :data:`ITEM_COLUMNS`.
Pytest-free: rows are the builtin-typed dicts of ``results.jsonl``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_forall.core.audit import audit_lines, findings_table
from pytest_forall.core.gating import gate_lines, latest_by_nodeid, read_rows
from pytest_forall.core.model import INFRA, OUTCOMES, RULES_ONLY, STRICT
from pytest_forall.core.outcomes import read_results, shorten

Row = dict[str, Any]
#: What makes two rows the same configuration (the seed paper's Table 1 has one line per configuration).
CONFIG_FIELDS = ("frontend", "model", "effort", "prover")


@dataclass(frozen=True)
class Total:
    """A sum over rows and how many rows did not report the value (``None`` is unknown, never 0)."""

    value: float | int | None
    unknown: int

    def text(self, digits: int | None = None) -> str:
        if self.value is None:
            return "unknown"
        value = self.value
        if digits is not None:
            shown = f"{float(value):.{digits}f}"
        else:
            shown = f"{value:.4f}" if isinstance(value, float) else str(value)
        return shown + (f" ({self.unknown} unknown)" if self.unknown else "")


def total(rows: list[Row], key: str) -> Total:
    known = [row[key] for row in rows if row.get(key) is not None]
    return Total(sum(known) if known else None, len(rows) - len(known))


@dataclass
class Aggregate:
    """Counts and totals of a set of rows (a run, or one configuration of it)."""

    rows: list[Row]
    counts: Counter[str] = field(init=False)
    accepted: int = field(init=False)
    judged: int = field(init=False)
    independent_passed: int = field(init=False)

    def __post_init__(self) -> None:
        self.counts = Counter(str(row.get("outcome")) for row in self.rows)
        accepted = [row for row in self.rows if row.get("outcome") in (STRICT, RULES_ONLY)]
        judged = [row for row in accepted if row.get("independent") is not None]
        self.accepted, self.judged = len(accepted), len(judged)
        self.independent_passed = sum(1 for row in judged if row.get("independent"))

    @property
    def items(self) -> int:
        return len(self.rows)

    @property
    def rules_passes(self) -> int:
        """Accepted under the rules policy: every strict pass is also a rules pass."""
        return self.counts[STRICT] + self.counts[RULES_ONLY]

    def total(self, key: str) -> Total:
        return total(self.rows, key)

    def independent_text(self) -> str:
        return (f"{self.independent_passed}/{self.judged} judged accepted, "
                f"{self.accepted - self.judged} accepted not judged")

    def counts_line(self) -> str:
        return ", ".join(f"{self.counts[o]} {o}" for o in OUTCOMES) + f"  ({self.items} items)"

    def spend_line(self, elapsed: float | None = None) -> str:
        """Compiles, wall time (elapsed, when known, next to the sum of item times: with workers they differ),
        tokens and cost."""
        summed = sum(r.get("wall_s") or 0 for r in self.rows)
        wall = (f"wall {elapsed:.1f} s elapsed ({summed:.1f} s summed over items)" if elapsed is not None
                else f"wall {summed:.1f} s summed over items")
        return (f"compiles {self.total('compiles').text()}, {wall}, "
                f"tokens in {self.total('tokens_in').text()}, out {self.total('tokens_out').text()}, "
                f"cost USD {self.total('cost_usd').text()}")


def configuration(row: Row) -> str:
    """``frontend/model/effort/prover``; an unset field (the CLI's default model) shows as ``-``."""
    return "/".join(str(row.get(name) or "-") for name in CONFIG_FIELDS)


def by_configuration(rows: Iterable[Row]) -> dict[str, Aggregate]:
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(configuration(row), []).append(row)
    return {name: Aggregate(groups[name]) for name in sorted(groups)}


@dataclass(frozen=True)
class Column:
    """One column of a table: its key (``data-col`` in the HTML), heading, and cell text."""

    key: str
    title: str
    cell: Callable[[Aggregate], str]


@dataclass(frozen=True)
class ItemColumn:
    key: str
    title: str
    cell: Callable[[Row], str]


def _number(value: Any, digits: int | None = None) -> str:
    if value is None or value == "":
        return "-"
    if digits is not None:
        return f"{float(value):.{digits}f}"
    return str(value)


#: The Table-1 view: one row per configuration.
CONFIG_COLUMNS: list[Column] = [
    Column("items", "items", lambda a: str(a.items)),
    Column("rules", "rules passes", lambda a: str(a.rules_passes)),
    Column("strict", "strict passes", lambda a: str(a.counts[STRICT])),
    Column("independent", "independent check", Aggregate.independent_text),
    Column("compiles", "compiles", lambda a: a.total("compiles").text()),
    Column("tokens_in", "tokens in", lambda a: a.total("tokens_in").text()),
    Column("tokens_out", "tokens out", lambda a: a.total("tokens_out").text()),
    Column("cost_usd", "cost USD", lambda a: a.total("cost_usd").text()),
]

#: One row per item (the HTML report's drill-down).
ITEM_COLUMNS: list[ItemColumn] = [
    ItemColumn("task", "task", lambda r: str(r.get("task_id", ""))),
    ItemColumn("config", "configuration", configuration),
    ItemColumn("outcome", "outcome", lambda r: str(r.get("outcome", ""))),
    ItemColumn("statement_audit", "statement audit", lambda r: str(r.get("statement_audit") or "-")),
    ItemColumn("independent", "independent",
               lambda r: {True: "passed", False: "FAILED", None: "-"}.get(r.get("independent"), "-")),
    ItemColumn("compiles", "compiles", lambda r: _number(r.get("compiles"))),
    ItemColumn("rounds", "rounds", lambda r: _number(r.get("rounds"))),
    ItemColumn("wall_s", "wall s", lambda r: _number(r.get("wall_s"), 1)),
    ItemColumn("tokens", "tokens in/out", lambda r: f"{_number(r.get('tokens_in'))}/{_number(r.get('tokens_out'))}"),
    ItemColumn("cost_usd", "cost USD", lambda r: _number(r.get("cost_usd"), 4)),
    ItemColumn("cached", "cached", lambda r: "-" if r.get("cached") is None else ("yes" if r["cached"] else "no")),
    ItemColumn("change", "vs baseline", lambda r: str(r.get("change") or "-")),
    ItemColumn("reason", "reason", lambda r: str(r.get("reason") or "")[:300]),
]


def table_lines(aggregates: dict[str, Aggregate], columns: list[Column] | None = None) -> list[str]:
    """The Table-1 view as aligned text lines (the same cells the HTML report shows)."""
    columns = CONFIG_COLUMNS if columns is None else columns
    head = ["configuration (frontend/model/effort/prover)"] + [c.title for c in columns]
    body = [[name] + [c.cell(agg) for c in columns] for name, agg in aggregates.items()]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    return ["  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
            for row in [head, *body]]


def cache_line(results: list[Row], mode: str | None = None) -> str:
    """One line on the verdict cache: hits, misses and why they missed, items it could not serve and why.

    ``mode`` is the run's ``--forall-cache`` (None when unknown, as in ``forall report`` of old rows)."""
    if mode == "off":
        return "verdict cache: off (--forall-cache=off): every candidate verified afresh"
    hits = sum(1 for r in results if r.get("cached") is True)
    misses = Counter(str(r["cache_miss"]) for r in results if r.get("cache_miss"))
    uncacheable = Counter(str(r["uncacheable"]) for r in results if r.get("uncacheable"))
    if not (hits or misses or uncacheable):
        return f"verdict cache{f' ({mode})' if mode else ''}: not consulted (no candidate was verified)"
    line = f"verdict cache{f' ({mode})' if mode else ''}: {hits} hits, {sum(misses.values())} misses"
    if misses:
        line += " (" + "; ".join(f"{count} {why}" for why, count in misses.most_common(3)) + ")"
    if uncacheable:
        # the reason's first clause only: what follows it can be a Python exception's text of any length, which
        # this one line would cut mid-sentence (issue 33); each row's ``uncacheable`` keeps it whole
        head, _, detail = uncacheable.most_common(1)[0][0].partition(": ")
        line += (f", {sum(uncacheable.values())} uncacheable ({head}"
                 + ("; why: the uncacheable field of results.jsonl" if detail else "") + ")")
    return line


def summary_lines(results: list[Row], missing: list[str], run_dir: Path, notices: list[str] | None = None,
                  elapsed: float | None = None, cache_mode: str | None = None) -> list[str]:
    """The run's summary, as the terminal and ``forall report`` print it."""
    agg = Aggregate(list(results))
    lines = [agg.counts_line(), agg.spend_line(elapsed), cache_line(results, cache_mode),
             f"independent check: {agg.independent_text()}"]
    unsandboxed = sum(1 for r in results if r.get("sandbox") == "none")
    if unsandboxed:
        lines.append(f"sandbox: NONE for {unsandboxed} items (--forall-sandbox=none): actor and prover ran unisolated")
    prover_only = sum(1 for r in results if r.get("sandbox") == "bwrap" and r.get("prover_sandboxed") is False
                      and r.get("outcome") != INFRA)
    if prover_only:
        lines.append(f"sandbox: the prover of {prover_only} items ran unsandboxed (its backend declares no binds)")
    infra: dict[str, list[str]] = {}
    for r in results:
        if r.get("outcome") == INFRA:
            infra.setdefault(shorten(str(r.get("reason", "")), 120), []).append(str(r.get("task_id") or r.get("nodeid")))
    for reason, tasks in sorted(infra.items(), key=lambda pair: -len(pair[1]))[:5]:
        named = ", ".join(sorted(tasks)[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
        lines.append(f"infra x{len(tasks)} ({named}): {reason}")
    stops = Counter(str(r.get("stop")) for r in results if r.get("stop"))
    if stops:
        lines.append("stops: " + ", ".join(f"{stop} {count}" for stop, count in sorted(stops.items())))
    notes = list(notices or []) + [f"{r.get('nodeid')}: {note}" for r in results for note in r.get("notices") or []]
    lines += [f"note: {note}" for note in notes]
    if missing:
        them = "it" if len(missing) == 1 else "them"
        lines.append(f"{len(missing)} {'item' if len(missing) == 1 else 'items'} started but never reported (no "
                     f"result): --forall-resume {run_dir.name} runs {them} again: {', '.join(missing[:5])}"
                     + (" …" if len(missing) > 5 else ""))
    lines += audit_lines(results)
    lines.append(f"results: {run_dir / 'results.jsonl'}")
    return lines


@dataclass(frozen=True)
class RunRows:
    """One run's latest rows, and where its directory is."""

    run_dir: Path
    rows: list[Row]
    #: what reading the rows skipped (a torn final line), said in the summary
    notices: list[str] = field(default_factory=list)


def combined(runs: list[RunRows]) -> tuple[list[tuple[RunRows, Row]], int]:
    """The rows of several runs, each item counted once per configuration: when two runs hold the same item in
    the same configuration (a run and its re-run), the later run's row (later on the command line) replaces the
    earlier; different configurations of one item stay side by side (the Table-1 comparison). Also returns how
    many rows were replaced."""
    chosen: dict[tuple[str, str], tuple[RunRows, Row]] = {}
    replaced = 0
    for run in runs:
        for row in run.rows:
            key = (str(row.get("nodeid")), configuration(row))
            replaced += key in chosen
            chosen.pop(key, None)
            chosen[key] = (run, row)
    return list(chosen.values()), replaced


def report_lines(runs: list[RunRows]) -> list[str]:
    """What ``forall report`` prints (and the HTML page repeats): each run's summary, the Table-1 view, and the
    suspected misformalizations as a Markdown table."""
    lines: list[str] = []
    for run in runs:
        lines += ([""] if lines else []) + gate_lines(run.rows) + summary_lines(run.rows, [], run.run_dir, run.notices)
    pairs, replaced = combined(runs)
    rows = [row for _, row in pairs]
    if replaced:
        lines += ["", (f"combined: {replaced} item(s) were in several runs in the same configuration; each is "
                       "counted once, from the run named later")]
    lines += [""] + table_lines(by_configuration(rows))
    findings = findings_table(rows)
    if findings:
        lines += ["", "Suspected misformalizations (Markdown, to paste into an upstream issue):", "", *findings]
    return lines


def read_run(run_dir: Path) -> RunRows:
    """A run's latest rows; a line that is not a row (a torn final line) is skipped and said, never fatal."""
    recorded = read_results(run_dir / "results.jsonl")
    return RunRows(run_dir, list(recorded.latest().values()), recorded.notices())


def latest_results(run_dir: Path) -> dict[str, Row]:
    """The last recorded result of every item of a run (a resumed run appends)."""
    return latest_by_nodeid(read_rows(run_dir / "results.jsonl"))
