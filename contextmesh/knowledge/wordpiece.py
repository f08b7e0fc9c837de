"""BERT's WordPiece tokenizer: the text a sentence-embedding model reads, as its vocabulary's ids.

Two steps, as BERT's reference tokenizer does them: a *basic* split (drop control characters, put
spaces around CJK ideographs, optionally lower-case and strip accents, split on whitespace and on
every punctuation character), then a greedy longest-match-first split of each word into vocabulary
pieces, continuations prefixed ``##``; a word with no such split, or longer than 100 characters,
is ``[UNK]``. The ids are framed ``[CLS] … [SEP]`` and cut to the model's length.

Invariant: a pure function of the vocabulary, the flags and the text.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from contextmesh.core.errors import InputError

__all__ = ["WordPiece"]

_MAX_WORD = 100
_MAX_VOCAB_BYTES = 16 * 1024 * 1024


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2FA1F or 0xF900 <= code <= 0xFAFF
    )


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # BERT treats every non-alphanumeric ASCII symbol as punctuation, "$" and "^" included.
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _clean(text: str) -> str:
    out = []
    for char in text:
        code = ord(char)
        if code in (0, 0xFFFD):
            continue
        if char in "\t\n\r" or unicodedata.category(char) == "Zs":
            out.append(" ")
        elif unicodedata.category(char) in ("Cc", "Cf"):
            continue
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    return "".join(out)


class WordPiece:
    """A vocabulary (``vocab.txt``: one piece a line, its id its line number) and BERT's flags."""

    def __init__(self, pieces: list[str], *, lower_case: bool = True, max_length: int = 512) -> None:
        self.ids = {piece: i for i, piece in enumerate(pieces)}
        self.lower_case = lower_case
        self.max_length = max_length
        for special in ("[CLS]", "[SEP]", "[UNK]"):
            if special not in self.ids:
                raise InputError("vocab.txt", f"no {special}", "a BERT vocabulary holds [CLS], [SEP] and [UNK]")

    @classmethod
    def from_file(cls, path: Path, *, lower_case: bool = True, max_length: int = 512) -> WordPiece:
        """The vocabulary at ``path`` (UTF-8, one piece a line)."""
        try:
            if path.stat().st_size > _MAX_VOCAB_BYTES:
                raise InputError(str(path), f"{path.stat().st_size} bytes", "a vocabulary is at most 16 MiB")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(str(path), type(exc).__name__, "a vocabulary is a readable UTF-8 file") from None
        pieces = text.split("\n")
        if pieces and pieces[-1] == "":
            pieces.pop()
        try:
            return cls([p.rstrip("\r") for p in pieces], lower_case=lower_case, max_length=max_length)
        except InputError as exc:
            raise InputError(str(path), exc.found, exc.rule) from None

    def words(self, text: str) -> list[str]:
        """The basic split of ``text``."""
        out: list[str] = []
        for raw in _clean(text).split():
            word = raw
            if self.lower_case:
                word = "".join(c for c in unicodedata.normalize("NFD", raw.lower()) if unicodedata.category(c) != "Mn")
            current = ""
            for char in word:
                if _is_punctuation(char):
                    if current:
                        out.append(current)
                    out.append(char)
                    current = ""
                else:
                    current += char
            if current:
                out.append(current)
        return out

    def pieces(self, word: str) -> list[str]:
        """The greedy longest-match split of one word (``[UNK]`` when there is none)."""
        if len(word) > _MAX_WORD:
            return ["[UNK]"]
        out: list[str] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    break
                end -= 1
            if end == start:
                return ["[UNK]"]
            out.append(piece)
            start = end
        return out

    def encode(self, text: str) -> list[int]:
        """``[CLS]``, the pieces' ids, ``[SEP]``, at most ``max_length`` ids in all."""
        ids = [self.ids[piece] for word in self.words(text) for piece in self.pieces(word)]
        return [self.ids["[CLS]"], *ids[: self.max_length - 2], self.ids["[SEP]"]]
