"""The bAbI question-answering format (Weston et al. 2015): read, write and vectorise stories.

A file is a run of stories. Each line is ``ID text``; the ids of a story start at 1 and a reset to 1 starts
the next story. A question line is ``ID question<TAB>answer<TAB>supporting ids`` (the answer of tasks 8 and
19 is a comma-separated list, e.g. ``n,w``). The same code reads the real files and the simulator's.
"""

from __future__ import annotations

import codecs
import numbers
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch

from attn._checks import check, check_size, checked
from attn.data.vocab import Vocab, tokenize

__all__ = [
    "Line",
    "Example",
    "BabiTensors",
    "split_sentences",
    "parse_stories",
    "read_stories",
    "format_stories",
    "write_stories",
    "examples",
    "task_file",
    "read_task",
    "build_vocab",
    "vectorize",
]

MAX_FILE_BYTES = 256 * 2**20  # 256 MiB: the 10k-example tasks are 50 times smaller
MEMORY_SIZE = 50  # the paper keeps the most recent 50 sentences (Sukhbaatar et al. 2015, §4.2)
_LINE = re.compile(r"(\d+) (.*)")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_NEWLINE_BYTES = re.compile(rb"\r\n|\r|\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")  # after . ! or ? and a space, or at a line break


@dataclass(frozen=True)
class Line:
    """One numbered line of a story: a statement, or a question with its answer words and supporting ids."""

    id: int
    text: str
    answer: tuple[str, ...] = ()
    supporting: tuple[int, ...] = ()

    @property
    def is_question(self) -> bool:
        return bool(self.answer)


Story = list[Line]


@dataclass(frozen=True)
class Example:
    """A question with the statements told before it in its story (oldest first), as tokens."""

    story: tuple[tuple[str, ...], ...]
    ids: tuple[int, ...]  # the line id of each story sentence
    question: tuple[str, ...]
    answer: tuple[str, ...]
    supporting: tuple[int, ...]  # line ids, as in the file

    @property
    def answer_token(self) -> str:
        """The answer as one vocabulary entry: list answers (tasks 8, 19) joined by commas, e.g. ``n,w``."""
        return ",".join(self.answer)

    def supporting_positions(self) -> list[int]:
        """Indices into ``story`` of the supporting sentences."""
        where = {line_id: i for i, line_id in enumerate(self.ids)}
        return [where[i] for i in self.supporting]


def _split_sentences_args(text: str) -> None:
    check(isinstance(text, str), lambda: f"text must be a string, got {type(text).__name__}")


@checked(_split_sentences_args)
def split_sentences(text: str) -> list[str]:
    """A story typed as text, one sentence per item: split at line breaks and after ``.``, ``!`` or ``?``;
    empty pieces are dropped (``"Greg is a frog. Brian is yellow."`` -> two sentences)."""
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece.strip()]


def _ints(text: str) -> tuple[int, ...] | None:
    """The integers written in ``text``, or None if a word is not one."""
    try:
        return tuple(int(s) for s in text.split())
    except ValueError:
        return None


def _parse_line(raw: str, where: str) -> Line:
    match = _LINE.fullmatch(raw)
    check(match is not None, lambda: f"{where}: expected 'ID text', got {raw!r}")
    match = cast(re.Match[str], match)
    line_id, rest = int(match.group(1)), match.group(2)
    if "\t" not in rest:
        check(tokenize(rest), lambda: f"{where}: line {line_id} has no words")
        # a statement never asks; a question whose fields are split by spaces would vanish
        check("?" not in rest, lambda: f"{where}: line {line_id} is a question without an answer: a question line "
              "needs 'question<TAB>answer<TAB>supporting ids' (tabs, not spaces)")  # fmt: skip
        return Line(line_id, rest.strip())
    fields = rest.split("\t")
    check(len(fields) == 3, lambda: f"{where}: a question line needs 'question<TAB>answer<TAB>supporting ids', got "
          f"{len(fields)} tab-separated fields")  # fmt: skip
    question, answer, support = fields
    answer_words = tuple(a.strip().lower() for a in answer.split(","))
    check(tokenize(question) and all(answer_words),
          lambda: f"{where}: question {line_id} has an empty question or answer: {rest!r}")  # fmt: skip
    supporting = _ints(support)
    check(supporting is not None, lambda: f"{where}: supporting ids must be integers, got {support!r}")
    check(supporting, lambda: f"{where}: question {line_id} lists no supporting ids")
    return Line(line_id, question.strip(), answer_words, cast(tuple[int, ...], supporting))


def _check_place(line: Line, stories: list[Story], statements: set[int], where: str) -> None:
    """``line`` continues its story (ids count up from 1) and cites only the story's earlier statements."""
    check(stories, lambda: f"{where}: a story must start at id 1, got {line.id}")
    check(line.id == 1 or line.id == stories[-1][-1].id + 1,
          lambda: f"{where}: expected id {stories[-1][-1].id + 1} (or 1 for a new story), got {line.id}")  # fmt: skip
    missing = [s for s in line.supporting if s not in statements]
    check(not missing, lambda: f"{where}: supporting id(s) {missing} are not earlier statements of this story")


def parse_stories(lines: Iterable[str], source: str = "<string>") -> list[Story]:
    """Stories from the lines of a bAbI file; a malformed line raises ``ValueError('source:line: ...')``."""
    stories: list[Story] = []
    statements: set[int] = set()
    for number, raw in enumerate(lines, start=1):
        raw = raw.rstrip("\r\n")
        if not raw.strip():
            continue
        where = f"{source}:{number}"
        line = _parse_line(raw, where)
        if line.id == 1:
            stories.append([])
            statements = set()
        _check_place(line, stories, statements, where)
        if not line.is_question:
            statements.add(line.id)
        stories[-1].append(line)
    return stories


def _utf8(data: bytes) -> str | UnicodeDecodeError:
    """``data`` decoded as UTF-8, or the error that says where it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        return error


def _not_utf8(path: Path, data: bytes, start: int, error: UnicodeDecodeError) -> str:
    """Where ``data`` (decoded from ``start``) stops being UTF-8: ``path:line: not UTF-8 text (...)``."""
    at = start + error.start
    line = len(_NEWLINE_BYTES.split(data[:at]))
    return f"{path}:{line}: not UTF-8 text ({error.reason}, byte {data[at]:#04x})"


def read_stories(path: str | Path) -> list[Story]:
    """Stories of one bAbI file (UTF-8, with or without a byte-order mark)."""
    path = Path(path)
    check(not path.exists() or path.is_file(), lambda: f"{path}: not a regular file")
    size = path.stat().st_size
    # refused before reading: a bAbI file of 10k questions is about 5 MB
    check(size <= MAX_FILE_BYTES, lambda: f"{path}: {size:,} bytes, more than the {MAX_FILE_BYTES:,} a bAbI task "
          "file is read up to")  # fmt: skip
    data = path.read_bytes()
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    text = _utf8(data[start:])
    check(isinstance(text, str), lambda: _not_utf8(path, data, start, cast(UnicodeDecodeError, text)))
    return parse_stories(_NEWLINE.split(cast(str, text)), source=str(path))


def format_stories(stories: Sequence[Story]) -> str:
    """The bAbI text of ``stories`` (what :func:`parse_stories` reads back)."""
    out = []
    for story in stories:
        for line in story:
            if line.is_question:
                support = " ".join(str(s) for s in line.supporting)
                out.append(f"{line.id} {line.text}\t{','.join(line.answer)}\t{support}")
            else:
                out.append(f"{line.id} {line.text}")
    return "\n".join(out) + "\n"


def write_stories(stories: Sequence[Story], path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``stories`` as a bAbI file; an existing file is kept unless ``overwrite=True``."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(format_stories(stories), encoding="utf-8")
    return path


def examples(stories: Iterable[Story]) -> list[Example]:
    """One :class:`Example` per question: the question, its answer and every statement before it."""
    out = []
    for story in stories:
        told: list[Line] = []
        words: list[tuple[str, ...]] = []  # each statement tokenised once, however many questions follow it
        for line in story:
            if not line.is_question:
                told.append(line)
                words.append(tokenize(line.text))
                continue
            out.append(
                Example(
                    story=tuple(words),
                    ids=tuple(s.id for s in told),
                    question=tokenize(line.text),
                    answer=line.answer,
                    supporting=line.supporting,
                )
            )
    return out


def _task_file_args(data_dir: str | Path, task: int, split: str) -> None:
    check(split in ("train", "test"), lambda: f"split must be 'train' or 'test', got {split!r}")
    check(not isinstance(task, bool) and isinstance(task, numbers.Integral) and 1 <= task <= 20,
          lambda: f"task must be an int in 1..20, got {task!r}")  # fmt: skip


@checked(_task_file_args)
def task_file(data_dir: str | Path, task: int, split: str) -> Path:
    """The file of bAbI task ``task`` (1-20) and ``split`` ("train" or "test") in ``data_dir``."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"data directory {data_dir} does not exist")
    try:
        found = sorted(p for p in data_dir.iterdir() if re.fullmatch(rf"qa{task}_.+_{split}\.txt", p.name))
    except PermissionError:
        raise PermissionError(f"{data_dir}: permission denied (the folder cannot be listed)") from None
    if len(found) != 1:
        raise FileNotFoundError(f"expected one file qa{task}_*_{split}.txt in {data_dir}, found {len(found)}")
    return found[0]


def read_task(data_dir: str | Path, task: int, split: str) -> list[Example]:
    """The questions of one task's split, each with its story."""
    return examples(read_stories(task_file(data_dir, task, split)))


def build_vocab(*example_sets: Iterable[Example]) -> Vocab:
    """Every word of the stories and questions, and every answer (list answers as one entry), sorted."""
    words: set[str] = set()
    for exs in example_sets:
        for ex in exs:
            words.update(w for sentence in ex.story for w in sentence)
            words.update(ex.question)
            words.add(ex.answer_token)
    return Vocab(sorted(words))


@dataclass
class BabiTensors:
    """Vectorised questions: ``story (N, M, J)`` word ids (oldest sentence first, padded with 0),
    ``query (N, J)``, ``answer (N,)`` vocabulary ids, ``lengths (N,)`` sentences kept per story, and the
    ``supporting`` memory slots of each question (-1 for padding, or where a supporting sentence fell out
    of memory)."""

    story: torch.Tensor
    query: torch.Tensor
    answer: torch.Tensor
    lengths: torch.Tensor
    supporting: torch.Tensor

    def __len__(self) -> int:
        return self.story.shape[0]

    def __getitem__(self, index: torch.Tensor | slice | Sequence[int]) -> BabiTensors:
        return BabiTensors(*(t[index] for t in (self.story, self.query, self.answer, self.lengths, self.supporting)))


def _shape(exs: Sequence[Example], memory_size: int, sentence_length: int | None) -> tuple[int, int, int]:
    """``(N, M, J)``: questions, memory slots (the most recent ``memory_size`` sentences), words per sentence."""
    J = _longest(exs) if sentence_length is None else sentence_length
    M = max(min(memory_size, max(len(ex.story) for ex in exs)), 1)
    return len(exs), M, J


def _longest(exs: Sequence[Example]) -> int:
    """The words of the longest story sentence or question."""
    return max(max((len(s) for ex in exs for s in ex.story), default=0), max(len(ex.question) for ex in exs))


def check_vectorizable(
    exs: Sequence[Example], memory_size: int = MEMORY_SIZE, sentence_length: int | None = None
) -> tuple[int, int, int]:
    """The ``(N, M, J)`` of :func:`vectorize`'s stories (questions, memory slots, words per sentence), refused
    before anything is allocated when they would not fit (every sentence is padded to the longest)."""
    longest = _longest(exs)
    check(sentence_length is None or sentence_length >= longest, lambda: f"sentence_length={sentence_length} is "
          f"shorter than the longest sentence ({longest} words)")  # fmt: skip
    N, M, J = _shape(exs, memory_size, sentence_length)
    check_size(f"the stories (N, M, J) = ({N:,}, {M}, {J:,}), every sentence padded to the longest,", N * M * J)
    return N, M, J


def _vectorize_args(
    exs: Sequence[Example], vocab: Vocab, memory_size: int = MEMORY_SIZE, sentence_length: int | None = None
) -> None:
    check(exs, "exs is empty: nothing to vectorise")
    check(memory_size >= 1, lambda: f"memory_size must be >= 1, got {memory_size}")
    check_vectorizable(exs, memory_size, sentence_length)


@checked(_vectorize_args)
def vectorize(
    exs: Sequence[Example], vocab: Vocab, memory_size: int = MEMORY_SIZE, sentence_length: int | None = None
) -> BabiTensors:
    """Word ids for ``exs``: the most recent ``memory_size`` sentences of each story, padded to the longest
    sentence (or ``sentence_length``). Unknown words map to ``<unk>``."""
    N, M, J = _shape(exs, memory_size, sentence_length)
    story = torch.zeros(N, M, J, dtype=torch.long)
    query = torch.zeros(N, J, dtype=torch.long)
    answer = torch.empty(N, dtype=torch.long)
    lengths = torch.empty(N, dtype=torch.long)
    supporting = torch.full((N, max(len(ex.supporting) for ex in exs)), -1, dtype=torch.long)
    for n, ex in enumerate(exs):
        kept = ex.story[-M:]
        first = len(ex.story) - len(kept)
        for i, sentence in enumerate(kept):
            story[n, i, : len(sentence)] = torch.tensor(vocab.encode(sentence))
        query[n, : len(ex.question)] = torch.tensor(vocab.encode(ex.question))
        answer[n] = vocab.index.get(ex.answer_token, vocab.unk)
        lengths[n] = len(kept)
        for k, position in enumerate(ex.supporting_positions()):
            if position >= first:
                supporting[n, k] = position - first
    return BabiTensors(story, query, answer, lengths, supporting)
