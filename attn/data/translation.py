"""A toy English -> German corpus whose word alignments are known, some of them crossing.

The grammar is small but has the three things that make translation more than word-for-word lookup:

- **verb-final subordinate clauses**: "i know that the dog sees the cat" ->
  "ich weiß dass der hund die katze sieht" (the verb moves to the end: crossing alignments);
- **agreement**: German articles and adjective endings depend on the noun's gender, on its case (subject
  or object) and on the article, and the verb agrees with the subject's number;
- **compound numbers**: "twenty one dogs" -> "ein und zwanzig hunde" (German writes "einundzwanzig"; we
  split it into its parts, as a subword tokenizer would): units before tens, crossing again, and the
  inserted "und" translates no source word.

Every :class:`Pair` carries its true alignment: for each target word, the position of the source word it
translates (or ``None``). Generation is deterministic from a seed.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attn._checks import check, check_nonnegative_int, check_positive_int, checked
from attn.data.vocab import Vocab, tokenize

__all__ = [
    "Pair",
    "NounPhrase",
    "Sentence",
    "Corpus",
    "Batch",
    "render",
    "sample_sentence",
    "make_corpus",
    "encode_batch",
    "exact_match",
    "alignment_mass",
    "alignment_matrix",
    "accuracy_by_length",
    "LEXICON",
    "NUMBER",
    "parse_english",
    "Translation",
    "sentence_words",
    "random_batches",
    "TranslationScores",
    "score_translations",
]

# (English singular, English plural, German singular, German plural, gender)
NOUNS = [
    ("dog", "dogs", "hund", "hunde", "m"),
    ("cat", "cats", "katze", "katzen", "f"),
    ("child", "children", "kind", "kinder", "n"),
    ("man", "men", "mann", "männer", "m"),
    ("woman", "women", "frau", "frauen", "f"),
    ("horse", "horses", "pferd", "pferde", "n"),
]
ADJECTIVES = [
    ("big", "groß"),
    ("small", "klein"),
    ("old", "alt"),
    ("young", "jung"),
    ("black", "schwarz"),
    ("red", "rot"),
]
# (English 3rd singular, English plural, German 3rd singular, German plural)
VERBS = [
    ("sees", "see", "sieht", "sehen"),
    ("likes", "like", "mag", "mögen"),
    ("hears", "hear", "hört", "hören"),
    ("finds", "find", "findet", "finden"),
]
INTROS = [
    (("i", "know", "that"), ("ich", "weiß", "dass")),
    (("she", "says", "that"), ("sie", "sagt", "dass")),
    (("we", "think", "that"), ("wir", "denken", "dass")),
]
UNITS = [
    ("one", "ein"),
    ("two", "zwei"),
    ("three", "drei"),
    ("four", "vier"),
    ("five", "fünf"),
    ("six", "sechs"),
    ("seven", "sieben"),
    ("eight", "acht"),
    ("nine", "neun"),
]
TEENS = [
    ("ten", "zehn"),
    ("eleven", "elf"),
    ("twelve", "zwölf"),
    ("thirteen", "dreizehn"),
    ("fourteen", "vierzehn"),
    ("fifteen", "fünfzehn"),
    ("sixteen", "sechzehn"),
    ("seventeen", "siebzehn"),
    ("eighteen", "achtzehn"),
    ("nineteen", "neunzehn"),
]
TENS = [("twenty", "zwanzig"), ("thirty", "dreißig"), ("forty", "vierzig"), ("fifty", "fünfzig")]
ARTICLES = {("nom", "m"): "der", ("nom", "f"): "die", ("nom", "n"): "das",
            ("acc", "m"): "den", ("acc", "f"): "die", ("acc", "n"): "das"}  # fmt: skip


def _lexicon() -> dict[str, frozenset[str]]:
    """Every English word -> every German form that may translate it (for checking alignments)."""
    lex: dict[str, set[str]] = {"the": {"der", "die", "das", "den"}}
    for en_sg, en_pl, de_sg, de_pl, _ in NOUNS:
        lex[en_sg], lex[en_pl] = {de_sg}, {de_pl}
    for en, de in ADJECTIVES:
        lex[en] = {de + "e", de + "en"}
    for en_sg, en_pl, de_sg, de_pl in VERBS:
        lex[en_sg], lex[en_pl] = {de_sg}, {de_pl}
    for en, de in [pair for intro in INTROS for pair in zip(*intro, strict=True)] + UNITS + TEENS + TENS:
        lex.setdefault(en, set()).add(de)
    return {en: frozenset(de) for en, de in lex.items()}


LEXICON = _lexicon()
# The grammatical number of every English noun and verb form: "dog" and "sees" are singular, "dogs", "see" plural.
NUMBER = {w: n for forms in NOUNS + VERBS for w, n in zip(forms[:2], ("singular", "plural"), strict=True)}


@dataclass(frozen=True)
class Pair:
    """A sentence pair and its true word alignment: ``alignment[t]`` = source position of target word t."""

    source: tuple[str, ...]
    target: tuple[str, ...]
    alignment: tuple[int | None, ...]

    def __post_init__(self) -> None:
        check(len(self.alignment) == len(self.target),
              lambda: f"alignment has {len(self.alignment)} entries for {len(self.target)} target words")  # fmt: skip


@dataclass(frozen=True)
class NounPhrase:
    """``noun`` and ``adjectives`` index NOUNS and ADJECTIVES; ``number`` is None (singular, "the"),
    0 (plural, "the") or 2..59 (a count, no article)."""

    noun: int
    adjectives: tuple[int, ...] = ()
    number: int | None = None

    @property
    def plural(self) -> bool:
        return self.number is not None


@dataclass(frozen=True)
class Sentence:
    """Subject, verb, object; ``intro`` (an index of INTROS) makes it a verb-final subordinate clause."""

    subject: NounPhrase
    verb: int
    object: NounPhrase
    intro: int | None = None


def _number_words(n: int) -> tuple[list[str], list[str], list[int | None]]:
    """English and German words for 2..59, and for each German word the index of its English word."""
    tens, units = divmod(n, 10)
    if tens == 0:
        return [UNITS[units - 1][0]], [UNITS[units - 1][1]], [0]
    if tens == 1:  # "fifteen" -> "fünfzehn": one word each
        return [TEENS[units][0]], [TEENS[units][1]], [0]
    en, de = [TENS[tens - 2][0]], [TENS[tens - 2][1]]
    if units == 0:
        return en, de, [0]
    # "twenty one" -> "ein und zwanzig": units first, an "und" that translates nothing, then the tens.
    return en + [UNITS[units - 1][0]], [UNITS[units - 1][1], "und", de[0]], [1, None, 0]


def _noun_phrase(np_: NounPhrase, case: str) -> tuple[list[str], list[str], list[int | None]]:
    en_sg, en_pl, de_sg, de_pl, gender = NOUNS[np_.noun]
    adjectives = [ADJECTIVES[a] for a in np_.adjectives]
    align: list[int | None]  # the source position of each target word; None: a word that translates none
    if np_.number is None:  # "the big dog" -> "der große hund" / "den großen hund"
        ending = "en" if (case, gender) == ("acc", "m") else "e"
        en, de, align = ["the"], [ARTICLES[case, gender]], [0]
    elif np_.number == 0:  # "the big dogs" -> "die großen hunde"
        ending, en, de, align = "en", ["the"], ["die"], [0]
    else:  # "twenty one big dogs" -> "ein und zwanzig große hunde"
        check(2 <= np_.number <= 59, lambda: f"number must be None, 0 or in 2..59, got {np_.number}")
        ending = "e"
        en, de, align = _number_words(np_.number)
    offset = len(en)
    en += [a_en for a_en, _ in adjectives] + [en_pl if np_.plural else en_sg]
    de += [a_de + ending for _, a_de in adjectives] + [de_pl if np_.plural else de_sg]
    align += list(range(offset, offset + len(adjectives) + 1))
    return en, de, align


def render(sentence: Sentence) -> Pair:
    """The English sentence, its German translation and the true alignment."""
    s_en, s_de, s_al = _noun_phrase(sentence.subject, "nom")
    o_en, o_de, o_al = _noun_phrase(sentence.object, "acc")
    en_3sg, en_pl, de_3sg, de_pl = VERBS[sentence.verb]
    v_en, v_de = (en_pl, de_pl) if sentence.subject.plural else (en_3sg, de_3sg)
    intro_en, intro_de = INTROS[sentence.intro] if sentence.intro is not None else ((), ())
    source = [*intro_en, *s_en, v_en, *o_en]
    i, s, v, o = 0, len(intro_en), len(intro_en) + len(s_en), len(intro_en) + len(s_en) + 1  # where each part starts

    def shift(align: list[int | None], start: int) -> list[int | None]:
        return [None if a is None else a + start for a in align]

    intro_part = (list(intro_de), list(range(i, i + len(intro_de))))
    subject_part, verb_part, object_part = (s_de, shift(s_al, s)), ([v_de], [v]), (o_de, shift(o_al, o))
    parts: list[tuple[list[str], Sequence[int | None]]]  # (German words, the source word of each)
    if sentence.intro is None:
        parts = [subject_part, verb_part, object_part]
    else:  # subordinate clause: the verb goes to the end
        parts = [intro_part, subject_part, object_part, verb_part]
    target = [w for words, _ in parts for w in words]
    alignment = [a for _, align in parts for a in align]
    return Pair(tuple(source), tuple(target), tuple(alignment))


def _parse_number(words: Sequence[str], i: int) -> tuple[int | None, int]:
    """The count 2..59 written at ``words[i:]`` and the position after it, or (None, i)."""
    units = {w: n for n, (w, _) in enumerate(UNITS, start=1)}
    teens = {w: n for n, (w, _) in enumerate(TEENS, start=10)}
    tens = {w: n for n, (w, _) in enumerate(TENS, start=2)}
    word = words[i] if i < len(words) else None
    if word in units:
        return units[word], i + 1
    if word in teens:
        return teens[word], i + 1
    if word in tens:
        after = words[i + 1] if i + 1 < len(words) else None
        return (10 * tens[word] + units[after], i + 2) if after in units else (10 * tens[word], i + 1)
    return None, i


def _parse_np(words: Sequence[str], i: int) -> tuple[NounPhrase | None, int]:
    """A noun phrase at ``words[i:]`` (number unchecked against the noun: :func:`parse_english` re-renders)."""
    adjectives = {w: a for a, (w, _) in enumerate(ADJECTIVES)}
    nouns = {w: (n, plural) for n, forms in enumerate(NOUNS) for plural, w in enumerate(forms[:2])}
    if i < len(words) and words[i] == "the":
        number, i = None, i + 1
    else:
        number, i = _parse_number(words, i)
        if number is None or number == 1:
            return None, i
    chosen = []
    while i < len(words) and words[i] in adjectives:
        chosen.append(adjectives[words[i]])
        i += 1
    if i == len(words) or words[i] not in nouns:
        return None, i
    noun, plural = nouns[words[i]]
    if number is None and plural:
        number = 0  # "the dogs"
    return NounPhrase(noun, tuple(chosen), number), i + 1


def _parse_english_args(words: Sequence[str]) -> None:
    check(not isinstance(words, str),
          lambda: f"words must be a list of words, not a string: use parse_english({words!r}.split())")  # fmt: skip


@checked(_parse_english_args)
def parse_english(words: Sequence[str]) -> Sentence | None:
    """The :class:`Sentence` whose English is ``words``, or None if the grammar cannot produce them
    (wrong agreement, a repeated adjective, a word out of place...): a check of generated text."""
    words = list(words)
    intro = next((k for k, (en, _) in enumerate(INTROS) if tuple(words[:3]) == en), None)
    subject, i = _parse_np(words, 0 if intro is None else 3)
    verb = next((v for v, forms in enumerate(VERBS) if i < len(words) and words[i] in forms[:2]), None)
    if subject is None or verb is None:
        return None
    obj, i = _parse_np(words, i + 1)
    if obj is None or i != len(words) or any(len(set(np_.adjectives)) != len(np_.adjectives) for np_ in (subject, obj)):
        return None
    sentence = Sentence(subject, verb, obj, intro)
    try:
        return sentence if render(sentence).source == tuple(words) else None
    except ValueError:
        return None


def _sample_np(rng: np.random.Generator) -> NounPhrase:
    n_adjectives = int(rng.choice(3, p=[0.4, 0.4, 0.2]))
    adjectives = tuple(int(a) for a in rng.choice(len(ADJECTIVES), size=n_adjectives, replace=False))
    kind = rng.random()
    number = None if kind < 0.5 else 0 if kind < 0.65 else int(rng.integers(2, 60))
    return NounPhrase(int(rng.integers(len(NOUNS))), adjectives, number)


def sample_sentence(rng: np.random.Generator, subordinate: float = 0.5) -> Sentence:
    """A random sentence: a subordinate clause with probability ``subordinate``."""
    intro = int(rng.integers(len(INTROS))) if rng.random() < subordinate else None
    return Sentence(_sample_np(rng), int(rng.integers(len(VERBS))), _sample_np(rng), intro)


@dataclass(frozen=True)
class Corpus:
    """Training and held-out pairs (no held-out source sentence occurs in training) and both vocabularies."""

    train: list[Pair]
    test: list[Pair]
    source_vocab: Vocab
    target_vocab: Vocab


def _vocabularies() -> tuple[Vocab, Vocab]:
    english = sorted(LEXICON)
    german = sorted({w for forms in LEXICON.values() for w in forms} | {"und"})
    return Vocab(english), Vocab(german)


def _make_corpus_args(n_train: int = 20_000, n_test: int = 1_000, seed: int = 0, subordinate: float = 0.5) -> None:
    check_positive_int("n_train", n_train)
    check_positive_int("n_test", n_test)
    check(not isinstance(subordinate, bool) and isinstance(subordinate, numbers.Real) and 0 <= subordinate <= 1,
          lambda: f"subordinate must be a probability in [0, 1], got {subordinate!r}")  # fmt: skip
    check_nonnegative_int("seed", seed)


@checked(_make_corpus_args)
def make_corpus(n_train: int = 20_000, n_test: int = 1_000, seed: int = 0, subordinate: float = 0.5) -> Corpus:
    """Sample ``n_train`` training and ``n_test`` held-out pairs, deterministically from ``seed``."""
    rng = np.random.default_rng(seed)
    train = [render(sample_sentence(rng, subordinate)) for _ in range(n_train)]
    seen = {p.source for p in train}
    test: list[Pair] = []
    for _ in range(100 * n_test):
        pair = render(sample_sentence(rng, subordinate))
        if pair.source not in seen:
            seen.add(pair.source)
            test.append(pair)
            if len(test) == n_test:
                break
    check(len(test) == n_test, f"found only {len(test)} held-out sentences unlike the training ones; ask for fewer")
    source_vocab, target_vocab = _vocabularies()
    return Corpus(train, test, source_vocab, target_vocab)


@dataclass(frozen=True)
class Batch:
    """Padded id tensors: source ``(B, S)`` ending in ``<eos>``, decoder input ``(B, T)`` starting with
    ``<bos>`` and decoder target ``(B, T)`` ending in ``<eos>``; padding is 0."""

    source: torch.Tensor
    source_lengths: torch.Tensor
    target_in: torch.Tensor
    target_out: torch.Tensor

    def rows(self, index: torch.Tensor) -> Batch:
        """The sentence pairs at ``index`` ``(n,)``, padded to their own longest sentence: the batch that
        :func:`encode_batch` makes of those pairs (a training step draws its batch from the encoded corpus)."""
        target_out = self.target_out[index]
        S, T = int(self.source_lengths[index].max()), int((target_out != 0).sum(1).max())
        return Batch(self.source[index, :S], self.source_lengths[index], self.target_in[index, :T], target_out[:, :T])


def _pad(rows: Sequence[Sequence[int]]) -> torch.Tensor:
    out = np.zeros((len(rows), max(len(r) for r in rows)), dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return torch.from_numpy(out)


def _encode_batch_args(pairs: Sequence[Pair], source_vocab: Vocab, target_vocab: Vocab) -> None:
    check(pairs, "pairs is empty: a batch needs at least one sentence pair")


@checked(_encode_batch_args)
def encode_batch(pairs: Sequence[Pair], source_vocab: Vocab, target_vocab: Vocab) -> Batch:
    """Token ids for a list of pairs, padded to the longest sentence."""
    sources = [source_vocab.encode(p.source, eos=True) for p in pairs]
    targets = [target_vocab.encode(p.target, eos=True) for p in pairs]
    return Batch(
        source=_pad(sources),
        source_lengths=torch.tensor([len(s) for s in sources]),
        target_in=_pad([[target_vocab.bos, *t[:-1]] for t in targets]),
        target_out=_pad(targets),
    )


def alignment_matrix(pair: Pair) -> torch.Tensor:
    """The true alignment as a 0/1 matrix ``(len(target), len(source))``, a picture to compare with."""
    matrix = torch.zeros(len(pair.target), len(pair.source))
    for t, s in enumerate(pair.alignment):
        if s is not None:
            matrix[t, s] = 1.0
    return matrix


def _exact_match_args(predictions: Sequence[Sequence[str]], pairs: Sequence[Pair]) -> None:
    check(len(predictions) == len(pairs) and pairs,
          f"need one prediction per pair, got {len(predictions)} predictions for {len(pairs)} pairs")  # fmt: skip


@checked(_exact_match_args)
def exact_match(predictions: Sequence[Sequence[str]], pairs: Sequence[Pair]) -> float:
    """Fraction of predicted translations equal to the reference, word for word."""
    return sum(tuple(p) == pair.target for p, pair in zip(predictions, pairs, strict=True)) / len(pairs)


def _alignment_mass_args(alignments: Sequence[torch.Tensor], pairs: Sequence[Pair]) -> None:
    check(len(alignments) == len(pairs) and pairs,
          f"need one alignment matrix per pair, got {len(alignments)} for {len(pairs)} pairs")  # fmt: skip
    small = [(w, p) for w, p in zip(alignments, pairs, strict=True)
             if w.dim() != 2 or w.shape[0] < len(p.target) or w.shape[1] < len(p.source)]  # fmt: skip
    check(not small, lambda: f"alignment of shape {tuple(small[0][0].shape)} is too small for a pair of "
          f"{len(small[0][1].target)} target and {len(small[0][1].source)} source words")  # fmt: skip


@checked(_alignment_mass_args)
def alignment_mass(alignments: Sequence[torch.Tensor], pairs: Sequence[Pair]) -> float:
    """Mean attention weight on the true source word, over every target word that translates one.

    ``alignments[i]`` is ``(T_i, S_i)`` or larger (padding is ignored): attention while the model reads the
    reference translation (teacher forcing). 1.0 means attention sits exactly on the true alignment.
    """
    total, count = 0.0, 0
    for weights, pair in zip(alignments, pairs, strict=True):
        for t, s in enumerate(pair.alignment):
            if s is not None:
                total += float(weights[t, s])
                count += 1
    return total / count


@checked(_exact_match_args)
def accuracy_by_length(predictions: Sequence[Sequence[str]], pairs: Sequence[Pair]) -> dict[int, tuple[float, int]]:
    """Exact match per source length: ``{length: (accuracy, number of sentences)}``, shortest first."""
    hits: dict[int, list[bool]] = {}
    for prediction, pair in zip(predictions, pairs, strict=True):
        hits.setdefault(len(pair.source), []).append(tuple(prediction) == pair.target)
    return {n: (sum(h) / len(h), len(h)) for n, h in sorted(hits.items())}


@dataclass
class Translation:
    """A typed sentence translated: the source words, the target words, whether the model ended the
    translation (said ``<eos>``) or was cut off, the alignment (one row per target word, plus one for
    ``<eos>`` if it ``finished``; one column per source word plus ``<eos>``; None without attention) and
    the words the model did not know (read as ``<unk>``)."""

    source: list[str]
    target: list[str]
    finished: bool
    alignment: torch.Tensor | None
    unknown: list[str]

    def row_labels(self) -> list[str]:
        """Labels for the alignment's rows."""
        return [*self.target, "<eos>"] if self.finished else list(self.target)


def sentence_words(sentence: object, max_words: int) -> list[str]:
    """The words of a typed sentence (:func:`tokenize`), or a ValueError that says what is wrong with it."""
    check(isinstance(sentence, str), lambda: f"sentence must be a string, got {type(sentence).__name__}")
    words = list(tokenize(sentence))
    check(words, "the sentence is empty: type a few words, e.g. 'the dog sees the cat'")
    check(len(words) <= max_words, lambda: f"the sentence has {len(words)} words; this model reads at most {max_words}")
    return words


def _random_batches_args(corpus: Corpus, batch_size: int, seed: int) -> None:
    check_positive_int("batch_size", batch_size)
    check_nonnegative_int("seed", seed)
    _encode_batch_args(corpus.train, corpus.source_vocab, corpus.target_vocab)


@checked(_random_batches_args)
def random_batches(corpus: Corpus, batch_size: int, seed: int) -> Callable[[], Batch]:
    """A function that returns ``batch_size`` pairs of ``corpus.train`` drawn at random (with replacement) at each
    call, padded; the training set is encoded once, and the draws come from ``numpy``'s generator of ``seed``."""
    encoded = encode_batch(corpus.train, corpus.source_vocab, corpus.target_vocab)
    rng = np.random.default_rng(seed)
    return lambda: encoded.rows(torch.from_numpy(rng.integers(len(encoded.source), size=batch_size)))


@dataclass
class TranslationScores:
    """Held-out results: exact match, attention mass on the true alignment, predictions and alignments
    (teacher-forced, one ``(T+1, S+1)`` matrix per pair, with ``<eos>``; None without attention)."""

    exact_match: float
    alignment_mass: float | None
    predictions: list[list[str]]
    alignments: list[torch.Tensor] | None


def score_translations(
    decode: Callable[[Batch], list[list[int]] | torch.Tensor],
    align: Callable[[Batch], torch.Tensor | None],
    pairs: Sequence[Pair],
    corpus: Corpus,
    batch_size: int = 500,
) -> TranslationScores:
    """Decode every pair (``decode(batch)``: target ids per row) and score it; ``align(batch)`` gives the alignments
    ``(B, T, S)`` of the teacher-forced references (None for a model without attention)."""
    predictions: list[list[str]] = []
    alignments: list[torch.Tensor] | None = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        batch = encode_batch(chunk, corpus.source_vocab, corpus.target_vocab)
        predictions += [corpus.target_vocab.decode(row) for row in decode(batch)]
        forced = align(batch)
        if forced is None:
            alignments = None
        elif alignments is not None:
            alignments += [w[: len(p.target) + 1, : len(p.source) + 1] for w, p in zip(forced, chunk, strict=True)]
    mass = alignment_mass(alignments, pairs) if alignments is not None else None
    return TranslationScores(exact_match(predictions, pairs), mass, predictions, alignments)
