"""Data for the chapters: generated or read from files, never downloaded."""

from attn.data.translation import Corpus, Pair, make_corpus
from attn.data.vocab import Vocab

__all__ = ["Corpus", "Pair", "Vocab", "make_corpus"]
