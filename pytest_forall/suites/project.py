"""Any-project suite: ``pytest --forall-project PATH`` turns every open theorem of a project into an item.

* **Rocq** (``_CoqProject``, or ``*.v`` files): every ``Theorem``/``Lemma``/… whose proof ends in
  ``Admitted.`` is an item. Task id = the theorem's qualified name with ``.`` written ``__``
  (``Demo.Arith.add_zero`` -> ``Demo__Arith__add_zero``), because the id is also a Coq module name.
* **Lean** (``lakefile.toml``/``lakefile.lean``): every ``theorem``/``lemma`` whose proof is ``sorry``
  (``:= sorry``, ``:= by sorry``) is an item, with the same id scheme.

Rocq items are checked in the project's context (:class:`ProjectRocqProver`): the project is copied to
a private build directory under the cache and compiled once per content key with its own ``-Q``/``-R``
mapping (``coq_makefile`` + ``make``); the part of the target's file *before* the target is compiled as
the module ``ForallPrefix.Prefix_<id>``; the template the actor sees is that file's ``Require``/``Import``/
``Open``/``Set`` sentences, ``Require Import ForallPrefix.Prefix_<id>.`` and the target with ``Proof. Admitted.``
Every ``coqc``/``coqchk`` call of the verifier gets the project's load path. A proof that rests on the
project's *other* admitted lemmas passes as ``rules_only``; one that rests on the target's own admitted
version (by loading a module that contains it) fails.

``--forall-proofs DIR`` is the proof store: replay (``--forall-frontend replay``) reads ``DIR/<id>.v``,
and every accepted project proof from any other frontend is written there, so a project can gate CI on
"no stored proof regressed" when its toolchain or dependencies move.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_forall.core.errors import UsageError
from pytest_forall.core.language import Language
from pytest_forall.core.model import Layer, Task
from pytest_forall.core.proc import run_command
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.common import identifier_parts
from pytest_forall.lang.lean import LANGUAGE as LEAN
from pytest_forall.lang.lean import lexer
from pytest_forall.lang.rocq import LANGUAGE as ROCQ
from pytest_forall.lang.rocq.backend import RocqProver
from pytest_forall.lang.rocq.lexer import tokens as rocq_tokens

SUITE = "project"
ROCQ_PROVER = "rocq-project"
LEAN_PROVER = "lean-project"
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".lake", "_build", "_opam", "node_modules", "__pycache__"})
PREFIX_ROOT = "ForallPrefix"
LAKEFILES = ("lakefile.toml", "lakefile.lean")
#: A file in every run directory of the harness that ran an item (the run secret).
RUN_MARKER = ".secret"


def project_root(options: dict[str, Any], manifest: dict[str, Any] | None = None) -> Path:
    """The project named by ``--forall-project`` (or a manifest's ``path``), checked to be one."""
    value = options.get("project") or (manifest or {}).get("path")
    if not value:
        raise UsageError("no project given: pass --forall-project PATH (a Lake project with lakefile.toml/"
                         "lakefile.lean, or a Rocq project with _CoqProject or *.v files)")
    root = Path(str(value)).expanduser()
    if not root.is_absolute():
        root = Path(str(options.get("rootdir", "."))) / root
    root = root.resolve()
    if not root.is_dir():
        raise UsageError(f"--forall-project {value}: {root} is not a directory")
    if not is_lean_project(root) and not is_rocq_project(root):
        raise UsageError(f"--forall-project {value}: {root} is neither a Lake project (lakefile.toml/lakefile.lean) "
                         "nor a Rocq project (_CoqProject or *.v files)")
    return root


def is_lean_project(root: Path) -> bool:
    return any((root / name).is_file() for name in LAKEFILES)


def is_rocq_project(root: Path) -> bool:
    return (root / "_CoqProject").is_file() or next(source_files(root, ".v"), None) is not None


def source_files(root: Path, ext: str) -> Iterator[Path]:
    """The project's ``ext`` files, without VCS/build directories and without the harness's own run
    directories (a reports directory inside the project holds copies of its files in every workspace)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")
                             and not (Path(dirpath) / d / RUN_MARKER).exists())
        for name in sorted(filenames):
            if name.endswith(ext):
                yield Path(dirpath) / name


def task_id_of(qualified: str) -> str:
    return qualified.replace(".", "__")


def section_module(task_id: str) -> str:
    """The library of the abbreviations for the target's section-local names, written at bind time from
    what Coq reports about the compiled prefix."""
    return f"Section_{task_id}"


def prefix_module(task_id: str) -> str:
    """The library holding the target file's text before the target (its short name differs from the
    candidate's and template's ``<id>``, so Coq never has to disambiguate them by qualifier)."""
    return f"Prefix_{task_id}"


# --- Rocq: _CoqProject ----------------------------------------------------------------------------------

@dataclass
class CoqProject:
    root: Path
    mappings: list[tuple[str, str, str]]          # (-Q|-R, directory relative to the root, logical prefix)
    args: list[str] = field(default_factory=list)  # -arg values, passed to every coqc
    files: list[str] = field(default_factory=list)  # .v files relative to the root
    own_file: bool = True                           # _CoqProject exists (else a default mapping)

    def load_args(self, base: Path) -> list[str]:
        """coqc arguments mapping the copy at ``base`` the way the project maps itself."""
        out: list[str] = []
        for flag, directory, logical in self.mappings:
            out += [flag, str((base / directory).resolve() if directory != "." else base), logical]
        return out + self.args

    def logical_module(self, rel: str) -> str | None:
        best: tuple[int, str] | None = None
        for _, directory, logical in self.mappings:
            prefix = "" if directory in (".", "") else directory.rstrip("/") + "/"
            if rel.startswith(prefix) and (best is None or len(prefix) > best[0]):
                parts = rel[len(prefix):].removesuffix(".v").split("/")
                best = (len(prefix), ".".join(p for p in [logical, *parts] if p))
        return best[1] if best else None


def read_coqproject(root: Path) -> CoqProject:
    path = root / "_CoqProject"
    if not path.is_file():
        logical = re.sub(r"\W", "_", root.name) or "Project"
        logical = logical if logical[0].isalpha() else "P" + logical
        files = [p.relative_to(root).as_posix() for p in source_files(root, ".v")]
        return CoqProject(root, [("-R", ".", logical)], [], files, own_file=False)
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        words += line.split("#", 1)[0].split()
    mappings, args, files = [], [], []
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-Q", "-R") and i + 2 < len(words):
            mappings.append((word, os.path.normpath(words[i + 1]), words[i + 2]))
            i += 3
        elif word == "-arg" and i + 1 < len(words):
            args.append(words[i + 1])
            i += 2
        elif word == "-I" and i + 1 < len(words):
            i += 2
        elif word.endswith(".v"):
            files.append(os.path.normpath(word))
            i += 1
        else:
            i += 1
    if not files:  # a _CoqProject with only the mapping: every .v under the mapped directories
        for _, directory, _ in mappings:
            files += [p.relative_to(root).as_posix() for p in source_files(root / directory, ".v")]
    return CoqProject(root, mappings or [("-R", ".", "Project")], args, sorted(set(files)))


# --- Rocq: finding the admitted theorems ----------------------------------------------------------------

def _offsets(text: str) -> list[int]:
    starts = [0]
    for match in re.finditer("\n", text):
        starts.append(match.end())
    return starts


@dataclass
class SectionEntry:
    """One item of a section's context as a later statement reads it: a sentence the template repeats
    verbatim (with the section variables it names), or a name the section defined (``local``), which the
    template re-declares as an abbreviation of the prefix library's generalised constant."""

    sentence: str = ""
    variables: list[str] = field(default_factory=list)
    local: str = ""


@dataclass
class RocqBlock:
    """A ``Section`` or ``Module`` open at the target, with (for a section) its context so far."""

    kind: str                      # "Section" | "Module"
    name: str
    unsupported: str = ""          # why an item inside cannot be reproduced ("" = fine)
    context: list[SectionEntry] = field(default_factory=list)
    proof_lets: list[str] = field(default_factory=list)  # `Let`s with a proof: not repeatable without it


@dataclass
class RocqTarget:
    name: str
    start: int        # offset of the theorem sentence
    stmt_end: int     # offset just after the statement's closing '.'
    blocks: list[RocqBlock]

    def module_path(self) -> list[str]:
        return [b.name for b in self.blocks if b.kind == "Module"]


#: Section sentences that make the context a statement is read in (discharged or forgotten at ``End``):
#: the template repeats them, verbatim, inside its own copy of the section.
SECTION_CONTEXT_HEADS = frozenset({
    "Variable", "Variables", "Hypothesis", "Hypotheses", "Context", "Let", "Implicit", "Notation", "Infix",
    "Open", "Close", "Set", "Unset", "Generalizable", "Reserved"})


#: Sentences declaring section variables (the abbreviations' parameters).
SECTION_VARIABLE_HEADS = frozenset({"Variable", "Variables", "Hypothesis", "Hypotheses", "Context"})
#: Sentences defining names that Coq generalises at ``End`` over the section variables they use.
SECTION_DEFINITION_HEADS = frozenset({
    "Definition", "Example", "Fixpoint", "CoFixpoint", "Function", "Inductive", "CoInductive", "Variant",
    "Record", "Structure", "Class", "Instance", "Canonical", "Coercion", "Theorem", "Lemma", "Fact", "Remark",
    "Corollary", "Proposition", "Property"})
_OPENERS = {"(": ")", "{": "}", "[": "]"}


def section_variables(sentence: Any) -> list[str]:
    """The names a ``Variable``/``Hypothesis``/``Context`` sentence declares (an anonymous `` `{C A} ``
    binder declares none that the text can name)."""
    toks = list(sentence.tokens[:-1])
    heads = [i for i, t in enumerate(toks) if t.kind == "ident" and t.text in SECTION_VARIABLE_HEADS]
    rest = toks[heads[0] + 1:] if heads else []
    if rest and rest[0].text not in _OPENERS and rest[0].text != "`":
        return [t.text for t in rest[:next((i for i, t in enumerate(rest) if t.text == ":"), len(rest))]
                if t.kind == "ident"]
    names: list[str] = []
    i = 0
    while i < len(rest):
        backtick = rest[i].text == "`"
        i += backtick
        if i >= len(rest) or rest[i].text not in _OPENERS:
            break
        close, depth, j = _OPENERS[rest[i].text], 0, i
        while j < len(rest):
            depth += (rest[j].text == rest[i].text) - (rest[j].text == close)
            if depth == 0:
                break
            j += 1
        inner = rest[i + 1:j]
        colon = next((k for k, t in enumerate(inner) if t.text == ":"), -1)
        if colon >= 0:
            names += [t.text for t in inner[:colon] if t.kind == "ident"]
        elif not backtick:
            names += [t.text for t in inner if t.kind == "ident"]
        i = j + 1
    return names


def section_definitions(sentence: Any) -> list[str]:
    """The names a defining sentence adds to its section: the declared names (``with`` ones too), an
    inductive's constructors, a record's constructor and fields."""
    words = sentence.command_words()
    if words[:1] == ["Program"]:
        words = words[1:]
    head = words[0] if words else ""
    if head not in SECTION_DEFINITION_HEADS:
        return []
    if head in ("Canonical", "Coercion"):  # only ``Canonical [Structure] c := …`` defines a name
        rest = words[2:] if words[1:2] == ["Structure"] else words[1:]
        return rest[:1] if rest and sentence.defines_inline() else []
    if len(words) < 2:
        return []  # ``Instance : C := …``: a generated name
    names = [words[1]]
    toks = list(sentence.tokens[:-1])
    inductive = head in ("Inductive", "CoInductive", "Variant")
    depth, body, constructor_next = 0, -1, False
    for i, token in enumerate(toks):
        if token.text in _OPENERS:
            depth += 1
        elif token.text in _OPENERS.values():
            depth -= 1
        if depth or token.text in _OPENERS.values():
            constructor_next = False
            continue
        if token.kind == "ident" and token.text == "where":  # an inductive's notations
            break
        if constructor_next and token.kind == "ident":
            names.append(token.text)
        constructor_next = inductive and body >= 0 and token.text in (":=", "|")
        if token.text == "with" and i + 1 < len(toks) and toks[i + 1].kind == "ident":
            names.append(toks[i + 1].text)
        elif token.text == ":=" and body < 0:
            body = i
            constructor_next = inductive
    if head in ("Record", "Structure", "Class") and body >= 0:
        after = toks[body + 1:]
        if after and after[0].kind == "ident" and len(after) > 1 and after[1].text == "{":
            names.append(after[0].text)
            after = after[1:]
        elif head != "Class" or (after and after[0].text == "{"):
            names.append(f"Build_{words[1]}")
        if after and after[0].text == "{":
            depth, start = 0, True
            for token in after:
                depth += (token.text in _OPENERS) - (token.text in _OPENERS.values())
                if depth == 1 and token.text == ";":
                    start = True
                elif depth == 1 and start and token.kind == "ident":
                    names.append(token.text)
                    start = False
    return [n for n in dict.fromkeys(names) if re.fullmatch(r"[^\W\d]\w*'*", n) and n != "_"]


def _open_block(sentence: Any, words: list[str]) -> RocqBlock | None:
    """The block ``sentence`` opens, if it is ``Section X.`` or a non-inline ``Module [Import|Export] X``."""
    if words[:1] == ["Section"] and len(words) > 1:
        return RocqBlock("Section", words[1])
    if words[:1] != ["Module"] or sentence.defines_inline():
        return None
    rest = words[1:]
    kind = "Module"
    if rest[:1] == ["Type"]:
        return RocqBlock("Module", rest[1] if len(rest) > 1 else "?", unsupported="a `Module Type`")
    while rest[:1] in (["Import"], ["Export"]):
        rest = rest[1:]
    name = rest[0] if rest else "?"
    texts = [t.text for t in sentence.tokens]
    if "(" in texts:
        return RocqBlock(kind, name, unsupported="a functor (`Module … (X : T)`)")
    if ":" in texts or "<:" in texts:
        return RocqBlock(kind, name, unsupported="a module with a signature (`Module … : T`)")
    return RocqBlock(kind, name)


def rocq_admitted(text: str) -> list[RocqTarget]:
    """Theorems of ``text`` whose proof ends in ``Admitted.``, with the sections and modules open around
    each; raises NotUnderstood on text the Rocq lexer refuses."""
    from pytest_forall.lang.rocq.lexer import tokens
    from pytest_forall.lang.rocq.screen import THEOREM_KEYWORDS, split_sentences

    starts = _offsets(text)
    sentences = split_sentences(tokens(text))

    def offset(token: Any) -> int:
        return int(starts[token.line - 1] + token.col - 1)

    def source(sentence: Any) -> str:
        return text[offset(sentence.tokens[0]):offset(sentence.tokens[-1]) + 1]

    targets: list[RocqTarget] = []
    blocks: list[RocqBlock] = []
    i = 0
    while i < len(sentences):
        sentence = sentences[i]
        words = sentence.command_words()
        head = words[0] if words else ""
        opened = _open_block(sentence, words)
        in_section = bool(blocks) and blocks[-1].kind == "Section"
        if opened is not None:
            blocks.append(opened)
        elif head == "End" and blocks:
            closed = blocks.pop()
            if closed.kind == "Section" and blocks and blocks[-1].kind == "Section":
                # the closed section's names stay, generalised over its own variables
                blocks[-1].context += [e for e in closed.context if e.local]
        elif head in SECTION_CONTEXT_HEADS and in_section and not sentence.opens_proof():
            blocks[-1].context.append(SectionEntry(source(sentence), section_variables(sentence)
                                                   if head in SECTION_VARIABLE_HEADS else []))
        elif head == "Let" and in_section:
            blocks[-1].proof_lets.append(sentence.declared_name())
        defined = section_definitions(sentence) if in_section else []
        if sentence.opens_proof():
            j = i + 1
            while j < len(sentences) and not sentences[j].terminator():
                j += 1
            ending = sentences[j].terminator() if j < len(sentences) else ""
            if ending == "Admitted" and head in THEOREM_KEYWORDS:
                last = sentence.tokens[-1]
                targets.append(RocqTarget(sentence.declared_name(), offset(sentence.tokens[0]), offset(last) + 1,
                                          [dataclasses.replace(b, context=list(b.context),
                                                               proof_lets=list(b.proof_lets)) for b in blocks]))
            if ending in ("Abort", ""):
                defined = []
            i = j
        if blocks and defined:
            blocks[-1].context += [SectionEntry(local=name) for name in defined]
        i += 1
    return targets


#: Sentences of the prefix that the template repeats (they change how the statement reads).
_HEADER_HEADS = ("Require", "From", "Import", "Export", "Open", "Close", "Set", "Unset", "Implicit",
                 "Generalizable", "Local", "Global")
_REQUIRE_HEADS = ("Require", "From")


def rocq_header(prefix: str) -> tuple[list[str], list[str]]:
    """(Require sentences, other scope/option sentences) of ``prefix``, as written."""
    from pytest_forall.lang.rocq.lexer import tokens
    from pytest_forall.lang.rocq.screen import split_sentences

    starts = _offsets(prefix)
    requires: list[str] = []
    others: list[str] = []
    for sentence in split_sentences(tokens(prefix)):
        first, last = sentence.tokens[0], sentence.tokens[-1]
        words = [t.text for t in sentence.tokens if t.kind == "ident"][:2]
        if not words or words[0] not in _HEADER_HEADS:
            continue
        if words[0] in ("Local", "Global") and (len(words) < 2 or words[1] not in ("Open", "Close", "Set", "Unset")):
            continue
        text = prefix[starts[first.line - 1] + first.col - 1: starts[last.line - 1] + last.col]
        (requires if words[0] in _REQUIRE_HEADS or "Require" in words else others).append(text)
    return requires, others


def rocq_tasks(project: CoqProject, build_key: str) -> list[Task]:
    from pytest_forall.lang.common import NotUnderstood

    tasks = []
    for rel in project.files:
        path = project.root / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            tasks.append(Task(task_id=task_id_of(rel.removesuffix(".v").replace("/", ".")), suite=SUITE, track="coq",
                              prover=ROCQ_PROVER, source_path=str(path), template="", problem=f"cannot read: {exc}"))
            continue
        if "Admitted" not in text:
            continue
        module = project.logical_module(rel)
        try:
            targets = rocq_admitted(text)
        except NotUnderstood as exc:
            tasks.append(Task(task_id=task_id_of(module or rel), suite=SUITE, track="coq", prover=ROCQ_PROVER,
                              source_path=str(path), template="", problem=f"cannot parse: {exc}"))
            continue
        for target in targets:
            tasks.append(_rocq_task(project, rel, module, text, target, build_key))
    return tasks


def _rocq_task(project: CoqProject, rel: str, module: str | None, text: str, target: RocqTarget,
               build_key: str) -> Task:
    """The item for one admitted theorem: the file before it becomes the prefix library (its open blocks
    closed, so what came before is generalised exactly as Coq does at ``End``); the template imports
    that library, re-opens the target's sections with their context, states the theorem and closes them."""
    path = [*target.module_path(), target.name]
    qualified = ".".join([module, *path]) if module else f"{rel}:{'.'.join(path)}"
    task_id = task_id_of(qualified) if module else re.sub(r"\W", "_", qualified)
    statement = text[target.start:target.stmt_end]
    library = f"{PREFIX_ROOT}.{prefix_module(task_id)}"
    abbreviations = f"{PREFIX_ROOT}.{section_module(task_id)}"
    body: list[str] = []
    modules: list[str] = []
    sections: list[str] = []
    in_scope: list[str] = []   # the named section variables declared so far, outermost first
    locals_: list[dict[str, Any]] = []
    for block in target.blocks:
        if block.kind == "Module":
            modules.append(block.name)
            body.append(f"Import {library}.{'.'.join(modules)}.")
            continue
        sections.append(block.name)
        body += ["", f"Section {block.name}."]
        for entry in block.context:
            if entry.sentence:
                body.append(entry.sentence)
                in_scope += entry.variables
            elif entry.local not in {d["name"] for d in locals_}:
                params = list(dict.fromkeys(in_scope))
                locals_.append({"name": entry.local, "path": ".".join([*modules, entry.local]), "params": params})
                if params:  # (without named variables in scope, the name is its prefix constant as it is)
                    body.append(f"Notation {entry.local} := ({abbreviations}.{entry.local} {' '.join(params)}).")
    # the names the statement and the repeated context read (what the item's meaning rests on)
    read = identifier_parts(rocq_tokens("\n".join([statement, *(e.sentence for b in target.blocks
                                                                    for e in b.context)])))
    for local in locals_:
        local["read"] = local["name"] in read
    locals_ = [d for d in locals_ if d["params"] or d["read"]]
    requires, others = rocq_header(text[:target.start])
    abbreviated = any(d["params"] for d in locals_)
    lines = [*requires, f"Require Import {library}.", *([f"Require {abbreviations}."] if abbreviated else []),
             *others, *body]
    closing = "".join(f"End {block.name}.\n" for block in reversed(target.blocks))
    prefix = text[:target.start] + dependency_probes([d["name"] for d in locals_]) + ("\n" + closing if closing else "")
    if sections:
        # Coq generalises an admitted theorem over every section variable and a proved one over those its
        # statement and proof use; pinning "All" makes the candidate's statement after `End` the template's.
        lines.append('Set Default Proof Using "All".')
    trailer = "".join(f"End {name}.\n" for name in reversed(sections))
    template = "\n".join(lines) + f"\n\n{statement}\nProof.\nAdmitted.\n{trailer}"
    unsupported = ""
    if module is None:
        unsupported = f"{rel} is outside every -Q/-R directory of the project"
    for block in target.blocks:
        if block.unsupported and not unsupported:
            unsupported = f"`{target.name}` is inside {block.unsupported} `{block.name}`, which an item cannot reopen"
    repeated = identifier_parts(rocq_tokens(template))
    for block in target.blocks:
        for name in block.proof_lets:
            if name in repeated and not unsupported:
                unsupported = (f"`{name}` is a section `Let` with a proof, which vanishes at `End` and which the "
                               f"template cannot repeat without its proof; `{target.name}` uses it")
    meta = {"candidate_name": f"{task_id}.v", "project_root": str(project.root), "project_file": rel,
            "qualified_name": qualified, "prefix": prefix, "coq_build_key": build_key,
            "retrieval_exclude": [qualified], "unsupported": unsupported,
            "sections": sections, "modules": modules, "section_locals": locals_}
    return Task(task_id=task_id, suite=SUITE, track="coq", prover=ROCQ_PROVER, source_path=str(project.root / rel),
                template=template, frozen=template[:template.rindex("Admitted.")], theorem_name=target.name,
                statement=statement, meta=meta)


#: What the prefix library's probes print: each non-``Let`` section variable (newest first), each name the
#: template abbreviates, and each section variable such a name depends on.
PROBE_HYP, PROBE_HAS, PROBE_NEEDS, PROBE_ABOUT = "FORALL-HYP", "FORALL-HAS", "FORALL-NEEDS", "FORALL-ABOUT"


def _each_variable(action: str) -> str:
    """An Ltac loop running ``action`` (which fails) on every section variable that is not a ``Let``."""
    return (f"  match goal with\n  | [ v : _ |- _ ] => tryif clearbody v then fail else ({action})\n"
            f"  | _ => idtac\n  end.\n")


def dependency_probes(names: list[str]) -> str:
    """Proof-free queries appended inside the prefix's open sections: Coq itself says which section variables
    each name depends on (``clear dependent v`` makes a name that needs ``v`` ill-typed), so the abbreviation
    applies exactly the variables Coq generalises the name over at ``End``, in the section's order."""
    if not names:
        return ""
    probes = ["\n(* pytest-forall: the section variables each section-local name depends on *)\n",
              "Goal True.\n", _each_variable(f'idtac "{PROBE_HYP}" v; fail'), "Abort.\n"]
    for name in names:
        pose = f'let z := fresh "forall_probe" in pose (z := @{name})'
        probes += [f"Goal True.\n  tryif ({pose}) then idtac \"{PROBE_HAS} {name}\" else idtac.\n",
                   _each_variable(f'tryif (clear dependent v; {pose}) then fail else '
                                  f'(idtac "{PROBE_NEEDS} {name}" v; fail)'), "Abort.\n"]
    return "".join(probes)


def parse_arguments(about: str) -> list[tuple[str, bool]] | None:
    """(name, implicit) for each argument in ``About``'s ``Arguments`` line; None when Coq prints none (every
    argument explicit, no scopes)."""
    line = next((ln for ln in about.splitlines() if ln.startswith("Arguments ")), None)
    if line is None:
        return None
    words = re.findall(r"[{}\[\]()]|[^\s{}\[\]()]+", re.sub(r"%[\w']+", "", line))[2:]
    out: list[tuple[str, bool]] = []
    implicit = False
    for word in words:
        if word in "{[":
            implicit = True
        elif word in "}]":
            implicit = False
        elif word not in ("(", ")", "/", "&"):
            out.append((word.lstrip("!"), implicit))
    return out


def rocq_build_key(project: CoqProject, version: str) -> str:
    digest = hashlib.sha256(f"forall-project-rocq-1\0{version}\0".encode())
    coqproject = project.root / "_CoqProject"
    if coqproject.is_file():
        digest.update(b"_CoqProject\0" + coqproject.read_bytes())
    for rel in project.files:
        path = project.root / rel
        digest.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"<missing>") + b"\0")
    return digest.hexdigest()[:24]


def coqc_version(coqc: str = "coqc") -> str:
    if shutil.which(coqc) is None:
        return "<no coqc>"
    result = run_command([coqc, "--version"], cwd=tempfile.gettempdir(), timeout=60)
    return result.stdout.strip()


# --- Rocq: the prover in the project's context -------------------------------------------------------------

class ProjectRocqProver(RocqProver):
    """:class:`~pytest_forall.lang.rocq.backend.RocqProver` with the project's load path on every coqc/coqchk.

    The project build lives in ``<cache>/project-rocq/<key>/`` (bound read-only into the sandbox);
    templates are cached per build key, so a changed dependency never reuses a stale template.
    """

    name = ROCQ_PROVER

    def __init__(self, options: dict[str, Any] | None = None, runner: Any = None) -> None:
        from pytest_forall.core.proc import run_command as default_runner

        super().__init__(options, runner or default_runner)
        cache = (options or {}).get("cache_dir") or os.path.join(tempfile.gettempdir(), "pytest-forall-cache")
        self.builds = Path(str(cache)).resolve() / "project-rocq"
        self.builds.mkdir(parents=True, exist_ok=True)
        self.template_root = Path(str(cache)).resolve() / "project-rocq-templates"
        self.sandbox_binds = (*self.sandbox_binds, (self.builds, str(self.builds)))
        self.bound: str = ""
        self.bind_error: str = ""
        # the verifier runs layers side by side (``concurrent_layers``): one binds, the others wait for it
        self._binding = threading.Lock()

    def _bind(self, task: Task, timeout: float) -> str:
        """Build (or reuse) the project and the task's prefix module; set the load path. "" or an infra reason."""
        with self._binding:
            return self._bind_unlocked(task, timeout)

    def _bind_unlocked(self, task: Task, timeout: float) -> str:
        if self.bound == task.task_id:
            return self.bind_error
        self.bound, self.load, self.bind_error = task.task_id, [], ""
        if "project_root" not in task.meta:
            return ""
        if task.meta.get("unsupported"):
            self.bind_error = str(task.meta["unsupported"])
            return self.bind_error
        project = read_coqproject(Path(task.meta["project_root"]))
        build = self.builds / str(task.meta["coq_build_key"])
        self.bind_error = self._build_project(project, build, timeout)
        if not self.bind_error:
            self.bind_error = self._build_prefix(project, build, task, timeout)
        if not self.bind_error:
            self.load = project.load_args(build / "src") + ["-Q", str(build / "prefix"), PREFIX_ROOT]
            self.cache_dir = self.template_root / str(task.meta["coq_build_key"])
        return self.bind_error

    def _build_project(self, project: CoqProject, build: Path, timeout: float) -> str:
        done = build / "built.json"
        with FileLock(str(build) + ".lock"):
            if done.is_file():
                record = json.loads(done.read_text(encoding="utf-8"))
                return "" if record["ok"] else record["reason"]
            shutil.rmtree(build, ignore_errors=True)
            src = build / "src"
            src.mkdir(parents=True)
            for rel in project.files:
                target = src / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(project.root / rel, target)
            lines = [f"{flag} {directory} {logical}" for flag, directory, logical in project.mappings]
            lines += [f"-arg {arg}" for arg in project.args] + list(project.files)
            (src / "_CoqProject.forall").write_text("\n".join(lines) + "\n", encoding="utf-8")
            steps = [["coq_makefile", "-f", "_CoqProject.forall", "-o", "Makefile.forall"],
                     ["make", "-f", "Makefile.forall", f"-j{min(8, os.cpu_count() or 1)}",
                      f"COQC={self.coqc}"]]
            reason, timed_out = "", False
            log = []
            for argv in steps:
                result = run_command(argv, cwd=src, timeout=max(timeout, 600.0))
                log.append(f"$ {' '.join(argv)}\n{result.stdout}{result.stderr}")
                if result.returncode != 0:
                    timed_out = result.timed_out or result.returncode < 0  # killed: no verdict on the project
                    tail = (result.stdout + result.stderr).strip()[-600:]
                    reason = (f"the project does not build here (`{' '.join(argv[:2])}` exited "
                              f"{result.returncode}{', timed out' if timed_out else ''}): {tail}")
                    break
            (build / "build.log").write_text("\n".join(log), encoding="utf-8")
            if not timed_out:  # a slow machine is not a verdict on the project: retry next time
                done.write_text(json.dumps({"ok": not reason, "reason": reason}), encoding="utf-8")
            return reason

    def _build_prefix(self, project: CoqProject, build: Path, task: Task, timeout: float) -> str:
        prefix_dir = build / "prefix"
        source = prefix_dir / f"{prefix_module(task.task_id)}.v"
        # "" or why the section-local names cannot be abbreviated; written once the prefix is built
        verdict = prefix_dir / f"{section_module(task.task_id)}.reason"
        with FileLock(str(build) + ".prefix.lock"):
            vo = source.with_suffix(".vo")
            if vo.is_file() and verdict.is_file() and source.read_text(encoding="utf-8") == task.meta["prefix"]:
                return verdict.read_text(encoding="utf-8")
            prefix_dir.mkdir(parents=True, exist_ok=True)
            source.write_text(str(task.meta["prefix"]), encoding="utf-8")
            vo.unlink(missing_ok=True)
            verdict.unlink(missing_ok=True)
            argv = [self.coqc, "-q", *project.load_args(build / "src"), "-Q", str(prefix_dir), PREFIX_ROOT]
            result = run_command([*argv, str(source)], cwd=prefix_dir, timeout=timeout)
            if result.returncode != 0:
                tail = (result.stdout + result.stderr).strip()[-600:]
                return (f"the part of {task.meta['project_file']} before `{task.theorem_name}` does not compile "
                        f"here: {tail}")
            reason = self._build_abbreviations(task, argv, prefix_dir, result.stdout, timeout)
            if not reason or "timed out" not in reason:
                verdict.write_text(reason, encoding="utf-8")
            return reason

    def _build_abbreviations(self, task: Task, argv: list[str], prefix_dir: Path, probed: str,
                             timeout: float) -> str:
        """The library ``ForallPrefix.Section_<id>``: for each section-local name the template abbreviates,
        a notation over the template's section variables that applies the prefix library's generalised
        constant to the variables Coq says it depends on (section order), implicit ones by name as Coq
        declares them. "" or why the template cannot state the theorem."""
        locals_: list[dict[str, Any]] = list(task.meta.get("section_locals") or [])
        if not locals_:
            return ""
        order = [words[0] for words in reversed([line.split()[1:] for line in probed.splitlines()
                                                 if line.startswith(PROBE_HYP + " ")])]
        has = {line.split()[1] for line in probed.splitlines() if line.startswith(PROBE_HAS + " ")}
        needs: dict[str, set[str]] = {}
        for line in probed.splitlines():
            if line.startswith(PROBE_NEEDS + " "):
                name, variable = line.split()[1:3]
                needs.setdefault(name, set()).add(variable)
        library = f"{PREFIX_ROOT}.{prefix_module(task.task_id)}"
        about = [f"Require {library}.", "Set Printing Width 100000."]
        for local in locals_:
            name = local["name"]
            if name not in has:
                return (f"the section-local name `{name}` that `{task.theorem_name}`'s section defines is not "
                        f"found where the target stands (Coq's probe could not use it)")
            missing = sorted(v for v in needs.get(name, set()) if v not in local["params"])
            if missing and local["read"]:
                return (f"`{name}` depends on the section variable `{missing[0]}`, which the section does not name "
                        f"(an anonymous binder such as `Context `{{…}}`): the template cannot apply `{name}` to it")
            about += [f'Goal True. idtac "{PROBE_ABOUT} {name}". Abort.', f"About {library}.{local['path']}."]
        probe = prefix_dir / f"Probe_{task.task_id}.v"
        probe.write_text("\n".join(about) + "\n", encoding="utf-8")
        result = run_command([*argv, str(probe)], cwd=prefix_dir, timeout=timeout)
        if result.returncode != 0:
            return f"Coq's `About` on the prefix library failed: {(result.stdout + result.stderr).strip()[-600:]}"
        chunks = dict(chunk.partition("\n")[::2] for chunk in result.stdout.split(PROBE_ABOUT + " ")[1:])
        notations = [f"Require {library}."]
        for local in locals_:
            name = local["name"]
            depends = [v for v in order if v in needs.get(name, set())]
            if not local["params"]:
                continue
            if any(v not in local["params"] for v in depends):  # not read by the statement: the bare constant
                depends = []
            arguments = parse_arguments(chunks.get(name, ""))
            if arguments is not None and [a for a, _ in arguments[:len(depends)]] != depends:
                return (f"Coq generalised `{name}` over {[a for a, _ in arguments[:len(depends)]]}, not over the "
                        f"section variables it depends on, {depends}")
            implicit = dict(arguments[:len(depends)]) if arguments else {}
            applied = " ".join(f"({v}:={v})" if implicit.get(v) else v for v in depends)
            notations.append(f"Notation {name} {' '.join(local['params'])} := "
                             f"({library}.{local['path']}{' ' + applied if applied else ''}) (only parsing).")
        source = prefix_dir / f"{section_module(task.task_id)}.v"
        source.write_text("\n".join(notations) + "\n", encoding="utf-8")
        result = run_command([*argv, str(source)], cwd=prefix_dir, timeout=timeout)
        if result.returncode != 0:
            timed = ", timed out" if result.timed_out else ""
            return (f"the abbreviations of the section's names do not compile here{timed}: "
                    f"{(result.stdout + result.stderr).strip()[-600:]}")
        return ""

    # -- Prover protocol, each bound to the task's project first ----------------------------------------

    def check_template(self, task: Task, workspace: Path, timeout: float) -> Any:
        from pytest_forall.core.prover import CompileResult

        problem = self._bind(task, timeout)
        if problem:
            return CompileResult(ok=False, infra=problem)
        return super().check_template(task, workspace, timeout)

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        from pytest_forall.core.prover import CompileResult

        problem = self._bind(task, timeout)
        if problem:
            return CompileResult(ok=False, infra=problem)
        return super().compile(task, workspace, candidate, timeout)

    def statement_check(self, task: Task, workspace: Path, timeout: float) -> Layer:
        self._bind(task, timeout)
        return super().statement_check(task, workspace, timeout)

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        self._bind(task, timeout)
        return super().independent_check(task, workspace, candidate, timeout)

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        """The base audit, re-classified: the project's other admitted lemmas are within the rules, not strict;
        the target's own admitted original is never allowed."""
        from pytest_forall.lang.rocq.backend import (
            INSTALLED_ROOTS,
            STRICT_AXIOMS,
            coq_module_name,
            template_variable_names,
        )
        from pytest_forall.lang.rocq.judge import PROBLEM_ROOT

        self._bind(task, timeout)
        audit = super().audit_axioms(task, workspace, candidate, timeout)
        if not audit.ok or "project_root" not in task.meta:
            return audit
        project = read_coqproject(Path(task.meta["project_root"]))
        roots = tuple(f"{logical}." for _, _, logical in project.mappings) + (f"{PREFIX_ROOT}.",)
        own_module = f"{PROBLEM_ROOT}.{coq_module_name(task.task_id)}."
        own = template_variable_names(task.template)
        target = str(task.meta.get("qualified_name", ""))
        strict_bad, rules_bad = [], []
        for fqn in audit.axioms:
            if fqn.startswith(own_module):
                if fqn[len(own_module):] not in own:
                    strict_bad.append(fqn)
                    rules_bad.append(fqn)
            elif fqn in STRICT_AXIOMS:
                continue
            elif fqn == target or fqn == f"{PREFIX_ROOT}.{prefix_module(task.task_id)}.{task.theorem_name}":
                strict_bad.append(fqn)
                rules_bad.append(fqn)
            else:
                strict_bad.append(fqn)
                if not fqn.startswith(roots + INSTALLED_ROOTS):
                    rules_bad.append(fqn)
        audit.strict_ok, audit.rules_ok = not strict_bad, not rules_bad
        audit.reason = (f"axioms outside the benchmark's rule: {rules_bad}" if rules_bad else
                        f"axioms outside the strict allow-list (the project's admitted lemmas count here): "
                        f"{strict_bad}" if strict_bad else "")
        return audit

    def try_tactics(self, task: Task, workspace: Path, tactics: list[str], timeout: float,
                    prelude: str = "", on_attempt: Callable[[], None] | None = None) -> tuple[str, int, str]:
        """The portfolio's ``coqtop`` in the project's context (its build and the prefix library)."""
        problem = self._bind(task, max(timeout, 600.0))
        if problem:  # nothing was tried: a turn that spent nothing, never a failed proof
            return "", 0, problem
        return super().try_tactics(task, workspace, tactics, timeout, prelude, on_attempt)


# --- Lean: finding the sorry theorems ----------------------------------------------------------------

_LEAN_DECL = re.compile(
    r"^(?:@\[[^\]\n]*\]\s*)*(?:(?:private|protected|noncomputable|nonrec|scoped|local|unsafe|partial)\s+)*"
    r"(?P<kw>theorem|lemma|example)\b[ \t]*(?P<name>[^\s:({\[⦃]*)", re.MULTILINE)
_LEAN_SCOPE = re.compile(r"^(?:noncomputable\s+)?(?P<kw>namespace|section|end)\b[ \t]*(?P<name>[^\s]*)", re.MULTILINE)
_OPEN = "([{⟨⦃"
_CLOSE = ")]}⟩⦄"


@dataclass
class LeanDecl:
    keyword: str
    name: str           # as written
    qualified: str
    start: int
    body: int           # offset of the proof: the depth-0 ``:=`` (or the first ``|`` arm); -1 if none
    end: int            # offset after the declaration's last non-blank character
    private: bool = False

    def proof_text(self, text: str) -> str:
        return text[self.body:self.end] if self.body >= 0 else ""


def lean_decls(text: str) -> list[LeanDecl]:
    """``theorem``/``lemma``/``example`` declarations with their proof span and namespace-qualified name."""
    masked = lexer.mask(text)
    line_starts = [m.start() for m in re.finditer(r"^(?=\S)", masked, re.MULTILINE)]
    scopes: list[tuple[int, str, str]] = [(m.start(), m.group("kw"), m.group("name"))
                                          for m in _LEAN_SCOPE.finditer(masked)]
    decls = []
    for match in _LEAN_DECL.finditer(masked):
        start = match.start()
        end = next((s for s in line_starts if s > start and not masked.startswith("|", s)), len(text))
        while end > start and masked[end - 1].isspace():
            end -= 1
        body = _lean_body(masked, match.end(), end)
        namespace: list[list[str]] = []
        for offset, kw, name in scopes:
            if offset >= start:
                break
            if kw == "namespace":
                namespace.append(name.split("."))
            elif kw == "section":
                namespace.append([])
            elif namespace:
                namespace.pop()
        name = match.group("name")
        parts = [p for block in namespace for p in block]
        qualified = name.removeprefix("_root_.") if name.startswith("_root_.") else ".".join(parts + [name])
        decls.append(LeanDecl(match.group("kw"), name, qualified, start, body, end,
                              private="private" in masked[start:match.start("kw")]))
    return decls


def _lean_body(masked: str, begin: int, end: int) -> int:
    depth = 0
    i = begin
    while i < end:
        char = masked[i]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and masked.startswith(":=", i):
            return i
        elif depth == 0 and char == "\n":
            stripped = masked[i + 1:end].lstrip(" \t")
            if stripped.startswith("|"):
                return i
        i += 1
    return -1


def is_sorry_proof(proof: str) -> bool:
    return re.fullmatch(r":=\s*(?:by\s+)?sorry\s*", lexer.mask(proof)) is not None


def lean_tasks(root: Path) -> list[Task]:
    tasks = []
    for path in source_files(root, ".lean"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("lake-packages/") or rel in LAKEFILES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "sorry" not in text:
            continue
        for decl in lean_decls(text):
            if decl.keyword == "example" or not is_sorry_proof(decl.proof_text(text)):
                continue
            task_id = task_id_of(decl.qualified)
            template = text[:decl.end] + "\n"
            meta = {"candidate_name": f"{task_id}.lean", "project_root": str(root), "project_file": rel,
                    "qualified_name": decl.qualified, "declared_name": decl.name,
                    "retrieval_exclude": [decl.qualified]}
            problem = "private theorems cannot be audited from another module" if decl.private else ""
            tasks.append(Task(task_id=task_id, suite=SUITE, track="lean4", prover=LEAN_PROVER,
                              source_path=str(path), template=template, frozen=text[:decl.body],
                              theorem_name=decl.qualified, statement=text[decl.start:decl.body].strip(),
                              problem=problem, meta=meta))
    return tasks


# --- hooks --------------------------------------------------------------------------------------------

def load_project(root: Path, options: dict[str, Any]) -> list[Task]:
    tasks: list[Task] = []
    if is_rocq_project(root):
        project = read_coqproject(root)
        tasks += rocq_tasks(project, rocq_build_key(project, coqc_version(str(options.get("coqc") or "coqc"))))
    if is_lean_project(root):
        tasks += lean_tasks(root)
    seen: dict[str, int] = {}
    unique = []
    for task in tasks:  # overloaded names (e.g. in two files outside any mapping) stay distinct
        count = seen.get(task.task_id, 0)
        seen[task.task_id] = count + 1
        unique.append(task if not count else Task(**{**task.to_wire(), "task_id": f"{task.task_id}_{count + 1}"}))
    return unique


@hookimpl(trylast=True)
def pytest_forall_load_tasks(path: Path, manifest: dict[str, Any], options: dict[str, Any]) -> list[Task] | None:
    if manifest.get("adapter") != SUITE:
        return None
    return load_project(project_root(options, manifest), options)


@hookimpl(trylast=True)
def pytest_forall_languages() -> list[Language]:
    """Project items are in their pack's language under the project prover's name (its placeholder,
    compile hint, portfolio ladder), so nothing needs to know that ``rocq-project`` is Rocq."""
    # without the packs' aliases: ``coq`` names the Rocq pack alone (``forall verify --prover coq``)
    return [dataclasses.replace(ROCQ, name=ROCQ_PROVER, aliases=()), dataclasses.replace(LEAN, name=LEAN_PROVER, aliases=())]


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> Any:
    if name == ROCQ_PROVER:
        return ProjectRocqProver(options)
    if name == LEAN_PROVER:
        from pytest_forall.lang.lean.backend import LeanProver

        class LeanProjectProver(LeanProver):
            """The Lean backend compiling in the project; the screen reads the name as declared."""

            def static_layers(self, task: Task, text: str) -> list[Layer]:
                from pytest_forall.lang.screens import lean_static_layers

                return lean_static_layers(task.template, text, theorem_name=str(task.meta.get("declared_name")))

        prover = LeanProjectProver({"lean_required_modules": [], **options,
                                    "lean_project": str(project_root(options))})
        prover.name = LEAN_PROVER
        return prover
    return None
