"""Static layers for Lean 4 candidates: syntax screen, frozen statement, shadowing guard.

A candidate is the template's commands with the theorem's final ``sorry`` (the lead has already put the
answer into the ``…_solution`` abbrev) replaced by a proof, plus commands inserted before the theorem.
Lean has no sentence terminator, so commands are split at command keywords wherever they occur: Lean
itself ends a term or tactic block at such a keyword, whatever its column.  Rules and limits:
``docs/verifier-static.md``.
"""

from __future__ import annotations

import dataclasses
import difflib
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_forall.core.model import Layer
from pytest_forall.lang.common import (
    FROZEN,
    SHADOWING,
    SYNTAX,
    Finding,
    NotUnderstood,
    Token,
    TokenRun,
    components,
    difference_finding,
    identifier_parts,
    layer_from_findings,
    layout_key,
    name_clashes,
    run_static_layers,
    suspicious_characters,
)
from pytest_forall.lang.lean import lexer

ALLOWED_DECLARATIONS = frozenset({"theorem", "lemma", "def", "abbrev", "example"})
ALLOWED_MODIFIERS = frozenset({"private", "protected", "noncomputable"})
MODIFIERS = ALLOWED_MODIFIERS | {"unsafe", "partial", "nonrec"}
ALLOWED_ATTRIBUTES = frozenset({"simp", "norm_cast", "push_cast", "reducible", "irreducible"})
#: Options that only bound resources (exceeding them is an error, never a different elaboration).
ALLOWED_OPTIONS = frozenset({"maxHeartbeats", "maxRecDepth", "synthInstance.maxHeartbeats"})
#: ``linter.*`` only warn; ``pp.*`` only change how terms are printed [L13], never what they elaborate to.
ALLOWED_OPTION_PREFIXES = ("linter.", "pp.")
#: Commands that change how later text resolves or elaborates; the shadowing guard owns them.
RESOLUTION_COMMANDS = frozenset({
    "open", "namespace", "section", "end", "export", "instance", "attribute", "notation", "notation3",
    "infix", "infixl", "infixr", "prefix", "postfix", "local", "scoped"})
COMMAND_KEYWORDS = ALLOWED_DECLARATIONS | RESOLUTION_COMMANDS - {"local", "scoped"} | {
    "axiom", "opaque", "structure", "class", "inductive", "coinductive", "mutual", "variable", "variable?", "universe",
    "include", "omit", "import", "prelude", "macro", "macro_rules", "syntax", "elab", "elab_rules",
    "declare_syntax_cat", "binder_predicate", "initialize", "builtin_initialize", "run_cmd", "run_elab",
    "run_meta", "add_decl_doc", "register_simp_attr", "simproc", "dsimproc", "simproc_decl", "dsimproc_decl",
    "builtin_simproc", "alias", "irreducible_def", "proof_wanted", "library_note", "assert_not_exists",
    "suppress_compilation", "unsuppress_compilation", "unseal", "seal", "mk_iff_of_inductive_prop",
    "initialize_simps_projections", "add_aesop_rules", "erase_aesop_rules", "declare_aesop_rule_sets",
    "unif_hint", "grind_pattern", "declare_simp_like_tactic", "register_option", "register_builtin_option"}
COMMAND_REASONS = {
    "axiom": "declares an axiom", "opaque": "can hide an axiom", "variable": "adds hypotheses to the theorem",
    "variable?": "adds hypotheses to the theorem (Mathlib's `variable?` [P4])",
    "universe": "is not needed by a proof", "include": "adds hypotheses", "omit": "changes included variables",
    "import": "imports beyond the template's", "prelude": "drops the core library",
    "initialize": "runs code at import", "builtin_initialize": "runs code at import",
    "unsafe": "bypasses the kernel's safety", "partial": "declares an unchecked recursive definition",
    "mutual": "is not on the allow-list", "structure": "declares a type (not on the allow-list)",
    "inductive": "declares a type (not on the allow-list)", "class": "declares a type class",
}
META_COMMANDS = {"macro", "macro_rules", "syntax", "elab", "elab_rules", "declare_syntax_cat", "run_cmd",
                 "run_elab", "run_meta", "simproc", "dsimproc", "simproc_decl", "dsimproc_decl",
                 "builtin_simproc", "binder_predicate"}
#: Identifiers a proof may not mention: escape hatches, native evaluation, meta-programming entry points.
FORBIDDEN_IDENTIFIERS = frozenset({
    "sorry", "admit", "stop", "sorryAx", "native_decide", "native", "bv_decide", "ofReduceBool", "reduceBool",
    "trustCompiler", "lcProof", "lcUnreachable", "implemented_by", "extern", "csimp", "run_tac", "by_elab",
    "modifyEnv", "setEnv", "Environment", "addDecl", "addAndCompile", "evalExpr", "unsafeCast", "unsafeIO",
    "unsafeBaseIO", "unsafeEIO", "axiom", "opaque", "unsafe", "partial"})
LAYOUT_KEYWORDS = frozenset({"by", "calc", "do", "where"})
OPENING, CLOSING = "([{⟨⦃", ")]}⟩⦄"
DECLARING = ALLOWED_DECLARATIONS | {"axiom", "opaque", "structure", "class", "inductive", "coinductive",
                                    "instance", "alias", "irreducible_def"}

# --- lexing ------------------------------------------------------------------------------------------


def lex(text: str) -> list[Token]:
    """Lean lexemes (``pytest_forall.lang.lean.lexer``); comments and doc comments vanish."""
    return lexer.tokens(text)


# --- commands ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command(TokenRun):

    def head_index(self) -> int:
        """Index of the keyword after ``@[…]``, modifiers, ``local``/``scoped``, ``set_option … in``, ``open … in``
        and ``attribute […] … in`` (``cmd in cmd'`` is ``section cmd cmd' end`` [P3])."""
        return self._prefixes()[0]

    def _prefixes(self) -> tuple[int, list[tuple[str, int, int]]]:
        """(head index, the prefixes as (kind, start, end)): kinds ``attributes``, ``modifier``, ``set_option``,
        ``open``, ``attribute``."""
        tokens, i = self.tokens, 0
        found: list[tuple[str, int, int]] = []
        while i < len(tokens):
            text = tokens[i].text
            if text == "@[":
                end = _closing_bracket(tokens, i) + 1
                found.append(("attributes", i, end))
            elif text in MODIFIERS or text in ("local", "scoped"):
                end = i + 1
                found.append(("modifier", i, end))
            elif text == "set_option" and i + 3 < len(tokens) and tokens[i + 3].text == "in":
                end = i + 4
                found.append(("set_option", i, end))
            elif text in ("open", "attribute") and _in_prefix_end(tokens, i):
                end = _in_prefix_end(tokens, i)
                found.append((text, i, end))
            else:
                return i, found
            i = end
        return i, found

    def modifiers(self) -> list[str]:
        """``local``/``scoped`` written as modifiers of this command (not inside an ``attribute […] in``)."""
        return [self.tokens[a].text for kind, a, _ in self._prefixes()[1]
                if kind == "modifier" and self.tokens[a].text in ("local", "scoped")]

    def attribute_prefixes(self) -> list[Sequence[Token]]:
        return [self.tokens[a:b] for kind, a, b in self._prefixes()[1] if kind == "attribute"]

    def head(self) -> str:
        index = self.head_index()
        return self.tokens[index].text if index < len(self.tokens) else ""

    def declared_name(self) -> str:
        index = self.head_index() + 1
        tokens = self.tokens
        return tokens[index].text if index < len(tokens) and tokens[index].kind == "ident" else ""


def _in_prefix_end(tokens: Sequence[Token], i: int) -> int:
    """Index after the ``in`` of ``open … in`` / ``attribute […] names in`` starting at ``i``, else 0 [P1, P3]."""
    j = i + 1
    if tokens[i].text == "attribute":
        if j >= len(tokens) or tokens[j].text != "[":
            return 0
        j = _closing_bracket(tokens, j) + 1
    while j < len(tokens):
        token = tokens[j]
        if token.text == "in":
            return j + 1 if j > i + 1 else 0
        if token.kind != "ident" and token.text not in ("(", ")", "→", ","):
            return 0
        j += 1
    return 0


def _local_attributes_only(tokens: Sequence[Token]) -> bool:
    """``attribute [local a, local b] names [in]`` with every ``a`` on the allow-list: a local attribute lasts to
    the end of the enclosing section [P6] (``… in`` makes one around the next command [P3])."""
    if len(tokens) < 4 or tokens[0].text != "attribute" or tokens[1].text != "[":
        return False
    close = _closing_bracket(tokens, 1)
    groups: list[list[str]] = [[]]
    for token in tokens[2:close]:
        if token.text == ",":
            groups.append([])
        elif token.kind == "ident":
            groups[-1].append(token.text)
        else:
            return False
    names = tokens[close + 1:]
    if names and names[-1].text == "in":
        names = names[:-1]
    return (all(len(g) == 2 and g[0] == "local" and g[1] in ALLOWED_ATTRIBUTES for g in groups)
            and bool(names) and all(t.kind == "ident" for t in names))


def _closing_bracket(tokens: Sequence[Token], start: int) -> int:
    depth = 0
    for i in range(start, len(tokens)):
        if tokens[i].text in ("[", "@["):
            depth += 1
        elif tokens[i].text == "]":
            depth -= 1
            if depth == 0:
                return i
    return len(tokens) - 1


def _open_in_tactic(tokens: Sequence[Token], i: int) -> bool:
    """``open … in`` that is a tactic or term inside a proof [P1]: not at the start of a line's column 1 and
    followed by names (``scoped``, ``hiding``, ``renaming``, parenthesized lists) up to ``in`` before the next
    column-1 token. At column 1 it ends the proof (a tactic block cannot continue there) and is a command."""
    if tokens[i].newline and tokens[i].col == 1:
        return False
    for token in tokens[i + 1:]:
        if token.newline and token.col == 1:
            return False
        if token.text == "in":
            return True
        if token.kind != "ident" and token.text not in "()→,":
            return False
    return False


def _starts_command(tokens: Sequence[Token], i: int) -> bool:
    token = tokens[i]
    if i and tokens[i - 1].text == "open":
        return False  # `open private …`, `open scoped …`
    if token.text == "open" and _open_in_tactic(tokens, i):
        return False
    if token.text == "@[" or (token.kind == "ident" and (token.text in COMMAND_KEYWORDS or token.text in MODIFIERS)):
        return True
    following = tokens[i + 1] if i + 1 < len(tokens) else None
    if token.text in ("local", "scoped"):
        return following is not None and following.text in COMMAND_KEYWORDS
    at_line_start = token.newline and token.col == 1
    if token.text == "set_option":
        return at_line_start
    return (token.text == "#" and at_line_start and following is not None and not following.separated
            and following.kind == "ident")


def split_commands(tokens: Sequence[Token]) -> list[Command]:
    """Cut at command keywords; a run of prefixes (attributes, modifiers, ``set_option … in``) joins the next."""
    pieces: list[list[Token]] = []
    for i, token in enumerate(tokens):
        if not pieces or _starts_command(tokens, i):
            pieces.append([])
        pieces[-1].append(token)
    commands: list[Command] = []
    pending: list[Token] = []
    for piece in pieces:
        candidate = Command(tuple(pending + piece))
        if candidate.head_index() >= len(candidate.tokens):
            pending = list(candidate.tokens)
            continue
        commands.append(candidate)
        pending = []
    if pending:
        commands.append(Command(tuple(pending)))
    return commands


# --- structure -------------------------------------------------------------------------------------


@dataclass
class TemplateShape:
    preamble: list[Command]
    statement: tuple[Token, ...]  # the theorem up to and including the ``:=`` before the hole


def template_shape(text: str, theorem_name: str) -> TemplateShape:
    commands = split_commands(lex(text))
    if not commands:
        raise NotUnderstood("empty template", 1)
    theorem = commands[-1]
    if theorem.head() != "theorem" or theorem.declared_name() != theorem_name:
        raise NotUnderstood(f"the last command is not `theorem {theorem_name}`", theorem.line, theorem.text[:80])
    tokens = theorem.tokens
    if tokens[-1].text != "sorry":
        raise NotUnderstood("the theorem does not end in the `sorry` hole", tokens[-1].line)
    assign = max(i for i, t in enumerate(tokens) if t.text == ":=")
    if [t.text for t in tokens[assign + 1:]] not in (["sorry"], ["by", "sorry"]):
        raise NotUnderstood("the hole is not `:= sorry` or `:= by sorry`", tokens[assign].line)
    return TemplateShape(commands[:-1], tokens[:assign + 1])


@dataclass
class CandidateShape:
    before: list[Command]
    main: Command | None
    after: list[Command]

    def main_parts(self) -> tuple[tuple[Token, ...], tuple[Token, ...]]:
        """(``set_option``/``open``/``attribute`` ``… in`` prefixes, the rest) of the theorem; prefixes are not
        frozen (the shadowing guard refuses the ``open``/``attribute`` ones there)."""
        assert self.main is not None
        tokens, i = self.main.tokens, 0
        while i < len(tokens):
            if tokens[i].text == "set_option" and i + 3 < len(tokens) and tokens[i + 3].text == "in":
                i += 4
            elif tokens[i].text in ("open", "attribute") and _in_prefix_end(tokens, i):
                i = _in_prefix_end(tokens, i)
            else:
                break
        return tokens[:i], tokens[i:]


def candidate_shape(text: str, theorem_name: str) -> CandidateShape:
    commands = split_commands(lex(text))
    for index, command in enumerate(commands):
        if command.head() in ("theorem", "lemma") and command.declared_name() == theorem_name:
            return CandidateShape(commands[:index], _as_theorem(command), commands[index + 1:])
    return CandidateShape(commands, None, [])


def _as_theorem(command: Command) -> Command:
    """``lemma`` is Mathlib's macro for ``theorem`` [P2]: compared as the keyword it expands to."""
    index = command.head_index()
    if command.tokens[index].text != "lemma":
        return command
    tokens = list(command.tokens)
    tokens[index] = dataclasses.replace(tokens[index], text="theorem")
    return Command(tuple(tokens))


@dataclass
class Analysis:
    template: TemplateShape
    candidate: CandidateShape
    preamble_match: dict[int, int]

    def inserted(self) -> list[tuple[int, Command]]:
        kept = set(self.preamble_match.values())
        return [(i, c) for i, c in enumerate(self.candidate.before) if i not in kept]

    def proof(self) -> tuple[Token, ...]:
        """The candidate's tokens after the frozen statement (all of the theorem if the statement differs)."""
        if self.candidate.main is None:
            return ()
        _, body = self.candidate.main_parts()
        statement = self.template.statement
        if _layout_difference(statement, body[:len(statement)]) is None:
            return body[len(statement):]
        return body

    def authored(self) -> list[tuple[str, Sequence[Token]]]:
        """Every stretch of candidate-written tokens, labelled for reasons."""
        stretches: list[tuple[str, Sequence[Token]]] = [
            (f"inserted `{c.head()} {c.declared_name()}`", c.tokens)
            for _, c in self.inserted()]
        if self.candidate.main is not None:
            prefix, _ = self.candidate.main_parts()
            stretches.append(("the theorem's prefix", prefix))
            stretches.append(("the proof", self.proof()))
        stretches += [("a command after the theorem", c.tokens) for c in self.candidate.after]
        return stretches

    def frozen_parts_after(self, candidate_index: int) -> set[str]:
        later = [self.template.preamble[t] for t, c in self.preamble_match.items() if c > candidate_index]
        unmatched = [c for t, c in enumerate(self.template.preamble) if t not in self.preamble_match]
        tokens = [t for c in later + unmatched for t in c.tokens] + list(self.template.statement)
        return identifier_parts(tokens)


def analyse(template: str, candidate: str, theorem_name: str) -> Analysis:
    shape = template_shape(template, theorem_name)
    cand = candidate_shape(candidate, theorem_name)
    matcher = difflib.SequenceMatcher(None, [c.key() for c in shape.preamble], [c.key() for c in cand.before],
                                      autojunk=False)
    matched = {a + k: b + k for a, b, size in matcher.get_matching_blocks() for k in range(size)}
    return Analysis(shape, cand, matched)


def _layout_difference(frozen: Sequence[Token], candidate: Sequence[Token]) -> int | None:
    """First index where the candidate differs in text, separation, or layout that Lean reads.

    A token may not move to column 1 (it would end an application there), and inside ``by``/``calc``/
    ``do``/``where`` blocks line breaks and relative indentation must be kept; elsewhere re-wrapping is free.
    """
    region_depth: int | None = None
    anchors = (0, 0)
    depth = 0
    for index, (f, c) in enumerate(zip(frozen, candidate)):
        if layout_key(f, index == 0) != layout_key(c, index == 0):
            return index
        if c.newline and c.col == 1 and not (f.newline and f.col == 1):
            return index
        if region_depth is not None and (f.newline != c.newline
                                         or (f.newline and f.col - anchors[0] != c.col - anchors[1])):
            return index
        if f.text in OPENING:
            depth += 1
        elif f.text in CLOSING:
            depth -= 1
            if region_depth is not None and depth < region_depth:
                region_depth = None
        if region_depth is None and f.kind == "ident" and f.text in LAYOUT_KEYWORDS:
            region_depth, anchors = depth, (f.col, c.col)
    if len(frozen) != len(candidate):
        return min(len(frozen), len(candidate))
    return None


# --- layers ----------------------------------------------------------------------------------------


def _command_findings(command: Command) -> list[Finding]:
    """Syntax-screen verdict on one inserted command (resolution commands are the guard's)."""
    findings = []
    tokens, head_index = command.tokens, command.head_index()
    head = command.head()
    for token in tokens[:head_index]:
        if token.text in MODIFIERS and token.text not in ALLOWED_MODIFIERS:
            findings.append(Finding(token.line, f"modifier `{token.text}` "
                                                f"{COMMAND_REASONS.get(token.text, 'is not allowed')}"))
    findings += _attribute_findings(tokens[:head_index])
    if head in RESOLUTION_COMMANDS or head in ALLOWED_DECLARATIONS:
        return findings
    if head == "set_option":
        return findings  # its option name is checked with every other `set_option`
    if head in META_COMMANDS:
        reason = "runs or defines meta-programs"
    elif head == "#" or head.startswith("#"):
        reason = "is a `#` command"
    else:
        reason = COMMAND_REASONS.get(head, "is not on the allow-list of commands a candidate may add")
    findings.append(Finding(command.line, f"`{head}{_hash_suffix(command)}` {reason}", {"command": command.text[:200]}))
    return findings


def _hash_suffix(command: Command) -> str:
    index = command.head_index()
    if command.head() == "#" and index + 1 < len(command.tokens):
        return command.tokens[index + 1].text
    return ""


def _attribute_findings(tokens: Sequence[Token]) -> list[Finding]:
    findings = []
    inside = False
    for token in tokens:
        if token.text == "@[":
            inside = True
        elif token.text == "]":
            inside = False
        elif inside and token.kind == "ident" and token.text not in ALLOWED_ATTRIBUTES:
            findings.append(Finding(token.line, f"attribute `{token.text}` is not allowed "
                                                f"(allowed: {', '.join(sorted(ALLOWED_ATTRIBUTES))})"))
    return findings


def _token_findings(label: str, tokens: Sequence[Token]) -> list[Finding]:
    findings = []
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        previous = tokens[index - 1] if index else None
        if token.kind == "ident":
            parts = components(token.text)  # `«sorryAx»` is the name `sorryAx` [L8]
            if ".".join(parts) in FORBIDDEN_IDENTIFIERS or (parts and parts[-1] in FORBIDDEN_IDENTIFIERS):
                findings.append(Finding(token.line, f"`{token.text}` in {label}", {"token": token.text}))
            elif parts and parts[0] == "Lean":
                findings.append(Finding(token.line, f"meta-programming name `{token.text}` in {label}",
                                        {"token": token.text}))
            elif token.text == "set_option" and following is not None and not _option_allowed(following.text):
                findings.append(Finding(token.line, f"`set_option {following.text}` in {label} is not an allowed "
                                                    f"option (allowed: {', '.join(sorted(ALLOWED_OPTIONS))}, "
                                                    f"linter.*)", {"option": following.text}))
        elif token.text == "#" and following is not None and not following.separated and following.kind == "ident":
            findings.append(Finding(token.line, f"`#{following.text}` in {label}", {"token": f"#{following.text}"}))
        elif token.text == "`":
            findings.append(Finding(token.line, f"name literal or syntax quotation in {label} (meta-programming)",
                                    {"token": "`"}))
        elif (token.kind == "string" and previous is not None and previous.kind == "ident"
              and (previous.text in lexer.INTERPOLATING | {"dbg_trace"}
                   or (previous.text.endswith("!") and not token.separated))):
            findings.append(Finding(token.line, f"interpolated string `{previous.text}\"…\"` in {label}",
                                    {"token": previous.text}))
    return findings


def _option_allowed(name: str) -> bool:
    return name in ALLOWED_OPTIONS or name.startswith(ALLOWED_OPTION_PREFIXES)


def syntax_screen(candidate: str, analysis: Analysis, theorem_name: str) -> Layer:
    findings = suspicious_characters(candidate)
    for _, command in analysis.inserted():
        findings += _command_findings(command)
    for label, tokens in analysis.authored():
        findings += _token_findings(label, tokens)
    findings += [Finding(c.line, f"command after `theorem {theorem_name}`: `{c.text[:60]}`",
                         {"command": c.text[:200]}) for c in analysis.candidate.after]
    if analysis.candidate.main is not None and not analysis.proof():
        findings.append(Finding(analysis.candidate.main.line, f"`theorem {theorem_name}` has no proof"))
    findings.sort(key=lambda f: f.line)
    inserted = len(analysis.inserted())
    return layer_from_findings(SYNTAX, findings, f"{inserted} inserted command(s) on the allow-list; no "
                                                 f"forbidden tokens in candidate-written text",
                               {"inserted_commands": inserted})


def frozen_statement(analysis: Analysis, theorem_name: str) -> Layer:
    template, cand = analysis.template, analysis.candidate
    if cand.main is None:
        line = template.statement[0].line if template.statement else 1  # where the template has it (was: line 1)
        return layer_from_findings(FROZEN, [Finding(line, f"`theorem {theorem_name}` (template line {line}) not found "
                                                          "in the candidate")], "")
    findings = []
    kept = set(analysis.preamble_match.values())
    for t_index, command in enumerate(template.preamble):
        pair = analysis.preamble_match.get(t_index)
        if pair is not None:
            index = _layout_difference(command.tokens, cand.before[pair].tokens)
            if index is not None:
                findings.append(difference_finding("layout of a template command", command.tokens,
                                                   cand.before[pair].tokens, index, cand.before[pair].line))
            continue
        previous = max((c for t, c in analysis.preamble_match.items() if t < t_index), default=-1)
        rivals = [c for c in range(previous + 1, len(cand.before)) if c not in kept]
        if rivals:
            rival = cand.before[rivals[0]].tokens
            index = _layout_difference(command.tokens, rival) or 0
            findings.append(difference_finding("template command", command.tokens, rival, index, rival[0].line))
        else:
            findings.append(Finding(cand.main.line, f"template command at template line {command.line} is "
                                                    f"missing: `{command.text[:80]}`",
                                    {"template_line": command.line, "expected": command.text[:200]}))
    _, body = cand.main_parts()
    statement = template.statement
    index = _layout_difference(statement, body[:len(statement)])
    if index is not None:
        findings.append(difference_finding("theorem statement", statement, body, index, cand.main.line))
    compared = sum(len(c.tokens) for c in template.preamble) + len(statement)
    return layer_from_findings(FROZEN, findings, f"all {compared} frozen tokens match", {"frozen_tokens": compared})


def _helper_scopes(analysis: Analysis) -> tuple[set[int], set[int], list[Finding]]:
    """Inserted ``namespace``/``section``/``noncomputable section`` [P5] … ``end`` pairs that wrap only inserted
    commands and close before the theorem: they change no frozen text's resolution (their declarations still face
    the clash check). Returns (the scope commands, the commands inside such scopes, findings)."""
    kept = set(analysis.preamble_match.values())
    allowed: set[int] = set()
    inside: set[int] = set()
    findings: list[Finding] = []
    stack: list[tuple[int, str]] = []
    for index, command in enumerate(analysis.candidate.before):
        head, tokens, at = command.head(), command.tokens, command.head_index()
        if index in kept:
            if stack:
                findings.append(Finding(command.line, f"template command inside an inserted `{stack[-1][1]}`"))
            continue
        noncomputable = at == 1 and tokens[0].text == "noncomputable" and head == "section"
        if (at != 0 and not noncomputable) or head not in ("namespace", "section", "end"):
            continue
        name = tokens[at + 1].text if len(tokens) > at + 1 and tokens[at + 1].kind == "ident" else ""
        if head != "end":
            stack.append((index, f"{head} {name}".strip()))
            continue
        if not stack or stack[-1][1].split(" ")[1:] != ([name] if name else []):
            continue  # an `end` closing nothing inserted: the guard rejects it below
        opened = stack.pop()[0]
        allowed.update((opened, index))
        inside.update(range(opened + 1, index))
    for index, what in stack:
        findings.append(Finding(analysis.candidate.before[index].line, f"inserted `{what}` is not closed before "
                                                                        "the theorem"))
        allowed.discard(index)
    return allowed, inside - allowed, findings


def shadowing_guard(analysis: Analysis) -> Layer:
    allowed, inside, findings = _helper_scopes(analysis)
    for index, command in analysis.inserted():
        head = command.head()
        modifiers = command.modifiers()
        if index in allowed:
            continue
        if index in inside and _local_attributes_only(command.tokens):
            continue  # `attribute [local simp] …` in a helper section: gone at its `end` [P6]
        refused = [p for p in command.attribute_prefixes() if not _local_attributes_only(p)]
        if refused:
            findings.append(Finding(command.line, f"`{' '.join(t.text for t in refused[0])}` is not a local "
                                                  f"attribute on the allow-list", {"command": command.text[:200]}))
            continue
        if head in RESOLUTION_COMMANDS or modifiers:
            findings.append(Finding(command.line, f"`{' '.join(modifiers + [head])}` changes how the frozen "
                                                  f"text resolves or elaborates", {"command": command.text[:200]}))
            continue
        name = command.declared_name()
        if head in DECLARING and name and name_clashes(name, analysis.frozen_parts_after(index)):
            findings.append(Finding(command.line, f"`{head} {name}` shadows `{name.split('.')[-1]}`, which the "
                                                  f"frozen text after it uses", {"name": name}))
    if analysis.candidate.main is not None:
        prefix, _ = analysis.candidate.main_parts()
        opening = next((t for t in prefix if t.text in ("open", "attribute")), None)
        if opening is not None:  # it would reach the theorem's own statement [P3]
            findings.append(Finding(opening.line, f"`{opening.text} … in` before the theorem changes how its "
                                                  f"statement resolves or elaborates"))
        written = [*prefix, *analysis.proof()]
        for i, token in enumerate(written):
            if token.kind == "ident" and token.text in ("local", "scoped") and not (
                    token.text == "scoped" and i and written[i - 1].text == "open"):  # `open scoped X in` [P1]
                findings.append(Finding(token.line, f"`{token.text}` in the theorem's proof or prefix"))
    return layer_from_findings(SHADOWING, findings, "no inserted command declares a name the frozen text uses "
                                                    "or changes resolution")


def lean_static_layers(template: str, candidate: str, *, theorem_name: str) -> list[Layer]:
    """The three static layers, in order; text the lexer cannot read fails every layer with its reason."""
    return run_static_layers(sys.modules[__name__], template, candidate, theorem_name)
