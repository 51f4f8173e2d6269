"""The one Rocq lexer (pytest_forall/lang/rocq/lexer.py) against Coq 8.16's own lexer.

Two kinds of evidence: rules read from ``parsing/cLexer.ml`` and ``clib/unicode.ml`` (Debian's
libcoq-core-ocaml-dev; cited in docs/rocq-lexer.md), each a unit test; and differential tests that run
real ``coqc -time`` on tricky files and require the lexer's sentence spans to be exactly the spans Coq
executed, and Coq's lexer errors to be exactly the lexer's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_tool
from pytest_forall.lang.rocq import lexer
from pytest_forall.lang.rocq.lexer import LexError, mask, scan, sentences, tokens

NBSP = "\u00a0"
REPO = Path(__file__).resolve().parents[1]
COQ_CLIB = Path("/usr/lib/ocaml/coq-core/clib")


def kinds(text: str) -> list[tuple[str, str]]:
    return [(x.kind, text[x.start:x.end]) for x in scan(text)]


# --- rules of cLexer.ml ------------------------------------------------------------------------------


def test_a_string_inside_a_comment_is_skipped_whole() -> None:
    """``comment``: on ``"`` it calls ``string ~comm_level:(Some 0)``, so ``*)`` inside it closes nothing."""
    text = '(* a "*)" b *) Theorem t : True. Admitted.'
    assert kinds(text)[0] == ("comment", '(* a "*)" b *)')
    assert "Theorem" in mask(text) and '"*)"' not in mask(text)
    with pytest.raises(LexError, match="unterminated string"):
        list(scan('(* " *) Theorem t : True. Admitted.'))


def test_comments_nest_and_paren_star_paren_opens_one() -> None:
    """``comment``: ``(*`` always opens a level, ``*)`` closes one; ``(*)`` is an opener followed by ``)``."""
    assert kinds("(* (* *) still *) x.") == [("comment", "(* (* *) still *)"), ("ident", "x"), ("end", ".")]
    assert kinds("(*)*) y.")[0] == ("comment", "(*)*)")
    assert kinds("(**) z.")[0] == ("comment", "(**)")
    with pytest.raises(LexError, match="unterminated comment"):
        list(scan("(* (* *) x."))


def test_strings_escape_quotes_by_doubling_and_may_span_lines() -> None:
    """``string``: a ``"`` followed by ``"`` stores one quote and goes on; any other character is kept."""
    assert kinds('Check "a""(*b".') == [("ident", "Check"), ("string", '"a""(*b"'), ("end", ".")]
    assert kinds('Check "a\nb".')[1] == ("string", '"a\nb"')
    assert mask('Check "a""b" "".') == 'Check "    " "".'
    with pytest.raises(LexError, match="unterminated string"):
        list(scan('Check "abc.'))


def test_blanks_are_exactly_space_tab_newline_return() -> None:
    """``next_token`` skips ``' ' | '\\t' | '\\r'`` and ``'\\n'`` only; ``blank_or_eof`` decides sentence ends."""
    assert [k for k, _ in kinds("x.\ty.\rz.\nw.")] == ["ident", "end"] * 4
    assert kinds("x.\x0cy.")[1] == ("symbol", ".\x0c")  # a form feed is no blank: no sentence end
    assert kinds("x.(* c *)")[1] == ("symbol", ".")      # nor is a comment
    assert kinds("x.")[1] == ("end", ".")                 # end of file is


def test_no_break_space_is_an_identifier_character() -> None:
    """unicode.ml: ``single 0x00A0`` is ``IdentSep``, valid initial and trailing; Python calls it a space."""
    assert kinds(f"Definition a{NBSP}b := 1.")[1] == ("ident", f"a{NBSP}b")
    assert NBSP.isspace()  # why a lexer built on str.isspace reads two identifiers there


def test_identifiers_follow_coqs_unicode_classes() -> None:
    """Letters start and continue identifiers; ``IdentPart`` (digits, subscripts, ``'``) only continues
    them; superscripts 0-9 are ``Symbol`` (the exceptions list); a combining mark is unknown in 8.16."""
    assert kinds("x₁' α'₂")[:2] == [("ident", "x₁'"), ("ident", "α'₂")]
    assert kinds("x²")[:2] == [("ident", "x"), ("symbol", "²")]
    assert kinds("₁x")[0] == ("symbol", "₁")
    assert kinds("e\u0301")[:2] == [("ident", "e"), ("symbol", "\u0301")]
    assert kinds("fun '(a, b) => a")[1] == ("symbol", "'")  # no char literal: ' is a token of its own
    assert kinds("Coq.Init.Nat.add x.")[0] == ("ident", "Coq.Init.Nat.add")


def test_numbers_follow_numtok() -> None:
    """``NumTok.Unsigned.parse``: ``[0-9][0-9_]*``, ``0x`` + hex, ``.``frac (digit or ``_`` after it),
    an ``e``/``p`` exponent with optional sign; a ``.`` then a blank is still the sentence end."""
    for number in ("1_000", "0x1F", "1.5", "1._5", "2e10", "2e-3", "0x1.8p3", "0xA_B"):
        assert kinds(f"Check {number}.")[1] == ("number", number), number
    assert kinds("Check 1.")[1:] == [("number", "1"), ("end", ".")]
    assert kinds("Check 1e.")[1:3] == [("number", "1"), ("ident", "e")]


def test_dots() -> None:
    """A ``.`` ends a sentence only before a blank or the end; ``..`` is a token; ``...`` alone before a blank ends
    a tactic sentence, as Coq reads it (``split...`` applies ``Proof with``'s tactic: ``coqc -time`` reports the
    sentence ending after the third dot); a longer run of dots, or dots glued to other symbols, is refused."""
    assert kinds("x .. y.") == [("ident", "x"), ("symbol", ".."), ("ident", "y"), ("end", ".")]
    assert kinds("n.+1.")[1:] == [("symbol", ".+"), ("number", "1"), ("end", ".")]
    assert kinds("split... auto.") == [("ident", "split"), ("end", "..."), ("ident", "auto"), ("end", ".")]
    assert kinds("apply (f x)...")[-2:] == [("bracket", ")"), ("end", "...")]
    for ambiguous in ("auto.... ", "x ->... "):
        with pytest.raises(LexError, match="dots"):
            list(scan(ambiguous))


def test_tokens_record_position_and_separation() -> None:
    toks = tokens('(* c *)Lemma x:\n  "s\nt" (*\n*)y.')
    assert [(t.text, t.line, t.col, t.separated, t.newline) for t in toks] == [
        ("Lemma", 1, 8, True, True), ("x", 1, 14, True, False), (":", 1, 15, False, False),
        ('"s\nt"', 2, 3, True, True), ("y", 4, 3, True, True), (".", 4, 4, False, False)]


def test_mask_keeps_offsets_and_lines_and_is_lenient() -> None:
    text = '(* a\n "*)" *) T. "x\ny" (* open'
    masked = mask(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    assert masked.split() == ["T.", '"', '"']
    assert mask(text, strings=False).split() == ["T.", '"x', 'y"']


def test_the_unicode_table_is_coqs() -> None:
    """The generated table equals a fresh generation from the installed Coq's own tables."""
    require_tool("coqc")
    if not (COQ_CLIB / "unicodetable.ml").is_file():
        pytest.fail(f"{COQ_CLIB}/unicodetable.ml not found: install libcoq-core-ocaml-dev (scripts/setup.sh)")
    fresh = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_rocq_unicode.py"), str(COQ_CLIB)],
                           capture_output=True, text=True, check=True).stdout
    assert fresh == (REPO / "pytest_forall" / "lang" / "rocq" / "unicode_table.py").read_text(encoding="utf-8")


# --- differential: real coqc -time ------------------------------------------------------------------

#: Each compiles with coqc; together they exercise every rule above that a valid file can show.
VALID = [
    '(* a "*)" b *) Definition d1 := 1.',
    '(* (*) *) *) Definition d2 := 2.',
    '(* "(*" *) Definition d3 := 3. (* "" "*)" (* "a""b" *) *)',
    'Require Import String. Open Scope string_scope. Definition d4 := "a""b(*"%string.',
    f'Definition d5{NBSP}x := 5. Check d5{NBSP}x.',
    'Definition d6₁\' := 6. Definition α_7 := d6₁\'.',
    'Definition d8 := 1_000 + 0x1F.\tCheck d8.\rCheck d8.',
    'Lemma d9 : True /\\ True.\nProof.\n  split.\n  - (* . *) exact I.\n  - exact I.\nQed.',
    'Lemma d10 : True.\nProof. (* "Qed." *) exact I. Qed.',
    'Definition d11 := fun \'(a, b) => a + b : nat.',
    'Require Import Coq.Init.Nat. Definition d12 := Coq.Init.Nat.add 1 2.',
    '(***) Definition d13 := 13. (** doc *) Definition d14 := 14.',
    'Definition d15 := fst (1, 2).',
    'Lemma d16 : True.\nProof.\n  { exact I. }\nQed.',
    'Definition d17 := 0.',
]

#: Coq refuses these in its lexer; so must ours.
LEXER_ERRORS = {
    '(* " *) Definition e1 := 1.': "Unterminated string",
    '(* (* *) Definition e2 := 1.': "Unterminated comment",
    'Definition e3 := "abc.': "Unterminated string",
}


def coq_spans(tmp: Path, text: str) -> tuple[list[tuple[int, int]], str]:
    """Byte spans of the sentences coqc executed (bullets and braces merged into what follows) and stderr."""
    source = tmp / "Lexed.v"
    source.write_text(text, encoding="utf-8")
    run = subprocess.run([shutil.which("coqc") or "coqc", "-q", "-time", source.name], cwd=tmp, check=False,
                         capture_output=True, text=True, timeout=120)
    raw = [(int(a), int(b)) for a, b in re.findall(r"^Chars (\d+) - (\d+) ", run.stdout, re.MULTILINE)]
    data = text.encode()
    spans: list[tuple[int, int]] = []
    pending = -1
    for a, b in raw:
        if data[a:b].decode() in ("-", "+", "*", "{", "}"):
            pending = a if pending < 0 else pending
            continue
        spans.append((a if pending < 0 else pending, b))
        pending = -1
    return spans, run.stdout + run.stderr


def byte_spans(text: str) -> list[tuple[int, int]]:
    def at(offset: int) -> int:
        return len(text[:offset].encode())
    return [(at(a), at(b)) for a, b in sentences(text)]


def test_sentences_are_the_ones_coqc_executes(tmp_path: Path) -> None:
    require_tool("coqc")
    text = "\n".join(VALID) + "\n"
    spans, output = coq_spans(tmp_path, text)
    assert "Error" not in output, output
    assert byte_spans(text) == spans


@pytest.mark.parametrize("text", sorted(LEXER_ERRORS))
def test_lexer_errors_are_coqs(tmp_path: Path, text: str) -> None:
    require_tool("coqc")
    _, output = coq_spans(tmp_path, text)
    assert f"Lexer: {LEXER_ERRORS[text]}" in output, output
    with pytest.raises(LexError, match=LEXER_ERRORS[text].lower()):
        sentences(text)
    assert lexer.mask(text)  # the lenient mask still answers (Coq refuses the file itself)


# --- the fast paths against the per-character rules ---------------------------------------------------------

def _comment_end_by_character(text: str, start: int) -> int:
    """cLexer's ``comment`` one character at a time (what :func:`lexer.comment_end` jumps through with a regex)."""
    depth, i = 0, start
    while i < len(text):
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*)", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        elif text[i] == '"':
            i = lexer.string_end(text, i, strict=False)
        else:
            i += 1
    return len(text)


def _continues_name(text: str, j: int) -> bool:
    return j < len(text) and (lexer.ident_trailing(text[j]) or (
        text[j] == "." and j + 1 < len(text) and lexer.ident_initial(text[j + 1])))


def test_the_lexers_runs_are_the_per_character_rules() -> None:
    """The lexer jumps over identifier tails, symbol runs and comment insides with regular expressions (the
    retrieval index of the installed libraries lexes 1 600 files): on random text over the characters that matter,
    every identifier and symbol run is exactly the maximal run the per-character tests (``ident_trailing``, a
    ``.`` before an ``ident_initial``, ``_symbol_char``) give, and every comment ends where the per-character
    reading ends it. Was: the per-character loops themselves (that index: 16.1 CPU-s, now 10.0)."""
    import random

    alphabet = [*" \t\n\r\x0c()[]{}\"*.-_'aZ09xe+:=<>|\\~@", NBSP, "\u03b1", "\u2200", "\u2192", "\u0301", "\u2080",
                "\U0001d400", "(*", "*)", "...", "Coq.Init", "a.\u00e9", "\u00e9.b", ".\u03b1", "\u200b"]
    rnd = random.Random(33)
    for _ in range(4000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 40)))
        covered = [False] * len(text)
        for lexeme in scan(text, strict=False):
            covered[lexeme.start:lexeme.end] = [True] * (lexeme.end - lexeme.start)
            body = range(lexeme.start + 1, lexeme.end)
            if lexeme.kind == "ident":
                assert lexer.ident_initial(text[lexeme.start]), text
                assert all(_continues_name(text, j) for j in body) and not _continues_name(text, lexeme.end), text
            elif lexeme.kind == "symbol":
                assert all(lexer._symbol_char(text[j]) for j in range(lexeme.start, lexeme.end)), text
                after = text[lexeme.end:lexeme.end + 1]
                assert not after or not lexer._symbol_char(after) or after == ".", text  # "." only as an end
            elif lexeme.kind == "comment":
                assert lexeme.end == _comment_end_by_character(text, lexeme.start), text
        assert all(c or text[k] in lexer.BLANKS for k, c in enumerate(covered)), text  # blanks alone are skipped
