"""Words and their ids: :func:`tokenize` cuts typed text into words, a :class:`Vocab` maps them to ids, with padding,
sentence boundaries and unknown words."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence

from attn._checks import check, checked

__all__ = ["Vocab", "PAD", "BOS", "EOS", "UNK", "IGNORE", "tokenize"]

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
_WORD = re.compile(r"[a-z0-9]+")  # words of ASCII text; tokenize reads other scripts letter by letter
IGNORE = -100  # the label of positions that are not scored (torch's CrossEntropyLoss ignore_index)


def _tokenize_args(text: str) -> None:
    check(isinstance(text, str), lambda: f"text must be a string, got {type(text).__name__}")


@checked(_tokenize_args)
def tokenize(text: str) -> tuple[str, ...]:
    """Lower-case words without punctuation: ``"Where is Mary?"`` -> ``("where", "is", "mary")``."""
    if text.isascii():
        return tuple(_WORD.findall(text.lower()))
    # letters, marks and digits of any script, composed first: "José" typed either way is one word, "josé"
    text = unicodedata.normalize("NFC", text).lower()
    return tuple("".join(c if unicodedata.category(c)[0] in "LMN" else " " for c in text).split())


class Vocab:
    """Ids for a fixed list of tokens; ``<pad>`` is 0, unknown words map to ``<unk>``."""

    def __init__(self, words: Iterable[str]):
        specials = [PAD, BOS, EOS, UNK]
        words = [w for w in dict.fromkeys(words) if w not in specials]
        self.tokens: list[str] = specials + words
        self.index: dict[str, int] = {t: i for i, t in enumerate(self.tokens)}
        self.pad, self.bos, self.eos, self.unk = (self.index[t] for t in specials)

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self.index

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {' '.join(self.tokens[4:12])} ...)"

    def encode(self, tokens: Sequence[str], eos: bool = False) -> list[int]:
        """Token ids, ``<unk>`` for unknown words, with ``<eos>`` appended if asked."""
        ids = [self.index.get(t, self.unk) for t in tokens]
        return [*ids, self.eos] if eos else ids

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens up to (not including) the first ``<eos>``; padding and ``<bos>`` are dropped."""
        ids = list(itertools.takewhile(lambda i: i != self.eos, map(int, ids)))
        outside = [i for i in ids if not 0 <= i < len(self.tokens)]
        check(not outside, lambda: f"id {outside[0]} is outside the vocabulary of {len(self.tokens)} tokens")
        return [self.tokens[i] for i in ids if i not in (self.pad, self.bos)]
