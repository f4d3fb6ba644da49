"""The bAbI reader on every real file, on malformed input, and the vectoriser."""

import re
from pathlib import Path

import pytest
import torch

from attn.data.babi import (
    Line,
    build_vocab,
    examples,
    format_stories,
    parse_stories,
    read_stories,
    read_task,
    task_file,
    vectorize,
    write_stories,
)
from attn.data.vocab import tokenize

BABI = Path(__file__).resolve().parents[2] / "shared" / "babi" / "en"
needs_babi = pytest.mark.skipif(not BABI.is_dir(), reason=f"the real bAbI 1k files are not at {BABI}")

SAMPLE = """1 Mary moved to the bathroom.
2 John went to the hallway.
3 Where is Mary? \tbathroom\t1
4 Daniel went back to the hallway.
5 Where is Daniel? \thallway\t4
1 Sandra travelled to the office.
2 Where is Sandra? \toffice\t1
"""


def test_parse_splits_stories_and_reads_questions():
    stories = parse_stories(SAMPLE.splitlines())
    assert [len(s) for s in stories] == [5, 2]
    q = stories[0][2]
    assert q == Line(3, "Where is Mary?", ("bathroom",), (1,)) and q.is_question
    exs = examples(stories)
    assert len(exs) == 3
    assert exs[1].story == (
        ("mary", "moved", "to", "the", "bathroom"),
        ("john", "went", "to", "the", "hallway"),
        ("daniel", "went", "back", "to", "the", "hallway"),
    )
    assert exs[1].ids == (1, 2, 4) and exs[1].supporting_positions() == [2]
    assert exs[1].question == ("where", "is", "daniel") and exs[1].answer_token == "hallway"
    assert exs[2].story == (("sandra", "travelled", "to", "the", "office"),)  # a new story forgets the old one


def test_tokenize_drops_case_and_punctuation():
    assert tokenize("Where is Mary? ") == ("where", "is", "mary")
    assert tokenize("John picked up the apple.") == ("john", "picked", "up", "the", "apple")


def test_list_answers_are_split_and_joined_back():
    (story,) = parse_stories(["1 The kitchen is north of the hallway.", "2 How do you go? \tn,w\t1"])
    (ex,) = examples([story])
    assert ex.answer == ("n", "w") and ex.answer_token == "n,w"
    assert format_stories([story]).splitlines()[1] == "2 How do you go?\tn,w\t1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Mary moved to the bathroom.", "data.txt:1: expected 'ID text'"),
        ("2 Mary moved.", "data.txt:1: a story must start at id 1, got 2"),
        ("1 Mary moved.\n3 John moved.", "data.txt:2: expected id 2 (or 1 for a new story), got 3"),
        ("1 Mary moved.\n2 Where is Mary?\tkitchen", "data.txt:2: a question line needs"),
        ("1 Mary moved.\n2 Where is Mary?\tkitchen\tone", "data.txt:2: supporting ids must be integers"),
        ("1 Mary moved.\n2 Where is Mary?\tkitchen\t", "data.txt:2: question 2 lists no supporting ids"),
        ("1 Mary moved.\n2 Where is Mary?\t\t1", "data.txt:2: question 2 has an empty question or answer"),
        ("1 Mary moved.\n2 Where is Mary?\tkitchen\t5", "data.txt:2: supporting id(s) [5] are not earlier"),
        ("1 Where is Mary?\tkitchen\t1", "data.txt:1: supporting id(s) [1] are not earlier"),
        ("1 Mary moved.\n\n2 ...", "data.txt:3: line 2 has no words"),
    ],
)
def test_malformed_lines_name_file_and_line(text, message):
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        parse_stories(text.splitlines(), source="data.txt")


def test_malformed_file_names_the_path(tmp_path):
    path = tmp_path / "qa1_bad_train.txt"
    path.write_text("1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\t1\n4 John left.\n")
    with pytest.raises(ValueError, match=rf"^{path}:3: expected id 3"):
        read_stories(path)


def test_write_then_read_round_trips_and_never_overwrites(tmp_path):
    stories = parse_stories(SAMPLE.splitlines())
    path = write_stories(stories, tmp_path / "qa1_x_train.txt")
    assert read_stories(path) == stories
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_stories(stories[:1], path)
    assert read_stories(path) == stories  # untouched
    write_stories(stories[:1], path, overwrite=True)
    assert read_stories(path) == stories[:1]


def test_task_file_errors(tmp_path):
    with pytest.raises(ValueError, match="split must be 'train' or 'test', got 'dev'"):
        task_file(tmp_path, 1, "dev")
    with pytest.raises(FileNotFoundError, match="expected one file qa1_\\*_train.txt"):
        task_file(tmp_path, 1, "train")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        task_file(tmp_path / "nowhere", 1, "train")


def test_vectorize_keeps_the_most_recent_memories_and_marks_support():
    lines = [f"{i} Mary moved to the room{i}." for i in range(1, 8)] + ["8 Where is Mary?\troom7\t7"]
    (ex,) = examples(parse_stories(lines))
    vocab = build_vocab([ex])
    t = vectorize([ex], vocab, memory_size=3)
    assert t.story.shape == (1, 3, 5) and t.lengths.tolist() == [3]
    assert vocab.decode(t.story[0, -1].tolist()) == ["mary", "moved", "to", "the", "room7"]
    assert vocab.decode(t.story[0, 0].tolist())[-1] == "room5"
    assert t.supporting.tolist() == [[2]]
    assert vocab.tokens[int(t.answer[0])] == "room7"
    lines[-1] = "8 Where is Mary?\troom1\t1"  # the supporting sentence fell out of memory
    (old,) = examples(parse_stories(lines))
    assert vectorize([old], vocab, memory_size=3).supporting.tolist() == [[-1]]


def test_vectorize_pads_and_maps_unknown_words():
    short, long = examples(
        parse_stories(
            [
                "1 Mary left.",
                "2 Where is Mary?\tkitchen\t1",
                "1 John went to the garden.",
                "2 Bob ran.",
                "3 Where is Bob?\tgarden\t2",
            ]
        )
    )
    vocab = build_vocab([long])
    t = vectorize([short, long], vocab)
    assert t.story.shape == (2, 2, 5)
    assert t.lengths.tolist() == [1, 2]
    assert (t.story[0, 1] == 0).all() and (t.story[0, 0, 2:] == 0).all()
    assert t.story[0, 0, 0] == vocab.unk  # "mary" is unknown to this vocabulary
    assert t.answer[0] == vocab.unk
    with pytest.raises(ValueError, match="sentence_length=3 is shorter than the longest sentence \\(5 words\\)"):
        vectorize([long], vocab, sentence_length=3)
    with pytest.raises(ValueError, match="exs is empty"):
        vectorize([], vocab)
    assert t[torch.tensor([1])].story.shape == (1, 2, 5) and len(t) == 2


@needs_babi
@pytest.mark.parametrize("task", range(1, 21))
def test_every_real_file_reads_with_1000_questions(task):
    for split in ("train", "test"):
        path = task_file(BABI, task, split)
        stories = read_stories(path)
        exs = examples(stories)
        assert len(exs) == 1000, path
        assert all(s[0].id == 1 for s in stories)
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) == sum(len(s) for s in stories)
        assert parse_stories(format_stories(stories).splitlines()) == stories  # the writer's format reads back
    answers = {len(ex.answer) for ex in exs}
    if task == 8:
        assert 1 in answers and max(answers) > 1  # lists: "apple,football"
    else:
        assert answers == ({2} if task == 19 else {1})  # paths: "n,w"


@needs_babi
def test_real_first_story_is_the_readme_example():
    exs = read_task(BABI, 1, "train")
    assert exs[0].story == (("mary", "moved", "to", "the", "bathroom"), ("john", "went", "to", "the", "hallway"))
    assert exs[0].answer == ("bathroom",) and exs[0].supporting == (1,)
    assert exs[3].ids == (1, 2, 4, 5, 7, 8, 10, 11) and exs[3].answer == ("office",)
    assert exs[3].supporting_positions() == [7]  # "11 Daniel travelled to the office."
