"""Statement-only retrieval over Lean 4 and Rocq sources: what is declared where, never how it is proved.

Agents spend most of their tool calls finding declarations. This module indexes a source tree
textually (no elaboration) into declarations carrying their kind, fully qualified name, statement
and location, with every body cut off at ``:=`` / ``where`` / ``Proof.``, so an agent can learn a
repository's interface without reading completed proofs. Excluded names (a task's target) are
dropped before any query structure is built, so no query can return them.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import heapq
import json
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from filelock import FileLock

from pytest_forall.lang.lean import LANGUAGE as LEAN
from pytest_forall.lang.lean import lexer
from pytest_forall.lang.rocq import LANGUAGE as ROCQ
from pytest_forall.lang.rocq import lexer as rocq_lexer

LANGUAGE_BY_SUFFIX = {f".{LEAN.extension}": LEAN.name, f".{ROCQ.extension}": ROCQ.name}
#: Directories never worth indexing: VCS metadata and build outputs (Lake packages included).
SKIPPED_DIR_NAMES = frozenset({".git", ".lake", "_build", "build", "node_modules", "__pycache__"})
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "pytest-forall" / "retrieval"
#: Cached parses are keyed by this module's own source too, so a parser change invalidates them.
PARSER_VERSION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
DOC_LIMIT = 400

OPENERS = "([{⟨⦃⟦"
CLOSERS = ")]}⟩⦄⟧"


@dataclass(frozen=True)
class Declaration:
    """One indexed declaration; ``statement`` is source text with any body removed."""

    kind: str
    name: str
    statement: str
    file: str
    line: int
    doc: str = ""
    parent: str = ""  # the inductive / record a constructor or field belongs to

    def render(self) -> str:
        """Compact text for an agent: location and name, then the statement (and doc if any)."""
        text = f"{self.name}  [{self.kind}]  {self.file}:{self.line}\n  {self.statement}"
        return f"{text}\n  doc: {self.doc}" if self.doc else text


#: a declaration's fields, in order: its cached row (``asdict`` deep-copied every string, a third of a parse)
_FIELDS = tuple(f.name for f in fields(Declaration))


# ---------------------------------------------------------------------------------------------
# Lexing: blank out comments (and mask string interiors) while keeping offsets and line numbers.


@dataclass
class _Lexed:
    clean: str  # comments replaced by spaces; what statements are cut from
    masked: str  # additionally string interiors blanked; what the structural scans look at
    docs: list[tuple[int, int, str]]  # (start, end, text) of doc comments, in order
    doc_ends: list[int]


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def _lex(source: str) -> _Lexed:
    """Lean by the one Lean lexer: comments and doc comments blanked, strings masked, ``/--`` docs recorded."""
    docs = [(start, end, " ".join(body.split())) for start, end, body in lexer.doc_comments(source)]
    return _Lexed(lexer.mask(source, strings=False), lexer.mask(source), docs, [end for _, end, _ in docs])


def _normalize(text: str) -> str:
    return " ".join(text.split())


def _body_start(masked: str, start: int, end: int, *, stop_words: Sequence[str], line_bar: bool) -> int:
    """Offset in ``[start, end)`` where the body begins: the first ``:=`` or stop word at bracket depth 0.

    A ``:=`` belonging to a depth-0 ``let`` is skipped; ``line_bar`` also stops at a ``|`` opening
    a line (Lean equation-compiler arms, inductive constructors). If brackets never balance (a
    notation the lexer misreads), the first ``:=`` at any depth is taken: erring towards a short
    statement is safe, erring the other way would leak a body.
    """
    depth, pending_lets, first_assign = 0, 0, -1
    words = "|".join((*stop_words, "let"))
    pattern = rf":=|\b(?:{words})\b|[{re.escape(OPENERS + CLOSERS)}]"
    if line_bar:
        pattern += r"|^[ \t]*\|(?!\|)"
    for match in _compiled(pattern).finditer(masked, start, end):
        token = match.group()
        if token == ":=" and first_assign < 0:
            first_assign = match.start()
        if token in OPENERS:
            depth += 1
        elif token in CLOSERS:
            depth = max(depth - 1, 0)
        elif depth > 0:
            continue
        elif token == "let":
            pending_lets += 1
        elif token == ":=" and pending_lets:
            pending_lets -= 1
        else:
            return match.start()
    return first_assign if depth > 0 and first_assign >= 0 else end


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.MULTILINE)


def _split_depth0(masked: str, start: int, end: int, separator: str) -> list[tuple[int, int]]:
    """Spans of ``masked[start:end]`` split at depth-0 occurrences of ``separator``."""
    spans, depth, piece_start = [], 0, start
    for i in range(start, end):
        char = masked[i]
        if char in OPENERS:
            depth += 1
        elif char in CLOSERS:
            depth = max(depth - 1, 0)
        elif depth == 0 and masked.startswith(separator, i):
            spans.append((piece_start, i))
            piece_start = i + len(separator)
    spans.append((piece_start, end))
    return spans


def _line_of(line_starts: list[int], offset: int) -> int:
    lo, hi = 0, len(line_starts)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if line_starts[mid] <= offset:
            lo = mid
        else:
            hi = mid
    return lo + 1


def _doc_before(lexed: _Lexed, offset: int) -> str:
    """The doc comment directly preceding ``offset`` (only whitespace in between), if any."""
    position = bisect.bisect_right(lexed.doc_ends, offset) - 1
    if position < 0:
        return ""
    _, end, text = lexed.docs[position]
    return "" if lexed.masked[end:offset].strip() else text[:DOC_LIMIT]


# ---------------------------------------------------------------------------------------------
# Lean 4


LEAN_IDENT = r"(?:«[^»]*»|[^\s(){}\[\]⦃⦄⟨⟩:,«»])+"
LEAN_DECL = re.compile(
    r"^[ \t]*(?:(?:open|set_option|variable|omit|include)\b[^\n]*?\sin\s+)*"
    r"(?:@\[[^\]]*\]\s*|(?:private|protected|public|noncomputable|partial|unsafe|nonrec|scoped|local|meta)\s+)*"
    r"(?P<kind>theorem|lemma|def|abbrev|instance|structure|class\s+inductive|class|inductive|axiom|opaque|example)\b",
    re.MULTILINE,
)
LEAN_SCOPE = re.compile(
    r"^[ \t]*(?:@\[[^\]]*\]\s*)?(?:(?:noncomputable|public)\s+)*"
    r"(?P<cmd>namespace|section|end|mutual)\b[ \t]*(?P<arg>[^\s]*)",
    re.MULTILINE,
)
#: Top-level commands that end the text of a preceding declaration.
LEAN_BOUNDARY = re.compile(
    r"^(?:open|variable|universe|set_option|attribute|import|notation|infix[lr]?|prefix|postfix|macro|"
    r"macro_rules|syntax|elab|elab_rules|deriving|initialize|alias|export|omit|include|local|scoped|"
    r"add_decl_doc|assert_not_exists|suppress_compilation|#\w+)\b",
    re.MULTILINE,
)
LEAN_NAME_START = re.compile(rf"\s*(?:\(priority\s*:=[^)]*\)\s*)?(?P<name>{LEAN_IDENT})?")


def parse_lean(source: str) -> list[Declaration]:
    """Declarations of one Lean 4 file, names qualified by the enclosing namespaces (file left blank)."""
    lexed = _lex(source)
    masked = lexed.masked
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", masked)]
    events: list[tuple[int, int, str, re.Match[str]]] = []  # (start, priority, type, match)
    events += [(m.start(), 0, "decl", m) for m in LEAN_DECL.finditer(masked)]
    events += [(m.start(), 1, "scope", m) for m in LEAN_SCOPE.finditer(masked)]
    events += [(m.start(), 2, "boundary", m) for m in LEAN_BOUNDARY.finditer(masked)]
    events.sort(key=lambda event: (event[0], event[1]))
    # A decl match and a scope/boundary match at the same offset cannot both be real: keep the first.
    deduped: list[tuple[int, int, str, re.Match[str]]] = []
    for event in events:
        if not deduped or event[0] >= deduped[-1][3].end():
            deduped.append(event)
    scopes: list[tuple[str, list[str]]] = []
    declarations: list[Declaration] = []
    for index, (_, _, event_type, match) in enumerate(deduped):
        region_end = deduped[index + 1][0] if index + 1 < len(deduped) else len(masked)
        if event_type == "scope":
            _lean_scope(scopes, match.group("cmd"), match.group("arg"))
        elif event_type == "decl":
            namespace = [part for _, parts in scopes for part in parts]
            declarations += _lean_declaration(lexed, line_starts, match, region_end, namespace)
    return declarations


def _lean_scope(scopes: list[tuple[str, list[str]]], command: str, argument: str) -> None:
    if command == "namespace":
        scopes.append((command, argument.split(".")))
    elif command in ("section", "mutual"):
        scopes.append((command, []))
    elif scopes:
        scopes.pop()


def _lean_qualify(namespace: list[str], name: str) -> str:
    if name.startswith("_root_."):
        return name.removeprefix("_root_.")
    return ".".join(namespace + [name])


def _lean_declaration(
    lexed: _Lexed, line_starts: list[int], match: re.Match[str], region_end: int, namespace: list[str]
) -> list[Declaration]:
    masked, clean = lexed.masked, lexed.clean
    kind = " ".join(match.group("kind").split())
    if kind == "example":
        return []
    name_match = LEAN_NAME_START.match(masked, match.end())
    assert name_match is not None  # every group is optional
    keyword_start = match.start("kind")
    line = _line_of(line_starts, keyword_start)
    raw_name = (name_match.group("name") or "").rstrip(".")  # `f.{u}` carries universe parameters
    fqn = _lean_qualify(namespace, raw_name) if raw_name else _lean_qualify(namespace, f"instance@{line}")
    is_type = kind in ("structure", "class", "class inductive", "inductive")
    body = _body_start(masked, name_match.end(), region_end, stop_words=("where", "deriving"), line_bar=True)
    statement = _normalize(clean[keyword_start:body])
    doc = _doc_before(lexed, match.start())
    declaration = Declaration(kind, fqn, statement, "", line, doc)
    if not is_type:
        return [declaration]
    members_start = body + (len("where") if masked.startswith("where", body) else 0)
    members_start += 2 if masked.startswith(":=", body) else 0
    members_end = _lean_members_end(masked, members_start, region_end)
    member_kind = "constructor" if "inductive" in kind else "field"
    return [declaration] + list(
        _lean_members(lexed, line_starts, members_start, members_end, fqn, member_kind)
    )


def _lean_members_end(masked: str, start: int, end: int) -> int:
    deriving = re.compile(r"^[ \t]*deriving\b", re.MULTILINE).search(masked, start, end)
    return deriving.start() if deriving else end


LEAN_CTOR_NAME = re.compile(rf"\s*(?P<name>{LEAN_IDENT})")


def _lean_members(
    lexed: _Lexed, line_starts: list[int], start: int, end: int, parent: str, member_kind: str
) -> Iterator[Declaration]:
    """Constructors (``| c : T``) or fields (``f : T := default``, default dropped) of a type."""
    masked, clean = lexed.masked, lexed.clean
    if member_kind == "constructor":
        spans = _split_depth0(masked, start, end, "|")[1:]
    else:
        spans = _lean_field_spans(masked, start, end)
    for span_start, span_end in spans:
        name_match = LEAN_CTOR_NAME.match(masked, span_start, span_end)
        if not name_match or name_match.group("name") in ("extends",):
            continue
        name = name_match.group("name")
        cut = _body_start(masked, name_match.end(), span_end, stop_words=(), line_bar=False)
        text = _normalize(clean[name_match.start("name") : cut])
        if member_kind == "field" and ":" not in text.removeprefix(name):
            continue  # `f := v` overrides a parent's default; it declares nothing
        yield Declaration(
            member_kind,
            f"{parent}.{name}",
            text,
            "",
            _line_of(line_starts, name_match.start("name")),
            _doc_before(lexed, span_start),
            parent,
        )


LEAN_FIELD_LINE = re.compile(r"^([ \t]*)(\S.*)$", re.MULTILINE)
LEAN_CONSTRUCTOR_NAMING = re.compile(r"\S+\s*::")


def _lean_field_spans(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    """Structure fields: one per line at the fields' indentation, continuation lines folded in."""
    lines = list(LEAN_FIELD_LINE.finditer(masked, start, end))
    if not lines:
        return []
    indent = min(len(m.group(1)) for m in lines)
    heads = [m.start(2) for m in lines if len(m.group(1)) == indent]
    return [
        (head, nxt)
        for head, nxt in zip(heads, heads[1:] + [end])
        if not LEAN_CONSTRUCTOR_NAMING.match(masked, head, nxt)  # `mk ::` names the constructor
    ]


# ---------------------------------------------------------------------------------------------
# Rocq


ROCQ_IDENT = r"[A-Za-z_\u00C0-\uFFFF][\w'\u00C0-\uFFFF]*"
ROCQ_THEOREM_KINDS = ("Lemma", "Theorem", "Corollary", "Proposition", "Fact", "Remark", "Property")
ROCQ_DEFINITION_KINDS = (
    "Definition",
    "Fixpoint",
    "CoFixpoint",
    "Instance",
    "Axiom",
    "Parameter",
    "Conjecture",
)
ROCQ_TYPE_KINDS = ("Inductive", "CoInductive", "Variant", "Record", "Structure", "Class")
ROCQ_SENTENCE = re.compile(
    r"\s*(?:#\[[^\]]*\]\s*)*(?:HB\.\w+\s+)?(?:(?:Local|Global|Polymorphic|Monomorphic|Program|Cumulative|NonCumulative|Private)\s+)*"
    rf"(?P<kind>{'|'.join(ROCQ_THEOREM_KINDS + ROCQ_DEFINITION_KINDS + ROCQ_TYPE_KINDS)}|Module(?:\s+Type)?"
    rf"|Section|End)\b(?:\s+(?:Import|Export)\b)?\s*(?P<name>{ROCQ_IDENT})?"
)


def _lex_rocq(source: str) -> _Lexed:
    """The Rocq lexer's view: comments blanked, string contents masked, ``(** … *)`` doc comments kept."""
    comments, clean, masked = rocq_lexer.masks(source)
    docs = [(start, end, " ".join(source[start + 3:end - 2].split()))
            for start, end in comments
            if source.startswith("(**", start) and not source.startswith("(***", start)]
    return _Lexed(clean, masked, docs, [e for _, e, _ in docs])


def parse_rocq(source: str, module: str) -> list[Declaration]:
    """Declarations of one Rocq file, names qualified by ``module`` (the file) and open modules."""
    lexed = _lex_rocq(source)
    masked = lexed.masked
    line_starts = [0] + [m.end() for m in re.finditer(r"\n", masked)]
    scopes: list[str | None] = []  # module names, or None for sections
    declarations: list[Declaration] = []
    for start, after in rocq_lexer.sentences(source, strict=False):
        end = after - 1  # the sentence without its closing '.'
        match = ROCQ_SENTENCE.match(masked, start, end)
        if not match:
            continue
        kind, name = " ".join(match.group("kind").split()), match.group("name")
        prefix = ".".join([module] + [scope for scope in scopes if scope])
        if kind == "Section":
            scopes.append(None)
        elif kind == "End":
            if scopes:
                scopes.pop()
        elif kind.startswith("Module"):
            body = _body_start(masked, match.end(), end, stop_words=(), line_bar=False)
            declarations.append(_rocq_entry(lexed, line_starts, match, body, kind, f"{prefix}.{name}"))
            if body == end and name:  # `Module M := N.` is an alias, not an opened scope
                scopes.append(name)
        else:
            declarations += _rocq_declaration(lexed, line_starts, match, end, kind, prefix)
    return declarations


def _rocq_entry(
    lexed: _Lexed, line_starts: list[int], match: re.Match[str], cut: int, kind: str, fqn: str
) -> Declaration:
    keyword_start = match.start("kind")
    statement = _normalize(lexed.clean[keyword_start:cut])
    doc = _doc_before(lexed, match.start("kind"))
    return Declaration(kind, fqn, statement, "", _line_of(line_starts, keyword_start), doc)


def _rocq_declaration(
    lexed: _Lexed, line_starts: list[int], match: re.Match[str], end: int, kind: str, prefix: str
) -> list[Declaration]:
    masked = lexed.masked
    line = _line_of(line_starts, match.start("kind"))
    name = match.group("name")
    if not name:  # `Instance : C.` is anonymous
        name = f"instance@{line}"
    stop_words = (
        ("with", "where")
        if kind in ROCQ_TYPE_KINDS
        else ("with",)
        if kind in ("Fixpoint", "CoFixpoint")
        else ()
    )
    body = _body_start(masked, match.end(), end, stop_words=stop_words, line_bar=False)
    fqn = f"{prefix}.{name}"
    declaration = _rocq_entry(lexed, line_starts, match, body, kind, fqn)
    if kind not in ROCQ_TYPE_KINDS or not masked.startswith(":=", body):
        return [declaration]
    members_end = _body_start(masked, body + 2, end, stop_words=("with", "where"), line_bar=False)
    if kind in ("Inductive", "CoInductive", "Variant"):
        spans = _split_depth0(masked, body + 2, members_end, "|")
        member_kind = "constructor"
    else:
        spans = _rocq_field_spans(masked, body + 2, members_end)
        member_kind = "field"
    members = []
    for span_start, span_end in spans:
        name_match = re.compile(rf"\s*(?:#\[[^\]]*\]\s*)?(?P<name>{ROCQ_IDENT})").match(
            masked, span_start, span_end
        )
        if not name_match or name_match.group("name") == "_":
            continue
        cut = _body_start(masked, name_match.end(), span_end, stop_words=(), line_bar=False)
        members.append(
            Declaration(
                member_kind,
                f"{prefix}.{name_match.group('name')}",
                _normalize(lexed.clean[name_match.start("name") : cut]),
                "",
                _line_of(line_starts, name_match.start("name")),
                "",
                fqn,
            )
        )
    return [declaration] + members


def _rocq_field_spans(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    """Fields of ``Record R := Mk { f : T; g : U }`` or of a singleton ``Class C := f : T``."""
    brace = masked.find("{", start, end)
    if brace < 0:
        return [(start, end)]
    close = end
    depth = 0
    for i in range(brace, end):
        if masked[i] in OPENERS:
            depth += 1
        elif masked[i] in CLOSERS:
            depth -= 1
            if depth == 0:
                close = i
                break
    return _split_depth0(masked, brace + 1, close, ";")


# ---------------------------------------------------------------------------------------------
# Index: files on disk -> declarations, cached by content hash.


def source_files(root: Path) -> Iterator[Path]:
    """Lean and Rocq sources under ``root`` in a stable order, skipping VCS and build directories."""
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIR_NAMES and not d.startswith("."))
        for file_name in sorted(files):
            if Path(file_name).suffix in LANGUAGE_BY_SUFFIX:
                yield Path(directory) / file_name


def parse_file(source: str, relative_path: str) -> list[Declaration]:
    """Parse one file's text; the path only picks the language and the Rocq module name."""
    path = Path(relative_path)
    if LANGUAGE_BY_SUFFIX[path.suffix] == LEAN.name:
        return parse_lean(source)
    return parse_rocq(source, module=path.stem)


@dataclass
class BuildStats:
    """What an index build did; the cold/warm difference is the cache's worth."""

    files: int = 0
    parsed: int = 0
    cached: int = 0


def build_index(root: Path, cache_dir: Path | None = None) -> tuple[list[Declaration], BuildStats]:
    """Index every source under ``root``, reusing parses cached under ``cache_dir`` by content hash.

    Entries are keyed by (parser version, relative path, content hash), so unchanged files are
    never re-parsed and copies of a repository at different roots share the cache. The build holds
    a ``FileLock`` so concurrent pytest-xdist workers parse each file once and never see a torn write.
    """
    cache_dir = (cache_dir or DEFAULT_CACHE_DIR) / PARSER_VERSION
    cache_dir.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    stats = BuildStats()
    declarations: list[Declaration] = []
    with FileLock(str(cache_dir / "build.lock")):
        for path in source_files(root):
            relative = path.relative_to(root).as_posix()
            data = path.read_bytes()
            key = hashlib.sha256(relative.encode() + b"\0" + data).hexdigest()
            entry = cache_dir / key[:2] / f"{key}.json"
            stats.files += 1
            if entry.exists():
                rows = json.loads(entry.read_text(encoding="utf-8"))
                stats.cached += 1
            else:
                parsed = parse_file(data.decode("utf-8", errors="replace"), relative)
                rows = [{name: getattr(d, name) for name in _FIELDS} | {"file": relative} for d in parsed]
                _write_atomically(entry, json.dumps(rows, ensure_ascii=False))
                stats.parsed += 1
            declarations += [Declaration(**row) for row in rows]
    return declarations, stats


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


# ---------------------------------------------------------------------------------------------
# Queries


TOKEN = re.compile(r"[\w'.]+|[^\w\s()\[\]{},'.]+")
IDENTIFIER = re.compile(r"[A-Za-z_\u00C0-\uFFFF][\w'.\u00C0-\uFFFF]*")


def _tokens(text: str) -> set[str]:
    """Lower-cased words, their dot/underscore parts, and operator runs, for ranking."""
    found: set[str] = set()
    for token in TOKEN.findall(text.lower()):
        token = token.strip(".")
        if token:
            found.add(token)
            found.update(part for part in re.split(r"[._]", token) if part)
    return found


def _lines_containing(text: str, needle: str) -> Iterator[str]:
    """Distinct lines of ``text`` containing ``needle``, found by C-level ``str.find`` jumps."""
    position = text.find(needle)
    while position >= 0:
        line_start = text.rfind("\n", 0, position) + 1
        line_end = text.find("\n", position)
        line_end = len(text) if line_end < 0 else line_end
        yield text[line_start:line_end]
        position = text.find(needle, line_end)


def matches_name(full_name: str, query: str) -> bool:
    """Exact or dotted-suffix match: ``add_comm`` and ``Nat.add_comm`` both match ``M.Nat.add_comm``."""
    return full_name == query or full_name.endswith("." + query)


class Retriever:
    """Query engine over declarations with the excluded names already removed.

    Exclusion happens once, here: a withheld declaration (and any constructor, field or nested
    declaration under it) is absent from every structure the queries read, so no query can leak it.
    """

    def __init__(self, declarations: Iterable[Declaration], *, excluded: Sequence[str] = ()) -> None:
        all_declarations = list(declarations)
        withheld = {d.name for d in all_declarations if any(matches_name(d.name, e) for e in excluded)}
        self.excluded = tuple(excluded)
        self.declarations = [
            d
            for d in all_declarations
            if d.name not in withheld
            and d.parent not in withheld
            and not any(d.name.startswith(w + ".") for w in withheld)
        ]
        self._by_last_component: dict[str, list[int]] = defaultdict(list)
        self._by_file: dict[str, list[int]] = defaultdict(list)
        self._name_postings: dict[str, set[int]] = defaultdict(set)
        self._text_postings: dict[str, set[int]] = defaultdict(set)
        self._mentions: dict[str, set[int]] = defaultdict(set)
        for index, declaration in enumerate(self.declarations):
            self._by_last_component[declaration.name.rsplit(".", 1)[-1]].append(index)
            self._by_file[declaration.file].append(index)
            for token in _tokens(declaration.name):
                self._name_postings[token].add(index)
            for token in _tokens(declaration.statement + " " + declaration.doc):
                self._text_postings[token].add(index)
            for identifier in set(IDENTIFIER.findall(declaration.statement)):
                self._mentions[identifier.rstrip(".")].add(index)
        self._lower_names = [d.name.lower() for d in self.declarations]
        self._lower_statements = [" ".join(d.statement.lower().split()) for d in self.declarations]
        self._name_lengths = [min(len(d.name), 999) for d in self.declarations]
        # Newline-joined vocabularies let one C-level regex scan find every token containing a substring.
        self._name_vocabulary = "\n".join(self._name_postings)
        self._text_vocabulary = "\n".join(self._text_postings)

    def lookup(self, name: str, *, limit: int = 20) -> list[Declaration]:
        """Declarations whose fully qualified name is ``name`` or ends with ``.name``."""
        last = name.rsplit(".", 1)[-1]
        found = [self.declarations[i] for i in self._by_last_component.get(last, [])]
        found = [d for d in found if matches_name(d.name, name)]
        return sorted(found, key=lambda d: (d.name != name, len(d.name), d.name))[:limit]

    def search(self, query: str, *, limit: int = 20) -> list[Declaration]:
        """Rank by how many query tokens hit the name (weighted up) or the statement, exact or substring.

        Tokens found in more than a fifth of all statements (``:``, ``n``, ``->``) discriminate
        nothing and cost the most, so they are ignored whenever the query has any other token.
        """
        query_tokens = _tokens(query)
        common = len(self.declarations) // 5
        informative = {t for t in query_tokens if len(self._text_postings.get(t, ())) <= common}
        query_tokens = informative or query_tokens
        if not query_tokens:
            return []
        scores: dict[int, float] = defaultdict(float)
        coverage: dict[int, int] = defaultdict(int)
        for token in sorted(query_tokens):  # a fixed order keeps float sums, hence ranks, reproducible
            hits: dict[int, float] = {}
            # Ascending weights, so a stronger kind of hit overwrites a weaker one for the same entry.
            for postings, vocabulary, weight, exact in (
                (self._text_postings, self._text_vocabulary, 0.3, False),
                (self._text_postings, self._text_vocabulary, 1.0, True),
                (self._name_postings, self._name_vocabulary, 1.5, False),
                (self._name_postings, self._name_vocabulary, 3.0, True),
            ):
                if exact:
                    hits.update(dict.fromkeys(postings.get(token, ()), weight))
                elif len(token) >= 3:
                    for containing in _lines_containing(vocabulary, token):
                        hits.update(dict.fromkeys(postings[containing], weight))
            for index, weight in hits.items():
                scores[index] += weight
                coverage[index] += 1
        phrase = " ".join(query.lower().split())
        for index in scores:  # the whole query verbatim in a name or statement beats scattered tokens
            if phrase in self._lower_names[index]:
                scores[index] += 5.0
            elif len(phrase) >= 3 and phrase in self._lower_statements[index]:
                scores[index] += 4.0
        # One number per candidate (coverage, then score, then shorter name, then source order).
        rank = {i: coverage[i] * 1e6 + scores[i] * 1e3 - self._name_lengths[i] for i in scores}
        ranked = heapq.nlargest(limit, sorted(rank), key=rank.__getitem__)
        return [self.declarations[i] for i in ranked]

    def usages(self, name: str, *, limit: int = 50) -> list[Declaration]:
        """Declarations whose statement mentions ``name`` (textually, by any dotted suffix of its FQN)."""
        targets = {d.name for d in self.lookup(name, limit=1000)} or {name}
        spellings = {
            ".".join(parts[i:])
            for target in targets
            for parts in [target.split(".")]
            for i in range(len(parts))
        }
        if not any(len(s.split(".")) > 1 for s in spellings) or name not in targets:
            spellings.add(name)
        found: set[int] = set()
        for spelling in spellings:
            found |= self._mentions.get(spelling, set())
        results = [self.declarations[i] for i in sorted(found) if self.declarations[i].name not in targets]
        return results[:limit]

    def outline(self, file: str) -> list[Declaration]:
        """Declarations of one file in source order; ``file`` may be any unique path suffix."""
        if file not in self._by_file:
            candidates = [f for f in self._by_file if f.endswith("/" + file.lstrip("/"))]
            if len(candidates) != 1:
                return []
            file = candidates[0]
        return [self.declarations[i] for i in self._by_file[file]]
