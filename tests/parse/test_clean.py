"""clean.py: ligatures, soft hyphens, line-end hyphenation, control characters, spaces."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from poolq.worker.parse.clean import (
    clean_code,
    clean_text,
    one_line,
)


def test_ligatures_become_letters_and_nothing_else_is_normalised():
    assert clean_text("ﬁnd ﬂow oﬀer eﬃcient baﬄe ﬅ ﬆ") == "find flow offer efficient baffle st st"
    # NFKC of the whole text would turn these into "2", "1/2", "A" and "fi"
    assert clean_text("x² ½ Ａ ﬁ") == "x² ½ Ａ fi"


def test_soft_hyphens_and_invisible_characters_go():
    assert clean_text("infor\u00admation") == "information"
    assert clean_text("infor\u00ad\nmation") == "information"
    assert clean_text("zero\u200bwidth\ufeff") == "zerowidth"


def test_a_word_broken_at_a_line_end_is_joined():
    assert clean_text("infor-\nmation") == "information"
    assert clean_text("infor-\nmation", join_lines=True) == "information"
    assert clean_text("the infor-  \n   mation age", join_lines=True) == "the information age"


def test_a_real_hyphen_stays_when_the_next_line_starts_upper_case_or_a_digit():
    assert clean_text("Jean-\nPaul") == "Jean-Paul"
    assert clean_text("COVID-\n19 cases", join_lines=True) == "COVID-19 cases"
    # not between two letters: a dash, a list, a number range
    assert clean_text("pages 10-\n12", join_lines=True) == "pages 10- 12"
    assert clean_text("see -\nthis", join_lines=True) == "see - this"


def test_control_characters_go_but_newlines_and_tabs_stay():
    assert clean_text("a\x00b\x07c\x1bd\x7fe\x85f") == "abcde\nf"
    assert clean_text("col1\tcol2\nnext") == "col1\tcol2\nnext"
    assert clean_text("crlf\r\nline\rold mac") == "crlf\nline\nold mac"


def test_spaces_collapse_and_lines_join_on_request():
    assert clean_text("  a \u00a0\u2003 b   c  ") == "a b c"
    assert clean_text("one\n  two  \nthree") == "one\ntwo\nthree"
    assert clean_text("one\n  two  \n\nthree", join_lines=True) == "one two three"


def test_code_keeps_its_spaces_hyphens_and_lines():
    code = "\ndef f(x):\n    return x-\n1  # ﬁ\n\n"
    assert clean_code(code) == "def f(x):\n    return x-\n1  # fi"


def test_one_line_is_the_first_line_within_the_limit():
    assert one_line("bad thing\ntraceback...") == "bad thing"
    assert len(one_line("x" * 500)) == 200


_TEXT = st.text(
    alphabet=st.sampled_from(list("ab Z9-\n\t\r  \u00ad\u00a0\u2003ﬁ\x00\x1b\x85\u2028\ufeffé")),
    max_size=60,
)


@given(_TEXT, st.booleans())
def test_cleaning_is_idempotent(text: str, join: bool):
    once = clean_text(text, join_lines=join)
    assert clean_text(once, join_lines=join) == once


@given(st.text(max_size=80), st.booleans())
def test_no_control_character_ligature_or_stray_space_survives(text: str, join: bool):
    out = clean_text(text, join_lines=join)
    assert not any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in out)
    assert not any("\ufb00" <= c <= "\ufb06" for c in out)
    assert "  " not in out and out == out.strip()
    assert " \n" not in out and "\n " not in out
    if join:
        assert "\n" not in out


@given(st.text(alphabet=st.characters(categories=["L"]), min_size=1, max_size=10))
def test_a_hyphenated_lower_case_word_is_whole_again(word: str):
    head, tail = "infor", word.lower()
    if tail[:1].islower() and not tail[:1].isupper():
        assert clean_text(f"{head}-\n{tail}") == clean_text(head + tail)
