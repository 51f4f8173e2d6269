"""The statement audit on data it was not developed against (issue 34): a seeded sample of PutnamBench Coq templates
audited as they are (the controls: what the audit flags there, and what each strategy spent), and mutants made
from them by a script (flip a strict inequality, drop a hypothesis, shift a bound by one, swap a quantifier order,
change an answer constant), judged by the same audit.

A finding counts only when the verifier accepts its certificate (the search's certificates are judged like any
submission). A mutant is not proved defective (a dropped hypothesis may be redundant, a shifted bound may still
hold), so a kind's catch rate is a lower bound on the rate over the mutants that are defective. A flagged control
is a finding on an unmutated PutnamBench statement, with its certificate.

    PUTNAMBENCH_ROOT=... python3 scripts/audit_generated.py [--seed 34] [--sources 24] [--per-kind 4]
        [--pool reals|all] [--cpu 20] [--workers 2] [--out DIR] [--kinds control,flip_strict,...]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KINDS = ("flip_strict", "drop_hypothesis", "shift_bound", "swap_quantifiers", "answer_constant")
#: A comparison made strict or non-strict (symbols and the ``lt``/``le``/``gt``/``ge`` heads).
FLIPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "lt": "le", "le": "lt", "gt": "ge", "ge": "gt"}
#: What makes a header binder a hypothesis (its type is a proposition) as written.
PROPOSITION = re.compile(r"(<>|<=|>=|<|>|=|/\\|\\/|~|->|<->|\b(?:lt|le|gt|ge|prime|In|Prop)\b)")


def sources(root: Path, count: int, seed: int, pool_rule: str = "reals") -> list[Path]:
    """The rule: PutnamBench's Coq templates (``pool_rule`` ``reals``: those over Coq's reals, importing ``Reals`` or
    Coquelicot and not mathcomp, where Interval applies; ``all``: every one), sorted by name, ``count`` of them
    drawn with ``random.Random(seed)``."""
    from pytest_forall.lang.rocq.audit import uses_coq_reals

    pool = sorted(p for p in (root / "coq" / "src").glob("*.v")
                  if pool_rule == "all" or uses_coq_reals(p.read_text(encoding="utf-8")))
    return sorted(random.Random(seed).sample(pool, min(count, len(pool))))


def _statement_span(text: str, theorem: str) -> tuple[int, int] | None:
    """The offsets of the theorem's binders and conclusion in ``text`` (from its name to ``Proof``)."""
    from pytest_forall.lang.rocq.audit import split_theorem

    split = split_theorem(text, theorem)
    if split is None:
        return None
    start = text.index(theorem, len(split.preamble)) + len(theorem)
    return start, text.index("Proof.", start)


def _replace_token(text: str, span: tuple[int, int], choose: Callable[[list[tuple[int, str, str]]], Any],
                   wanted: Callable[[str, str], bool], new: Callable[[str], str]) -> str | None:
    from pytest_forall.lang.rocq.audit.derive import _tokens

    start, end = span
    candidates = [t for t in _tokens(text[start:end]) if wanted(t[1], t[2])]
    if not candidates:
        return None
    offset, _, token = choose(candidates)
    at = start + offset
    return text[:at] + new(token) + text[at + len(token):]


def mutate(text: str, theorem: str, kind: str, rng: random.Random) -> str | None:
    """``text`` with one mutation of ``kind`` at a place chosen by ``rng``, or None when the kind does not apply."""
    from pytest_forall.lang.rocq.audit import binder_groups, split_theorem

    span = _statement_span(text, theorem)
    if span is None:
        return None
    if kind == "flip_strict":
        return _replace_token(text, span, rng.choice,
                              lambda k, t: (k == "symbol" and t in ("<", "<=", ">", ">="))
                              or (k == "ident" and t in ("lt", "le", "gt", "ge")), lambda t: FLIPS[t])
    if kind == "shift_bound":
        # a bound, not an exponent (``x ^ 2``): a numeral not right after ``^``
        from pytest_forall.lang.rocq.audit.derive import _tokens

        tokens = _tokens(text[span[0]:span[1]])
        numbers = [t for i, t in enumerate(tokens) if t[1] == "number" and t[2].isdigit()
                   and (i == 0 or tokens[i - 1][2] != "^")]
        if not numbers:
            return None
        offset, _, token = rng.choice(numbers)
        at = span[0] + offset
        shifted = str(int(token) + rng.choice((1, -1))) if int(token) > 0 else "1"
        return text[:at] + shifted + text[at + len(token):]
    if kind == "drop_hypothesis":
        split = split_theorem(text, theorem)
        groups = binder_groups(split.binders) if split else None
        hypotheses = [g for g in groups or [] if ":" in g.text and ":=" not in g.text
                      and PROPOSITION.search(g.text.split(":", 1)[1])]
        if not hypotheses:
            return None
        group = rng.choice(hypotheses).text
        at = text.index(group, span[0])
        return text[:at] + text[at + len(group):]
    if kind == "swap_quantifiers":
        body = text[span[0]:span[1]]
        pattern = re.compile(r"\b(forall|exists)\s+([^,]+?),\s*(forall|exists)\s+([^,]+?),")
        found = [m for m in pattern.finditer(body) if m.group(1) != m.group(3)]
        if not found:
            return None
        m = rng.choice(found)
        swapped = f"{m.group(3)} {m.group(4)}, {m.group(1)} {m.group(2)},"
        return text[:span[0] + m.start()] + swapped + text[span[0] + m.end():]
    if kind == "answer_constant":
        answer = re.search(rf"Definition\s+{re.escape(theorem)}_solution\b.*?:=(.*?)\.\s*\n", text, re.DOTALL)
        if answer is None:
            return None
        return _replace_token(text, (answer.start(1), answer.end(1)), rng.choice,
                              lambda k, t: k == "number" and t.isdigit(), lambda t: str(int(t) + 1))
    raise ValueError(kind)


def corpus(root: Path, seed: int, count: int, per_kind: int, pool_rule: str = "reals") -> list[dict[str, Any]]:
    """The controls (each source unmutated) and up to ``per_kind`` mutants of each kind, from sources drawn in
    a seeded order (one mutant per source and kind)."""
    rng = random.Random(seed)
    chosen = sources(root, count, seed, pool_rule)
    entries = [{"id": f"control-{p.stem}", "kind": "control", "source": p, "text": p.read_text(encoding="utf-8")}
               for p in chosen]
    for kind in KINDS:
        made = 0
        for path in rng.sample(chosen, len(chosen)):
            if made == per_kind:
                break
            text = path.read_text(encoding="utf-8")
            mutant = mutate(text, path.stem, kind, rng)
            if mutant is None or mutant == text:
                continue
            entries.append({"id": f"{kind}-{path.stem}", "kind": kind, "source": path, "text": mutant})
            made += 1
    return entries


#: How a row's template loaded (``load``): every goal stated; a statement's preparation (an audit tie's conversion)
#: interrupted by its CPU budget (the budget's end, not a template that does not compile); a load the wall clock
#: ended (not searched); a statement or preamble that does not load
LOAD_STATUSES = ("loads", "preparation budget spent", "not searched: load timed out", "does not load")


def load_status(log: str) -> str:
    """The :data:`LOAD_STATUSES` entry of a search's log (the probe's ``load failed`` lines)."""
    from pytest_forall.lang.rocq.coqtop import LOAD_BUDGET_SPENT

    failed = re.findall(r"load failed: (\S*)", log)
    if any(what != "TIMEOUT" for what in failed):
        return "does not load"
    if failed:
        return "not searched: load timed out"
    return "preparation budget spent" if LOAD_BUDGET_SPENT in log else "loads"


def measure_one(entry: dict[str, Any], directory: Path, cpu: float) -> dict[str, Any]:
    """One entry audited: the findings whose certificate the verifier accepted (each saved with its derived
    template, for ``forall verify``), whether the template loaded, and the log's per-strategy spend."""
    from pytest_forall.core.audit import audit_pack, derived_tasks
    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.backend import RocqProver
    from pytest_forall.lang.rocq.problem import parse_coq

    name = entry["source"].stem
    where = directory / entry["id"]
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}.v"
    path.write_text(entry["text"], encoding="utf-8")
    task = parse_coq(name, path, entry["text"])
    prover = RocqProver({"cache_dir": str(where / "cache")})
    derived = derived_tasks(task)
    pack = audit_pack("rocq")
    assert pack is not None
    (where / "ws").mkdir(exist_ok=True)
    started = time.monotonic()
    search = pack.search(task, derived, prover, where / "ws", time.monotonic() + 8 * cpu, cpu_seconds=cpu)
    found: dict[str, dict[str, Any]] = {}
    for finding, text in search.certificates.items():
        verdict = verify_candidate(derived[finding], prover, text.encode())
        if verdict.accepted:
            (where / f"{finding}.v").write_text(text, encoding="utf-8")
            (where / f"{finding}.template.v").write_text(derived[finding].template, encoding="utf-8")
            found[finding] = {"strict": verdict.strict, "axioms": list(verdict.axioms)[:8]}
    lines = search.log.splitlines()
    strategies = next((line.split(": ", 1)[1] for line in lines if line.startswith("audit strategies: ")), "")
    return {"id": entry["id"], "kind": entry["kind"], "found": found, "strategies": strategies,
            "loaded": load_status(search.log) == "loads", "load": load_status(search.log),
            "spent": lines[-1] if lines else "",
            "seconds": round(time.monotonic() - started, 1), "dir": str(where)}


def reverify(row: dict[str, Any]) -> dict[str, bool]:
    """Each finding's certificate re-checked by ``forall verify`` against its derived template."""
    out = {}
    for finding in row["found"]:
        base = Path(row["dir"])
        result = subprocess.run([sys.executable, "-m", "pytest_forall.cli", "verify", "--prover", "rocq",
                                 "--template", str(base / f"{finding}.template.v"), "--candidate",
                                 str(base / f"{finding}.v")], capture_output=True, text=True, timeout=900,
                                check=False, cwd=REPO)
        out[finding] = result.returncode == 0
    return out


def spend(rows: list[dict[str, Any]]) -> dict[str, tuple[float, int, int]]:
    """{strategy: (CPU seconds, entries it ran on, entries where it closed a goal)} over the rows' logs."""
    total: dict[str, tuple[float, int, int]] = {}
    for row in rows:
        for m in re.finditer(r"([\w-]+) ([0-9.]+) s \((\d+)(, closed)?\)", row["strategies"]):
            cpu, runs, closed = total.get(m.group(1), (0.0, 0, 0))
            total[m.group(1)] = (cpu + float(m.group(2)), runs + 1, closed + bool(m.group(4)))
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--sources", type=int, default=24, help="templates drawn (the controls)")
    parser.add_argument("--per-kind", type=int, default=4, help="mutants per mutation kind")
    parser.add_argument("--cpu", type=float, default=20.0, help="the audit's CPU seconds per entry")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="where certificates and rows are kept")
    parser.add_argument("--pool", choices=("reals", "all"), default="reals",
                        help="the templates drawn from: over Coq's reals, or all of PutnamBench's Coq templates")
    parser.add_argument("--list", action="store_true", help="print the corpus (ids) and exit")
    parser.add_argument("--kinds", default=None,
                        help="only these kinds, comma-separated (control and the mutation kinds; default all)")
    args = parser.parse_args(argv)
    root = Path(os.environ.get("PUTNAMBENCH_ROOT", "")).resolve()
    if not (root / "coq" / "src").is_dir():
        print(f"audit_generated: PUTNAMBENCH_ROOT={root} has no coq/src", file=sys.stderr)
        return 2
    entries = corpus(root, args.seed, args.sources, args.per_kind, args.pool)
    if args.kinds:
        entries = [e for e in entries if e["kind"] in args.kinds.split(",")]
    if args.list:
        for entry in entries:
            print(entry["id"])
        return 0
    out = args.out or Path(f"/tmp/audit_generated_{args.seed}")
    out.mkdir(parents=True, exist_ok=True)
    from concurrent.futures import ProcessPoolExecutor

    rows = []
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        for row in pool.map(measure_one, entries, [out] * len(entries), [args.cpu] * len(entries)):
            row["reverified"] = reverify(row)
            rows.append(row)
            print(json.dumps(row), flush=True)
    (out / "rows.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    rates: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if row["kind"] != "control" and row["loaded"]:
            rates[row["kind"]][1] += 1
            rates[row["kind"]][0] += bool(row["found"])
    print("| kind | caught | mutants that load |\n|---|---|---|")
    for kind in KINDS:
        caught, total = rates[kind]
        print(f"| {kind} | {caught} | {total} |")
    print("| strategy | CPU s | entries it ran on | closed |\n|---|---|---|---|")
    for name, (cpu, runs, closed) in sorted(spend(rows).items(), key=lambda item: -item[1][0]):
        print(f"| {name} | {cpu:.1f} | {runs} | {closed} |")
    controls = [r for r in rows if r["kind"] == "control"]
    print(f"controls: {len(controls)} ({sum(r['loaded'] for r in controls)} load), flagged: "
          f"{[r['id'] for r in controls if r['found']]}")
    for group, members in (("controls", controls), ("mutants", [r for r in rows if r["kind"] != "control"])):
        counts = {status: sum(r["load"] == status for r in members) for status in LOAD_STATUSES}
        print(f"{group} by load: " + ", ".join(f"{status} {n}" for status, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
