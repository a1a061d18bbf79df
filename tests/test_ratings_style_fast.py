"""The vectorised style counter against the plain per-text one (the slow, obvious twin)."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.ratings.style import style_features
from style_oracle import style_counts

# Markdown-ish fragments mixed with arbitrary text, so headers, lists and bold all occur.
fragments = st.sampled_from(["# ", "## Title\n", "- item\n", "* x\n", "1. one\n", "**bold**", "__b__", "\n", " ", "`code`"])
texts = st.lists(st.one_of(st.text(max_size=30), fragments), max_size=12).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_fast_style_features_equal_plain_counts(batch):
    fast = np.asarray(style_features(batch))
    plain = np.array([style_counts(t) for t in batch])
    assert fast.shape == plain.shape
    assert (fast == plain).all()


ascii_texts = st.lists(st.one_of(st.text(alphabet=st.characters(max_codepoint=127), max_size=30), fragments),
                       max_size=12).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(texts, ascii_texts), min_size=1, max_size=8), st.lists(st.one_of(texts, ascii_texts),
                                                                                  min_size=1, max_size=8))
def test_record_table_responses_counted_off_their_bytes_equal_plain_counts(left, right):
    # A record table's responses are categoricals over one set of texts; their counts are read
    # off the Arrow buffer (ASCII tokens by bytes, markdown only where a markup byte occurs).
    from analysis.ratings.style import add_style_features
    from pairlab.record_table import shared_texts

    n = min(len(left), len(right))
    a, b = shared_texts(left[:n], right[:n])
    frame = add_style_features(pd.DataFrame({"response_a": a, "response_b": b}))
    got_a = frame[[f"style_{f}_a" for f in ("length", "headers", "lists", "bold")]].to_numpy()
    got_b = frame[[f"style_{f}_b" for f in ("length", "headers", "lists", "bold")]].to_numpy()
    assert (got_a == np.array([style_counts(t) for t in left[:n]])).all()
    assert (got_b == np.array([style_counts(t) for t in right[:n]])).all()
    # One row of many: the texts it uses are taken out of the shared set and counted alone.
    one = add_style_features(pd.DataFrame({"response_a": a[:1], "response_b": b[:1]}))
    assert (one[[f"style_{f}_a" for f in ("length", "headers", "lists", "bold")]].to_numpy()[0]
            == np.array(style_counts(left[0]))).all()


def test_a_list_item_starting_a_one_line_text_is_found_off_its_first_bytes():
    # Texts without markup are looked at only where their first bytes can start a list item:
    # digits and spaces of other scripts (Python's \d and \s) included, a lone digit not.
    from analysis.ratings.style import add_style_features
    from pairlab.record_table import shared_texts

    starts = ["1. a", "12. b", "1 a", "1", "1.", "١. x", "9١. x", "\u00a0- x", "\u2003* y", "\x1c- a", "\v+ b", "- ",
              "-", "x- a", "", " 3. c", "٣", "é- a",
              "123456789. x", "123456789", "12345678 y", "007.", "3١. x"]
    a, b = shared_texts(starts, starts[::-1])
    frame = add_style_features(pd.DataFrame({"response_a": a, "response_b": b}))
    got = frame[[f"style_{f}_a" for f in ("length", "headers", "lists", "bold")]].to_numpy()
    assert (got == np.array([style_counts(t) for t in starts])).all()
    assert got[:, 2].sum() == 12
