"""``forall report --html``: one self-contained page a person reads instead of results.jsonl.

Every number on the page is a cell of :mod:`pytest_forall.core.summary` (the Table-1 view, the
outcome counts, the terminal summary lines), so the page and the terminal ``forall report`` cannot
disagree. The page has no scripts and no external assets: inline CSS, inline SVG plots drawn here, and
relative links into each item's audit directory (``reports/<run id>/items/<item>/``), which keep
working when the reports directory is copied or archived together with the page.
"""

from __future__ import annotations

import html
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_forall.cli.report_patches import patch_html
from pytest_forall.core.accept import UNRECORDED_DIRS
from pytest_forall.core.model import (
    FAILED,
    INFRA,
    INNER_VACUOUS,
    OUTCOMES,
    RULES_ONLY,
    STATEMENT_FALSE,
    STRICT,
    VACUOUS,
)
from pytest_forall.core.progress import RUN_FILE
from pytest_forall.core.runlog import has_finished, moment
from pytest_forall.core.summary import (
    CONFIG_COLUMNS,
    ITEM_COLUMNS,
    Aggregate,
    Row,
    RunRows,
    by_configuration,
    combined,
    report_lines,
)

#: Fill colours per outcome (bars, badges); the terminal's green/yellow/red/purple.
COLOURS = {STRICT: "#2e7d32", RULES_ONLY: "#f9a825", FAILED: "#c62828", INFRA: "#6a1b9a",
           STATEMENT_FALSE: "#ef6c00", VACUOUS: "#00838f", INNER_VACUOUS: "#4e9a9f"}
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}
th,td{border:1px solid #ccc;padding:3px 5px;text-align:right;vertical-align:top}
th{background:#f3f3f3}td.l,th.l{text-align:left}
td.reason{max-width:240px;text-align:left;font-size:12px;color:#444;overflow-wrap:anywhere}#items{font-size:13px}
#items th{font-size:12px;max-width:70px}
.badge{color:#fff;border-radius:3px;padding:0 5px}
td.links{max-width:240px;text-align:left}.links a{margin-right:6px;white-space:nowrap;font-size:12px}
.plots{display:flex;flex-wrap:wrap;gap:18px}
pre{background:#f7f7f7;padding:8px;border:1px solid #ddd;white-space:pre-wrap;overflow-wrap:anywhere}
code.digest{white-space:nowrap;font-size:12px}#defects td{text-align:left}td.command{font-size:12px;max-width:360px;overflow-wrap:anywhere}
figure{margin:6px 0}figcaption{font-weight:600;font-size:13px}
"""
#: Outcomes whose accepted file is a certificate about the statement (a finding), not a proof of it.
DEFECT_OUTCOMES = (STATEMENT_FALSE, VACUOUS, INNER_VACUOUS)
#: Links of one round each (folded in the per-item cell): candidates, verdicts, transcripts, reviews.
PER_ROUND = ("candidate ", "verdict layers ", "transcript ", "review ")
PLOT_WIDTH, PLOT_HEIGHT, MARGIN, MAX_BAR = 420, 160, 52, 36


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def item_dir(run_dir: Path, row: Row) -> Path | None:
    """The item's audit directory: the same name under this run dir (a moved run), else the recorded one."""
    if not row.get("audit_dir"):
        return None
    recorded = Path(str(row["audit_dir"]))
    local = run_dir / "items" / recorded.name
    return local if local.is_dir() else recorded if recorded.is_dir() else None


def record_files(directory: Path, names: Sequence[str]) -> list[Path]:
    """Files with these names in the record, not inside an agent's home, scratch or review workspace copies."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.endswith(UNRECORDED_DIRS))
        found += [Path(root) / name for name in names if name in files]
    return found


def audit_links(directory: Path | None, outcome: str = "") -> list[tuple[str, Path]]:
    """(label, file) for every audit record file of an item that exists: record, candidates, verdicts, logs. The
    accepted file of a finding (``outcome`` a defect) is its certificate, not a proof of the statement."""
    links: list[tuple[str, Path]] = []
    if directory is None:
        return links

    def add(label: str, rel: str) -> None:
        path = directory / rel
        if rel and path.is_file() and all(path != known for _, known in links):
            links.append((label, path))

    add("audit record", "audit.json")
    add("result", "result.json")
    add("events", "events.jsonl")
    accepted = directory / "accepted"
    for path in sorted(accepted.glob("*")) if accepted.is_dir() else []:
        if path.suffix != ".json":
            add("certificate" if outcome in DEFECT_OUTCOMES else "accepted proof", f"accepted/{path.name}")
    add("acceptance", "accepted/acceptance.json")
    record = directory / "audit.json"
    try:
        audit = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else {}
    except ValueError:
        audit = {}
    for event in audit.get("submissions", []):
        add(f"candidate {event.get('round', '')}", str(event.get("file") or ""))
        add(f"verdict layers {event.get('round', '')}", str(event.get("evidence") or ""))
    for event in audit.get("turns", []):
        add(f"transcript {event.get('role', '')} {event.get('round', '')}", str(event.get("transcript") or ""))
    labels = {"review.json": "review", "access.jsonl": "access log", "sandbox.jsonl": "sandbox log"}
    for path in record_files(directory, list(labels)):
        where = path.parent.relative_to(directory)
        add(f"{labels[path.name]} {where}" if path.name == "review.json" else labels[path.name],
            str(path.relative_to(directory)))
    add("template check", "template-check.json")
    return links


def bar_chart(title: str, unit: str, rows: Sequence[Row], key: str, digits: int) -> str:
    """Per-item bars sorted by value, coloured by outcome; items without the value are counted, not drawn."""
    known = sorted(((float(r[key]), r) for r in rows if r.get(key) is not None), key=lambda p: -p[0])
    unknown = len(rows) - len(known)
    top = max((v for v, _ in known), default=0.0) or 1.0
    inner = PLOT_WIDTH - MARGIN - 8
    step = min(inner / max(len(known), 1), MAX_BAR)
    digits = digits if top >= 2 or digits else 1  # a 0.5 tick of a count needs a decimal
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{PLOT_WIDTH}" height="{PLOT_HEIGHT + 30}" '
             f'role="img" aria-label="{esc(title)}" data-plot="{esc(key)}">'),
             f'<line x1="{MARGIN}" y1="{PLOT_HEIGHT}" x2="{PLOT_WIDTH - 8}" y2="{PLOT_HEIGHT}" stroke="#888"/>',
             f'<line x1="{MARGIN}" y1="10" x2="{MARGIN}" y2="{PLOT_HEIGHT}" stroke="#888"/>']
    for fraction in (0.0, 0.5, 1.0):
        y = PLOT_HEIGHT - fraction * (PLOT_HEIGHT - 10)
        parts.append(f'<text x="{MARGIN - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">'
                     f'{top * fraction:.{digits}f}</text>')
    for index, (value, row) in enumerate(known):
        height = value / top * (PLOT_HEIGHT - 10)
        colour = COLOURS.get(str(row.get("outcome")), "#777")
        parts.append(f'<rect x="{MARGIN + index * step + 0.5:.2f}" y="{PLOT_HEIGHT - height:.2f}" '
                     f'width="{max(step - 1, 0.8):.2f}" height="{height:.2f}" fill="{colour}">'
                     f'<title>{esc(row.get("task_id"))}: {value:.{digits}f} {esc(unit)}</title></rect>')
    if not known:
        parts.append(f'<text x="{MARGIN + 10}" y="{PLOT_HEIGHT / 2:.0f}" font-size="12">no item reported it</text>')
    parts.append(f'<text x="{MARGIN}" y="{PLOT_HEIGHT + 18}" font-size="11">{len(known)} items, largest first'
                 f'{f"; {unknown} not reported" if unknown else ""}</text></svg>')
    caption = title if unit == title else f"{title} ({unit})"  # never "compiles (compiles)"
    return f"<figure><figcaption>{esc(caption)} per item</figcaption>{''.join(parts)}</figure>"


def config_table(aggregates: dict[str, Aggregate]) -> str:
    head = "".join(f'<th data-col="{esc(c.key)}">{esc(c.title)}</th>' for c in CONFIG_COLUMNS)
    body = []
    for name, agg in aggregates.items():
        cells = "".join(f'<td data-col="{esc(c.key)}">{esc(c.cell(agg))}</td>' for c in CONFIG_COLUMNS)
        body.append(f'<tr data-config="{esc(name)}"><td class="l">{esc(name)}</td>{cells}</tr>')
    return (f'<table id="table1"><tr><th class="l">configuration (frontend/model/effort/prover)</th>{head}</tr>'
            f'{"".join(body)}</table>')


def outcome_table(agg: Aggregate) -> str:
    head = "".join(f'<th><span class="badge" style="background:{COLOURS[o]}">{o}</span></th>' for o in OUTCOMES)
    cells = "".join(f'<td data-outcome="{o}">{agg.counts[o]}</td>' for o in OUTCOMES)
    return (f'<table id="outcomes"><tr>{head}<th>items</th></tr>'
            f'<tr>{cells}<td data-outcome="items">{agg.items}</td></tr></table>')


def link_cell(links: list[tuple[str, Path]], out_dir: Path) -> str:
    """The record's files as relative links; the per-round ones folded in a <details> (no script needed)."""
    def anchor(label: str, path: Path) -> str:
        return f'<a href="{esc(Path(os.path.relpath(path, out_dir)).as_posix())}">{esc(label)}</a>'

    rounds = [anchor(label, path) for label, path in links if label.startswith(PER_ROUND)]
    main = " ".join(anchor(label, path) for label, path in links if not label.startswith(PER_ROUND))
    if not rounds:
        return main
    return f'{main}<details><summary>{len(rounds)} per-round files</summary>{" ".join(rounds)}</details>'


def item_table(runs: Sequence[RunRows], out_dir: Path) -> str:
    """One row per item (and configuration), from :func:`combined`: a re-run item appears once; with several
    runs a ``run`` column says which run each row comes from."""
    several = len(runs) > 1
    head = ('<th class="l" data-col="run">run</th>' if several else "") + "".join(
        f'<th class="l" data-col="{esc(c.key)}">{esc(c.title)}</th>' for c in ITEM_COLUMNS)
    body = []
    pairs, _ = combined(list(runs))
    for run, row in sorted(pairs, key=lambda pair: (str(pair[1].get("nodeid")), str(pair[0].run_dir.name))):
        cells = [f'<td class="l" data-col="run">{esc(run.run_dir.name)}</td>'] if several else []
        for column in ITEM_COLUMNS:
            text = esc(column.cell(row))
            if column.key == "outcome":
                text = (f'<span class="badge" style="background:{COLOURS.get(str(row.get("outcome")), "#777")}">'
                        f"{text}</span>")
            cls = "reason" if column.key == "reason" else "l" if column.key in ("task", "config", "outcome") else ""
            cells.append(f'<td class="{cls}" data-col="{esc(column.key)}">{text}</td>')
        links = link_cell(audit_links(item_dir(run.run_dir, row), str(row.get("outcome"))), out_dir)
        body.append(f'<tr data-run="{esc(run.run_dir.name)}" data-nodeid="{esc(row.get("nodeid"))}">'
                    f'{"".join(cells)}'
                    f'<td class="links l">{links}</td></tr>')
    return f'<table id="items"><tr>{head}<th class="l">audit record</th></tr>{"".join(body)}</table>'


def defects_table(rows: Sequence[Row], out_dir: Path) -> str:
    """The suspected misformalizations as a table of their own (issue 33: they sat in the verbatim summary, cut
    off on the right): problem, finding, the certificate (linked) with its whole SHA-256 on one line, and the
    ``forall verify`` command that re-checks it."""
    from pytest_forall.core.audit import CLAIM_BY_FINDING, findings

    body = []
    for row in findings(list(rows)):
        claim = CLAIM_BY_FINDING[str(row["statement_audit"])]
        base = Path(str(row.get("audit_dir") or "."))
        certificate, template = base / str(row.get("certificate") or ""), base / str(row.get("certificate_template") or "")
        shown = esc(certificate.name)
        if certificate.is_file():
            shown = f'<a href="{esc(os.path.relpath(certificate.resolve(), out_dir))}">{shown}</a>'
        command = (f"forall verify --prover {row.get('prover', '')} --template {template} --candidate {certificate}")
        problem, upstream = f'<code>{esc(row.get("task_id"))}</code>', str(row.get("upstream") or "")
        if upstream.startswith("https://"):  # the problem's file upstream (suites/upstream.py)
            problem = f'<a href="{esc(upstream)}">{problem}</a>'
        body.append(f'<tr data-nodeid="{esc(row.get("nodeid"))}"><td data-col="problem">{problem}'
                    f'</td><td data-col="finding">{esc(claim.finding)}: {esc(claim.shows)}</td>'
                    f'<td data-col="certificate">{shown}<br><code class="digest">{esc(row.get("digest") or "")}</code>'
                    f'</td><td class="command" data-col="recheck"><code>{esc(command)}</code></td></tr>')
    if not body:
        return ""
    return ('<h2>Suspected misformalizations</h2><table id="defects"><tr><th class="l">problem</th>'
            '<th class="l">finding</th><th class="l">certificate (SHA-256)</th><th class="l">re-check</th></tr>'
            + "".join(body) + "</table>\n")


#: A run's verdict by its pytest exit status (pytest's own codes, and 75 for a run whose items were all infra).
VERDICTS = {0: "PASSED", 1: "FAILED", 2: "INTERRUPTED", 3: "INTERNAL ERROR", 4: "USAGE ERROR", 5: "NO ITEMS",
            75: "ALL INFRA"}


def run_meta(run_dir: Path) -> dict[str, Any]:
    """``run.json`` as one record: its fields, or (a history of sessions) the first start and the last session."""
    try:
        data = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    sessions = [s for s in data.get("sessions") or [] if isinstance(s, dict)]
    if sessions:
        return {**data, **sessions[-1], "first_started": moment(sessions[0], "started")}
    return {**data, "first_started": moment(data, "started")}


def run_facts(run: RunRows) -> dict[str, str]:
    """What a reader asks first: the verdict, exit status, gate, date, host, toolchain and frontend of a run."""
    meta, rows = run_meta(run.run_dir), run.rows
    status = meta.get("exitstatus")
    if isinstance(status, int):
        verdict = VERDICTS.get(status, f"EXIT {status}")
    elif meta and not has_finished(meta):
        verdict, status = "NOT FINISHED", "-"
    else:
        verdict = "FAILED" if any(r.get("outcome") == FAILED for r in rows) else "PASSED"
        verdict, status = f"{verdict} (from the results; no run.json)", "-"
    changes = [r.get("change") for r in rows if r.get("change")]
    regressed = changes.count("regressed")
    gate = (f"{'FAILED' if regressed else 'PASSED'}: {regressed} regressed, {changes.count('fixed')} fixed against "
            "the baseline" if changes else "none (no baseline)")
    started = meta.get("first_started")
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(started))) if started is not None else "-"

    def distinct(key: str) -> str:
        return ", ".join(sorted({str(r.get(key)) for r in rows if r.get(key)})) or "-"

    return {"verdict": verdict, "exit status": str(status), "gate": gate, "date": date,
            "host": str(meta.get("host") or distinct("audit_host")),
            "toolchain": distinct("toolchain") if any(r.get("toolchain") for r in rows) else distinct("prover"),
            "frontend": distinct("frontend")}


def runs_table(runs: Sequence[RunRows]) -> tuple[str, str]:
    """(the overall verdict, the table of each run's facts) that leads the page."""
    facts = [(run.run_dir.name, run_facts(run)) for run in runs]
    verdicts = [f["verdict"].split(" (")[0] for _, f in facts]
    overall = "FAILED" if "FAILED" in verdicts else next((v for v in verdicts if v != "PASSED"), "PASSED")
    fields = list(facts[0][1]) if facts else []
    head = "".join(f'<th class="l">{esc(name)}</th>' for name in ["run", *fields])
    body = "".join(f'<tr data-run="{esc(name)}"><td class="l" data-field="run">{esc(name)}</td>'
                   + "".join(f'<td class="l" data-field="{esc(k)}">{esc(v)}</td>' for k, v in fact.items())
                   + "</tr>" for name, fact in facts)
    return overall, f'<table id="runs"><tr>{head}</tr>{body}</table>'


def render(runs: Sequence[RunRows], out: Path) -> str:
    """The page for one or more runs; links are relative to ``out``'s directory."""
    rows = [row for _, row in combined(list(runs))[0]]
    agg = Aggregate(rows)
    names = ", ".join(run.run_dir.name for run in runs)
    summaries = "\n".join(report_lines(list(runs)))
    out_dir = out.resolve().parent
    plots = bar_chart("compiles", "compiles", rows, "compiles", 0) + bar_chart("wall time", "s", rows, "wall_s", 1)
    if any(row.get("cost_usd") is not None for row in rows):  # no empty panel: no cost, no cost plot
        plots += bar_chart("cost", "USD", rows, "cost_usd", 4)
    overall, facts = runs_table(runs)
    colour = {"PASSED": COLOURS[STRICT], "FAILED": COLOURS[FAILED]}.get(overall, COLOURS[INFRA])
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(overall)}: forall report: '
            f'{esc(names)}</title><style>{CSS}</style></head><body>\n<h1><span id="verdict" class="badge" '
            f'style="background:{colour}">{esc(overall)}</span> forall report: {esc(names)}</h1>\n{facts}\n'
            f'<h2>Outcomes</h2>{outcome_table(agg)}\n'
            f'<h2>Per configuration</h2>{config_table(by_configuration(rows))}\n'
            '<p>rules passes = strict + rules-only (accepted under the rules policy); independent check = the '
            "kernel re-check of accepted proofs (judged / not judged).</p>\n"
            f'{defects_table(rows, out_dir)}'
            f'<h2>Summary (as <code>forall report</code> prints it)</h2><pre id="summary">{esc(summaries)}</pre>\n'
            f'{patch_html(runs, out_dir)}'
            f'<h2>Per item</h2><div class="plots">{plots}</div>\n{item_table(runs, out_dir)}\n</body></html>\n')


def write_html(runs: Sequence[RunRows], out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(runs, out), encoding="utf-8")
    return out
