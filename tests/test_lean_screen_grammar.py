"""The static Lean screen follows Lean's own grammar (issue 22, item 7; docs/lean-facts.md L11-L13, P3-P6).

Lean cannot run here: every case is what the quoted Lean (or Mathlib) source does, traced by hand, checked
against the lexer and the static layers. Slips first (each was accepted before the fix), then the honest
helper forms the screen used to refuse, then the neighbouring forms that must stay refused.
"""

from __future__ import annotations

import pytest

from test_screen_lean import GAME, GREATEST, HELPER, LAYERS, assert_accepted, fill, judge

from pytest_forall.lang.lean import lexer


def kinds(text: str) -> list[tuple[str, str]]:
    return [(s.kind, text[s.start:s.end]) for s in lexer.spans(text)]


def rejected(stem: str, candidate: str) -> dict[str, str]:
    layers = judge(stem, candidate)
    failed = {name: layers[name].reason for name in LAYERS if not layers[name].ok}
    assert failed, "every static layer accepted it"
    return failed


# --- slips --------------------------------------------------------------------------------------------

SLIPS = {
    # L11: `s!` then whitespace then the string is still an interpolated string
    "s_bang_separated": (GAME, lambda: fill(GAME, 'by\n  have _h := s! "{sorry}"\n  simp')),
    # L11: `dbg_trace` takes an interpolated string: `{…}` is code
    "dbg_trace_region": (GAME, lambda: fill(GAME, 'by\n  dbg_trace "{sorry}"; simp')),
    # L11: inside `{…}` a string may hold `}` and `"`: plain reading ends the literal early, hiding code
    "nested_quote_region": (GAME, lambda: fill(GAME, 'by\n  dbg_trace "{ "}" ++ toString (sorry : Nat) }"; simp')),
    "m_bang_region": (GAME, lambda: fill(GAME, 'by\n  have _h := m! "{(sorry : Nat)}"\n  simp')),
    "f_bang_region": (GAME, lambda: fill(GAME, 'by\n  have _h := f! "{(sorry : Nat)}"\n  simp')),
    # L12: with CRLF normalised, `'`CR LF`'` is a char literal and `'a'` another, so `sorry` is code; read without
    # the normalisation, `''` is a symbol and `a'sorry` one identifier
    "crlf_char_literal": (GAME, lambda: fill(GAME, "by\n  have _h := (fun _ _ _ => trivial) '\r\n''a'sorry\n  simp")),
    # P4: Mathlib's `variable?` is a command (adds hypotheses), not an identifier
    "variable_query": (GREATEST, lambda: fill(GREATEST, "by simp", HELPER + "\nvariable? (cheat : False)")),
    "variable_query_first": (GREATEST, lambda: fill(GREATEST, "by simp", "variable? [Fact False]")),
}


@pytest.mark.parametrize("stem, build", SLIPS.values(), ids=list(SLIPS))
def test_slips_are_rejected(stem: str, build) -> None:
    rejected(stem, build())


def test_interpolated_string_regions_are_code_for_the_lexer() -> None:
    """L11: after `s!` the code between braces is lexed as Lean tokens (a `}` inside a nested string does not
    close the region); a string with a region that ends where the plain reading ends shows its code too."""
    got = kinds('s!"a{ "}" ++ sorry }b" x')
    assert got == [("ident", "s!"), ("string", '"a{'), ("string", '"}"'), ("symbol", "+"), ("symbol", "+"),
                   ("ident", "sorry"), ("string", '}b"'), ("ident", "x")]
    assert ("ident", "sorry") in kinds('dbg_trace "{sorry}"; x')
    assert kinds('"\\{x}" y') == [("string", '"\\{x}"'), ("ident", "y")]  # an escaped brace opens nothing


@pytest.mark.parametrize("text", ['x "{" y "}" z', 'dbg_trace "a{ "}" ++ sorry }b" x'])
def test_a_string_read_differently_as_interpolated_fails_closed(text: str) -> None:
    """Where the plain and the interpolated reading end at different places and the syntax before the string
    does not decide (`dbg_trace` takes a plain `str` as a tactic, an interpolated one in `do`), the text is not
    understood: every layer rejects it."""
    from pytest_forall.lang.common import NotUnderstood
    with pytest.raises(NotUnderstood):
        lexer.tokens(text)


def test_crlf_in_a_char_literal_is_one_character() -> None:
    """L12: Lean reads the file with CRLF normalised to LF, so `'`CR LF`'` is the character literal '\\n'."""
    assert kinds("'\r\n' x") == [("char", "'\r\n'"), ("ident", "x")]
    # the quote after it is not a new literal: `'\r\n'"'` is a char then a string opening
    assert kinds("'\r\n'\"a\" y")[:2] == [("char", "'\r\n'"), ("string", '"a"')]


# --- honest helper forms ---------------------------------------------------------------------------

HONEST = {
    # P1/P3: `open … in` scopes the opening to the one helper that follows
    "open_in_before_helper": (GREATEST, lambda: fill(GREATEST, "by simp",
                                                     "open Real in\ntheorem helper : Real.pi = π := rfl")),
    "open_scoped_in_before_helper": (GREATEST, lambda: fill(GREATEST, "by simp",
                                                            "open scoped BigOperators in\n" + HELPER)),
    # P5: `noncomputable section … end` around helpers
    "noncomputable_section": (GREATEST, lambda: fill(GREATEST, "by simp",
                                                     "noncomputable section\n\ndef half (x : ℝ) : ℝ := x / 2\n\nend")),
    "noncomputable_section_named": (GREATEST, lambda: fill(GREATEST, "by simp",
                                                           "noncomputable section Helpers\n" + HELPER + "\nend Helpers")),
    # P6: a local simp attribute for one helper (`… in`) or inside a helper section
    "attribute_local_simp_in": (GREATEST, lambda: fill(GREATEST, "by simp",
                                                       "attribute [local simp] mul_comm in\n" + HELPER)),
    "attribute_local_simp_in_section": (GREATEST, lambda: fill(
        GREATEST, "by simp", "section\nattribute [local simp] mul_comm\n" + HELPER + "\nend")),
    # L13: pretty-printer options change only how terms are printed
    "set_option_pp_in": (GREATEST, lambda: fill(GREATEST, "by simp", "set_option pp.all true in\n" + HELPER)),
    "set_option_pp_proof": (GAME, lambda: fill(GAME, "by\n  set_option pp.proofs true in simp")),
}


@pytest.mark.parametrize("stem, build", HONEST.values(), ids=list(HONEST))
def test_honest_helper_forms_are_accepted(stem: str, build) -> None:
    assert_accepted(stem, build())


STILL_REFUSED = {
    # an `open … in` before the *theorem* changes how its statement resolves
    "open_in_before_main": (GREATEST, lambda: fill(GREATEST, "by simp").replace(
        "theorem putnam_1974_a1", "open Real in\ntheorem putnam_1974_a1")),
    "open_without_in": (GREATEST, lambda: fill(GREATEST, "by simp", "open Real\n" + HELPER)),
    # a local attribute at the top level reaches the theorem; instances change elaboration
    "attribute_local_simp_top_level": (GREATEST, lambda: fill(GREATEST, "by simp",
                                                              "attribute [local simp] mul_comm\n" + HELPER)),
    "attribute_local_instance_in": (GREATEST, lambda: fill(GREATEST, "by simp",
                                                           "attribute [local instance] foo in\n" + HELPER)),
    "attribute_simp_in_section_global": (GREATEST, lambda: fill(
        GREATEST, "by simp", "section\nattribute [simp] mul_comm\n" + HELPER + "\nend")),
    "noncomputable_section_left_open": (GREATEST, lambda: fill(GREATEST, "by simp",
                                                               "noncomputable section\n" + HELPER)),
    "set_option_other": (GREATEST, lambda: fill(GREATEST, "by simp", "set_option autoImplicit true in\n" + HELPER)),
    "interpolated_string_plain": (GAME, lambda: fill(GAME, 'by\n  have _h := s!"{1}"\n  simp')),
}


@pytest.mark.parametrize("stem, build", STILL_REFUSED.values(), ids=list(STILL_REFUSED))
def test_neighbouring_forms_stay_refused(stem: str, build) -> None:
    rejected(stem, build())
