"""A Rocq project's layout, read from where the project declares it: its ``_CoqProject`` (mapping, ``-arg``s, files),
its dune theories, or a default mapping; and the axioms its maintainer declares as its foundations."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_forall.lang.project import source_files


def declared_axioms(value: Any) -> tuple[str, ...]:
    """``--forall-project-axioms`` as names (the option is repeated; a value may list several, by commas or
    whitespace: neither is ever part of a kernel name), sorted and without repeats."""
    items = value if isinstance(value, (list, tuple)) else [value] if value else []
    return tuple(sorted({name for item in items for name in re.split(r"[\s,]+", str(item)) if name}))



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
