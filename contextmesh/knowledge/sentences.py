"""The sentence splitter: where one sentence of a paragraph ends and the next begins.

:func:`split_sentences` returns the ``(start, end)`` offsets of the sentences of a block of plain
text. A sentence ends at a run of ``.``, ``!``, ``?`` or ``…`` (with any closing quotes and brackets
after it) that is followed by white space and then by something that can open a sentence: a
capitalised word (``iPhone`` counts), a number, an opening quote or bracket before one of those,
or a code span. Nothing without white space after it is a boundary, which is what keeps decimals
(``3.5 ML``), versions (``v2.1``), file names and addresses whole. A full stop is further judged by
the word it ends:

* never a boundary after ``e.g.``, ``i.e.``, ``cf.``, ``vs.``, ``approx.`` and the like, or after a
  title before a name (``Dr.``, ``Mr.``, ``Prof.`` …);
* not a boundary after ``No.``, ``Fig.``, ``p.``, ``Jan.`` … when a number follows;
* after an abbreviation that can also end a sentence (``etc.``, ``Inc.``, ``St.``, ``a.m.``,
  ``U.S.`` and any dotted initialism, a single capital initial ``J.``), a boundary only when the
  next word is a capitalised function word (``The``, ``It``, ``We``, ``However`` …) — ``the U.S.
  Navy`` stays one sentence, ``in the U.S. The`` becomes two;
* not a boundary after an enumerator (``1.``, ``12.``) that opens the sentence or follows a colon
  (``Steps: 1. Drain the tank.``).

When in doubt the splitter does not split: two sentences read as one claim are still true, a
sentence cut in half is a fragment that asserts nothing. Code spans are opaque: nothing inside one
is a boundary. The scan is one pass over the text (each candidate looks back one word and ahead
one word), so its cost is linear in the text's length.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from contextmesh.knowledge.text import STOPWORDS

__all__ = ["SENTENCE_OPENERS", "split_sentences"]


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that open a sentence without naming anything: the stop words and common sentence adverbs.
SENTENCE_OPENERS = STOPWORDS | _wordset(
    """
    afterwards although another anyway because besides briefly currently during earlier eventually
    finally first firstly fortunately hence however initially instead later likewise meanwhile
    moreover nevertheless next nonetheless notably otherwise overall previously recently second
    secondly similarly still subsequently third thus therefore today tomorrow unfortunately
    unless whereas yesterday yes
    """
)
_NEVER_FINAL = _wordset("e.g eg i.e ie cf vs viz approx ca incl esp resp w.r.t")
_TITLES = _wordset("dr mr mrs ms mx prof rev gen col capt cpt lt sgt hon mt messrs")
_BEFORE_NUMBER = _wordset(
    "no nos fig figs eq eqs sec sect vol ch art p pp ref para op jan feb mar apr jun jul aug sep sept oct nov dec"
)
_FINAL_CAPABLE = _wordset("etc inc ltd co corp jr sr st al bros plc llc dept ave rd")
_END = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s)")
_OPENING = re.compile(r"[\"'“‘«(\[]*")
_NEXT_WORD = re.compile(r"[^\W_][\w'’-]*")
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_ENUMERATOR = re.compile(r"\(?[0-9]{1,3}")
_LEADING = "\"'“‘«([*"


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit() or (len(word) > 1 and word[0].islower() and word[1].isupper())


class _Splitter:
    def __init__(self, text: str, code: Sequence[tuple[int, int]]) -> None:
        self.text = text
        self.code_starts = [start for start, _ in code]
        self.code_ends = [end for _, end in code]

    def in_code(self, position: int) -> bool:
        index = bisect_right(self.code_starts, position) - 1
        return index >= 0 and position < self.code_ends[index]

    def next_word(self, position: int) -> tuple[str, bool]:
        """The word after ``position`` (white space and opening quotes skipped) and whether it opens a sentence."""
        text = self.text
        while position < len(text) and text[position].isspace():
            position += 1
        opening = _OPENING.match(text, position)
        after = opening.end() if opening is not None else position
        if self.in_code(position) or self.in_code(after):
            return "", True
        word = _NEXT_WORD.match(text, after)
        if word is None:
            return "", False
        return word.group(), _capitalised(word.group())

    def previous_word(self, end: int) -> str:
        start = end
        while start > 0 and not self.text[start - 1].isspace():
            start -= 1
        return self.text[start:end].lstrip(_LEADING)

    def full_stop_ends(self, word: str, sentence_so_far: str, following: str, opens: bool) -> bool:
        lower = word.lower()
        if lower in _NEVER_FINAL or lower in _TITLES:
            return False
        if lower in _BEFORE_NUMBER and following[:1].isdigit():
            return False
        if _ENUMERATOR.fullmatch(word) and (not sentence_so_far or sentence_so_far.endswith(":")):
            return False
        if lower in _FINAL_CAPABLE or _INITIALISM.fullmatch(word) or (len(word) == 1 and word.isupper()):
            return opens and following.lower() in SENTENCE_OPENERS and following[:1].isupper()
        return opens

    def boundaries(self) -> list[int]:
        ends = []
        sentence_start = 0
        for match in _END.finditer(self.text):
            if self.in_code(match.start()):
                continue
            following, opens = self.next_word(match.end())
            terminal = match.group().rstrip("\"'”’»)]")
            if terminal == ".":
                so_far = self.text[sentence_start : match.start()].strip()
                word = self.previous_word(match.start())
                is_end = self.full_stop_ends(word, so_far[: max(0, len(so_far) - len(word))].strip(), following, opens)
            else:
                is_end = opens
            if is_end:
                ends.append(match.end())
                sentence_start = match.end()
        return ends


def split_sentences(text: str, code: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``, white space trimmed; ``code`` spans are opaque."""
    spans = []
    start = 0
    for end in [*_Splitter(text, code).boundaries(), len(text)]:
        left, right = start, end
        while left < right and text[left].isspace():
            left += 1
        while right > left and text[right - 1].isspace():
            right -= 1
        if right > left:
            spans.append((left, right))
        start = end
    return spans
