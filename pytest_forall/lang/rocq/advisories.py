"""The known critical soundness bugs of Rocq/Coq kernels, as data: which are in force for the installed kernel.

Sources: Rocq's own list ``dev/doc/critical-bugs.md`` (rocq-prover/rocq, read at commit 04ca3d57; every entry with
its range is pinned in ``tests/data/rocq_critical_bugs.json``, and ``tests/test_advisories.py`` fails when an entry
affecting a supported kernel has no row here) and the tracker's critical issues since; each row names its source.

Each row says how the bug is kept out of an accepted proof, in exactly one way (``coverage``):

* ``detector``: the judge plugin (``forall_judge.mlg``, ``feature_findings``) reports ``feature`` on the candidate's
  own kernel terms and the ``kernel_advisories`` layer rejects it while the row is in force:

  - ``fix`` / ``cofix``: a fixpoint / cofixpoint outside the plugin's own conservative criterion (written
    independently of Coq's guard checker);
  - ``letin``: an inductive whose constructor types have local definitions (``pack (x : nat) (g : T := t)``);
  - ``variance``: a cumulative universe-polymorphic inductive (the kernel infers its variance);
  - ``upoly``: a universe-polymorphic inductive or transparent constant (the kernel substitutes its universe
    instance when it unfolds it or reduces a match on it; an opaque polymorphic lemma is never unfolded);
  - ``functor``: a module of the candidate's library that is not a plain ``Module M. … End M.`` (a functor, a
    module type, a sealed, aliased, applied or declared module), or a field whose canonical name is not its own
    (``Include``d or aliased), read from the kernel's module structure and delta resolver (also the rows whose bug needs a
    functor application or module subtyping: rocq#12155 and rocq#16646's unreported flags, rocq#18503's primitives);
  - ``vm`` / ``native``: a conversion checked by the bytecode VM / native compilation. coqchk has neither, so a
    proof that used them is accepted only when coqchk finished and accepted it (docs/verifier.md).

* ``refused``: the construct the bug needs (``feature``:
  ``register``, ``definitional-uip``, ``side-effect-section``) is refused before or after compilation
  by the layer ``covered_by`` names, whatever the kernel; ``exploit`` names the corpus entry showing that refusal.
* ``impossible``: the bug needs a crafted ``.vo`` file or an OCaml plugin (``feature`` ``plugin-or-vo``), which a
  candidate cannot supply (``covered_by`` says why).

Versions compare numerically (``8.16.1`` < ``9.0.1``); a bug is in force when ``introduced <= version`` and
(``fixed_in`` is empty or ``version < fixed_in``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

CRITICAL_BUGS = "https://github.com/rocq-prover/rocq/blob/master/dev/doc/critical-bugs.md"
#: The commit of ``critical-bugs.md`` the table was last compared with (tests/data/rocq_critical_bugs.json).
CRITICAL_BUGS_COMMIT = "04ca3d5726bddfc5a89cea9423a46f735c6ed294"
#: Features the judge plugin reports (``finding <feature> <constant> <place> <digest> <why>``, judge.py).
DETECTED = ("fix", "cofix", "letin", "variance", "upoly", "functor")
#: What each detected feature is, for the rejection message ("the candidate's <construct> `<constant>`").
DETECTED_CONSTRUCT = {"fix": "fixpoint in", "cofix": "cofixpoint in", "letin": "inductive",
                      "variance": "inductive", "upoly": "universe-polymorphic declaration",
                      "functor": "module or module field"}
#: Features that need the independent checker (which has no VM and no native compiler) to finish and accept.
NEEDS_CHECKER = ("vm", "native")
#: Constructs refused whatever the kernel, and what refuses each (the layer, then the corpus entry showing it).
REFUSED = {
    "register": "syntax_screen: `Register` (and `Register Inline`) is refused",
    "definitional-uip": "syntax_screen: `Set Definitional UIP` is refused; axiom_audit: an inductive with the UIP "
                        "flag is refused",
    "side-effect-section": "elaborated_statement: the judge's walk of the discharged constants fails on the one "
                           "the side effect left ill-typed, which rejects the candidate (never infra); "
                           "independent_check: coqchk (no side effects in the checker) rejects it too",
}
#: Why a candidate cannot supply a crafted ``.vo`` or a plugin.
IMPOSSIBLE = ("the candidate is one source file compiled by coqc in the harness (never a .vo it supplies); "
              "`Declare ML Module`, `Load`, `Add LoadPath` and `Require` of anything but installed libraries are "
              "refused by the syntax screen; the sandbox gives the compile no writable load path")
COVERAGES = ("detector", "refused", "impossible")


@dataclass(frozen=True)
class Advisory:
    """One critical kernel bug: where it is, which versions it affects, what construct it needs, how it is kept out
    of an accepted proof (``coverage``/``covered_by``), and the corpus entry that shows it (``exploit``)."""

    id: str
    title: str
    component: str
    introduced: str
    fixed_in: str          # "" = no release known to fix it
    feature: str
    source: str
    coverage: str = "detector"
    exploit: str = ""      # tests/cheats/cheat/<name> (several: space-separated); "" = shown by a test named in docs

    def affects(self, version: tuple[int, ...]) -> bool:
        return parse_version(self.introduced) <= version and (
            not self.fixed_in or version < parse_version(self.fixed_in))

    @property
    def covered_by(self) -> str:
        """The layer that keeps the bug out of an accepted proof, in words (the verdict lists it per advisory)."""
        if self.coverage == "refused":
            return REFUSED[self.feature]
        if self.coverage == "impossible":
            return f"needs a crafted .vo or a plugin: {IMPOSSIBLE}"
        if self.feature in NEEDS_CHECKER:
            return (f"kernel_advisories reports every {self.feature} conversion of the candidate; independent_check: "
                    "coqchk (no VM, no native compiler) must finish and accept")
        if self.feature == "functor":
            return ("kernel_advisories: the judge's module walk of the compiled library (`functor`): every module must "
                    "be a plain `Module M. … End M.`, no functor, module type, sealed, aliased, applied or declared "
                    "module")
        return f"kernel_advisories: the judge's `{self.feature}` detector on the candidate's kernel terms"

    def to_wire(self) -> dict[str, str]:
        return {"id": self.id, "title": self.title, "component": self.component, "introduced": self.introduced,
                "fixed_in": self.fixed_in, "feature": self.feature, "source": self.source,
                "coverage": self.coverage, "covered_by": self.covered_by}


def _issue(number: int) -> str:
    return f"https://github.com/rocq-prover/rocq/issues/{number}"


def _pull(number: int) -> str:
    return f"https://github.com/rocq-prover/rocq/pull/{number}"


def _row(number: int, title: str, component: str, introduced: str, fixed_in: str, feature: str, link: str = "",
         coverage: str = "detector", exploit: str = "") -> Advisory:
    """A row cited from critical-bugs.md and its issue (or, for entries that name only their fix, the pull request)."""
    return Advisory(f"rocq#{number}", title, component, introduced, fixed_in, feature,
                    f"{CRITICAL_BUGS}; {link or _issue(number)}", coverage, exploit)


def _tracker(number: int, title: str, component: str, introduced: str, fixed_in: str, feature: str, link: str = "",
             coverage: str = "detector", exploit: str = "") -> Advisory:
    """A row cited from the tracker alone: an issue or pull request not (yet) in critical-bugs.md at the commit read
    (pinned with its source in tests/data/rocq_critical_bugs.json's ``tracker_entries``)."""
    return Advisory(f"rocq#{number}", title, component, introduced, fixed_in, feature, link or _issue(number),
                    coverage, exploit)


ADVISORIES: tuple[Advisory, ...] = (
    # --- guard checking (fixpoints) -----------------------------------------------------------------------------
    _row(20413, "guard checker forgot to check non-structural arguments of fixpoint", "guard checking", "8.16",
         "9.0.1", "fix", f"{_issue(20413)}; fix PR #20415", exploit="advisory_20413_unchecked_argument"),
    _row(20455, "guard checker incorrectly detects match on match as returning a subterm", "guard checking", "8.16",
         "9.0.1", "fix", f"{_issue(20455)}; fix PR #20457", exploit="advisory_20455_match_on_match"),
    _row(20555, "guard checker does incorrect reduction across inner fixpoint", "guard checking", "8.16", "9.0.1",
         "fix", f"{_issue(20555)}; fix PR #20648"),
    _row(21839, "guard checker sometimes does reduction in the wrong context", "guard checking", "8.16", "9.3", "fix",
         f"{_issue(21839)}; fix PR #21845", exploit="advisory_21839_reduction_wrong_context"),
    _row(21682, "guard checker ignores cross calls computing uniform arguments of a nested mutual fixpoint",
         "guard checking", "8.20", "9.2.0", "fix", f"{_issue(21682)}; fix PR #21684",
         exploit="advisory_21682_cross_call_uniform"),
    _row(21683, "guard checker does not check recursive calls passed as uniform argument in a nested fixpoint",
         "guard checking", "9.0.1", "9.2.0", "fix"),
    _row(21701, "guard checker does not count argument-less recursive calls for uniform arguments",
         "guard checking", "8.20", "9.2.0", "fix"),
    _row(21797, "guard checker does not check arguments of recursive calls in uniformity analysis",
         "guard checking", "8.20", "9.2.0", "fix", f"{_issue(21797)}; fix PR #21798"),
    _row(22021, "guard checker sometimes forgets to check lambda domains in nested fixpoints", "guard checking",
         "8.20", "9.2.1", "fix", f"{_issue(22021)}; fix PR #22022"),
    # Tracker (not in the list at the commit read): the fix (PR #22384) names no release, so kept in force; Coq 8.16.1
    # has no uniform-argument inlining (introduced for 8.20 by the PR for wish #16040) and refuses the exploit.
    _tracker(22382, "guard checker counts uniform arguments of a nested fixpoint from binders that are not abstractions "
         "(a let-in)", "guard checking", "8.20", "", "fix", f"{_issue(22382)}; fix PR #22384",
         exploit="advisory_22382_uniform_letin_binder"),
    # Tracker, open: a fixpoint may alter the recursive tree of an argument along an equality of types, a nested call
    # trusts it; the reproducer needs a non-trivial `nat = nat` (univalence, not in the strict list; "there may be a
    # way with propext"). Its fixpoint recurses on a cast, which the criterion refuses whatever the axioms
    # (tests/test_toolchains.py::test_tracker_guard_shapes_are_refused_on_toolchain).
    _tracker(22024, "guard condition inconsistent with univalence: fixpoints can alter recursive trees of arguments and "
         "are not checked again", "guard checking", "8.0", "", "fix", _issue(22024)),
    # The list's "guard condition issue made it inconsistent with propositional extensionality": a recursive call on
    # a cast of a subterm (`castP e H`, e from propositional_extensionality, which the strict list allows).
    _row(21053, "guard condition accepts a recursive call on a subterm cast along an equality of types "
         "(inconsistent with propositional extensionality)", "guard checking", "6.1", "9.0.1", "fix",
         f"{_issue(21053)}; fix PR #21050", exploit="advisory_21053_propext_cast"),
    # --- cofixpoints ----------------------------------------------------------------------------------------------
    _row(22389, "cofixpoint guard checker passes wrong rectree for nested mutual cofixpoints",
         "cofixpoints, guard checking", "8.0", "9.2.1", "cofix", f"{_issue(22389)}; fix PR #22392",
         exploit="advisory_22389_nested_mutual_cofix"),
    # Not in the critical-bugs.md version read; the issue (closed) does not say which release fixed it, and its
    # reproducer proves False on 8.16.1 here (tests/cheats/cheat/advisory_22386_cofix_let_type): kept in force.
    Advisory("rocq#22386", "cofixpoint recursive tree computed in the wrong environment (type a let-bound "
             "variable)", "cofixpoints, guard checking", "8.0", "", "cofix", _issue(22386),
             exploit="advisory_22386_cofix_let_type"),
    # --- inductive declarations, conversion -------------------------------------------------------------------
    _row(22378, "conversion under contexts is done in the wrong environment", "lazy conversion", "8.14", "9.2.1",
         "letin", f"{_issue(22378)}; fix PR #22379", exploit="advisory_22378_letin_constructor"),
    # "fixed in: 9.2.0, 9.3" but "impacted: until V9.2.0", found after 9.2.0 was released: 9.2.0 counted affected.

    _row(22376, "variance inference ignores stack of stuck irrelevant to relevant matches",
         "inductive declarations, universe polymorphism", "8.13", "9.2.1", "variance"),
    _row(22385, "incorrect variance inference with letin in constructor type",
         "inductive declarations, universe polymorphism", "8.6", "9.2.1", "variance"),
    # --- universe substitution of universe-polymorphic declarations -------------------------------------------
    _row(22380, "incorrect reification in lazy machine of matches with universe polymorphism", "lazy reduction",
         "8.17", "9.2.1", "upoly", f"{_issue(22380)}; fix PR #22381", exploit="advisory_21688_upoly_match"),
    _row(22391, "missing universe substitution when converting matches with letin in constructor type",
         "conversion", "8.17", "9.2.1", "upoly", exploit="advisory_21688_upoly_match"),
    _row(21972, "double universe substitution in letins from constructor arguments in match branches",
         "conversion", "8.17", "9.2.1", "upoly", _pull(21972), exploit="advisory_21688_upoly_match"),
    _row(21688, "double universe substitution in letins from indices in match return clause", "conversion",
         "8.14", "9.2.0", "upoly", f"{_pull(21688)}; {_issue(21689)}", exploit="advisory_21688_upoly_match"),
    _row(21698, "missing universe substitution in primitive array instance in lazy", "lazy, primitive arrays",
         "8.17", "9.2.0", "upoly", f"{_pull(21698)}; {_issue(21692)}", exploit="advisory_21688_upoly_match"),
    _row(21697, "missing substitution for relevance of product domain in lazy (sort polymorphism)",
         "lazy reduction, sort polymorphism", "8.19", "9.2.0", "upoly", f"{_pull(21697)}; {_issue(21691)}",
         exploit="advisory_21688_upoly_match"),
    # --- VM and native compilation ------------------------------------------------------------------------------
    _row(19402, "broken addmuldiv operation for large shifts (VM)", "bytecode VM", "8.10", "8.20", "vm",
         f"{_issue(19402)}; fix PR #19405", exploit="advisory_19402_vm_addmuldiv"),
    _row(16957, "tactic code could mutate a global cache of values for section variables (VM)", "bytecode VM",
         "8.1", "8.17", "vm"),
    _row(13439, "buffer overflow on large records and closures (VM; infinite loop with OCaml 5)", "bytecode VM",
         "8.1", "", "vm", exploit="advisory_19402_vm_addmuldiv"),
    _row(16891, "memory corruption by evaluating ill-typed terms obtained from unsafe tactics (VM and native)",
         "VM and native reduction machines", "8.1", "", "vm", exploit="advisory_19402_vm_addmuldiv exact_no_check"),
    _row(17871, "nativenorm reading back closures as arbitrary floating-point values", "native compilation, "
         "primitive floats", "8.11", "8.18.0", "native", exploit="advisory_19402_vm_addmuldiv"),
    # --- constructs refused whatever the kernel -----------------------------------------------------------------
    _row(21051, "missing substitution when strengthening functors", "modules", "8.5", "9.0.1", "functor",
         exploit="advisory_21051_functor_strengthening"),
    _row(21685, "missing substitution when strengthening aliased functors", "modules", "8.5", "9.2.0", "functor",
         exploit="advisory_21051_functor_strengthening"),
    _row(21702, "incorrect subtyping rule for universe polymorphic \"with Definition\"", "modules", "8.5", "9.2.0",
         "functor", exploit="advisory_21702_with_definition declare_module_axioms"),
    # needs module subtyping (a functor applied under a signature): the module walk reports the sealed module and the
    # functor (the let-in detector does not see through the sealed module: the exploit's constant has no body; coqchk
    # rejects it as an axiom, but a candidate can run coqchk past its budget, so coqchk is no cover).
    # "fixed in: 9.2.0, 9.3" but "impacted: until V9.2.0", found after 9.2.0 was released: 9.2.0 counted affected.
    _row(22387, "incorrect subtyping of inductives with letins in constructor types", "subtyping, inductive "
         "declarations", "8.0", "9.2.1", "functor", exploit="advisory_22387_module_letin_subtyping"),
    # the three below need module subtyping or a functor application, which the module walk refuses kernel-side
    # (a `Primitive` declaration and the typing-flag commands are refused by the screen too)
    _row(18503, "primitives are incorrectly considered convertible to anything by module subtyping",
         "modules, primitive types", "8.11", "8.19.0", "functor", exploit="primitive_declared"),
    _row(12155, "Print Assumptions + Parameter Inline fails to report some inconsistent flags", "module functors",
         "8.6", "", "functor", exploit="typing_flags_guard bypass_check_attribute unset_guard_checking"),
    _row(16646, "Print Assumptions does not report Unset Universe Checking used during functor application",
         "module functors", "8.11", "", "functor", exploit="unset_universe_checking"),
    _row(21736, "forgotten universe substitution with Register Inline on universe polymorphic definition",
         "VM and native", "8.5", "9.2.0", "register", coverage="refused", exploit="register_inline"),
    # without Definitional UIP, upstream: "believed to only contradict axioms incompatible with equality reflection"
    # (none of the strict list's axioms is: excluded middle, extensionality, proof irrelevance, choice, the reals')
    _row(21696, "missing stack conversion for irrelevant-to-relevant match (Definitional UIP)", "conversion, SProp",
         "8.13", "9.2.0", "definitional-uip", f"{_pull(21696)}; {_issue(21690)}", coverage="refused",
         exploit="definitional_uip"),
    # "impacted 8.11.0 to 8.20.0", "fixed in V9.0": 8.20.1's coqc refuses the exploit (its Qed checks the side
    # effect's section variables; tests/test_toolchains.py runs it there), so 8.20.1 is not affected.
    _row(19861, "section variables used in side effects not checked by Proof using", "side-effects / sections",
         "8.11", "8.20.1", "side-effect-section", coverage="refused", exploit="advisory_19861_abstract_in_section"),
    # --- a crafted .vo or a plugin --------------------------------------------------------------------------------
    _row(12439, "coqchk checks too little about primitive declarations (coqchk only)", "primitive types and "
         "operators", "8.10", "", "plugin-or-vo", coverage="impossible", exploit="declare_ml_module"),
    _row(7609, "kernel and checker accept incorrect name aliasing information", "name handling / typechecker", "8.0",
         "9.2.0", "plugin-or-vo", f"{_issue(7609)}; {_pull(22276)}", coverage="impossible",
         exploit="declare_ml_module"),
    _row(18629, "incorrect abstraction of sort variables in relevance marks; coqchk did not check relevance marks",
         "sort polymorphism / proof irrelevance", "8.10", "8.19.1", "plugin-or-vo", coverage="impossible",
         exploit="declare_ml_module"),
    _row(18403, "deserialization of .vo data not properly checked (coqchk on crafted .vo files)", "coqchk", "8.10",
         "8.19", "plugin-or-vo", f"{_pull(18403)}; {_pull(18406)}", coverage="impossible",
         exploit="require_candidate_file"),
    # Tracker: an open pull request adds this entry to the list ("impacted 8.20-9.3", rocqchk only with the
    # non-default `-bytecode-compiler yes`, which the harness never passes); no release fixes it yet.
    _tracker(22352, "rocqchk trusts the serialized VM bytecode segment of a .vo (crafted .vo, -bytecode-compiler yes)",
         "rocqchk", "8.20", "", "plugin-or-vo", f"{_issue(22352)}; {_pull(22353)}", coverage="impossible",
         exploit="require_candidate_file"),
    # Tracker: open pull request; a crafted .vo's delta resolver gives two declarations one canonical name.
    _tracker(22456, "rocqchk accepts forged delta aliases of a crafted .vo (incompatible declarations, one canonical "
         "name)", "rocqchk, modules", "8.0", "", "plugin-or-vo", _pull(22456), coverage="impossible",
         exploit="require_candidate_file"),
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
