"""The ``kernel`` string's words (analyzer.counting.kernel_words): what the prediction stage reads."""

from analyzer.counting import kernel_words as kw


def test_words_head_and_values():
    k = "depthwise relayout=0,1 gemv=1"
    assert kw.words(k) == ["depthwise", "relayout=0,1", "gemv=1"]
    assert kw.head(k) == "depthwise"
    assert kw.value(k, "gemv") == "1" and kw.ints(k, "relayout") == (0, 1)
    assert kw.value(k, "rank") is None and kw.ints(k, "perm") is None


def test_empty_and_none():
    assert kw.words(None) == [] and kw.head(None) == "" and kw.value("", "row") is None


def test_key_is_a_whole_word_prefix():
    # "row" does not match "rows=..." and a value may itself hold "="
    assert kw.value("rows=3 row=1024", "row") == "1024"
    assert kw.value("dropout-train=0.1", "dropout-train") == "0.1"


def test_with_word():
    assert kw.with_word(None, "row=8") == "row=8"
    assert kw.with_word("row=8", "reduction=sum") == "row=8 reduction=sum"
    assert kw.with_word("row=8", None) == "row=8"
