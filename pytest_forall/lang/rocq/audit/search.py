"""The audit's search over a template's derived tasks in one ``coqtop`` session: the prelude it loads, the tie
checks, the goals in order with their scripts, the certificates of what closed, and the log's one-line
descriptions and per-strategy spend."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from pytest_forall.core.audit import AUDIT_FALSE, AUDIT_INNER, AUDIT_VACUOUS, COUNTEREXAMPLE, Search, Split
from pytest_forall.core.model import Task
from pytest_forall.core.prover import Prover
from pytest_forall.lang.rocq.audit.derive import (
    HOLE,
    _trailer,
    binder_groups,
    derive,
    inner_selectors,
    peel,
    split_theorem,
)
from pytest_forall.lang.rocq.audit.strategies import (
    SEARCH_SECONDS,
    STRATEGIES,
    inner_scripts,
    refutation_scripts,
    search_order,
    vacuity_scripts,
)
from pytest_forall.lang.rocq.audit.tactics import FEATURES, SCOPES, TRIVIAL
from pytest_forall.lang.rocq.certificate import certificate_header
from pytest_forall.lang.rocq.tactics import HAMMER_PRELUDE, PRELUDE, contrib_installed, hammer_installed

#: CPU seconds a tie check may take to load (``Goal.load_cpu``): a tie is checked by conversion, which a ``let`` of a
#: recursive function at a big numeral made unfold without end (past the CPU budget, then coqtop's memory
#: limit); a tie that does not load in time is not accepted, so no flag can rest on it. It was Coq's ``Timeout 10``,
#: which counts wall time (Coq 8.16's ``Control.timeout``, coq-core ``lib/control.ml``, arms ``setitimer
#: ITIMER_REAL``): on a loaded machine a tie failed and nothing was searched ("audit strategies: none").
TIE_SECONDS = 10
#: Coq's ``Timeout`` on a tie, kept as a wall-clock backstop (10 CPU s at 1/10 of a core), below the 120 s a load
#: may take by the wall clock (coqtop then keeps its session); its expiry is reported (``TacticProbe.timed_out``).
TIE_WALL_SECONDS = 100
#: Libraries loaded before a mathcomp file (chosen from the preamble's text; a certificate that depends on
#: them still has to pass the verifier): ``lia`` through mathcomp's arithmetic, ``ring``/``field`` on its rings.
MATHCOMP_PRELUDE = "From mathcomp Require Import zify ring.\n"


def search_prelude(preamble: str, hammer: bool) -> str:
    """What the search loads before a template's preamble (and its certificates start with): the arithmetic
    tactics, CoqHammer's when installed, mathcomp's ``zify``/``ring`` in a file that imports mathcomp (a
    choice of tactics only: the verifier judges what they produce)."""
    return (PRELUDE + (HAMMER_PRELUDE if hammer else "")
            + (MATHCOMP_PRELUDE if "mathcomp" in preamble else "")
            + (INTERVAL_PRELUDE if uses_coq_reals(preamble) and interval_installed() else ""))


#: Interval's tactics (Debian's libcoq-interval), loaded by the search in a file over Coq's reals (not mathcomp's,
#: whose reals ``interval`` does not read). Its certificates rest on the axioms that specify Coq's primitive
#: integers and floats (``Coq.Numbers.Cyclic.Int63.Uint63.*_spec``, ``Coq.Floats.FloatAxioms.*``), off the strict
#: list: a certificate that uses ``interval`` is accepted rules-only (docs/audit.md).
INTERVAL_PRELUDE = "From Interval Require Import Tactic.\n"


def uses_coq_reals(preamble: str) -> bool:
    """The preamble imports Coq's reals (or Coquelicot) and not mathcomp."""
    return "mathcomp" not in preamble and re.search(r"\b(Reals|Coquelicot)\b", preamble) is not None


@functools.cache
def interval_installed() -> bool:
    """Interval's tactic (Debian's libcoq-interval) is installed next to the standard library."""
    return contrib_installed("Interval", "Tactic.vo")


def tie_check(template: str, theorem: str, ties: tuple[str, ...]) -> Any:
    """A derived task's ties (the frozen definitions ``ties`` after its hole: :func:`_vacuity_tie`,
    :func:`refutation_text`) as a goal for the search, tried before the task's theorem is: an admitted stand-in
    of that theorem (the search's session only) and the ties stated with it; the goal loads only if they are
    accepted. When it does not, no proof of the theorem could pass the verifier (its derived template would
    not compile). None when the template has no such tie."""
    from pytest_forall.lang.rocq.coqtop import Goal

    at = template.index(f"Theorem {theorem}")
    stub, name = f"{theorem}_tie_stub", f"{theorem}_tie_check"
    sentences = [template[at:template.index(HOLE, at)].replace(theorem, stub, 1) + "Admitted.\n"]
    for tie in ties:
        if f"Definition {tie}\n" not in template and f"Definition {tie} " not in template:
            return None
        start = template.index(f"Definition {tie}")
        end = template.index(".\n", template.index("\n    := ", start)) + 2
        sentences.append(template[start:end])
    # ``@<theorem>`` ends with a space, or with ``)`` when the tie applies it to nothing (let-binders only)
    text = re.sub(rf"@{re.escape(theorem)}(?![\w'])", f"@{stub}", "".join(sentences))
    for tie in ties:
        text = text.replace(f"Definition {tie}", f"Timeout {TIE_WALL_SECONDS} Definition {tie}")
        text = text.replace(tie, f"{tie}_check")
    return Goal(f"{text}Lemma {name} : Coq.Init.Logic.True.\nProof.\n", name, [(TRIVIAL, SEARCH_SECONDS)], counted=False,
                load_cpu=TIE_SECONDS)


#: The tie sentence after the hole of each derived task (:func:`tie_check`).
TIES = {AUDIT_VACUOUS: ("_audit_tie",), AUDIT_FALSE: ("_audit_refutation_tie", "_audit_refutation_same")}
#: The findings that end the search once a script closes one: with both ties accepted, contradictory hypotheses
#: prove the statement and a refutation proves its negation, so after either the other (and an inner premise, which
#: the search skips then anyway) could only close in an inconsistent environment; the scripts left would only spend
#: the budget (the protocol keeps one finding, and a refutation or vacuity is the one it keeps).
EXCLUSIVE = (AUDIT_FALSE, AUDIT_VACUOUS)


class RocqAudit:
    """The audit pack of the Rocq language (registered through ``pytest_forall_audit_pack``)."""

    def derive(self, task: Task) -> dict[str, Task]:
        return derive(task)

    def search(self, task: Task, derived: dict[str, Task], prover: Prover, workspace: Path,
               deadline: float, max_attempts: int | None = None, cpu_seconds: float | None = None,
               on_attempt: Callable[[], None] | None = None, strategies: Collection[str] | None = None) -> Search:
        """:meth:`AuditPack.search`; ``strategies``: only the scripts of these strategies (:data:`STRATEGIES`;
        the tests' way of showing which strategy alone finds a certificate)."""
        from pytest_forall.lang.rocq.coqtop import Goal

        probe_of = getattr(prover, "tactic_probe", None)
        split = split_theorem(task.template, task.theorem_name)
        if probe_of is None or split is None or not derived:
            return Search({}, 0, "no derived task or no interactive prover")
        hammer = hammer_installed()
        prelude = search_prelude(split.preamble, hammer)
        preamble = prelude + split.preamble
        winners: dict[str, str] = {}
        keys = {f"forall_audit_has_{key}": key for key in FEATURES}
        stated: set[str] = set()
        untied: set[str] = set()  # a vacuity proof the tie refused (its binders are not the statement's)

        def goals() -> Iterator[Goal]:
            for theorem, key in keys.items():  # what the environment has: naming what it lacks fails a script
                yield Goal(f"Lemma {theorem} : Coq.Init.Logic.True.\nProof.\n", theorem, [(FEATURES[key], 1.0)], counted=False)
            features = tuple(keys[t] for t in keys if t in winners)
            scopes = tuple(f for f in features if f in SCOPES)
            cheap, heavy = vacuity_scripts(scopes, hammer, features)
            inner = derived.get(AUDIT_INNER)
            selectors = inner_selectors(inner.template, task.theorem_name) if inner is not None else []
            for finding, scripts in search_order(cheap, refutation_scripts(scopes, features),
                                                 inner_scripts(selectors, cheap), heavy):
                if any(derived[f].theorem_name in winners for f in EXCLUSIVE if f in derived):
                    return  # refuted, or its hypotheses contradict: no other finding can follow (EXCLUSIVE)
                if strategies is not None:
                    scripts = [(script, seconds) for script, seconds in scripts if STRATEGIES[script] in strategies]
                if not scripts:
                    continue
                if finding == AUDIT_INNER and any(derived[f].theorem_name in winners for f in derived if f != finding):
                    continue  # contradictory hypotheses or a false statement: that is the finding
                if finding in derived and derived[finding].theorem_name not in winners and finding not in untied:
                    sub = derived[finding]
                    statement = sub.frozen[len(split.preamble):]
                    if finding in stated:
                        if sub.theorem_name not in probe.loaded:  # e.g. its shape check failed: no flag possible
                            continue
                        # its definitions exist already (``Abort`` ends only the proof)
                        statement = statement[statement.index(f"Theorem {sub.theorem_name}"):]
                    if finding in TIES and finding not in stated:
                        # the frozen tie must accept a proof, or the certificate's template does not compile
                        check = tie_check(sub.template, sub.theorem_name,
                                          tuple(task.theorem_name + tie for tie in TIES[finding]))
                        if check is not None:
                            yield check
                        if check is None or check.theorem not in winners:
                            untied.add(finding)
                            continue
                    stated.add(finding)
                    yield Goal(statement, sub.theorem_name, scripts)

        probe = probe_of(workspace)
        # the values a certificate instantiated and the witnesses it gave, for its one-line description
        probe.show_proof = {sub.theorem_name for sub in derived.values()}
        _, attempts, log = probe.run_goals(preamble, goals(), workspace, deadline=deadline, winners=winners,
                                           max_attempts=max_attempts, cpu_budget=cpu_seconds,
                                           on_attempt=on_attempt)
        # a wall-clock limit that ended part of the search: on a loaded machine, not what the CPU budget gives
        timed_out = "; ".join(dict.fromkeys(getattr(probe, "timed_out", [])))
        overflow = ", ".join(stack_overflows(log))
        log += ("\naudit strategies: " + strategy_spend(log) + (f" (not searched: timed out: {timed_out})"
                                                                if timed_out else "")
                + (f" (cut short by a stack overflow: {overflow})" if overflow else ""))
        described: dict[str, str] = {}
        for finding, sub in derived.items():
            if sub.theorem_name in winners:
                described[finding] = describe(finding, getattr(probe, "proofs", {}).get(sub.theorem_name, ""), split,
                                              STRATEGIES.get(winners[sub.theorem_name], "?"))
                log += f"\n{COUNTEREXAMPLE}{finding}: " + described[finding]
        log += (f"\naudit spent: CPU {probe.cpu_used:.2f} s"
                + (f" of {cpu_seconds:.0f} s" if cpu_seconds is not None else "") + f", wall {probe.wall_used:.2f} s")
        certificates = {}
        for finding, sub in derived.items():
            script = winners.get(sub.theorem_name)
            if script:
                certificates[finding] = (certificate_header(task, finding, sub, described.get(finding, "")) + prelude
                                         + sub.frozen + f"{script}.\nQed.\n" + _trailer(sub.template))
        return Search(certificates, attempts, log, timed_out=timed_out)


_TOOK = re.compile(r"\(([0-9.]+) s, CPU ([0-9.]+) s\)$")


def strategy_spend(log: str) -> str:
    """Which strategies ran and the CPU seconds each spent, from the search's log (each attempt's line starts with
    its script and ends with its CPU time): ``closers 0.12 s (2 scripts), zero-witness 0.03 s (1, closed)…`` in
    the order they first ran."""
    spent: dict[str, list[float]] = {}
    closed: set[str] = set()
    by_length = sorted(STRATEGIES, key=len, reverse=True)
    for line in log.splitlines():
        took = _TOOK.search(line)
        if took is None:
            continue
        name = _strategy_of(line, by_length)
        if name is None:
            continue
        entry = spent.setdefault(name, [0.0, 0.0])
        entry[0] += float(took.group(2))
        entry[1] += 1
        if ": closed the goal" in line:
            closed.add(name)
    return ", ".join(f"{name} {cpu:.2f} s ({int(count)}{', closed' if name in closed else ''})"
                     for name, (cpu, count) in spent.items()) or "none"


def _strategy_of(line: str, by_length: list[str]) -> str | None:
    """The strategy whose script starts a log line (the longest script that does: ``by_length``), or None."""
    return next((STRATEGIES[s] for s in by_length if line.startswith(s + ": ")), None)


def stack_overflows(log: str) -> list[str]:
    """The strategies a script of which ended on Coq's "Stack overflow" (an error no tactic catches: the script stops
    there, its later candidates untried). The strategy's own resource limit, named in the log's ``audit strategies``
    line ("cut short"), never the item's infra nor its timeout: it is deterministic, a rerun ends the same."""
    by_length = sorted(STRATEGIES, key=len, reverse=True)
    return list(dict.fromkeys(name for line in log.splitlines() if "Error: Stack overflow" in line
                              and (name := _strategy_of(line, by_length)) is not None))


#: A local proof the search named (``fresh``): an argument of the refuted statement that is not a value
_PROOF_NAME = re.compile(r"^(H|p|b|forall_audit_\w+)\d*$")


def _argument(term: str, at: int) -> str:
    """The one argument term that starts at ``at`` (a parenthesised term, or an atom up to the next blank)."""
    while at < len(term) and term[at].isspace():
        at += 1
    if term[at:at + 1] != "(":
        end = at
        while end < len(term) and not term[end].isspace() and term[end] not in "()":
            end += 1
        return term[at:end]
    depth = 0
    for end in range(at, len(term)):
        depth += {"(": 1, ")": -1}.get(term[end], 0)
        if depth == 0:
            return term[at + 1:end]
    return term[at + 1:]


#: The longest witness term a description shows in full (a longer one is cut, with an ellipsis)
WITNESS_CHARS = 80
_LAMBDA_NAME = re.compile(r"^fun\s+\(?\s*([A-Za-z_][\w']*)\s*:")


def _short(term: str) -> str:
    term = " ".join(term.split())
    return term if len(term) <= WITNESS_CHARS else term[:WITNESS_CHARS - 1] + "…"


def witnesses(proof: str) -> list[str]:
    """The existential witnesses a proof term gives (``ex_intro (fun u : R -> R => …) (fun _ : R => 1) …``), each named
    after its predicate's binder (``u := fun _ : R => 1``): a function, a sequence or a value the certificate proves
    the existential's body for (a negated existential refuted, a side condition witnessed), in the term's order."""
    out: list[str] = []
    for m in re.finditer(r"\bex_intro\s+(?=\S)", proof):
        at = m.end()
        predicate = _argument(proof, at)
        if not predicate:
            continue
        if proof[at:at + 1] == "(":
            at += len(predicate) + 2
        else:
            at += len(predicate)
        value = _argument(proof, at)
        name = _LAMBDA_NAME.match(" ".join(predicate.split()))
        if name is None or not value or value == "_" or _PROOF_NAME.match(value):
            continue  # not a witness a human gave: an inferred one, or one the proof term does not show
        out.append(f"{name.group(1)} := {_short(value)}")
    return out


def describe(finding: str, proof: str, split: Split, strategy: str) -> str:
    """One line for a human: for a refutation, the values its certificate gave the statement's variables (read from
    the proof term's instances ``forall_audit_H v``, named after the statement's binders in order), functions and
    sequences included, then the witnesses it gave an existential (:func:`witnesses`: ``u := fun _ : R => 1`` for a
    negated ``exists u``); for the other findings, those witnesses and the strategy whose certificate it is. A
    description only: the certificate is what the verifier checks."""
    given = witnesses(proof)
    if finding != AUDIT_FALSE or not proof:
        return f"by {strategy}" + (f", witnesses {', '.join(given)}" if given else "")
    values = [" ".join(_argument(proof, m.end()).split())
              for m in re.finditer(r":=\s*forall_audit_H\d*\s+(?=\S)", proof)]
    names = [a for g in binder_groups(split.binders) or [] for a in g.args]
    peeled, _ = peel(split.conclusion)
    names += [a for b in peeled for g in binder_groups(b) or [] for a in g.args]
    shown = [f"{name} := {value}" for name, value in zip(names, values) if not _PROOF_NAME.match(value)]
    shown += [value for value in values[len(names):] if not _PROOF_NAME.match(value)]
    shown = [_short(value) for value in shown]
    shown += [f"then exists {w}" for w in given]
    return (", ".join(shown) or "no variable instantiated") + f" (by {strategy})"
