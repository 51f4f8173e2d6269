"""The statement audit measured like a classifier, on a mutation corpus of PutnamBench Coq statements (issue 20).

Each mutant of ``tests/data/audit_mutants.json`` is made from a PutnamBench statement by one textual
replacement (the corpus names the source by path; nothing is copied), its truth is established by the
hand-written proof the corpus holds (judged by the verifier on the derived task), and the audit's search runs
on it; a finding counts only when the verifier accepts its certificate. Prints the catch rate per defect
class and the flags on the unmutated controls; ``--write`` records the rates in the corpus (checked by
tests/test_audit_mutants.py).

    PUTNAMBENCH_ROOT=... python3 scripts/audit_mutants.py [--cpu 20] [--workers 2] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "audit_mutants.json"


def load(path: Path = CORPUS) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def mutant_text(spec: dict[str, Any], root: Path) -> str:
    """The mutant's template: the source with ``find`` (which must occur exactly once) replaced."""
    source = (root / spec["source"]).read_text(encoding="utf-8")
    if not spec["find"]:
        return source
    if source.count(spec["find"]) != 1:
        raise ValueError(f"{spec['id']}: {spec['find']!r} occurs {source.count(spec['find'])} times in "
                         f"{spec['source']}, not once")
    return source.replace(spec["find"], spec["replace"])


def task_of(spec: dict[str, Any], root: Path, directory: Path) -> Any:
    from pytest_forall.lang.rocq.problem import parse_coq

    name = Path(spec["source"]).stem
    path = directory / spec["id"] / f"{name}.v"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = mutant_text(spec, root)
    path.write_text(text, encoding="utf-8")
    return parse_coq(name, path, text)


def proof_holds(spec: dict[str, Any], task: Any, prover: Any) -> bool:
    """The hand-written proof of the mutant's defect, judged by the verifier on the derived task."""
    from pytest_forall.core.audit import derived_tasks
    from pytest_forall.core.verify import verify_candidate
    from pytest_forall.lang.rocq.audit import search_prelude

    derived = derived_tasks(task).get(spec["expected"])
    if derived is None or not spec["proof"]:
        return False
    # the libraries the audit's own certificates may load first (lia, mathcomp's zify)
    candidate = search_prelude(derived.template, hammer=False) + derived.template.replace(
        "Proof. Admitted.", f"Proof. {spec['proof']}. Qed.", 1)
    return verify_candidate(derived, prover, candidate.encode()).accepted


def audit(task: Any, prover: Any, workspace: Path, cpu: float, store: Path | None = None) -> tuple[list[str], str]:
    """The findings whose certificate the verifier accepted, and the search's log.

    ``store``: a directory the processes of one test run share (tests/test_audit_search.py audits two of this
    corpus's mutants too): the result is kept there under the template's text and the budget, computed by the first
    process that asks (the others wait on its lock) and read by the rest, so one run audits a template once."""
    import fcntl
    import hashlib

    if store is None:
        return _audit(task, prover, workspace, cpu)
    store.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(f"{task.theorem_name}\0{cpu!r}\0{task.template}".encode()).hexdigest()[:32]
    kept = store / f"{key}.json"
    with open(store / f"{key}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if kept.is_file():
            found, log = json.loads(kept.read_text(encoding="utf-8"))
            return found, log
        found, log = _audit(task, prover, workspace, cpu)
        kept.write_text(json.dumps([found, log]), encoding="utf-8")
        return found, log


def _audit(task: Any, prover: Any, workspace: Path, cpu: float) -> tuple[list[str], str]:
    from pytest_forall.agents.portfolio import AUDIT_WALL_FACTOR
    from pytest_forall.core.audit import audit_pack, derived_tasks
    from pytest_forall.core.verify import verify_candidate

    derived = derived_tasks(task)
    pack = audit_pack(task.prover)
    assert pack is not None
    workspace.mkdir(parents=True, exist_ok=True)
    search = pack.search(task, derived, prover, workspace, time.monotonic() + AUDIT_WALL_FACTOR * cpu,
                         cpu_seconds=cpu)  # the frontend's wall backstop: a loaded machine finds what an idle one finds
    accepted = [finding for finding, text in search.certificates.items()
                if verify_candidate(derived[finding], prover, text.encode()).accepted]
    return sorted(accepted), search.log


def measure_one(spec: dict[str, Any], root: Path, directory: Path, cpu: float,
                check_proofs: bool = True, store: Path | None = None) -> dict[str, Any]:
    """One corpus entry: its proof judged (unless a control) and the audit's findings (a row); ``store``: see
    :func:`audit`."""
    from pytest_forall.lang.rocq.backend import RocqProver

    # one cache for every entry: the judge plugin is built once, not once per entry; entries run in parallel
    # processes, and each cache entry is built under its own file lock and keyed by content (judge.cached_entry)
    prover = RocqProver({"cache_dir": str(directory / "cache")})
    task = task_of(spec, root, directory / "src")
    proven = not check_proofs or spec["expected"] == "sound" or proof_holds(spec, task, prover)
    started = time.monotonic()
    found, log = audit(task, prover, directory / "ws" / spec["id"], cpu, store)
    return {"id": spec["id"], "class": spec["class"], "expected": spec["expected"], "found": found,
            "seconds": round(time.monotonic() - started, 1), "spent": log.splitlines()[-1] if log else "",
            "proven": proven}


def measure(corpus: dict[str, Any], root: Path, cpu: float, check_proofs: bool = True,
            echo: bool = False, workers: int = 1, store: Path | None = None) -> dict[str, Any]:
    """{"rows": [...], "rates": {class: [caught, total]}, "false_flags": n, "unproven": [ids]}.

    ``workers`` entries run at once (separate processes: the audit's budget is CPU seconds of its own
    coqtop, so parallel entries find what serial ones find); ``store``: see :func:`audit`."""
    from concurrent.futures import ProcessPoolExecutor

    specs = corpus["mutants"]
    rows: list[dict[str, Any]] = []
    rates: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    unproven, false_flags = [], 0
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(measure_one, spec, root, Path(tmp), cpu, check_proofs, store) for spec in specs]
        for future in futures:
            row = future.result()
            rows.append(row)
            if not row.pop("proven"):
                unproven.append(row["id"])
            if row["expected"] == "sound":
                false_flags += bool(row["found"])
            else:
                rates[row["class"]][1] += 1
                rates[row["class"]][0] += row["expected"] in row["found"]
            if echo:
                print(json.dumps(row), flush=True)
    return {"rows": rows, "rates": dict(rates), "false_flags": false_flags, "unproven": unproven}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--cpu", type=float, default=20.0, help="the audit's CPU seconds per mutant")
    parser.add_argument("--write", action="store_true", help="record the measured rates in the corpus")
    parser.add_argument("--workers", type=int, default=1, help="entries measured at once (processes)")
    args = parser.parse_args(argv)
    root = Path(os.environ.get("PUTNAMBENCH_ROOT", "")).resolve()
    if not (root / "coq" / "src").is_dir():
        print(f"audit_mutants: PUTNAMBENCH_ROOT={root} has no coq/src", file=sys.stderr)
        return 2
    corpus = load(args.corpus)
    result = measure(corpus, root, args.cpu, echo=True, workers=args.workers)
    print("| class | caught | mutants |\n|---|---|---|")
    for name, (caught, total) in sorted(result["rates"].items()):
        print(f"| {name} | {caught} | {total} |")
    print(f"false flags on controls: {result['false_flags']}; mutants whose proof failed: {result['unproven']}")
    if args.write:
        corpus["rates"] = {name: caught / total for name, (caught, total) in sorted(result["rates"].items())}
        args.corpus.write_text(json.dumps(corpus, indent=2) + "\n", encoding="utf-8")
    return 1 if result["false_flags"] or result["unproven"] else 0


if __name__ == "__main__":
    sys.exit(main())
