"""Issue 34, session 15: the real-valued witness strategies (lang/rocq/audit/real.py) alone, on the PutnamBench Coq
templates they can reach (function variables over Coq's reals or a mathcomp real type, sequences, trigonometry/π),
one ``coqtop`` search per template at a CPU budget; prints per template what each strategy spent and any finding,
and writes each certificate to OUT/<name>.<finding>.v for ``forall verify``. ``--sets``: the set witnesses
(lang/rocq/audit/sets.py) instead, on the templates that quantify a set variable (:func:`set_reach`). ``--finite``:
the permutation/finite-function, ``Ensemble`` and rational-grid witnesses (lang/rocq/audit/finite.py), on the templates
:func:`finite_reach` names.

    PUTNAMBENCH_ROOT=... nice -n 10 python scripts/audit_real_reach.py OUT [--seconds 6] [-k NAME ...] [--sets|--finite]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

from pytest_forall.core.audit import audit_pack, derived_tasks
from pytest_forall.lang.rocq.audit.finite import FINITE_STRATEGIES
from pytest_forall.lang.rocq.audit.real import REAL_STRATEGIES
from pytest_forall.lang.rocq.audit.sets import SET_STRATEGIES
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.lang.rocq.problem import parse_coq


def in_reach(text: str) -> list[str]:
    """The kinds of :mod:`pytest_forall.lang.rocq.audit.real` a template's text can reach (the counts' own tests)."""
    mathcomp = "mathcomp" in text
    mc_real = mathcomp and re.search(r"realType|realFieldType|numFieldType|realDomainType", text) is not None
    coq_real = not mathcomp and re.search(r"\b(Reals|Coquelicot)\b", text) is not None
    kinds = []
    if re.search(r":\s*R\s*->\s*R\b", text) and (mc_real or coq_real):
        kinds.append("function-" + ("mathcomp" if mc_real else "coq"))
    if re.search(r":\s*(nat\s*->\s*R\b|R\s*\^nat)", text) and (mc_real or coq_real):
        kinds.append("sequence-" + ("mathcomp" if mc_real else "coq"))
    if coq_real and re.search(r"\b(PI|sin|cos|tan|atan|asin|acos)\b", text):
        kinds.append("trig-coq")
    return kinds


#: A binder's type that is a set: mathcomp's ``set T``/``{set T}``, the standard library's ``Ensemble T``, or a
#: one-argument predicate ``T -> Prop``
SET_TYPE = re.compile(r"^(set\b|\{set\b|Ensemble\b)|^[^>]*->\s*Prop$")


def set_reach(text: str) -> list[str]:
    """The set types a template's theorem binds a variable to, in a parameter that is not a ``let`` (``(A : set T)``)
    or under a ``forall``/``exists`` (by text: an upper bound on what ``set-witness`` can reach; issue 34)."""
    statement = re.search(r"\b(?:Theorem|Lemma)\s+\w+(.*?)Proof\.", text, re.DOTALL)
    if statement is None:
        return []
    body = statement.group(1)
    binders = [m.group(1) for m in re.finditer(r"\(\s*[\w' ]+?\s*:\s*([^():=]*(?:\([^()]*\)[^():=]*)*)\)", body)]
    binders += [m.group(1) for m in re.finditer(r"forall\s+[\w' ]+?\s*:\s*([^,]*),", body)]
    return sorted({kind.strip() for kind in binders if SET_TYPE.search(kind.strip())})


#: What finite.py's strategies can read, by text (an upper bound, like :func:`set_reach`): a permutation, an ordinal,
#: a function to ``bool``, a ``finType``; an ``Ensemble`` or a one-argument predicate; a real of Coq's reals (not
#: mathcomp) in a statement that compares reals
FINITE_KINDS = {"perm": re.compile(r"'S_|\{perm\b"), "ordinal": re.compile(r"'I_"), "to-bool": re.compile(r"->\s*bool\b"),
                "finType": re.compile(r"\bfinType\b"), "Ensemble": re.compile(r"\bEnsemble\b"),
                "predicate": re.compile(r"->\s*Prop\s*\)")}


def finite_reach(text: str) -> list[str]:
    """The kinds of :mod:`pytest_forall.lang.rocq.audit.finite` a template's theorem can reach (by text)."""
    statement = re.search(r"\b(?:Theorem|Lemma)\s+\w+(.*?)Proof\.", text, re.DOTALL)
    if statement is None:
        return []
    body = statement.group(1)
    kinds = [kind for kind, pattern in FINITE_KINDS.items() if pattern.search(body)]
    coq_real = "mathcomp" not in text and re.search(r"\b(Reals|Coquelicot)\b", text) is not None
    if coq_real and re.search(r"(forall|\()\s*[\w' ]+:\s*R\b", body) and re.search(r"<|>|\bR(lt|le|gt|ge)\b", body):
        kinds.append("real-comparison")
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=6.0, help="CPU seconds of coqtop per template")
    parser.add_argument("-k", nargs="*", default=None, help="only these templates")
    parser.add_argument("--sets", action="store_true", help="the set witnesses on the templates with a set variable")
    parser.add_argument("--finite", action="store_true", help="finite.py's witnesses on the templates they can read")
    args = parser.parse_args()
    src = Path(os.environ["PUTNAMBENCH_ROOT"]) / "coq" / "src"
    args.out.mkdir(parents=True, exist_ok=True)
    pack = audit_pack("rocq")
    assert pack is not None
    prover = RocqProver({"cache_dir": str(args.out / "cache")})
    for path in sorted(src.glob("*.v")):
        name, text = path.stem, path.read_text()
        kinds = set_reach(text) if args.sets else finite_reach(text) if args.finite else in_reach(text)
        if not kinds or (args.k is not None and name not in args.k):
            continue
        where = args.out / name
        where.mkdir(exist_ok=True)
        task = parse_coq(name, path, text)
        derived = derived_tasks(task)
        start = time.process_time()
        search = pack.search(task, derived, prover, where, time.monotonic() + 600, cpu_seconds=args.seconds,
                             strategies=(SET_STRATEGIES if args.sets else FINITE_STRATEGIES if args.finite
                                         else REAL_STRATEGIES))  # type: ignore[call-arg]
        spend = next((line for line in search.log.splitlines() if line.startswith("audit strategies: ")), "")
        spent = next((line for line in search.log.splitlines() if line.startswith("audit spent: ")), "")
        said = [line for line in search.log.splitlines() if line.startswith("audit counterexample: ")]
        for finding, certificate in search.certificates.items():
            (args.out / f"{name}.{finding}.v").write_text(certificate)
        print(json.dumps({"name": name, "kinds": kinds, "strategies": spend.removeprefix("audit strategies: "),
                          "spent": spent.removeprefix("audit spent: "), "findings": sorted(search.certificates),
                          "counterexample": said, "python_cpu": round(time.process_time() - start, 2)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
