"""What the protocol knows about a prover's language, without knowing which language it is.

Each language pack (``pytest_forall/lang/<name>/``) exports one :class:`Language`; the registry finds it by
prover name through the ``pytest_forall_language`` hook, so core, agents and suites never compare prover
names themselves and a new prover is one new pack.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_forall.core.audit import AuditPack
    from pytest_forall.core.model import Task


@dataclass(frozen=True)
class ProjectSplice:
    """How an accepted proof of a project's lemma goes back into the project's file (``forall apply``)."""

    #: ``(file text, statement offset, candidate) -> edit`` with ``start``, ``end``, ``replacement`` and ``helpers``
    #: (the names it declares before the lemma); raises ValueError when the candidate cannot be put back.
    splice: Callable[[str, int, str], Any]
    #: ``(file text, offset) -> {name: line}``: what the file declares from ``offset`` on (a helper so named clashes).
    declared_after: Callable[[str, int], dict[str, int]]


@dataclass(frozen=True)
class Language:
    """One prover's language facts: its files, its hole, how to compile by hand, how to audit a statement."""

    #: The prover name tasks carry (``Task.prover``).
    name: str
    #: Shown to actors ("Rocq (Coq)").
    title: str
    #: Candidate file extension, without the dot.
    extension: str
    #: The placeholder proof a template carries (shown to actors, in backquotes).
    placeholder: str
    #: How an actor compiles its file by hand (``{file}`` is the candidate's name).
    compile_command: str
    #: ``(task_id, path, text, suite=, track=) -> Task``: a problem file as benchmarks ship it.
    parse_problem: Callable[..., Task]
    #: Other names for the same prover (``coq`` for ``rocq``): accepted wherever a prover name is, and markers.
    aliases: tuple[str, ...] = ()
    #: ``() -> AuditPack``: the statement audit (refutation and vacuity tasks, certificate search), or None.
    audit: Callable[[], AuditPack | None] = field(default=lambda: None)
    #: ``() -> (tactics, prelude)`` the embedded portfolio tries, cheapest first.
    portfolio_ladder: Callable[[], tuple[list[str], str]] = field(default=lambda: ([], ""))
    #: ``(task, tactic) -> candidate text`` with the hole closed by one tactic.
    close_hole: Callable[[Task, str], str] | None = None
    #: ``(absolute path) -> ""`` or what is wrong with it as this prover's toolchain (``--forall-<name>-toolchain``,
    #: ``forall verify --toolchain``); None: the pack takes no toolchain option.
    check_toolchain: Callable[[str], str] | None = None
    #: ``() -> ProjectSplice``: how its project items' accepted proofs are written back into their files; None: the
    #: pack's items are no project's files (a callable, so the pack imports its splicer only when asked).
    project_splice: Callable[[], ProjectSplice | None] = field(default=lambda: None)


class UnknownLanguage(LookupError):
    """No installed language pack has this prover name."""


@functools.cache
def _languages() -> dict[str, Language]:
    from pytest_forall.core.registry import builtin_plugin_manager

    found: dict[str, Language] = {}
    for languages in builtin_plugin_manager().hook.pytest_forall_languages():
        for lang in languages:
            found.setdefault(lang.name, lang)
    return found


def language(name: str) -> Language:
    """The language pack of prover ``name``; raises :class:`UnknownLanguage` naming the installed ones."""
    found = _languages().get(name) or next((lang for lang in _languages().values() if name in lang.aliases), None)
    if found is None:
        raise UnknownLanguage(f"no language pack for prover {name!r}; installed: {sorted(_languages())}")
    return found


def _unparsable(*args: object, **kwargs: object) -> Task:
    raise UnknownLanguage("no language pack parses this prover's problems")


def toolchain_problem(prover: str, spec: str, base: Path) -> tuple[str, str]:
    """(absolute path, "") for a toolchain option's value (relative: from ``base``), or ("", what is wrong)."""
    if not spec:
        return "", ""
    path = str((base / Path(spec).expanduser()).absolute())
    check = language_or_plain(prover).check_toolchain
    if check is None:
        return "", f"the {prover} language pack takes no toolchain"
    problem = check(path)
    return ("", f"{spec}: {problem}") if problem else (path, "")


def language_or_plain(name: str) -> Language:
    """The pack of ``name``, or plain facts for a prover without one (a third-party or test backend)."""
    try:
        return language(name)
    except UnknownLanguage:
        return Language(name=name, title=name, extension="txt", placeholder="placeholder", compile_command="",
                        parse_problem=_unparsable)


def language_names() -> list[str]:
    return sorted(_languages())


def marker_names(name: str) -> list[str]:
    """The ``-m`` names of a task of prover ``name``: its pack's name and aliases (``rocq``, ``coq``); none
    for a prover without a pack (its marker would not be registered)."""
    try:
        lang = language(name)
    except UnknownLanguage:
        return []
    return [lang.name, *lang.aliases]


def language_of_file(path: Path) -> Language | None:
    """The pack whose candidate files end like ``path`` (``.v``, ``.lean``), if any."""
    return next((lang for lang in _languages().values() if path.suffix == f".{lang.extension}"), None)
