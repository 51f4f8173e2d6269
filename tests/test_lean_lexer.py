"""The one Lean lexer against Lean's own parser rules (docs/lean-facts.md L1-L10, quoted from
src/Lean/Parser/Basic.lean and src/Init/Meta/Defs.lean). Lean itself was not run: each case is what the
quoted code does, traced by hand, and the test names the rule it follows."""

from __future__ import annotations

import pytest

from pytest_forall.lang.common import NotUnderstood
from pytest_forall.lang.lean import lexer
from pytest_forall.lang.lean.project import lean_decls


def kinds(text: str) -> list[tuple[str, str]]:
    return [(s.kind, text[s.start:s.end]) for s in lexer.spans(text)]


@pytest.mark.parametrize("text, expected", [
    # L1: `--` runs to the end of the line; the next line is code
    ("a -- b -/\nc", [("ident", "a"), ("comment", "-- b -/"), ("ident", "c")]),
    # L1: after `/-` the third character is skipped unread, so `/-/-/` is one whole comment
    ("/-/-/ x", [("comment", "/-/-/"), ("ident", "x")]),
    # L2: comments nest
    ("/- a /- b -/ c -/ d", [("comment", "/- a /- b -/ c -/"), ("ident", "d")]),
    # L1, L3: `/--` is a token and its body starts at the fourth character: `/--/` does not close at once
    ("/--/ theorem t : True := trivial -/ x", [("doc", "/--/ theorem t : True := trivial -/"), ("ident", "x")]),
    ("/-!/ -/ y", [("moddoc", "/-!/ -/"), ("ident", "y")]),
    # L3 + L2: a doc comment's body nests like a comment
    ("/-- a /- b -/ c -/ z", [("doc", "/-- a /- b -/ c -/"), ("ident", "z")]),
    # L1: `--` inside a block comment is not a line comment
    ("/- -- -/ w", [("comment", "/- -- -/"), ("ident", "w")]),
    # L5: a backslash escapes the next character; comments are not read inside strings
    ('"a\\"b /- -- " c', [("string", '"a\\"b /- -- "'), ("ident", "c")]),
    # L5: a string gap (backslash, newline) needs no rule to find the end
    ('"a\\\n   b" d', [("string", '"a\\\n   b"'), ("ident", "d")]),
    # L7: raw strings close at `"` plus as many `#` as opened; no escapes inside
    ('r#"a"b\\"# e', [("string", 'r#"a"b\\"#'), ("ident", "e")]),
    ('r"x\\" f', [("string", 'r"x\\"'), ("ident", "f")]),
    # L4: `r` starts a raw string only at a token start; `rr"q"` is an identifier and a string
    ('rr"q"', [("ident", "rr"), ("string", '"q"')]),
    # L6: character literals: one character or one escape, then `'`
    ("'a' '\\n' '\\x41' '\\u0041' '\"'", [("char", "'a'"), ("char", "'\\n'"), ("char", "'\\x41'"),
                                          ("char", "'\\u0041'"), ("char", "'\"'")]),
    # L4: `'` followed by `'` is not a character literal (Mathlib's `''` token)
    ("f '' s", [("ident", "f"), ("symbol", "''"), ("ident", "s")]),
    # L9: `'` `!` `?` continue an identifier
    ("x' h! p? α₁", [("ident", "x'"), ("ident", "h!"), ("ident", "p?"), ("ident", "α₁")]),
    # L8: guillemets: the component is the text between them; `.` joins components
    ("«sorryAx» Foo.«bar baz».c", [("ident", "«sorryAx»"), ("ident", "Foo.«bar baz».c")]),
    # L8: `.` continues a name only before an identifier start
    ("h.1 x.y", [("ident", "h"), ("symbol", "."), ("number", "1"), ("ident", "x.y")]),
    # L9: λ, Π, Σ are not letter-like; other Greek letters are
    ("λ α Π β Σ", [("symbol", "λ"), ("ident", "α"), ("symbol", "Π"), ("ident", "β"), ("symbol", "Σ")]),
    # L10: number forms with separators and exponents
    ("0x1F 0b101 1_000 1.5e-3", [("number", "0x1F"), ("number", "0b101"), ("number", "1_000"),
                                 ("number", "1.5e-3")]),
])
def test_lexemes_follow_leans_parser(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text) == expected


@pytest.mark.parametrize("text, message", [
    ("/- never closed", "unterminated comment"),  # L2 eoi
    ("/-- never closed", "unterminated comment"),
    ('"never closed', "unterminated string literal"),  # L5
    ('r#"never closed"', "unterminated raw string literal"),  # L7
    ("«never closed", "unterminated identifier escape"),  # L8
    ("a\tb", "tabs are not allowed"),  # L1
])
def test_what_lean_rejects_is_not_understood(text: str, message: str) -> None:
    with pytest.raises(NotUnderstood, match=message):
        list(lexer.spans(text))


def test_lenient_reading_for_indexing_swallows_the_rest_like_leans_error() -> None:
    assert lexer.mask("a /- open", lenient=True) == "a        "
    assert lexer.mask("a\tb") == "a\tb"


def test_tokens_keep_lines_columns_and_separation() -> None:
    tokens = lexer.tokens("a /- x\n -/b\n  c/--d-/e")
    assert [(t.text, t.line, t.col, t.separated, t.newline) for t in tokens] == [
        ("a", 1, 1, True, True), ("b", 2, 4, True, True), ("c", 3, 3, True, True), ("e", 3, 10, True, False)]


def test_mask_keeps_offsets_and_blanks_comments_docs_and_string_interiors() -> None:
    text = '/-- doc -/\ntheorem t : "s" = "s" := rfl -- c'
    masked = lexer.mask(text)
    assert len(masked) == len(text) and masked.index("theorem") == text.index("theorem")
    assert "doc" not in masked and '"s"' not in masked and '" "' in masked and " c" not in masked
    assert lexer.mask(text, strings=False).count('"s"') == 2


def test_doc_comment_slash_hides_a_declaration_from_the_suites_too() -> None:
    """The project suite finds `sorry` theorems with the same lexer: `/--/ …` text is a doc comment there."""
    text = "/--/\ntheorem hidden : False := sorry\n-/\ntheorem shown : True := sorry\n"
    assert [d.name for d in lean_decls(text)] == ["shown"]
    assert lexer.doc_comments(text) == [(0, text.index("\n-/") + 3, "/\ntheorem hidden : False := sorry\n")]
