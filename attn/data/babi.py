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

import torch

from attn._checks import check_size
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


def split_sentences(text: str) -> list[str]:
    """A story typed as text, one sentence per item: split at line breaks and after ``.``, ``!`` or ``?``;
    empty pieces are dropped (``"Greg is a frog. Brian is yellow."`` -> two sentences)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece.strip()]


def _parse_line(raw: str, where: str) -> Line:
    match = _LINE.fullmatch(raw)
    if match is None:
        raise ValueError(f"{where}: expected 'ID text', got {raw!r}")
    line_id, rest = int(match.group(1)), match.group(2)
    if "\t" not in rest:
        if not tokenize(rest):
            raise ValueError(f"{where}: line {line_id} has no words")
        if "?" in rest:  # a statement never asks; a question whose fields are split by spaces would vanish
            raise ValueError(
                f"{where}: line {line_id} is a question without an answer: a question line needs "
                f"'question<TAB>answer<TAB>supporting ids' (tabs, not spaces)"
            )
        return Line(line_id, rest.strip())
    fields = rest.split("\t")
    if len(fields) != 3:
        raise ValueError(
            f"{where}: a question line needs 'question<TAB>answer<TAB>supporting ids', got {len(fields)} "
            f"tab-separated fields"
        )
    question, answer, support = fields
    answer_words = tuple(a.strip().lower() for a in answer.split(","))
    if not tokenize(question) or not all(answer_words):
        raise ValueError(f"{where}: question {line_id} has an empty question or answer: {rest!r}")
    try:
        supporting = tuple(int(s) for s in support.split())
    except ValueError:
        raise ValueError(f"{where}: supporting ids must be integers, got {support!r}") from None
    if not supporting:
        raise ValueError(f"{where}: question {line_id} lists no supporting ids")
    return Line(line_id, question.strip(), answer_words, supporting)


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
        elif not stories:
            raise ValueError(f"{where}: a story must start at id 1, got {line.id}")
        elif line.id != stories[-1][-1].id + 1:
            raise ValueError(f"{where}: expected id {stories[-1][-1].id + 1} (or 1 for a new story), got {line.id}")
        missing = [s for s in line.supporting if s not in statements]
        if missing:
            raise ValueError(f"{where}: supporting id(s) {missing} are not earlier statements of this story")
        if not line.is_question:
            statements.add(line.id)
        stories[-1].append(line)
    return stories


def read_stories(path: str | Path) -> list[Story]:
    """Stories of one bAbI file (UTF-8, with or without a byte-order mark)."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise ValueError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:  # refused before reading: a bAbI file of 10k questions is about 5 MB
        raise ValueError(f"{path}: {size:,} bytes, more than the {MAX_FILE_BYTES:,} a bAbI task file is read up to")
    data = path.read_bytes()
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[start:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = start + e.start
        line = len(re.split(rb"\r\n|\r|\n", data[:at]))
        raise ValueError(f"{path}:{line}: not UTF-8 text ({e.reason}, byte {data[at]:#04x})") from None
    return parse_stories(_NEWLINE.split(text), source=str(path))


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
        words: list[list[str]] = []  # each statement tokenised once, however many questions follow it
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


def task_file(data_dir: str | Path, task: int, split: str) -> Path:
    """The file of bAbI task ``task`` (1-20) and ``split`` ("train" or "test") in ``data_dir``."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if isinstance(task, bool) or not isinstance(task, numbers.Integral) or not 1 <= task <= 20:
        raise ValueError(f"task must be an int in 1..20, got {task!r}")
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


def check_vectorizable(
    exs: Sequence[Example], memory_size: int = MEMORY_SIZE, sentence_length: int | None = None
) -> tuple[int, int, int]:
    """The ``(N, M, J)`` of :func:`vectorize`'s stories (questions, memory slots, words per sentence), refused
    before anything is allocated when they would not fit (every sentence is padded to the longest)."""
    longest = max(max((len(s) for ex in exs for s in ex.story), default=0), max(len(ex.question) for ex in exs))
    J = longest if sentence_length is None else sentence_length
    if J < longest:
        raise ValueError(f"sentence_length={sentence_length} is shorter than the longest sentence ({longest} words)")
    M = max(min(memory_size, max(len(ex.story) for ex in exs)), 1)
    N = len(exs)
    check_size(f"the stories (N, M, J) = ({N:,}, {M}, {J:,}), every sentence padded to the longest,", N * M * J)
    return N, M, J


def vectorize(
    exs: Sequence[Example], vocab: Vocab, memory_size: int = MEMORY_SIZE, sentence_length: int | None = None
) -> BabiTensors:
    """Word ids for ``exs``: the most recent ``memory_size`` sentences of each story, padded to the longest
    sentence (or ``sentence_length``). Unknown words map to ``<unk>``."""
    if not exs:
        raise ValueError("exs is empty: nothing to vectorise")
    if memory_size < 1:
        raise ValueError(f"memory_size must be >= 1, got {memory_size}")
    N, M, J = check_vectorizable(exs, memory_size, sentence_length)
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
