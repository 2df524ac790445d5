"""The store's item keys (issue 32: built faster): ``item_key`` is the SHA-1 of the item's
JSON, byte for byte, whatever its words hold; keys are the store's on disk, so they must never
change."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from ncprobe.cache.store import item_key


def by_definition(tokens, span) -> bytes:
    text = json.dumps([list(tokens), list(span)], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8")).digest()


class Word(str):
    """A str subclass: json writes it as the string it holds."""


#: words of what JSON escapes (quotes, backslashes, control characters), of what it does not
#: (DEL, U+2028/9, astral characters, accents), of the join's own separator (``","``) and of
#: the escaped form of a control character (``\\u001f``)
HARD = ['"', '\\', '","', '\\u001f', '\x1f', '\x00', '\n\t\r\b\f', '\x7f', '\u2028\u2029', '😀',
        'ção', 'a"b', 'end\\', '', ' ', '[[', ']],[[', '\\"', "'"]


def _cases() -> list[tuple[tuple, tuple]]:
    rng = np.random.default_rng(32)
    alphabet = list('ab"\\/\n\t\r\b\f\x00\x1f\x7f é—\u2028\u2029😀ção,[]:')
    cases: list[tuple[tuple, tuple]] = [
        (("pão-duro", "vinho", "branco"), (0, 1)), ((), (0, 0)), (("",), (0, 1)),
        (("", ""), (1, 2)), (tuple(HARD), (3, 9)), (("plain", "words", "only"), (10, 11))]
    cases += [((w,), (0, 1)) for w in HARD]
    cases += [(("x", w, "y"), (1, 2)) for w in HARD]
    for _ in range(400):
        if rng.random() < 0.5:
            words = tuple("".join(rng.choice(alphabet, int(rng.integers(0, 6))))
                          for _ in range(int(rng.integers(0, 7))))
        else:  # mostly plain words, as real sentences are
            words = tuple(str(rng.choice(["the", "grey", "matter", "of", "brain", "."]))
                          for _ in range(int(rng.integers(1, 12))))
        cases.append((words, (int(rng.integers(0, 3)), int(rng.integers(0, 2000)))))
    return cases


def test_item_key_is_the_sha1_of_the_items_json() -> None:
    cases = _cases()
    want = [by_definition(t, s) for t, s in cases]
    assert [item_key(t, s) for t, s in cases] == want
    assert [item_key(list(t), list(s)) for t, s in cases] == want
    assert all(len(k) == 20 for k in want) and len(set(want)) == len({(t, s) for t, s in cases})


@pytest.mark.parametrize("tokens, span", [
    ((1, 2.5, None), (0, 1)), (("a", True), (0, 2)), (("a", "b"), (True, 2)),
    ((Word("wörd"), "x"), (0, 1)), ((Word('q"'),), (0, 1)), ("abc", (0, 2)),
    (np.array(["a", "b", 'c"']), (0, 1)), (["a", "b"], [0, 2])])
def test_items_that_are_not_str_words_and_int_spans_keep_their_key(tokens, span) -> None:
    """Words that are no str, a span of a bool, a str subclass, a str or an array of words:
    the key json.dumps gives them."""
    assert item_key(tokens, span) == by_definition(tokens, span)


@pytest.mark.parametrize("span, error", [((np.int64(0), np.int64(1)), TypeError),
                                         ((0, 1, 2), ValueError), ((0,), ValueError)])
def test_a_span_json_cannot_write_or_not_two_numbers_is_no_key(span, error) -> None:
    """As json.dumps refuses numpy integers, no key is made of them (nor of a span that is not
    two numbers)."""
    with pytest.raises(error):
        item_key(("a",), span)
