"""Any-project suite: ``pytest --forall-project PATH`` turns every proof of a project into an item.

* **Rocq** (``_CoqProject``, or ``*.v`` files): every ``Theorem``/``Lemma``/``Fact``/``Remark``/``Corollary``/
  ``Proposition``/``Example``, and every ``Definition``/``Instance`` (``Program`` ones too) proved in proof mode,
  is an item (library mode); ``Admitted`` ones are marked ``admitted``. Task id = the qualified name with ``.``
  written ``__`` (``Demo.Arith.add_zero`` -> ``Demo__Arith__add_zero``). Proofs that are not items (``Let``,
  ``Next Obligation``, unnamed instances, inside functors …) are listed once in the collection report.
* **Lean** (``lakefile.toml``/``lakefile.lean``): every ``theorem``/``lemma`` whose proof is ``sorry``
  (``:= sorry``, ``:= by sorry``) is an item, with the same id scheme.

A Rocq item's context is the project itself (issue 18): its template is the target's own file up to the
target, with the proof as the hole and the open sections/modules closed; a candidate is compiled *as that file*
in a copy of the project's own build (:class:`ProjectRocqProver`), and the judge compares, as kernel terms, the
target's type and every earlier declaration of the file with the project's own build. Nothing of Coq's scoping
is rebuilt from text. A proof resting on the project's admitted lemmas or axioms is ``rules_only``; on proved
ones, ``strict``; on axioms the maintainer declared the project's foundations (``--forall-project-axioms``, checked
against the build), ``strict``, naming them.

``--forall-proofs DIR`` is the proof store: replay (``--forall-frontend replay``) reads ``DIR/<id>.v``
(without ``--forall-proofs``, a project item replays the project's own proof), and every accepted project proof
from any other frontend is written there.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from filelock import FileLock

from pytest_forall.core.cache import cache_root
from pytest_forall.core.errors import UsageError
from pytest_forall.core.language import Language
from pytest_forall.core.model import Layer, Task, sha256_bytes
from pytest_forall.core.proc import run_command
from pytest_forall.core.registry import hookimpl
from pytest_forall.lang.lean import LANGUAGE as LEAN
from pytest_forall.lang.lean import lexer
from pytest_forall.lang.rocq import LANGUAGE as ROCQ
from pytest_forall.lang.rocq.backend import (
    AXIOM_CLAUSE,
    CHECKER_CLAUSE,
    RocqProver,
    clean_env,
    parse_coqchk_summary,
    read_compile,
)
from pytest_forall.lang.rocq.judge import PLUGIN_INSIDE
from pytest_forall.lang.rocq.screen import THEOREM_KEYWORDS
from pytest_forall.lang.rocq.toolchain import Toolchain, label, probe, resolve, root_prefix, run_in

SUITE = "project"
ROCQ_PROVER = "rocq-project"
LEAN_PROVER = "lean-project"
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".lake", "_build", "_opam", "node_modules", "__pycache__"})
LAKEFILES = ("lakefile.toml", "lakefile.lean")
#: A file in every run directory of the harness that ran an item (the run secret).
RUN_MARKER = ".secret"
#: Per project root: the proofs the last collection did not make items, with the reason (the collection report).
NOT_ITEMS: dict[str, list[tuple[str, str]]] = {}


def project_root(options: dict[str, Any], manifest: dict[str, Any] | None = None) -> Path:
    """The project named by ``--forall-project`` (or a manifest's ``path``), checked to be one."""
    value = options.get("project") or (manifest or {}).get("path")
    if not value:
        raise UsageError("no project given: pass --forall-project PATH (a Lake project with lakefile.toml/"
                         "lakefile.lean, or a Rocq project with _CoqProject or *.v files)")
    root = Path(str(value)).expanduser()
    if not root.is_absolute():  # typed on the command line: from the invocation directory (issue 32)
        root = Path(str(options.get("project_base") or options.get("rootdir", "."))) / root
    root = root.resolve()
    if not root.is_dir():
        raise UsageError(f"--forall-project {value}: {root} is not a directory")
    if not is_lean_project(root) and not is_rocq_project(root):
        raise UsageError(f"--forall-project {value}: {root} is neither a Lake project (lakefile.toml/lakefile.lean) "
                         "nor a Rocq project (_CoqProject or *.v files)")
    return root


def build_command_problem(command: str, root: Path) -> str:
    """Why ``--forall-project-build`` cannot run (checked at configure time), or "": it must be one shell command
    line whose program exists (on PATH, or a path in the project)."""
    import shlex

    if not command.strip():
        return "the build command is empty"
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return f"cannot read the build command {command!r}: {exc}"
    first = next((w for w in words if not re.fullmatch(r"\w+=.*", w)), "")  # after VAR=value assignments
    if not first:
        return f"the build command {command!r} runs no program"
    if "/" in first:
        if not (root / first).is_file() or not os.access(root / first, os.X_OK):
            return f"{first} (the build command's program) is not an executable file of the project {root}"
    elif shutil.which(first) is None and first not in ("cd", "exec", "set", "export", "true", ":", "."):
        return f"{first!r} (the build command's program) is not on PATH"
    return ""


#: a fully qualified kernel name as the judge prints an assumption: a logical root, then at least a name
_QUALIFIED = re.compile(r"[^\W\d][\w']*(?:\.[^\W\d][\w']*)+")


def declared_axioms(value: Any) -> tuple[str, ...]:
    """``--forall-project-axioms`` as names (the option is repeated; a value may list several, by commas or
    whitespace: neither is ever part of a kernel name), sorted and without repeats."""
    items = value if isinstance(value, (list, tuple)) else [value] if value else []
    return tuple(sorted({name for item in items for name in re.split(r"[\s,]+", str(item)) if name}))


def project_axioms_problem(names: tuple[str, ...], root: Path) -> str:
    """Why ``--forall-project-axioms`` is malformed for the project at ``root`` (checked at configure time), or "":
    each name is fully qualified under one of the project's logical names. Whether the build has each as an axiom
    is checked against the build itself (:meth:`ProjectRocqProver._declaration_problem`)."""
    bad = [name for name in names if not _QUALIFIED.fullmatch(name)]
    if bad:
        return (f"{bad[0]!r} is not a fully qualified kernel name (e.g. Lib.File.my_axiom, as the audit names "
                "assumptions)")
    if not is_rocq_project(root):
        return f"{root} is not a Rocq project (no _CoqProject or *.v files): declared axioms are a Rocq project's own"
    roots = tuple(f"{logical}." for _, _, logical in read_coqproject(root).mappings)
    foreign = [name for name in names if roots and not name.startswith(roots)]
    if foreign:
        return (f"`{foreign[0]}` is not under the project's logical names ({', '.join(r[:-1] for r in roots)}): "
                "only the project's own axioms can be declared (an installed library's are not the project's)")
    return ""


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


# --- Rocq: _CoqProject ----------------------------------------------------------------------------------

@dataclass
class CoqProject:
    root: Path
    mappings: list[tuple[str, str, str]]          # (-Q|-R, directory relative to the root, logical prefix)
    args: list[str] = field(default_factory=list)  # -arg values, passed to every coqc
    files: list[str] = field(default_factory=list)  # .v files relative to the root
    own_file: bool = True                           # _CoqProject exists (else a default mapping)
    #: who declares the mapping and builds by default: "coq_makefile" (``_CoqProject`` or the default mapping) or
    #: "dune" (``(coq.theory …)`` stanzas of a ``dune-project`` using coq)
    tool: str = "coq_makefile"
    #: where the build puts the compiled files, relative to the copy's root ("" = beside the sources)
    compiled: str = ""
    #: the files were found by walking the tree (``_CoqProject`` lists none, or there is none), not read from it
    walked: bool = False

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
    """The project's mapping, ``-arg``s and files, read from where the project declares them: its dune theories when
    its ``dune-project`` uses coq (dune builds it; where dune is not installed, a ``_CoqProject`` beside them is
    used instead), else its ``_CoqProject``, else one default ``-R . <dir name>``."""
    dune = read_dune_theories(root)
    if dune is not None and (shutil.which("dune") is not None or not (root / "_CoqProject").is_file()):
        return dune
    path = root / "_CoqProject"
    if not path.is_file():
        logical = re.sub(r"\W", "_", root.name) or "Project"
        logical = logical if logical[0].isalpha() else "P" + logical
        files = [p.relative_to(root).as_posix() for p in source_files(root, ".v")]
        return CoqProject(root, [("-R", ".", logical)], [], files, own_file=False, walked=True)
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
    walked = not files
    if walked:  # a _CoqProject with only the mapping: every .v under the mapped directories
        for _, directory, _ in mappings:
            files += [p.relative_to(root).as_posix() for p in source_files(root / directory, ".v")]
    return CoqProject(root, mappings or [("-R", ".", "Project")], args, sorted(set(files)), walked=walked)


def _sexp(text: str) -> list[Any]:
    """A dune file's S-expressions (atoms as strings; ``;`` comments, ``#;`` datum comments and quoted atoms)."""
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|#;|[()]|[^\s()";]+|;[^\n]*', text)
    stack: list[list[Any]] = [[]]
    dropped: list[int] = []  # depths at which the next datum is commented out by ``#;``

    def add(datum: Any) -> None:
        if dropped and dropped[-1] == len(stack):
            dropped.pop()
        else:
            stack[-1].append(datum)

    for token in tokens:
        if token == "#;":
            dropped.append(len(stack))
        elif token.startswith(";"):
            continue
        elif token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise ValueError("unbalanced ')'")
            add(stack.pop())
        else:
            add(token[1:-1] if token.startswith('"') else token)
    if len(stack) != 1:
        raise ValueError("unbalanced '('")
    return stack[0]


def read_dune_theories(root: Path) -> CoqProject | None:
    """The project as dune declares it (``dune-project`` with ``(using coq …)``): each ``(coq.theory (name N)
    (flags …))`` maps its directory ``-R dir N`` (as dune passes it to coqc), its flags other than ``:standard`` go
    to coqc, its files are the ``.v`` files of the directory (of its subdirectories too under ``(include_subdirs
    qualified)``); dune puts the compiled files under ``_build/default``. None when the project is not a dune one."""
    declared = root / "dune-project"
    try:
        if not declared.is_file() or not any(form[:2] == ["using", "coq"] for form in _sexp(declared.read_text(
                encoding="utf-8")) if isinstance(form, list)):
            return None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    mappings: list[tuple[str, str, str]] = []
    args: list[str] = []
    files: list[str] = []
    for dune in source_files(root, "dune"):
        if dune.name != "dune":
            continue
        try:
            forms = _sexp(dune.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        recursive = ["include_subdirs", "qualified"] in forms
        directory = os.path.normpath(dune.parent.relative_to(root).as_posix())
        for form in forms:
            if not isinstance(form, list) or form[:1] != ["coq.theory"]:
                continue
            fields = {f[0]: f[1:] for f in form[1:] if isinstance(f, list) and f and isinstance(f[0], str)}
            name = next((str(v) for v in fields.get("name", []) if isinstance(v, str)), "")
            if not name:
                continue
            mappings.append(("-R", directory, name))
            flags = [str(v) for v in fields.get("flags", []) if isinstance(v, str) and v != ":standard"]
            if flags and " ".join(flags) not in " ".join(args):  # one set of coqc flags for the copy
                args += flags
            found = source_files(dune.parent, ".v") if recursive else sorted(dune.parent.glob("*.v"))
            files += [p.relative_to(root).as_posix() for p in found]
    if not mappings:
        return None
    return CoqProject(root, mappings, args, sorted(set(files)), own_file=True, tool="dune",
                      compiled="_build/default")


# --- Rocq: finding the proofs -----------------------------------------------------------------------------

#: Sentences whose proof makes an item (with ``Program`` in front too): theorems, and definitions, examples,
#: instances and (co)recursive functions proved in proof mode (the kernel checks the guard of the latter at the end).
ITEM_HEADS = frozenset({"Theorem", "Lemma", "Fact", "Remark", "Corollary", "Proposition", "Property", "Example",
                        "Definition", "Instance", "Fixpoint", "CoFixpoint"})


@dataclass
class RocqBlock:
    """A ``Section`` or ``Module`` open at a proof; ``unsupported`` says why an item inside cannot be one."""

    kind: str
    name: str
    unsupported: str = ""


@dataclass
class RocqProof:
    """One proof of a file: where its statement and proof are, and how it ends."""

    keyword: str
    name: str
    start: int          # offset of the statement sentence
    stmt_end: int       # offset just after the statement's '.'
    opener: str         # the proof's first sentence when it is ``Proof.``/``Proof using …``/``Proof with …``
    body: str           # the proof after the opener, up to and including its last sentence
    ending: str         # Qed | Defined | Admitted | Abort | Save | Proof (a ``Proof term.``) | "" (unterminated)
    blocks: list[RocqBlock]
    skip: str = ""      # why this proof is not an item ("" = it is one)
    program: str = ""   # for an obligation: the ``Program`` declaration it belongs to (as the text names it)

    def module_path(self) -> list[str]:
        return [b.name for b in self.blocks if b.kind == "Module"]


def _open_block(sentence: Any, words: list[str]) -> RocqBlock | None:
    """The block ``sentence`` opens, if it is ``Section X.`` or a non-inline ``Module [Import|Export] X``."""
    if words[:1] == ["Section"] and len(words) > 1:
        return RocqBlock("Section", words[1])
    if words[:1] != ["Module"] or sentence.defines_inline():
        return None
    rest = words[1:]
    if rest[:1] == ["Type"]:
        name = rest[1] if len(rest) > 1 else "?"
        return RocqBlock("Module", name, unsupported=(
            f"the `Module Type` `{name}`: Coq keeps only the statement in the signature (`Parameter`) and discards "
            "the proof, so there is no body to check"))
    while rest[:1] in (["Import"], ["Export"]):
        rest = rest[1:]
    name = rest[0] if rest else "?"
    texts = [t.text for t in sentence.tokens]
    if "(" in texts:
        return RocqBlock("Module", name, unsupported=(
            f"the functor `{name}` (`Module {name} (…)`): its proofs are fields of the functor's body, over its "
            "parameters, not constants of the file's build the judge can read (lemmas after it, e.g. about an "
            "application `Module M := F …`, are items)"))
    if ":" in texts:  # (``Module M <: T`` only checks M against T: M stays as written, an ordinary module)
        return RocqBlock("Module", name, unsupported=(
            f"the module `{name}` sealed by a signature (`Module {name} : T`): outside it, the build has only the "
            "signature's fields (a lemma as a `Parameter`, one the signature does not name not at all), so there is "
            "no body to check"))
    return RocqBlock("Module", name)


def rocq_proofs(text: str) -> list[RocqProof]:
    """Every proof of ``text`` (statement sentence opening proof mode, up to its terminator), with the sections
    and modules open around it; raises NotUnderstood on text the Rocq lexer refuses. Only where the proofs are is
    read from the text: what the statements mean is read from Coq's build (the judge)."""
    from pytest_forall.lang.rocq.lexer import tokens
    from pytest_forall.lang.rocq.screen import split_sentences

    starts = _offsets(text)
    sentences = split_sentences(tokens(text))

    def offset(token: Any) -> int:
        return int(starts[token.line - 1] + token.col - 1)

    found: list[RocqProof] = []
    blocks: list[RocqBlock] = []
    last_program = ""
    i = 0
    while i < len(sentences):
        sentence = sentences[i]
        words = sentence.command_words()
        texts = [t.text for t in sentence.tokens]
        opened = _open_block(sentence, words)
        if opened is not None:
            blocks.append(opened)
        elif words[:1] == ["End"] and blocks:
            blocks.pop()
        if words[:1] == ["Program"]:
            last_program = sentence.declared_name()
        # ``Obligation N [of p].`` opens a proof too (``Obligation Tactic := …`` and ``Obligations.`` do not)
        at = texts.index(words[0]) if words[:1] == ["Obligation"] else -1
        numbered = at >= 0 and at + 1 < len(texts) and texts[at + 1].isdigit()
        if not sentence.opens_proof() and not numbered:
            i += 1
            continue
        program_of = ""
        if words[:1] in (["Next"], ["Obligation"]):
            program_of = texts[texts.index("of") + 1] if "of" in texts[:-1] else last_program
        program = words[:1] == ["Program"]
        keyword = words[1] if program and len(words) > 1 else (words[0] if words else "")
        j = i + 1
        opener = ""
        if j < len(sentences) and sentences[j].command_words()[:1] == ["Proof"]:
            rest = [t.text for t in sentences[j].tokens[1:-1]]
            if rest and rest[0] not in ("using", "with"):  # ``Proof term.``: the proof in one sentence
                stmt_end = offset(sentence.tokens[-1]) + 1
                term = text[offset(sentences[j].tokens[1]):offset(sentences[j].tokens[-1])]
                found.append(RocqProof(keyword, sentence.declared_name(), offset(sentence.tokens[0]), stmt_end,
                                       "", f"exact ({term}).\nQed.", "Proof", list(blocks)))
                i = j + 1
                continue
            opener = text[offset(sentences[j].tokens[0]):offset(sentences[j].tokens[-1]) + 1]
            j += 1
        body_start = j
        while j < len(sentences) and not sentences[j].terminator():
            j += 1
        ending = sentences[j].terminator() if j < len(sentences) else ""
        body = ""
        if body_start < len(sentences) and j < len(sentences):
            body = text[offset(sentences[body_start].tokens[0]):offset(sentences[j].tokens[-1]) + 1]
        proof = RocqProof(keyword, sentence.declared_name(), offset(sentence.tokens[0]),
                          offset(sentence.tokens[-1]) + 1, opener, body, ending, list(blocks), program=program_of)
        proof.skip = _not_an_item(proof, words, program)
        found.append(proof)
        i = j + 1
    return found


#: :func:`rocq_proofs` by the text's digest: the collection, the sessions ahead and each file's dump ask for the
#: same files in one process (a text is lexed once, however many times its items are asked for)
_PROOFS: dict[str, list[RocqProof]] = {}


def _proofs_of(text: str, store: Any = None) -> list[RocqProof]:
    """:func:`rocq_proofs` of ``text``, once per process and text (the result is read, never changed). With ``store``
    (the run's :class:`~pytest_forall.core.cache.VerdictCache`), once per text and pytest-forall version: lexing a
    library is most of its collection (1.1 s of 1.5 s for Coquelicot, in every process of a run, #18), so the result
    is kept in an HMAC-checked entry keyed by the text's SHA-256 and pytest-forall's own sources; an entry that is
    absent, foreign or malformed is lexed again."""
    from pytest_forall.core.cache import harness_version

    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    found = _PROOFS.get(key)
    if found is not None:
        return found
    entry = {"kind": "rocq-proofs", "text": key, "harness": harness_version()}
    if store is not None:
        found = _proofs_from_wire(store.value(entry))
    if found is None:
        found = rocq_proofs(text)
        if store is not None:
            store.remember(entry, [dataclasses.asdict(proof) for proof in found])
    _PROOFS[key] = found
    return found


def _proofs_from_wire(value: Any) -> list[RocqProof] | None:
    """The proofs :func:`_proofs_of` stored, or None when ``value`` is not such a list."""
    if not isinstance(value, list):
        return None
    try:
        return [RocqProof(**{**proof, "blocks": [RocqBlock(**block) for block in proof["blocks"]]})
                for proof in value]
    except (TypeError, KeyError):
        return None


def _not_an_item(proof: RocqProof, words: list[str], program: bool) -> str:
    """Why a proof is not made an item ("" when it is one)."""
    if proof.keyword in ("Next", "Obligation"):
        of = f"`{proof.program}`" if proof.program else "a `Program` declaration"
        named = ("" if proof.keyword == "Obligation" else " and numbers its constant `…_obligation_<n>` after the "
                 "obligations it solved itself, which the text does not show")
        return (f"an obligation of {of}: `Program` generates its statement (the file writes none for an agent to read "
                f"or the screen to freeze){named}; it is checked with its file in the build, and the items that use "
                "that definition rest on it (an admitted obligation makes them rules-only)")
    if proof.keyword == "Let":
        return "a section `Let` with a proof, which vanishes when its section ends"
    if proof.keyword == "Goal":
        return "a `Goal` declares no name"
    if proof.keyword not in ITEM_HEADS:
        return f"`{proof.keyword}` in proof mode is not an item kind"
    if not proof.name or proof.name in (":", "(", "{") or not re.fullmatch(r"[^\W\d][\w']*", proof.name):
        return "no name (Coq generates one)"
    if proof.ending in ("Abort", ""):
        return "the proof is aborted" if proof.ending == "Abort" else "the proof is not terminated"
    if proof.ending == "Save":
        return "`Save` ends the proof under another name"
    if program and proof.ending != "Admitted" and proof.keyword in ("Definition", "Instance"):
        return ""
    return next((f"inside {b.unsupported}" for b in proof.blocks if b.unsupported), "")


def rocq_tasks(project: CoqProject, cones: dict[str, dict[str, Any]], skipped: list[tuple[str, str]],
               store: Any = None) -> list[Task]:
    """Every proof of the project an item: the template is the proof's own file up to its statement, its proof the
    hole, the blocks around it closed. Proofs that are not items go to ``skipped`` as (name, reason). ``store``: where
    a file's lexed proofs are kept between runs (:func:`_proofs_of`)."""
    from pytest_forall.lang.common import NotUnderstood

    tasks = []
    for rel in project.files:
        path = project.root / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped.append((rel, f"cannot read: {exc}"))
            continue
        module = project.logical_module(rel)
        if module is None:
            skipped.append((rel, "outside every -Q/-R directory of the project"))
            continue
        try:
            proofs = _proofs_of(text, store)
        except NotUnderstood as exc:
            skipped.append((rel, f"cannot split into sentences: {exc}"))
            continue
        file_digest = hashlib.sha256(text.encode("utf-8")).hexdigest()  # once per file, not per proof (#18)
        for proof in proofs:
            qualified = ".".join([module, *proof.module_path(), proof.name or "?"])
            if proof.skip:
                where = f"{rel}:{text.count(chr(10), 0, proof.start) + 1}"
                skipped.append((qualified if proof.keyword in ITEM_HEADS and "no name" not in proof.skip
                                else f"{where} {proof.keyword}", proof.skip))
                continue
            tasks.append(_rocq_task(project, rel, module, text, file_digest, proof, cones.get(rel, {})))
    return tasks


def _rocq_task(project: CoqProject, rel: str, module: str, text: str, file_digest: str, proof: RocqProof,
               cone: dict[str, Any]) -> Task:
    """The item of one proof: the file up to the statement, the proof's opener, ``Admitted.`` as the hole, and
    ``End`` for every block open there (the file after the proof is not part of the problem: nothing after it can
    change what the declarations before it are). ``own_candidate`` is the project's own proof in that template."""
    path = [*proof.module_path(), proof.name]
    qualified = ".".join([module, *path])
    task_id = task_id_of(qualified)
    in_section = any(b.kind == "Section" for b in proof.blocks)
    admitted = proof.ending == "Admitted"
    opener = proof.opener or "Proof."
    if admitted and in_section and opener.split()[1:2] != ["using"]:
        # Coq generalises an admitted lemma over every section variable, a proved one over those it uses: the
        # project's statement of this lemma is the one over all of them
        opener = "Proof using All."
    closing = "".join(f"End {b.name}.\n" for b in reversed(proof.blocks))
    head = text[:proof.stmt_end] + "\n" + opener + "\n"
    template = head + "Admitted.\n" + closing
    own = "" if admitted else head + proof.body + "\n" + closing
    meta = {"candidate_name": f"{task_id}.v", "project_root": str(project.root), "project_file": rel,
            "coq_module": module, "qualified_name": qualified, "target_path": ".".join(path),
            "retrieval_exclude": [qualified], "cone_key": cone.get("key", ""), "deps_key": cone.get("deps_key", ""),
            "deps": list(cone.get("deps", [])), "statement_offset": proof.start, "opener": opener,
            "keyword": proof.keyword, "admitted": admitted, "own_candidate": own, "statement_audit": "off",
            "file_digest": file_digest,
            "markers": ["admitted"] if admitted else [],
            "sections": [b.name for b in proof.blocks if b.kind == "Section"], "modules": proof.module_path()}
    return Task(task_id=task_id, suite=SUITE, track="coq", prover=ROCQ_PROVER, source_path=str(project.root / rel),
                template=template, frozen=head, theorem_name=proof.name,
                statement=text[proof.start:proof.stmt_end], meta=meta)


def _offsets(text: str) -> list[int]:
    starts = [0]
    for match in re.finditer("\n", text):
        starts.append(match.end())
    return starts


#: What a build makes (compiled Coq and OCaml files): never copied from the project's own tree into the copy, where a
#: stale one newer than its copied source would be taken as up to date by make.
BUILD_PRODUCTS = (".vo", ".vos", ".vok", ".vio", ".glob", ".aux", ".cmi", ".cmo", ".cmx", ".cmxs", ".cma", ".cmxa",
                  ".o", ".a")


def build_inputs(project: CoqProject, command: str = "") -> list[str]:
    """The files a build of the project reads, relative to its root: ``_CoqProject`` and the ``.v`` files for the
    default ``coq_makefile`` build; every file of the tree for dune or the user's own build command (their rules,
    scripts and generated inputs are the project's)."""
    if project.tool == "coq_makefile" and not command:
        return ["_CoqProject", *project.files]
    return [p.relative_to(project.root).as_posix() for p in source_files(project.root, "")
            if not p.name.endswith(BUILD_PRODUCTS)]


def declaration(project: CoqProject, command: str = "") -> bytes:
    """What declares the project's build: the build command and the files that declare the mapping and flags
    (``_CoqProject``, or ``dune-project`` and every ``dune`` file)."""
    declared = [project.root / "_CoqProject"] if project.tool == "coq_makefile" else [
        project.root / "dune-project", *(p for p in source_files(project.root, "dune") if p.name == "dune")]
    out = f"build\0{command}\0".encode()
    for path in declared:
        if path.is_file():
            out += path.relative_to(project.root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0"
    return out


def rocq_build_key(project: CoqProject, version: str, command: str = "") -> str:
    """The baseline build's key: the toolchain, how the project declares its build, and every input of the build."""
    digest = hashlib.sha256(f"forall-project-rocq-3\0{version}\0".encode() + declaration(project, command))
    for rel in build_inputs(project, command):
        path = project.root / rel
        digest.update(rel.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"<missing>") + b"\0")
    return digest.hexdigest()[:24]


def cone_keys(project: CoqProject, version: str, command: str = "",
              toolchain: Toolchain | None = None) -> dict[str, dict[str, Any]]:
    """Per file: ``key``, a digest of the toolchain, ``_CoqProject`` and the file's ``coqdep`` cone (itself and every
    project file it transitively requires), so an edit changes the key of the files that depend on it only;
    ``deps_key``, the same without the file itself (what its proofs rest on); ``deps``, the cone's other files.
    Without ``coqdep`` every key is the whole project's and ``deps`` is every other file."""
    whole = rocq_build_key(project, version, command)
    graph = coqdep_graph(project, toolchain)
    if graph is None:
        return {rel: {"key": whole, "deps_key": whole, "deps": [f for f in project.files if f != rel]}
                for rel in project.files}
    contents = {rel: hashlib.sha256((project.root / rel).read_bytes()).hexdigest()
                if (project.root / rel).is_file() else "<missing>" for rel in project.files}
    head = f"forall-project-cone-2\0{version}\0".encode() + declaration(project, command)

    def digest(members: set[str]) -> str:
        found = hashlib.sha256(head)
        for member in sorted(members):
            found.update(f"\0{member}\0{contents.get(member, '<outside>')}".encode())
        return found.hexdigest()[:24]

    keys = {}
    for rel in project.files:
        cone: set[str] = set()
        todo = [rel]
        while todo:
            current = todo.pop()
            if current not in cone:
                cone.add(current)
                todo += graph.get(current, [])
        keys[rel] = {"key": digest(cone), "deps_key": digest(cone - {rel}), "deps": sorted(cone - {rel})}
    return keys


def coqdep_graph(project: CoqProject, toolchain: Toolchain | None = None) -> dict[str, list[str]] | None:
    """``coqdep``'s answer (the toolchain's, default the one on PATH: another version resolves ``Require``s against
    its own libraries): for each project file, the project files it requires (None when coqdep fails)."""
    toolchain = toolchain or Toolchain("")
    if not toolchain.has("coqdep") or not project.files:
        return None
    argv = ["coqdep"]
    for flag, directory, logical in project.mappings:
        argv += [flag, directory, logical]
    result = run_in(toolchain, [*argv, *project.files], project.root, timeout=120)
    if result.returncode != 0:
        return None
    files = set(project.files)
    graph: dict[str, list[str]] = {}
    for line in result.stdout.replace("\\\n", " ").splitlines():
        target, _, prereqs = line.partition(":")
        names = target.split()
        if not names or not names[0].endswith(".vo"):
            continue
        source = os.path.normpath(names[0][:-3] + ".v")
        graph[source] = [os.path.normpath(p[:-3] + ".v") for p in prereqs.split()
                         if p.endswith(".vo") and os.path.normpath(p[:-3] + ".v") in files]
    return graph


def first_build_error(log: str, rel: str) -> tuple[str, int]:
    """The first error coqc printed for the project file ``rel`` in a build's log (``File "./rel", line …`` and the
    message after it, a few lines) and its line, ("", 0) when the log has none: what the gate and the summary show,
    not the log's tail (a ``COQDEP …`` line says nothing), and where the file stops compiling."""
    lines = log.splitlines()
    want = os.path.normpath(rel)
    for index, line in enumerate(lines):
        found = re.match(r'File "([^"]+)", line (\d+)', line.strip())
        if found and os.path.normpath(found.group(1)) == want:
            message = []
            for more in lines[index + 1:index + 8]:
                if re.match(r"(File \"|make(\[\d+\])?:|COQ\w+ |\S+\.vo? )", more.strip()) or not more.strip():
                    break
                message.append(more.strip())
            text = f"{rel}:{found.group(2)}: {' '.join(message).removeprefix('Error:').strip()}"[:300]
            return text, int(found.group(2))
    return "", 0


def first_error_lines(log: str) -> str:
    """The first error of a build's log and the lines that say what it is (a located ``File "…", line …`` block, or
    the first line naming an error and the two after it), "" when none is found: a build's reason starts with what
    went wrong, not with its log's last lines (``COQDEP …`` progress)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for index, line in enumerate(lines):  # coqc's located error first
        if line.startswith('File "'):
            return " ".join(lines[index:index + 3])[:400]
    for index, line in enumerate(lines):  # else the first error; make's own line says only which rule failed
        if re.search(r"\b(Error|error|ERROR)\b", line):
            shown = lines[max(0, index - 2):index + 1] if re.match(r"make(\[\d+\])?: \*\*\*", line) else \
                lines[index:index + 3]
            return " ".join(shown)[:400]
    return ""


def proof_digest(task: Task, data: bytes) -> str:
    """What the gate calls the proof (core/gating.py): the candidate after the project's text and the target's
    statement, digested; the same whether the verdict was computed or served from the cache."""
    after = data.decode("utf-8", "replace")[int(task.meta.get("statement_offset", 0)):]
    return sha256_bytes(after.split(task.statement, 1)[-1].encode("utf-8"))[:24]


def coqc_version(coqc: str = "coqc") -> str:
    if shutil.which(coqc) is None:
        return "<no coqc>"
    result = run_command([coqc, "--version"], cwd=tempfile.gettempdir(), timeout=60)
    return result.stdout.strip()


def project_toolchain(options: dict[str, Any]) -> Toolchain:
    """``--forall-rocq-toolchain`` as the project's collection reads it (a bad value: the PATH's; the backend
    reports the problem on every item)."""
    found = resolve(str(options.get("rocq_toolchain") or options.get("toolchain") or ""))
    return found if isinstance(found, Toolchain) else Toolchain("")


def toolchain_version(options: dict[str, Any]) -> str:
    """What the collection's keys name: the toolchain (``label``: version and where it runs from) and its
    ``coqc --version``, or the ``coqc`` option's version."""
    if options.get("coqc"):
        return coqc_version(str(options["coqc"]))
    toolchain = project_toolchain(options)
    return f"{label(toolchain)} {probe(toolchain)[0]}"


# --- Rocq: the prover in the project's own build -----------------------------------------------------------

def _stamp(path: Path) -> tuple[int, int, int] | None:
    """(inode, mtime, size) of a file, None when there is none: what says it was not written since."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


def _worker_share(options: dict[str, Any]) -> tuple[int, int]:
    """(this process's index, the number of processes) of the run, as the plugin read it from pytest-xdist
    (``options["worker_share"]``; ``gw3`` of 4: (3, 4)); (0, 1) alone or when not given."""
    share = options.get("worker_share")
    if isinstance(share, (list, tuple)) and len(share) == 2 and all(isinstance(v, int) for v in share) \
            and share[1] >= 1:
        return share[0] % share[1], share[1]
    return 0, 1


#: the work this process started ahead of its items (the build at collection, the judge sessions and coqchk after
#: it): each thread with its cancel scope, so that none of their processes outlives the run (:func:`_stop_ahead`)
_AHEAD: list[tuple[threading.Thread, Any]] = []
_AHEAD_LOCK = threading.Lock()


def _start_ahead(name: str, step: Callable[..., None], *args: Any) -> None:
    """``step(*args)`` in a daemon thread (the run never waits for it at exit), in a cancel scope that
    :func:`_stop_ahead` cancels when the process exits: its processes are killed then, never left running."""
    from pytest_forall.core.proc import CancelScope, scoped

    scope = CancelScope()
    thread = threading.Thread(target=scoped(scope, step), args=args, name=name, daemon=True)
    with _AHEAD_LOCK:
        if not _AHEAD:
            atexit.register(_stop_ahead)
        _AHEAD.append((thread, scope))
    thread.start()


def _stop_ahead(grace: float = 10.0) -> None:
    """Kill the processes of the work started ahead that is still running (the run ended, normally or by Ctrl-C,
    before it was needed) and give its threads ``grace`` seconds to unwind (nothing is recorded of a killed build,
    judge session or coqchk: the next run does it again)."""
    with _AHEAD_LOCK:
        running = [(thread, scope) for thread, scope in _AHEAD if thread.is_alive()]
        _AHEAD.clear()
        atexit.unregister(_stop_ahead)
    for _, scope in running:
        scope.cancel()
    deadline = time.monotonic() + grace
    for thread, _ in running:
        thread.join(max(0.0, deadline - time.monotonic()))


class ProjectRocqProver(RocqProver):
    """:class:`~pytest_forall.lang.rocq.backend.RocqProver` judging a candidate against the project's own build.

    The project is copied to ``<cache>/project-rocq/<key>/src`` and built once per content key with its own
    ``_CoqProject`` (``coq_makefile`` + ``make``; ``-arg``s go to coqc only). A candidate (the target's file up
    to the target, with the target's proof changed) is compiled as that very file, in a tree of the build's
    ``.vo`` files (links) holding the candidate instead of the file; the judge plugin then dumps the baseline
    ``.vo`` and the candidate's ``.vo`` under the same logical name and compares them as kernel terms
    (:func:`~pytest_forall.lang.rocq.judge.judge_project_file`); ``coqchk -norec`` re-checks the candidate's
    ``.vo`` with the project's load path (and no ``-arg``).
    """

    name = ROCQ_PROVER
    #: Process-wide (pytest makes one prover per item, and a warm run would otherwise re-read and re-hash every
    #: compiled file and re-parse every judge dump per item), each keyed by what determines it: a build's key by
    #: the toolchain and the sources' stamps, a compiled file's digest by its stamp and the judge plugin, a judge
    #: dump by its record's path (named by that digest).
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()
    _shared_keys: ClassVar[dict[tuple[str, str, str, str], tuple[tuple[tuple[str, int, int], ...], str]]] = {}
    _shared_vo_digests: ClassVar[dict[tuple[str, int, int, str], str]] = {}
    _shared_dumps: ClassVar[dict[str, Any]] = {}
    #: finished builds (by directory) and their answer ("" or why the project does not build)
    _built: ClassVar[dict[str, str]] = {}
    #: build directories whose per-file sessions this process has started ahead of their items (:meth:`_prefetch`)
    _prefetched: ClassVar[set[str]] = set()
    #: build directories this process has started building at collection (:meth:`build_ahead`)
    _ahead: ClassVar[set[str]] = set()
    #: per (build directory, declaration): why ``--forall-project-axioms`` does not hold of that build ("": it does)
    _declarations: ClassVar[dict[tuple[str, str], str]] = {}
    #: per finished build directory and file: the SHA-256 of the source the build compiled (the copy does not change
    #: once built: its directory is named by its inputs)
    _shared_sources: ClassVar[dict[tuple[str, str], str]] = {}
    #: per stored ``coqchk`` record (named by its compiled file's digest): its text, read once per process
    _shared_checks: ClassVar[dict[str, str]] = {}
    #: per ``user-contrib`` directory: its mtime and the installed libraries' logical roots (re-listed when it moves)
    _shared_contrib: ClassVar[dict[str, tuple[int, tuple[str, ...]]]] = {}
    #: per project root: the stamps of its ``_CoqProject`` and ``dune-project`` and the project read from them, when
    #: they alone declare it (its files listed, not found by walking the tree; no dune theories)
    _shared_projects: ClassVar[dict[str, tuple[tuple[tuple[int, int, int] | None, ...], CoqProject]]] = {}
    #: makes one item's project, build directory and answer once, when the compile and the layers ask at once
    _item_lock: ClassVar[threading.RLock] = threading.RLock()
    #: per (build directory, file that did not build): where it stops and which items are judged from one compile of
    #: the file before that (:meth:`_broken_file_plan`)
    _shared_plans: ClassVar[dict[tuple[str, str], tuple[int, int, Task | None, list[str], list[str]]]] = {}
    #: per file's content as collected (its cone's key) and judge: the baseline dump a row's kernel digests were read
    #: from (:meth:`change_fields`), so a file's next items read none of the build's inputs again
    _shared_row_baselines: ClassVar[dict[tuple[str, ...], Any]] = {}

    def __init__(self, options: dict[str, Any] | None = None, runner: Any = None) -> None:
        from pytest_forall.core.proc import run_command as default_runner

        super().__init__(options, runner or default_runner)
        self.builds = cache_root(options).expanduser().resolve() / "project-rocq"
        #: ``--forall-project-build``: the user's own build command, run with ``sh -c`` in the project's copy
        self.build_command = str((options or {}).get("project_build") or "").strip()
        #: ``--forall-project-axioms``: the project's own axioms its maintainer declares as foundations (strict)
        self.declared = declared_axioms((options or {}).get("project_axioms"))
        #: this process's share of the judge sessions ahead under pytest-xdist (:func:`_worker_share`)
        self.worker_share = _worker_share(options or {})
        #: the declaration as one plain setting: part of the verdict cache's policy (``core.cache.prover_settings``),
        #: so a verdict judged under another declaration is never served
        self.project_axioms = " ".join(self.declared)
        self.builds.mkdir(parents=True, exist_ok=True)
        self.sandbox_binds = (*self.sandbox_binds, (self.builds, str(self.builds)))
        self._lock = ProjectRocqProver._shared_lock
        self._keys = ProjectRocqProver._shared_keys
        self._judged_project: dict[tuple[str, str], tuple[Any, str, bool]] = {}
        self._tactic_load: dict[str, list[str]] = {}
        #: verification directories whose candidate is the project's own proof (digest), judged from the build
        self._own: dict[str, str] = {}
        #: per item, the digest of the last compiled candidate after the project's own text (the proof, helpers)
        self._proofs: dict[str, str] = {}
        self._vo_digests = ProjectRocqProver._shared_vo_digests
        self._dumps = ProjectRocqProver._shared_dumps
        #: what this prover found about the item it verifies (:meth:`_for_item`): every layer asks for the project,
        #: its build and the baseline, which are read once per item, not once per layer
        self._item: dict[Any, Any] = {}
        #: per verification directory, the SHA-256 of its compiled candidate (forgotten when it is compiled again)
        self._candidate_vo: dict[str, str] = {}

    def fresh(self) -> ProjectRocqProver:
        """A copy of this prover as its constructor left it: the same settings, its own containers (the records of
        one item's candidates) except those the class shares on purpose between the provers of a process."""
        other = copy.copy(self)
        shared = {id(value) for klass in type(self).__mro__ for value in vars(klass).values()}
        for name, value in vars(other).items():
            if isinstance(value, (dict, list, set)) and id(value) not in shared:
                setattr(other, name, copy.copy(value))
        return other

    # -- the baseline build -------------------------------------------------------------------------------

    def _for_item(self, task: Task) -> dict[Any, Any]:
        """This prover's records about ``task`` (the same Task object: one item's verification, whose layers all ask
        for the project, the build and the baseline). Another task, or the same item collected again (a new Task),
        starts them afresh, so an edit between items (or between two collections) is seen as before."""
        with ProjectRocqProver._item_lock:
            if self._item.get("task") is not task:
                self._item.clear()
                self._item["task"] = task
            return self._item

    def _project(self, task: Task) -> CoqProject:
        """The project's ``_CoqProject`` (or dune files), read once per item; a ``_CoqProject`` that lists the files
        is read once per process and whenever it (or a ``dune-project``) changes: two stats per item."""
        with ProjectRocqProver._item_lock:
            item = self._for_item(task)
            if "project" not in item:
                root = Path(task.meta["project_root"])
                stamp = (_stamp(root / "_CoqProject"), _stamp(root / "dune-project"))
                known = ProjectRocqProver._shared_projects.get(str(root))
                if known is None or known[0] != stamp:
                    project = read_coqproject(root)
                    known = (stamp, project)
                    if project.own_file and project.tool == "coq_makefile" and not project.walked and stamp[1] is None:
                        ProjectRocqProver._shared_projects[str(root)] = known
                item["project"] = known[1]
            found: CoqProject = item["project"]
            return found

    def _build_dir(self, project: CoqProject) -> Path:
        """The build directory of the project as it is now (its key re-read when a source's size or mtime moved)."""
        stamp = []
        root = str(project.root)
        for rel in build_inputs(project, self.build_command):
            try:  # os.stat of the joined text: a Path per input costs more than its stat (every item asks, #18)
                info = os.stat(os.path.join(root, rel))
                stamp.append((rel, info.st_size, info.st_mtime_ns))
            except OSError:
                stamp.append((rel, -1, -1))
        where = (str(project.root), self.toolchain.spec, self.coqc, self.build_command)
        with self._lock:
            known = self._keys.get(where)
            if known is None or known[0] != tuple(stamp):
                known = (tuple(stamp), rocq_build_key(project, self.version(), self.build_command))
                self._keys[where] = known
        return self.builds / known[1]

    def _build(self, task: Task, timeout: float) -> tuple[CoqProject, Path, str]:
        """(project, build directory, "") once the project is built, else why not (infra: a build that fails here
        is the project's or the machine's fault, never the candidate's)."""
        if "project_root" not in task.meta:
            return read_coqproject(Path(task.source_path).parent), Path(), "not a project item"
        with ProjectRocqProver._item_lock:
            project, build = self._item_build(task)
            answer = self._for_item(task).get("built")
        if answer is None:
            answer = self._build_project(project, build, timeout)
            if str(build) in ProjectRocqProver._built:  # finished: the item's answer (a timed-out build is asked again)
                self._for_item(task)["built"] = answer
        return project, build, answer

    def _item_build(self, task: Task) -> tuple[CoqProject, Path]:
        """The item's project and build directory, found once per item (the build inputs are stat'ed once)."""
        with ProjectRocqProver._item_lock:
            item = self._for_item(task)
            if "build" not in item:
                project = self._project(task)
                item["build"] = (project, self._build_dir(project))
            found: tuple[CoqProject, Path] = item["build"]
            return found

    def judged_at_once(self, task: Task, data: bytes) -> bool:
        """Whether the verdict on ``data`` is read from what this process holds, with no process and no wait: the
        project's own proof (:meth:`judged_from_records`) of a file whose build has its answer (it built) and whose
        judge dump and ``coqchk`` record are in memory (and the declared axioms' answer, if any). An item that waits
        for the build, a judge session or a record still being written gets False: its progress is shown meanwhile."""
        if not self.judged_from_records(task, data) or self.plugin is None or "project_root" not in task.meta:
            return False
        project, build = self._item_build(task)
        if ProjectRocqProver._built.get(str(build)) != "" or not (build / "built.json").is_file() or (
                self.declared and (str(build), self.project_axioms) not in ProjectRocqProver._declarations):
            return False
        vo = (self._out(project, build) / str(task.meta["project_file"])).with_suffix(".vo")
        module = str(task.meta["coq_module"])
        try:
            dump, check = self._per_vo(vo, module, "dump"), self._per_vo(vo, module, "coqchk.json")
        except OSError:
            return False
        return str(dump) in self._dumps and str(check) in ProjectRocqProver._shared_checks

    @staticmethod
    def _out(project: CoqProject, build: Path) -> Path:
        """Where the build put the compiled files (and the sources they were compiled from): the copy, or dune's
        ``_build/default`` in it. The judge reads the build's own compiled files from there."""
        return build / "src" / project.compiled if project.compiled else build / "src"

    def _build_steps(self, project: CoqProject, src: Path) -> tuple[list[list[str]], str]:
        """The build's commands, run in the copy ``src`` (or why the project cannot be built here): the user's
        ``--forall-project-build``; else ``dune build`` for a dune project; else ``coq_makefile`` on the project's
        ``_CoqProject`` (``-arg``s kept) and ``make``."""
        if self.build_command:
            return [["sh", "-c", self.build_command]], ""
        if project.tool == "dune":
            if shutil.which("dune") is None:
                return [], ("the project builds with dune (its dune-project uses coq) and `dune` is not installed "
                            "here: install dune, or give the build with --forall-project-build")
            return [["dune", "build", "--root", ".", "--display", "short"]], ""
        lines = [f"{flag} {directory} {logical}" for flag, directory, logical in project.mappings]
        lines += [f"-arg {arg}" for arg in project.args] + list(project.files)
        (src / "_CoqProject.forall").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return [[self.toolchain.tool("coq_makefile"), "-f", "_CoqProject.forall", "-o", "Makefile.forall"],
                ["make", "-k", "-f", "Makefile.forall", f"-j{min(8, os.cpu_count() or 1)}", f"COQC={self.coqc}",
                 *([f"COQBIN={self.toolchain.bin}/"] if self.toolchain.bin else [])]], ""

    def _build_env(self, project: CoqProject) -> dict[str, str] | None:
        """The user's build and dune see the run's coqc first on PATH and as ``COQC`` (a Makefile's convention); the
        default build names it on make's command line."""
        if project.tool == "coq_makefile" and not self.build_command:
            return None
        env = {**os.environ, "COQC": self.coqc, "DUNE_CACHE": "disabled"}
        if os.path.isabs(self.coqc):
            env["PATH"] = os.path.dirname(self.coqc) + os.pathsep + env.get("PATH", "")
        return env

    def build_ahead(self, project: CoqProject, timeout: float) -> None:
        """Start the project's build in the background (once per build and process; nothing when it is finished):
        the collection calls it as it finds the project, so its lexing runs while coqc compiles (#18). An item waits
        for it under the build's lock as for a build of its own, and reads its answer (a failed build is infra for
        every item, as ever); a build still running when the process exits is killed (:func:`_stop_ahead`), left
        unfinished, and built again by the next run."""
        build = self._build_dir(project)
        with self._lock:
            if str(build) in ProjectRocqProver._built or str(build) in ProjectRocqProver._ahead:
                return
            ProjectRocqProver._ahead.add(str(build))
        if (build / "built.json").is_file():
            return

        def step() -> None:
            with contextlib.suppress(Exception):  # ahead of need only: the first item builds and reports
                self._build_project(project, build, timeout)
        _start_ahead("forall-build-ahead", step)

    def _build_project(self, project: CoqProject, build: Path, timeout: float) -> str:
        """"" once the build directory ``build`` (named by its inputs' key) holds a finished build, else why not; a
        finished build's answer is read once per process (every item asks, a warm run's per-item cost)."""
        with self._lock:
            known = ProjectRocqProver._built.get(str(build))
        if known is not None and (build / "built.json").is_file():
            return known
        reason = self._build_project_once(project, build, timeout)
        if (build / "built.json").is_file():  # finished (a timed-out build is not: retried next time)
            with self._lock:
                ProjectRocqProver._built[str(build)] = reason
        return reason

    def _build_project_once(self, project: CoqProject, build: Path, timeout: float) -> str:
        done = build / "built.json"
        with FileLock(str(build) + ".lock"):
            if done.is_file():
                record = json.loads(done.read_text(encoding="utf-8"))
                return "" if record["ok"] else str(record["reason"])
            shutil.rmtree(build, ignore_errors=True)
            src = build / "src"
            out = self._out(project, build)
            previous = self._previous_build(project)
            if previous is not None:  # copies keep their mtimes: make rebuilds what changed and what rests on it
                shutil.copytree(previous / "src", src, symlinks=True)
                wanted = {os.path.normpath(rel) for rel in project.files}
                for stale in src.rglob("*.v"):
                    if not stale.relative_to(src).as_posix().startswith("_build/") and \
                            os.path.normpath(stale.relative_to(src).as_posix()) not in wanted:
                        stale.unlink()
                        (out / stale.relative_to(src)).with_suffix(".vo").unlink(missing_ok=True)
            src.mkdir(parents=True, exist_ok=True)
            changed = set()
            inputs = build_inputs(project, self.build_command)
            for rel in inputs if project.tool != "coq_makefile" or self.build_command else project.files:
                target = src / rel
                data = (project.root / rel).read_bytes() if (project.root / rel).is_file() else None
                if data is not None and (not target.is_file() or target.read_bytes() != data):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    changed.add(rel)
            if previous is not None and changed:
                # what a changed file reaches is compiled again or is missing: never a stale .vo from the old build
                graph = coqdep_graph(project, self.toolchain) or {}
                # a changed build rule, script or dune file may change any file's compilation
                reached: set[str] = set(changed) if graph and changed <= set(project.files) else set(project.files)
                while True:
                    more = {rel for rel, deps in graph.items() if rel not in reached and reached.intersection(deps)}
                    if not more:
                        break
                    reached |= more
                for rel in reached:
                    for suffix in (".vo", ".vos", ".vok", ".glob"):
                        (out / rel).with_suffix(suffix).unlink(missing_ok=True)
            steps, reason = self._build_steps(project, src)
            timed_out = False
            log = []
            started = time.monotonic()
            for argv in steps:
                result = self._build_command(argv, src, max(timeout, 1800.0), self._build_env(project))
                log.append(f"$ {' '.join(argv)}\n{result.stdout}{result.stderr}")
                if result.returncode != 0:
                    timed_out = result.timed_out or result.returncode < 0  # killed: no verdict on the project
                    tail = (result.stdout + result.stderr).strip()[-600:]
                    built = [rel for rel in project.files if (out / rel).with_suffix(".vo").is_file()]
                    default = project.tool == "coq_makefile" and not self.build_command
                    # coqc's located error in a project file: the project's text broke, not its build's tooling
                    located = any(first_build_error(result.stdout + result.stderr, rel)[0] for rel in project.files)
                    if argv is steps[-1] and not timed_out and (built or default or located):
                        # some files do not build: each item of them is judged against its own template (the file up
                        # to the target), and items of files resting on them are infra (see _baseline); a user's or
                        # dune's build that compiled nothing is the build's failure, infra for every item
                        self._record_missing(project, build, tail, result.stdout + result.stderr)
                        break
                    shown = self.build_command if argv[:2] == ["sh", "-c"] else " ".join(argv[:2])
                    reason = (f"the project does not build here (`{shown}` exited "
                              f"{result.returncode}{', timed out' if timed_out else ''}): "
                              f"{first_error_lines(result.stdout + result.stderr) or tail}")
                    break
            else:
                if not steps:
                    pass  # the reason is why nothing could run
                elif not any((out / rel).with_suffix(".vo").is_file() for rel in project.files) and project.files:
                    reason = (f"the project's build ran but left no compiled file where its mapping puts them "
                              f"({out.relative_to(build / 'src').as_posix() or '.'}/<file>.vo, e.g. "
                              f"{Path(project.files[0]).with_suffix('.vo').as_posix()})")
                else:
                    self._record_missing(project, build, "the build succeeded without compiling it")
            (build / "build.log").write_text("\n".join(log), encoding="utf-8")
            if not timed_out:  # a slow machine is not a verdict on the project: retry next time
                done.write_text(json.dumps({"ok": not reason, "reason": reason, "root": str(project.root),
                                            "declared": self._declared(project),
                                            "toolchain": self.toolchain_label(), "version": self.version(),
                                            "incremental": previous is not None,
                                            "seconds": round(time.monotonic() - started, 3)}), encoding="utf-8")
            return reason

    def _record_missing(self, project: CoqProject, build: Path, log: str, full: str = "") -> None:
        """The project files the build did not compile (their items are judged against their templates, or infra),
        with each one's first error as the build printed it (the log's tail, else)."""
        out = self._out(project, build)
        missing = [rel for rel in project.files if not (out / rel).with_suffix(".vo").is_file()]
        if missing:
            errors = {rel: first_build_error(full, rel) for rel in missing}
            (build / "missing.json").write_text(json.dumps({"files": missing, "log": log,
                                                            "errors": {k: v[0] for k, v in errors.items() if v[0]},
                                                            "lines": {k: v[1] for k, v in errors.items() if v[1]}}),
                                                encoding="utf-8")

    def _build_command(self, argv: list[str], src: Path, timeout: float, env: dict[str, str] | None = None) -> Any:
        """One step of the project's own build (trusted: the user's project) with the toolchain's tools: for a root
        filesystem inside it (bubblewrap, ``src`` writable), with the host's ``make`` when the root has none."""
        if not self.toolchain.root:
            return run_command(argv, cwd=src, timeout=timeout, env=env)
        binds: list[tuple[Path, str]] = []
        if argv[0] == "make" and not self.toolchain.has("make") and shutil.which("make"):
            binds.append((Path(str(shutil.which("make"))), "/run/forall-make"))  # the harness's tool, libc only
            argv = ["/run/forall-make", *argv[1:]]
        env = {**clean_env(), **self.ocaml_env, "PATH": "/usr/bin:/bin"}
        prefix = [*root_prefix(self.toolchain.root, src.absolute(), binds), "--clearenv",
                  *[x for key, value in env.items() for x in ("--setenv", key, value)], "--"]
        return run_command([*prefix, *argv], cwd=src, timeout=timeout)

    def _per_vo(self, vo: Path, module: str, suffix: str) -> Path:
        """Where a record about one compiled file is kept: by the file's digest and the judge plugin's build."""
        info = vo.stat()
        known = (str(vo), info.st_mtime_ns, info.st_size, str(self.plugin))
        if known not in self._vo_digests:
            self._vo_digests[known] = hashlib.sha256(vo.read_bytes() + b"\0" + str(self.plugin).encode()).hexdigest()
        digest = self._vo_digests[known][:24]
        return self.builds / "by-vo" / f"{module}.{digest}.{suffix}"  # (made by who writes the first record)

    def _declared(self, project: CoqProject) -> str:
        """A digest of how the project's build is declared (command, ``_CoqProject`` or dune files, toolchain)."""
        return hashlib.sha256(declaration(project, self.build_command) + self.version().encode()).hexdigest()[:24]

    def _previous_build(self, project: CoqProject) -> Path | None:
        """The newest finished build of the same project declared the same way, with the same toolchain and
        libraries (its sources and compiled files are the starting point of an incremental build), or None: a changed
        build command, ``-arg`` or dune flag rebuilds everything (make does not see a flag change), and another Coq's
        ``.vo`` files would be kept by ``make`` and refused by this one."""
        found: list[tuple[float, Path]] = []
        declared = self._declared(project)
        for done in self.builds.glob("*/built.json"):
            try:
                record = json.loads(done.read_text(encoding="utf-8"))
                if record.get("ok") and record.get("root") == str(project.root) and (done.parent / "src").is_dir() \
                        and record.get("declared") == declared and record.get("version") == self.version():
                    found.append((done.stat().st_mtime, done.parent))
            except (OSError, ValueError):
                continue
        return max(found)[1] if found else None

    def _load(self, project: CoqProject, base: Path, with_args: bool, cwd: Path | None = None) -> list[str]:
        """``-Q``/``-R`` of the project onto ``base`` (and its ``-arg``s for coqc; coqchk does not take them);
        relative to ``cwd`` when given (the workspace has another path inside the sandbox)."""
        out: list[str] = []
        for flag, directory, logical in project.mappings:
            where = base / directory if directory != "." else base
            out += [flag, os.path.relpath(where, cwd) if cwd is not None else str(where), logical]
        return out + (project.args if with_args else [])

    def _judge_file(self, load: list[str], parent: Path, module: str, targets: list[str],
                    timeout: float, fresh: bool = True) -> tuple[Any, str]:
        from pytest_forall.lang.rocq.judge import run_file_dump

        path = PLUGIN_INSIDE if self.sandboxed else str(self.plugin)

        def run(args: list[str], cwd: Path) -> Any:
            return self._run([self.coqc, *args], cwd, timeout, env={"OCAMLPATH": path})

        return run_file_dump(run, parent, load, module, targets, fresh)

    def _judge_files(self, load: list[str], parent: Path, files: list[tuple[str, list[str]]],
                     timeout: float) -> tuple[dict[str, Any], str]:
        """:meth:`_judge_file` of several files of the build in one session (per module its dump or why not)."""
        from pytest_forall.lang.rocq.judge import run_files_dump

        path = PLUGIN_INSIDE if self.sandboxed else str(self.plugin)

        def run(args: list[str], cwd: Path) -> Any:
            return self._run([self.coqc, *args], cwd, timeout, env={"OCAMLPATH": path})

        return run_files_dump(run, parent, load, files)

    def _baseline(self, task: Task, timeout: float) -> tuple[Any, str]:
        """The judge's dump of the target's file in the baseline build, once per file and build (cached beside it:
        one prover session per file, whatever the number of its items), found once per item (every layer asks)."""
        if self.plugin is None:
            return None, f"the kernel judge is unavailable: {self.plugin_problem}"
        item = self._for_item(task)
        if "baseline" not in item:
            if "build_break" in item:  # the project's sources do not build: the same answer for this item
                return None, str(item["build_break_reason"])
            found = self._find_baseline(task, timeout)
            if found[0] is None:
                return found  # (asked again: an infra reason may pass)
            item["baseline"] = found
        baseline: tuple[Any, str] = item["baseline"]
        return baseline

    def _find_baseline(self, task: Task, timeout: float) -> tuple[Any, str]:
        project, build, problem = self._build(task, timeout)
        if problem:
            return None, problem
        module = str(task.meta["coq_module"])
        rel = str(task.meta["project_file"])
        vo = (self._out(project, build) / rel).with_suffix(".vo")
        if not vo.is_file():
            plan = self._broken_file_plan(task, project, build)
            if plan is not None and isinstance(plan, str):  # after the file's first error: it cannot build there
                return None, plan
            if plan is not None:  # before it: one compile of the file up to the first item that may hold it
                found = self._template_baseline(plan[0], project, build, timeout, plan[1], for_task=task)
                if found[0] is not None or plan[0].task_id == task.task_id:
                    return found
                item = self._for_item(task)  # (the error is in that item's statement: each before it on its own)
                for key in ("build_break", "build_break_reason", "prefix_tree"):
                    item.pop(key, None)
            return self._template_baseline(task, project, build, timeout)
        self._prefetch(project, build, timeout)
        return self._file_dump(project, build, rel, module, timeout)

    def _file_dump(self, project: CoqProject, build: Path, rel: str, module: str, timeout: float) -> tuple[Any, str]:
        """The judge's dump of one compiled file of the build (one session for all its items), stored beside it."""
        from pytest_forall.lang.rocq.judge import parse_file_dump

        judged = build / "judge"
        vo = (self._out(project, build) / rel).with_suffix(".vo")
        # keyed by the compiled file itself (its bytes name its dependencies' digests too): an unchanged file of an
        # edited project is not dumped again
        stored = self._per_vo(vo, module, "dump")
        if str(stored) in self._dumps:  # content-addressed: the same record for the life of the process
            return self._dumps[str(stored)], ""
        stored.parent.mkdir(exist_ok=True)
        with FileLock(str(stored) + ".lock"):
            if stored.is_file():
                parsed = parse_file_dump(stored.read_text(encoding="utf-8"), "stored")
                if not isinstance(parsed, str):
                    self._dumps[str(stored)] = parsed
                    return parsed, ""
            judged.mkdir(exist_ok=True)
            targets = [str(t.meta["target_path"]) for t in rocq_tasks_of_file(project, rel)]
            dump, problem = self._judge_file(self._load(project, self._out(project, build), True), judged, module,
                                             targets,
                                             max(timeout, 300.0))
            if dump is None:
                return None, f"the judge could not read the project's own build of {module}: {problem}"
            stored.write_text(_stored_dump(dump), encoding="utf-8")
            self._dumps[str(stored)] = dump
            return dump, ""

    def _prefetch_workers(self) -> int:
        """How many judge sessions run ahead after a build, over every process of the run (0: none ahead): one, beside
        the one ``coqchk``. A session's start (the plugin, the libraries) is most of a small file's time (1.7 s of
        Coquelicot's 4.6 s over all its files, alone), and the ``coqchk`` over every file takes longer than one session
        over them: a second session only took a core from it (#18: the items waited as long, for 1.7 s more CPU).
        Under pytest-xdist one worker starts the session and another the ``coqchk`` (:func:`_worker_share`)."""
        return 1

    def _prefetch(self, project: CoqProject, build: Path, timeout: float) -> None:
        """Once per build and process, ahead of the items: the judge dumps and ``coqchk -norec`` of every compiled file
        with items, so that a cold run pays them side by side rather than one file at a time as the items come (#18).
        The files are judged in :meth:`_prefetch_workers` sessions (one), each session over a group of files (the
        plugin and the libraries they share loaded once per group, not per file), and checked by one ``coqchk`` over
        all of them (the standard library loaded once); under pytest-xdist each worker starts its own share of the
        groups and one of them the ``coqchk``. Everything started here is killed at exit (:func:`_stop_ahead`): a run
        that needed fewer files leaves no process behind. Each result goes where the lazy path looks
        (the per-file records under their file locks, so another xdist worker never repeats a file). When a shared
        session or the shared coqchk fails, nothing of it is recorded and each of its files is run alone, so a file's
        failure stays that file's (its items get their own file's reason, never another file's)."""
        workers = self._prefetch_workers()
        with self._lock:
            if workers <= 0 or str(build) in ProjectRocqProver._prefetched:
                return
            ProjectRocqProver._prefetched.add(str(build))
        out = self._out(project, build)
        files = [(rel, str(module)) for rel in project.files
                 if (out / rel).with_suffix(".vo").is_file() and (module := project.logical_module(rel))
                 and _has_items(project, rel)]
        if not files:
            return
        budget = min(timeout, self.checker_timeout or timeout)
        # balanced groups, the biggest compiled files first (a file's session time grows with it)
        ordered = sorted(files, key=lambda f: -(out / f[0]).with_suffix(".vo").stat().st_size)
        groups: list[list[tuple[str, str]]] = [ordered[i::workers] for i in range(min(workers, len(ordered)))]
        # under pytest-xdist every worker computes the same groups and starts only its own (another worker's group
        # is not waited for behind its locks: that worker judges it on its core), and one worker runs the coqchk
        index, count = self.worker_share
        checker = len(groups) % count == index
        groups = groups[index::count]

        def judge(group: list[tuple[str, str]], ready: threading.Event) -> None:
            # ahead of need only: a failure here is left for the item's own call to run again and report
            with contextlib.suppress(Exception):
                if self.plugin is not None:
                    self._file_dumps(project, build, group, timeout, ready.set)
            ready.set()

        def check(ready: threading.Event) -> None:
            with contextlib.suppress(Exception):
                self._file_checks(project, build, files, budget, ready.set)
            ready.set()

        jobs: list[Callable[[threading.Event], None]] = [
            lambda ready, g=group: judge(g, ready) for group in groups]  # type: ignore[misc]
        if checker and self._has(self.coqchk):
            jobs.append(check)
        started = []
        for n, job in enumerate(jobs):
            # a run that needs fewer files (``-k``, ``-x``) does not wait at exit for the others: killed (_stop_ahead)
            ready = threading.Event()
            _start_ahead(f"forall-prefetch-{n}", job, ready)
            started.append(ready)
        for ready in started:  # the shared sessions hold their files' locks before the caller asks for its file
            ready.wait(60)

    def _file_dumps(self, project: CoqProject, build: Path, group: list[tuple[str, str]], timeout: float,
                    ready: Callable[[], None] = lambda: None) -> None:
        """The judge dumps of a group of compiled files in one session, each stored as :meth:`_file_dump` stores it;
        the files the session gave no dump are then dumped one by one (each its own session and its own reason)."""
        from pytest_forall.lang.rocq.judge import FileDump

        judged = build / "judge"
        judged.mkdir(exist_ok=True)
        out = self._out(project, build)
        stored = {rel: self._per_vo((out / rel).with_suffix(".vo"), module, "dump") for rel, module in group}
        (self.builds / "by-vo").mkdir(exist_ok=True)
        with contextlib.ExitStack() as held:
            for rel in sorted(stored, key=lambda r: str(stored[r])):  # one order for every process: no deadlock
                held.enter_context(FileLock(str(stored[rel]) + ".lock"))
            ready()
            todo = [(rel, module) for rel, module in group
                    if str(stored[rel]) not in self._dumps and not stored[rel].is_file()]
            if len(todo) > 1:
                dumps, _ = self._judge_files(self._load(project, out, True), judged, [
                    (module, [str(t.meta["target_path"]) for t in rocq_tasks_of_file(project, rel)])
                    for rel, module in todo], max(timeout, 300.0) * len(todo))
                for rel, module in todo:
                    dump = dumps.get(module)
                    if isinstance(dump, FileDump):
                        stored[rel].write_text(_stored_dump(dump), encoding="utf-8")
                        self._dumps[str(stored[rel])] = dump
        for rel, module in group:  # what the shared session did not give: one session per file
            self._file_dump(project, build, rel, module, timeout)

    def _file_checks(self, project: CoqProject, build: Path, files: list[tuple[str, str]], budget: float,
                     ready: Callable[[], None] = lambda: None) -> None:
        """``coqchk -norec`` of every file in one process, each file's record the shared check's layer when it passed;
        when it did not, each file is checked alone (:meth:`_file_check`: which file fails is that file's verdict)."""
        src = self._out(project, build)
        stored = {rel: self._per_vo((src / rel).with_suffix(".vo"), module, "coqchk.json") for rel, module in files}
        (self.builds / "by-vo").mkdir(exist_ok=True)
        with contextlib.ExitStack() as held:
            for rel in sorted(stored, key=lambda r: str(stored[r])):
                held.enter_context(FileLock(str(stored[rel]) + ".lock"))
            ready()
            todo = [(rel, module) for rel, module in files if not stored[rel].is_file()]
            if len(todo) > 1:
                argv = [self.coqchk, "-silent", "-o", *self._load(project, src, False),
                        *(x for _, module in todo for x in ("-norec", module))]
                result = self._run(argv, src, budget * len(todo))
                layer = self._checker_layer(argv, result, budget * len(todo))
                if layer.ok is True:
                    for rel, _ in todo:
                        stored[rel].write_text(json.dumps({"ok": True, "reason": layer.reason,
                                                           "evidence": layer.evidence}), encoding="utf-8")
        for rel, module in files:  # what the shared check did not record: one coqchk per file
            self._file_check(project, build, rel, module, budget)

    @staticmethod
    def _missing_record(build: Path) -> dict[str, Any]:
        """``missing.json`` of a build some files of which did not compile ({} when all did): the files, the log's
        tail, each file's first error and its line."""
        try:
            record = json.loads((build / "missing.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def _unbuilt_dep(self, task: Task, project: CoqProject, build: Path) -> str:
        """Why ``task`` cannot be judged because a file its file requires did not build ("" when all did): that file
        and its first error, remembered as the item's ``build_break``."""
        record = self._missing_record(build)
        log, errors = str(record.get("log", "")), dict(record.get("errors") or {})
        src = self._out(project, build)
        unbuilt = [dep for dep in task.meta.get("deps") or [] if not (src / dep).with_suffix(".vo").is_file()]
        if not unbuilt:
            return ""
        dep = min(unbuilt, key=lambda d: (d not in errors, d))  # one that failed itself, if the log says
        error = str(errors.get(dep) or f"{dep}: {log.strip()[-300:]}")
        item = self._for_item(task)
        item["build_break"] = error
        item["build_break_reason"] = (f"{error} ({dep} does not build in the project, and "
                                      f"{task.meta['project_file']} requires it)")
        return str(item["build_break_reason"])

    def _broken_file_plan(self, task: Task, project: CoqProject, build: Path) -> str | tuple[Task, list[str]] | None:
        """How an item of a file the build could not compile is judged from the line of the file's first error (as
        the build printed it), with one compile for all the items before it (issue 32: each was compiled from its own
        prefix, 50 compiles where ``make`` stops at once):

        * an item whose statement starts after that line: the reason it is infra (the file up to it holds the failing
          sentence, which fails there as in the build: coqc runs a file's sentences in order), nothing compiled;
        * an item whose proof ends before that line (the next item starts before it), and the first item that may
          hold the error: (that first item, the targets of all of them): all are judged from one compile of that
          item's template (the file up to it, it admitted); the own proofs of those before it from that compiled
          file as from the build's, that item's own proof compiled as a candidate (it fails where the build did);
        * else (no located error, a file it requires that did not build, a file changed since its collection):
          None, the item's own template (:meth:`_template_baseline`)."""
        if self._unbuilt_dep(task, project, build):
            return None
        rel = str(task.meta["project_file"])
        line = int(dict(self._missing_record(build).get("lines") or {}).get(rel) or 0)
        if line <= 0:
            return None
        key = (str(build), rel)
        plan = ProjectRocqProver._shared_plans.get(key)
        if plan is None:
            try:
                text = (project.root / rel).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            starts = _offsets(text)
            if line > len(starts):
                return None
            first, after = starts[line - 1], starts[line] if line < len(starts) else len(text)
            tasks = sorted(rocq_tasks_of_file(project, rel), key=lambda t: int(t.meta["statement_offset"]))
            offsets = [int(t.meta["statement_offset"]) for t in tasks]
            before = [t for t, nxt in zip(tasks, offsets[1:]) if nxt <= first]
            holder = tasks[len(before)] if len(before) < len(tasks) else None
            plan = (first, after, holder, [t.task_id for t in before],
                    [str(t.meta["target_path"]) for t in [*before, *([holder] if holder else [])]])
            ProjectRocqProver._shared_plans[key] = plan
        _, after, holder, before_ids, targets = plan
        error = str(dict(self._missing_record(build).get("errors") or {}).get(rel) or f"{rel}:{line}: error")
        if int(task.meta["statement_offset"]) >= after:
            item = self._for_item(task)
            item["build_break"] = error
            item["build_break_reason"] = (f"{error} ({rel} does not build in the project: it stops there, before "
                                          f"`{task.theorem_name}`)")
            return str(item["build_break_reason"])
        if holder is None or holder.meta.get("file_digest") != task.meta.get("file_digest"):
            return None  # (the file changed since this item was collected: its own template)
        if task.task_id in before_ids or task.task_id == holder.task_id:
            return holder, targets
        return None

    def _template_baseline(self, task: Task, project: CoqProject, build: Path, timeout: float,
                           targets: list[str] | None = None, for_task: Task | None = None) -> tuple[Any, str]:
        """The baseline of an item whose file does not build in the project: the item's template (the file up to
        the target, the target admitted) compiled as that file and dumped; infra when a file it rests on, or the
        file before the target, does not build. ``targets``/``for_task``: the dump of ``task``'s template for every
        item before it (:meth:`_broken_file_plan`), asked for ``for_task``, whose own proof is then judged from that
        compiled file (its tree is kept beside the dump)."""
        from pytest_forall.lang.rocq.judge import parse_file_dump

        asker = for_task or task
        problem = self._unbuilt_dep(asker, project, build)
        if problem:
            return None, problem
        item = self._for_item(asker)
        module = str(task.meta["coq_module"])
        target = str(task.meta["target_path"])
        targets = targets or [target]
        items = build / "judge" / "items"
        items.mkdir(parents=True, exist_ok=True)
        named = hashlib.sha256("\0".join([task.template, *targets]).encode()).hexdigest()[:16]
        stored = items / f"{task.task_id}.{named}.dump"
        kept = items / f"{task.task_id}.{named}.tree"  # the compiled file the items before the target are judged from
        shared = len(targets) > 1
        if shared and for_task is not None and for_task.task_id != task.task_id:
            item["prefix_tree"] = str(kept)  # (not the template's own item: its proof is the one left admitted there)
        with FileLock(str(stored) + ".lock"):
            if stored.is_file() and (not shared or kept.is_dir()):
                parsed = parse_file_dump(stored.read_text(encoding="utf-8"), "stored")
                if not isinstance(parsed, str):
                    return parsed, ""
            work = Path(tempfile.mkdtemp(prefix="template-", dir=items))
            try:
                tree = work / "tree"
                compiled = self._compile_in_tree(project, build, tree, task.template.encode(), timeout, False,
                                                 str(task.meta["project_file"]))
                if not compiled.ok:
                    rel = str(task.meta["project_file"])
                    reason = (compiled.infra or compiled.first_error_at(rel)).strip()
                    located = reason if reason.startswith(rel) else f"{rel}: {reason}"
                    found = (f"{located[:600]} ({rel} does not build in the project, nor does the file up to "
                             f"`{task.theorem_name}` with it admitted)")
                    if not compiled.infra:  # the file's own text does not compile (not a tool fault)
                        item["build_break"] = located[:300]
                        item["build_break_reason"] = found
                    return None, found
                dump, problem = self._judge_file(self._load(project, tree, True, tree), tree, module, targets,
                                                 timeout, fresh=False)
                if dump is None:
                    return None, f"the judge could not read the project's file up to `{task.theorem_name}`: {problem}"
                if shared:
                    shutil.rmtree(kept, ignore_errors=True)
                    os.rename(tree, kept)
                stored.write_text(_stored_dump(dump), encoding="utf-8")
                return dump, ""
            finally:
                shutil.rmtree(work, ignore_errors=True)

    def _declaration_problem(self, task: Task, timeout: float) -> str:
        """Why the declared project axioms are not what the project's own build has (every item is then infra with
        this reason, never a silent pass), or "": each name is an axiom (``Axiom``/``Parameter``, or a lemma left
        ``Admitted``) of a file of the project, as that file's compiled ``.vo`` in the baseline build has it."""
        if not self.declared:
            return ""
        project, build, problem = self._build(task, timeout)
        if problem:
            return problem
        key = (str(build), self.project_axioms)
        with self._lock:
            if key in ProjectRocqProver._declarations:
                return ProjectRocqProver._declarations[key]
        out = self._out(project, build)
        problems: list[str] = []
        for name in self.declared:
            files = [(rel, module) for rel in project.files
                     if (module := project.logical_module(rel)) and name.startswith(module + ".")]
            why: list[str] = []
            for rel, module in files:
                if not (out / rel).with_suffix(".vo").is_file():
                    why.append(f"{rel}, where it would be, does not build")
                    continue
                dump, failed = self._file_dump(project, build, rel, module, timeout)
                if dump is None:
                    return failed  # the judge could not read the file: infra, asked again next time
                entry = next((e for _, e in dump.fields if e.split(" ")[1:2] == [name]), "")
                kind = entry.split(" ")[2] if len(entry.split(" ")) > 2 else ""
                if kind == "axiom":
                    break
                if entry:
                    why.append(f"{rel} has it as a{'n' if kind[:1] in 'aeiou' else ''} {kind or 'unreadable'} "
                               "declaration, not an axiom")
            else:
                problems.append(f"`{name}`: " + ("; ".join(why) if why else
                                                 f"no file of the project declares it ({len(files)} file(s) whose "
                                                 "logical name it extends)" if files else
                                                 "no file of the project has a logical name it extends"))
        found = "" if not problems else (
            "--forall-project-axioms: each declared name must be an axiom (Axiom, Parameter or a lemma left "
            "Admitted) of the project's own build, as the judge names it: " + "; ".join(problems))
        with self._lock:
            ProjectRocqProver._declarations[key] = found
        return found

    def fingerprint(self, task: Task) -> dict[str, str]:
        """The backend's fingerprint; none (so nothing is served from the verdict cache) while the declared project
        axioms do not hold of the project's build: each item is then judged, and is infra with the reason."""
        if self.declared and "target_path" in task.meta:
            problem = self._declaration_problem(task, 600.0)
            if problem:
                raise ValueError(problem)
        return super().fingerprint(task)

    # -- Prover protocol ----------------------------------------------------------------------------------

    def check_template(self, task: Task, workspace: Path, timeout: float) -> Any:
        """The project builds, the judge reads the target's file from the build, and Coq's build has the target
        where the text says it is; each failure is infra with its reason."""
        from pytest_forall.core.prover import CompileResult

        target = str(task.meta.get("target_path", ""))
        if target.rsplit(".", 1)[-1] != task.theorem_name:
            return CompileResult(ok=False, infra=(
                f"`{task.theorem_name}` is a statement derived from `{target}` (a statement audit), not in the "
                "project's build: project mode judges the project's own statements only"))
        baseline, problem = self._baseline(task, timeout)
        if baseline is None:
            return CompileResult(ok=False, infra=problem)
        problem = self._declaration_problem(task, timeout)
        if problem:
            return CompileResult(ok=False, infra=problem)
        if target not in baseline.targets:
            return CompileResult(ok=False, infra=(
                f"Coq's build of {task.meta['coq_module']} has no constant `{target}` where the text has "
                f"`{task.theorem_name}` (a name the judge cannot compare here)"))
        return CompileResult(ok=True)

    def compile(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        """``coqc`` on the candidate as the target's own file, in a tree of the build's compiled files."""
        from pytest_forall.core.prover import CompileResult

        project, build, problem = self._build(task, timeout)
        if problem:
            return CompileResult(ok=False, infra=problem)
        data = candidate.read_bytes()
        rel = str(task.meta["project_file"])
        self._proofs[task.task_id] = proof_digest(task, data)
        self._candidate_vo.pop(str(workspace), None)  # compiled again: its .vo is read again
        if self._is_own(task, data, project, build):
            # the project's own proof, as the project's build compiled it: judged from the build's .vo (one judge
            # session and one coqchk per file, not one compile per lemma)
            digest = self._own[str(workspace)] = sha256_bytes(data)
            return CompileResult(ok=True, digest=digest, output="the project's own proof: compiled by "
                                 "the project's build",
                                 artifact=str((self._out(project, build) / rel).with_suffix(".vo")))
        prefix = self._for_item(task).get("prefix_tree")
        own = str(task.meta.get("own_candidate") or "")
        vo = (Path(str(prefix)) / rel).with_suffix(".vo") if prefix else None
        if vo is not None and own and data == own.encode("utf-8") and vo.is_file():
            # the project's own proof, before the first error of a file that does not build: judged from the one
            # compile of the file up to the item that may hold the error (:meth:`_broken_file_plan`)
            digest = self._own[str(workspace)] = sha256_bytes(data)
            return CompileResult(ok=True, digest=digest, artifact=str(vo), output=(
                "the project's own proof: compiled once with the proofs of its file before its first error"))
        self._own.pop(str(workspace), None)
        return self._compile_in_tree(project, build, workspace / "tree", data, timeout, True, rel)

    def _compile_in_tree(self, project: CoqProject, build: Path, tree: Path, data: bytes, timeout: float,
                         report_sentences: bool, rel: str = "") -> Any:
        """``coqc`` on ``data`` as the project file ``rel`` in ``tree``: links to every other compiled file of the
        build (so the file is compiled under its own logical name, with the project's mapping and ``-arg``s)."""
        from pytest_forall.core.prover import CompileResult

        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        src = self._out(project, build)
        for other in project.files:
            compiled = (src / other).with_suffix(".vo")
            if other != rel and compiled.is_file():
                link = (tree / other).with_suffix(".vo")
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(compiled)
        source = tree / rel
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(data)
        argv = [self.coqc, "-q", *(["-time"] if report_sentences else []), *self._load(project, tree, True, tree),
                str(source.relative_to(tree))]
        result = self._run(argv, tree, timeout)
        outcome = read_compile(self.coqc, result, source, timeout, report_sentences)
        refused = re.search(r"(?:Unknown option|unknown option|Illegal option|bad option)[^\n]*", outcome.output)
        if result.returncode != 0 and refused and not outcome.sentences:
            return CompileResult(ok=False, output=outcome.output, infra=(
                f"coqc refused the project's options ({refused.group(0).strip()}): fix _CoqProject's -arg lines"))
        return dataclasses.replace(outcome, artifact=str(source.with_suffix(".vo"))) if outcome.ok else outcome

    def change_fields(self, task: Task, candidate: bytes | None = None) -> dict[str, str]:
        """Kernel digests for the gate (core/gating.py): ``kernel_statement``, the target's type in the project's
        build; ``kernel_type``, that type alone (no name: a renamed lemma keeps it); ``kernel_context``, the file's
        declarations before it and the files it rests on. Always, for a project item: ``cone_key`` (the item's file
        and every file it requires, as collected: what tells a break the change caused from a tool fault),
        ``admitted`` when the project leaves the proof ``Admitted``, and ``build_break`` (the file that does not
        build and its first error) when the item is infra because of it. Without the build's answer the kernel
        digests are absent (the row then falls back to the template's digest)."""
        from pytest_forall.lang.rocq.judge import statement_key

        if "target_path" not in task.meta:
            return {}
        base = {"cone_key": str(task.meta.get("cone_key") or "")}
        if task.meta.get("admitted"):
            base["admitted"] = "yes"
        broken = self._for_item(task).get("build_break")
        if broken:
            base["build_break"] = str(broken)
        if self.plugin is None:
            return base
        baseline = self._row_baseline(task)
        if baseline is None:
            return base
        found = context_digests(baseline, str(task.meta.get("deps_key", ""))).get(str(task.meta["target_path"]))
        if found is None:
            return base
        entry, context, lemmas = found
        key = statement_key(entry)
        fields = {**base, "kernel_statement": hashlib.sha256(" : ".join(key).encode()).hexdigest()[:24],
                  "kernel_type": hashlib.sha256(key[1].encode()).hexdigest()[:24],
                  "kernel_context": context, "kernel_lemmas": lemmas}
        if self.declared:  # the gate names a changed declaration as a cause (core/gating.py)
            fields["declared_axioms"] = self.project_axioms
        proof = proof_digest(task, candidate) if candidate is not None else self._proofs.get(task.task_id)
        return {**fields, "proof_digest": proof} if proof else fields

    def _row_baseline(self, task: Task) -> Any:
        """The baseline dump of :meth:`change_fields`: the one this item's verification read, else the one read for an
        earlier item of the same file as collected (its ``cone_key``: the toolchain, the build's declaration, the file
        and every file it requires), else :meth:`_baseline`'s (which stats every input of the build). A warm item's
        verdict comes from the cache under the task as collected, so its row's digests are those of the same sources
        (#18: the build's 25 inputs were stat'ed per item for the same answer). None when there is no answer."""
        found = self._for_item(task).get("baseline")
        if found is not None:
            return found[0]
        cone = str(task.meta.get("cone_key") or "")
        key = (str(task.meta.get("project_root")), str(task.meta.get("project_file")), cone,
               str(task.meta.get("deps_key") or ""), str(self.plugin), self.version(), self.toolchain.spec, self.coqc,
               self.build_command)
        baseline = ProjectRocqProver._shared_row_baselines.get(key) if cone else None
        if baseline is None:
            try:
                baseline, _ = self._baseline(task, 600.0)
            except OSError:
                return None
            if baseline is not None and cone:
                ProjectRocqProver._shared_row_baselines[key] = baseline
        return baseline

    def _installed_roots(self) -> tuple[str, ...]:
        """Logical roots of the installed libraries (the backend's list and every ``user-contrib`` directory): an
        axiom of theirs is within the rules, not strict."""
        from pytest_forall.lang.rocq.backend import coq_library_dirs

        found = list(self.info.installed_roots)
        for base in coq_library_dirs(self.coqc, self.toolchain.root)[:1]:
            contrib = base / "user-contrib"
            try:  # listed again when a library is installed or removed (the directory's mtime moves)
                info = contrib.stat()
            except OSError:
                continue
            known = ProjectRocqProver._shared_contrib.get(str(contrib))
            if known is None or known[0] != info.st_mtime_ns:
                roots = tuple(f"{d.name}." for d in sorted(contrib.iterdir()) if d.is_dir()) if contrib.is_dir() else ()
                known = ProjectRocqProver._shared_contrib[str(contrib)] = (info.st_mtime_ns, roots)
            found += known[1]
        return tuple(dict.fromkeys(found))

    def _is_own(self, task: Task, data: bytes, project: CoqProject, build: Path) -> bool:
        """``data`` is the project's own proof of the target and the build compiled the very file it came from."""
        own = str(task.meta.get("own_candidate") or "")
        if not own or data != own.encode("utf-8"):
            return False
        key = (str(build), str(task.meta["project_file"]))
        digest = ProjectRocqProver._shared_sources.get(key)
        if digest is None:
            try:
                digest = hashlib.sha256((build / "src" / key[1]).read_bytes()).hexdigest()
            except OSError:
                return False
            if key[0] in ProjectRocqProver._built:  # a finished build's copy: the same bytes from now on
                ProjectRocqProver._shared_sources[key] = digest
        if not (self._out(project, build) / str(task.meta["project_file"])).with_suffix(".vo").is_file():
            return False
        return digest == task.meta.get("file_digest")

    def judged_from_records(self, task: Task, data: bytes) -> bool:
        """``data`` is the project's own proof of the target, as its text reads: judged from the project's build (its
        judge dump and ``coqchk`` record, :meth:`compile`), no process of its own, so the verifier runs no thread
        beside its layers. (Should the build's copy of the file differ, :meth:`compile` compiles it after all: one
        layer after the other, the same verdict.)"""
        own = task.meta.get("own_candidate")
        return bool(own) and data == str(own).encode("utf-8")

    def _is_own_compiled(self, task: Task, data: bytes, digest: str = "") -> bool:
        """``data`` is the project's own proof and :meth:`compile` judged it from the build; ``digest``: its SHA-256
        when known (the compile result's, which the verifier checked against the bytes)."""
        return data == str(task.meta.get("own_candidate")).encode() and (
            digest or sha256_bytes(data)) in self._own.values()

    def _judge_candidate(self, task: Task, workspace: Path, timeout: float) -> tuple[Any, str, bool]:
        """The project judge's verdict on the compiled candidate (once per compiled file): judgement, problem,
        infra."""
        from pytest_forall.lang.rocq.judge import judge_project_file

        rel = str(task.meta["project_file"])
        target = str(task.meta["target_path"])
        module = str(task.meta["coq_module"])
        project = self._project(task)
        roots = tuple(f"{logical}." for _, _, logical in project.mappings)
        if str(workspace) in self._own:
            # asked by the statement, audit and advisory layers: judged once per item (its baseline is the item's)
            own = ("own", str(workspace), self._own[str(workspace)])
            item = self._for_item(task)
            if own not in item:
                baseline, problem = self._baseline(task, timeout)
                if baseline is None:
                    return None, problem, True
                item[own] = (judge_project_file(baseline, baseline, module, target, roots, self.info.strict_axioms,
                                                self._installed_roots(), frozenset(self.declared)), "", False)
            judged: tuple[Any, str, bool] = item[own]
            return judged
        vo = (workspace / "tree" / rel).with_suffix(".vo")
        digest = self._candidate_vo.get(str(workspace))
        if digest is None:
            if not vo.is_file():
                return None, "the candidate has no compiled .vo", False
            digest = self._candidate_vo[str(workspace)] = sha256_bytes(vo.read_bytes())
        key = (digest, task.task_id)
        if key in self._judged_project:
            return self._judged_project[key]
        baseline, problem = self._baseline(task, timeout)
        if baseline is None:
            return None, problem, True
        tree = workspace / "tree"  # the judge runs in the tree (the sandbox binds the directory it runs in)
        dump, problem = self._judge_file(self._load(project, tree, True, tree), tree, module, [target], timeout,
                                         fresh=False)
        if dump is None:
            return None, f"the judge could not read the compiled candidate: {problem}", True
        judgement = judge_project_file(baseline, dump, module, target, roots, self.info.strict_axioms,
                                       self._installed_roots(), frozenset(self.declared))
        self._judged_project[key] = (judgement, "", False)
        return self._judged_project[key]

    def _judge(self, task: Task, workspace: Path, timeout: float) -> tuple[Any, str, bool]:
        """The backend's layers that read the judge (``advisory_check``) read the project judge's findings."""
        return self._judge_candidate(task, workspace, timeout)

    def statement_check(self, task: Task, workspace: Path, timeout: float) -> Layer:
        judgement, problem, infra = self._judge_candidate(task, workspace, timeout)
        if judgement is None:
            return Layer("elaborated_statement", False, f"the kernel judge failed: {problem}", infra=infra)
        if judgement.statement:
            return Layer("elaborated_statement", False, judgement.statement)
        return Layer("elaborated_statement", True, "", {
            "guarantee": PROJECT_STATEMENT_CLAUSE, "judge": "forall-judge plugin (project mode)",
            "compared": judgement.compared})

    def audit_axioms(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Any:
        from pytest_forall.core.prover import AxiomAudit

        judgement, problem, infra = self._judge_candidate(task, workspace, timeout)
        if judgement is None:
            return AxiomAudit(ok=False, reason=f"axiom audit failed to run: {problem}", infra=problem if infra else "")
        return AxiomAudit(ok=True, axioms=judgement.axioms, strict_ok=judgement.strict, rules_ok=judgement.rules,
                          reason=judgement.assumptions, output="\n".join(judgement.axioms), guarantee=AXIOM_CLAUSE,
                          project_axioms=judgement.project_axioms)

    def independent_check(self, task: Task, workspace: Path, candidate: Path, timeout: float) -> Layer:
        """``coqchk -norec`` on the candidate's ``.vo`` with the project's mapping (no ``-arg``: they are coqc's)."""
        if not self._has(self.coqchk):
            return Layer("independent_check", None, f"not judged: {self.coqchk} is not installed")
        project = self._project(task)
        module = str(task.meta["coq_module"])
        budget = min(timeout, self.checker_timeout or timeout)
        if str(workspace) in self._own:
            return self._check_build_file(task, budget)
        tree = workspace / "tree"
        argv = [self.coqchk, "-silent", "-o", *self._load(project, tree, False, tree), "-norec", module]
        result = self._run(argv, tree, budget)
        return self._checker_layer(argv, result, budget)

    def _check_build_file(self, task: Task, budget: float) -> Layer:
        """coqchk on the build's own ``.vo`` of the target's file, once per file and build (its layer is kept)."""
        project, build, problem = self._build(task, budget)
        if problem:
            return Layer("independent_check", False, problem, infra=True)
        prefix = self._for_item(task).get("prefix_tree")
        if prefix:  # judged from the one compile of its file before the first error
            return self._file_check(project, build, str(task.meta["project_file"]), str(task.meta["coq_module"]),
                                    budget, Path(str(prefix)))
        self._prefetch(project, build, budget)
        return self._file_check(project, build, str(task.meta["project_file"]), str(task.meta["coq_module"]), budget)

    def _file_check(self, project: CoqProject, build: Path, rel: str, module: str, budget: float,
                    src: Path | None = None) -> Layer:
        """coqchk on one compiled file of the build (or of ``src``, a tree of it); its layer is stored beside it unless
        it is infra."""
        src = src or self._out(project, build)
        vo = (src / rel).with_suffix(".vo")
        stored = self._per_vo(vo, module, "coqchk.json")
        known = ProjectRocqProver._shared_checks.get(str(stored))  # content-addressed, as the judge dumps
        if known is not None:
            record = json.loads(known)
            return Layer("independent_check", record["ok"], record["reason"], record["evidence"])
        stored.parent.mkdir(exist_ok=True)
        with FileLock(str(stored) + ".lock"):
            if stored.is_file():
                text = stored.read_text(encoding="utf-8")
                record = json.loads(text)
                ProjectRocqProver._shared_checks[str(stored)] = text
                return Layer("independent_check", record["ok"], record["reason"], record["evidence"])
            argv = [self.coqchk, "-silent", "-o", *self._load(project, src, False), "-norec", module]
            result = self._run(argv, src, budget)
            layer = self._checker_layer(argv, result, budget, build=True)
            if layer.ok is not None and not layer.infra:
                stored.write_text(json.dumps({"ok": layer.ok, "reason": layer.reason, "evidence": layer.evidence}),
                                  encoding="utf-8")
            return layer

    def _checker_layer(self, argv: list[str], result: Any, budget: float, build: bool = False) -> Layer:
        """The ``coqchk`` layer of ``result``; ``build``: of a file of the project's build (the project's own, not a
        candidate's), where a killed check (the run ending under it, the machine) is infra, never a rejection and
        never stored. (A candidate's killed check stays what it was: a candidate must not choose its layer.)"""
        output = (result.stdout + result.stderr).strip()
        evidence: dict[str, Any] = {"checker": "coqchk", "argv": argv, "output": output[-4000:],
                                    "returncode": result.returncode, "duration_s": round(result.duration, 3)}
        if result.timed_out:
            return Layer("independent_check", None, f"not judged: coqchk did not finish within its {budget:.0f} s "
                         "budget and was killed", {**evidence, "budget_s": budget})
        if build and result.accident:
            return Layer("independent_check", False, f"coqchk of the project's build was {result.accident}",
                         {**evidence, "accident": result.accident}, infra=True)
        if result.returncode == 127:
            return Layer("independent_check", False, f"coqchk could not be started: {output[-300:]}", evidence,
                         infra=True)
        if result.returncode != 0:
            return Layer("independent_check", False, f"coqchk rejected the compiled proof: {output[-400:]}", evidence)
        if parse_coqchk_summary(output) is None:
            return Layer("independent_check", False, "coqchk printed no context summary", evidence)
        return Layer("independent_check", True, "", {**evidence, "guarantee": CHECKER_CLAUSE})

    def candidate_with_prelude(self, task: Task, prelude: str, proof: str) -> str:
        """The candidate with ``prelude`` (the portfolio's ``Require``s) where helpers go: right before the target's
        statement, never before the project's own text."""
        cut = int(task.meta.get("statement_offset", 0))
        text = self.candidate_with_proof(task, proof)
        return text[:cut] + prelude + text[cut:]

    def static_layers(self, task: Task, text: str) -> list[Layer]:
        """The text screen (defence in depth; the kernel judge decides): the file before the target's statement is
        the project's, byte for byte; from there the usual screen of one theorem (helpers before the statement,
        the statement and opener frozen, a proof free of admits and vernacular, then the template's ``End``s)."""
        from pytest_forall.lang.screens import rocq_static_layers

        if task.meta.get("own_candidate") and text == task.meta["own_candidate"]:
            # the project's own text (a doubled `Proof.`, a no-break space …): nothing for a screen of untrusted
            # text to add; the kernel judge decides, as for every candidate
            return [Layer("syntax_screen", True, "the project's own proof: its text is the project's")]
        cut = int(task.meta.get("statement_offset", 0))
        before = task.template[:cut]
        if not text.startswith(before):
            line = next((text[:i].count("\n") + 1 for i, (a, b) in enumerate(zip(before, text)) if a != b),
                        min(len(before), len(text)) and text[:len(before)].count("\n") + 1)
            return [Layer("frozen_statement", False, (
                f"line {line}: the file before `{task.theorem_name}` differs from the project's "
                f"{task.meta.get('project_file')}: only the proof may change (helpers go right before the statement)"))]
        template, candidate = task.template[cut:], text[cut:]
        keyword = str(task.meta.get("keyword") or "Lemma")
        at = re.search(rf"\b{re.escape(keyword)}\b", task.statement)
        if at is not None and (at.start() or keyword not in THEOREM_KEYWORDS):
            # the screen reads one theorem; a definition, instance or example proved in proof mode is screened as
            # one (what it declares is the kernel judge's business)
            stated = "Lemma" + task.statement[at.end():]
            template = template.replace(task.statement, stated, 1)
            candidate = candidate.replace(task.statement, stated, 1)
            task = dataclasses.replace(task, statement=stated)
        opener = str(task.meta.get("opener") or "Proof.")
        if opener != "Proof.":  # the screen knows one opener; the kernel judge compares what the opener decides
            template = template.replace(f"{opener}\nAdmitted.", "Proof.\nAdmitted.", 1)
            found = candidate.find(task.statement)
            after = found + len(task.statement) if found >= 0 else -1
            if after >= 0 and candidate[after:].lstrip().startswith(opener):
                start = after + len(candidate[after:]) - len(candidate[after:].lstrip())
                candidate = candidate[:start] + "Proof." + candidate[start + len(opener):]
        return rocq_static_layers(template, candidate, theorem_name=task.theorem_name)

    def sentence_check(self, task: Task, data: bytes, compiled: Any) -> Layer:
        """coqc's sentences from the target's statement on must be the screen's (the file before it is the
        project's own, compiled by the project's build as well)."""
        from pytest_forall.lang.rocq.screen import sentence_structure

        if (not compiled.sentences and compiled.ok and self._is_own_compiled(task, data, compiled.digest)) or (
                task.meta.get("own_candidate") and data == str(task.meta["own_candidate"]).encode("utf-8")):
            return Layer("sentence_structure", True, "the project's own proof, compiled as the project's text")
        cut = len(task.template[:int(task.meta.get("statement_offset", 0))].encode("utf-8"))
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        if data[bom:bom + cut] != task.template.encode("utf-8")[:cut]:
            return Layer("sentence_structure", False, "the file before the target differs from the project's")
        reported = [(a - cut, b - cut, t) for a, b, t in compiled.sentences if a >= cut]
        # the .glob's declarations confirm a command coqc's report cuts off (a long attribute list)
        declared = [(a - cut, b - cut, k, n) for a, b, k, n in compiled.declarations if a >= cut]
        return sentence_structure(data[bom + cut:], reported, declared)

    def tactic_probe(self, workspace: Path) -> Any:
        """The portfolio's ``coqtop`` with the project's load path on its build (set by :meth:`try_tactics`)."""
        from pytest_forall.lang.rocq.coqtop import TacticProbe

        prefix: list[str] = []
        if self.sandboxed:
            from pytest_forall.isolation.sandbox import interactive_prefix

            prefix = interactive_prefix(workspace, [(p, inside) for p, inside in self.sandbox_binds if p.exists()])
        elif self.toolchain.root:  # the build's compiled files are read where they are
            prefix = [*root_prefix(self.toolchain.root, workspace.absolute(), [(self.builds, str(self.builds))]), "--"]
        if self.ocaml_env:
            prefix += ["/usr/bin/env", *(f"{k}={v}" for k, v in self.ocaml_env.items())]
        return TacticProbe(self.coqtop, self.mem_mb, prefix or None, self._tactic_load.get(str(workspace), []),
                           show_goals=not self.info.coqtop_prints_goals)

    def try_tactics(self, task: Task, workspace: Path, tactics: list[str], timeout: float,
                    prelude: str = "", on_attempt: Callable[[], None] | None = None) -> tuple[str, int, str]:
        """The portfolio's tactics on the target, with the project's build on the load path."""
        project, build, problem = self._build(task, max(timeout, 600.0))
        if problem:  # nothing was tried: a turn that spent nothing, never a failed proof
            return "", 0, problem
        self._tactic_load[str(workspace)] = self._load(project, self._out(project, build), True)
        return super().try_tactics(task, workspace, tactics, timeout, prelude, on_attempt)


class _LinesDigest:
    """``sha256("\\n".join(lines))`` of a growing list of lines, readable at any point without re-joining."""

    def __init__(self, first: str | None = None) -> None:
        self.digest, self.empty = hashlib.sha256(), True
        if first is not None:
            self.add(first)

    def add(self, line: str) -> None:
        self.digest.update(("" if self.empty else "\n").encode() + line.encode())
        self.empty = False

    def hexdigest(self) -> str:
        return self.digest.copy().hexdigest()[:24]


#: per judge dump (kept alive with its table) and files-it-rests-on key: :func:`context_digests`
_CONTEXTS: dict[int, tuple[Any, str, dict[str, tuple[str, str, str]]]] = {}


def context_digests(dump: Any, deps_key: str) -> dict[str, tuple[str, str, str]]:
    """Per declaration of a file's dump (its first occurrence): its entry and the digests of what comes before it in
    the file — ``kernel_context`` (``deps_key``, then every declaration that is not an opaque proof), ``kernel_lemmas``
    (the opaque ones). One pass per dump, not one per item (a file's items each read all declarations before them)."""
    known = _CONTEXTS.get(id(dump))
    if known is not None and known[0] is dump and known[1] == deps_key:
        return known[2]
    definitions, lemmas = _LinesDigest(deps_key), _LinesDigest()
    table: dict[str, tuple[str, str, str]] = {}
    for path, found in dump.fields:
        if path not in table:
            table[path] = (found, definitions.hexdigest(), lemmas.hexdigest())
        (lemmas if found.split(" ")[2:3] == ["opaque"] else definitions).add(f"{path} {found}")
    _CONTEXTS[id(dump)] = (dump, deps_key, table)
    return table


def _stored_dump(dump: Any) -> str:
    """A file dump written back in the plugin's format under the fixed nonce ``stored`` (the build's cache)."""
    lines = ["forall-judge stored", *(f"field {p} {e}" for p, e in dump.fields),
             *(f"functor {m}" for m in dump.opaque_modules)]
    for target in sorted(dump.targets):
        lines += [f"target {target}", *(f"assumption {target} {a}" for a in dump.assumptions.get(target, ())),
                  *(f"finding-of {target} finding {f}" for f in dump.findings.get(target, ())),
                  *(f"universes-of {target} {u}" for u in dump.universes.get(target, ()))]
    return "\n".join([*lines, *(f"missing-target {m}" for m in sorted(dump.missing)), "end stored"]) + "\n"


#: The statement clause of project mode (what an accepted project item is guaranteed).
PROJECT_STATEMENT_CLAUSE = ("kernel statement: the target's type is its type in the project's own build, and every "
                            "declaration of its file before it is the build's (types, bodies of transparent "
                            "definitions), as kernel terms")


def _has_items(project: CoqProject, rel: str) -> bool:
    """The file has items (what :func:`rocq_tasks_of_file` would find, without making them)."""
    from pytest_forall.lang.common import NotUnderstood

    try:
        return any(not proof.skip for proof in _proofs_of((project.root / rel).read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, NotUnderstood):
        return False


def rocq_tasks_of_file(project: CoqProject, rel: str) -> list[Task]:
    """The items of one file (the targets the baseline dump reports assumptions for)."""
    skipped: list[tuple[str, str]] = []
    one = dataclasses.replace(project, files=[rel])
    return rocq_tasks(one, {}, skipped)

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

def _lex_store(options: dict[str, Any]) -> Any:
    """The run's verdict cache as the store of lexed files (None with ``--forall-cache=off`` or no cache directory,
    and, as the verdict cache itself (``plugin.runner.verdict_cache``), outside a sandbox unless the frontend is a
    non-agent one: an unsandboxed coding agent could write the cache and its key)."""
    from pytest_forall.core.cache import CACHE_MODES, VerdictCache

    mode, where = str(options.get("cache") or "off"), options.get("cache_dir")
    if options.get("sandbox") == "none" and str(options.get("frontend") or "") not in ("replay", "portfolio"):
        return None
    return VerdictCache(Path(str(where)).expanduser() / "verdicts", mode) if where and mode in CACHE_MODES \
        and mode != "off" else None


def load_project(root: Path, options: dict[str, Any]) -> list[Task]:
    tasks: list[Task] = []
    skipped: list[tuple[str, str]] = []
    if is_rocq_project(root):
        project = read_coqproject(root)
        if options.get("build_ahead"):
            _build_ahead(project, options)
        tasks += rocq_tasks(project, cone_keys(project, toolchain_version(options),
                                               str(options.get("project_build") or "").strip(),
                                               project_toolchain(options)), skipped, _lex_store(options))
    NOT_ITEMS[str(root)] = skipped
    if is_lean_project(root):
        tasks += lean_tasks(root)
    seen: dict[str, int] = {}
    unique = []
    for task in tasks:  # overloaded names (e.g. in two files outside any mapping) stay distinct
        count = seen.get(task.task_id, 0)
        seen[task.task_id] = count + 1
        unique.append(task if not count else Task(**{**task.to_wire(), "task_id": f"{task.task_id}_{count + 1}"}))
    return unique


def _build_ahead(project: CoqProject, options: dict[str, Any]) -> None:
    """The project's build started in the background as the collection finds the project (``options["build_ahead"]``:
    a pytest run that will run items, not ``--collect-only``), so that the collection's lexing runs while coqc
    compiles (:meth:`ProjectRocqProver.build_ahead`). Nothing when the toolchain cannot run: every item says why."""
    if not project.files:
        return
    with contextlib.suppress(Exception):  # ahead of need only: the first item builds and reports
        prover = _project_rocq_prover(options)
        if not prover.probe(project.root):
            prover.build_ahead(project, float(options.get("timeout") or 300))


def not_items(root: Path, options: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """The proofs of a Rocq project that are not items, with the reason, read from its text alone (no build, no
    coqdep): the listing of a process that did not collect (the pytest-xdist controller). ``options``: the run's, for
    its lexed files kept in the verdict cache (:func:`_proofs_of`)."""
    skipped: list[tuple[str, str]] = []
    if is_rocq_project(root):
        rocq_tasks(read_coqproject(root), {}, skipped, _lex_store(options or {}))
    return skipped


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


#: one built :class:`ProjectRocqProver` per options, environment and process, copied for each item
_PROTOTYPES: dict[str, ProjectRocqProver] = {}


def _project_rocq_prover(options: dict[str, Any]) -> ProjectRocqProver:
    """A prover as ``ProjectRocqProver(options)`` makes it, for one item: pytest asks once per item, and building one
    resolves the tools on PATH, hashes the judge plugin's source and lists the sandbox binds (about 1 ms each, the
    same answer for every item of a run, #18). A copy of the first one built for the same options and environment is
    that answer; each copy has its own per-item records (:meth:`ProjectRocqProver.fresh`)."""
    key = _prototype_key(options)
    if key is None:  # an option that is not plain data: nothing to compare it by
        return ProjectRocqProver(options)
    known = _PROTOTYPES.get(key)
    if (known is None or type(known) is not ProjectRocqProver
            or (known.plugin is not None and not known.plugin.is_dir())):
        known = _PROTOTYPES[key] = ProjectRocqProver(options)
    if known.sandboxed:  # it put itself in a sandbox of its own (``forall verify``): its sandbox log is its own too
        return ProjectRocqProver(options)
    return known.fresh()


#: the options object and environment the last prototype key was made from, a copy of the options then, and the key
_LAST_KEY: dict[str, tuple[dict[str, Any], Any, dict[Any, Any], str]] = {}


def _prototype_key(options: dict[str, Any]) -> str | None:
    """The JSON of ``options`` and the environment (``PYTEST_CURRENT_TEST`` aside), or None when an option is not plain
    data. The run's one options object asked again, unchanged in an unchanged environment, gets the key it got: making
    it (43 us) was most of a copy's cost. The environment is compared by its raw bytes (``os.environ._data``: decoding
    every variable was 17 us), where this Python keeps them there."""
    raw = getattr(os.environ, "_data", None)
    environ = dict(raw) if isinstance(raw, dict) else dict(os.environ)
    for name in (b"PYTEST_CURRENT_TEST", "PYTEST_CURRENT_TEST"):  # pytest sets it for each item
        environ.pop(name, None)
    last = _LAST_KEY.get("last")
    if last is not None and last[0] is options and last[2] == environ and last[1] == options:
        return last[3]
    try:
        key = json.dumps([options, sorted(kv for kv in os.environ.items() if kv[0] != "PYTEST_CURRENT_TEST")],
                         sort_keys=True)
    except (TypeError, ValueError):
        return None
    _LAST_KEY["last"] = (options, copy.deepcopy(options), environ, key)
    return key


@hookimpl(trylast=True)
def pytest_forall_make_prover(name: str, options: dict[str, Any]) -> Any:
    if name == ROCQ_PROVER:
        return _project_rocq_prover(options)
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
