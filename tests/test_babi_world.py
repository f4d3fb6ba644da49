"""The bAbI simulator: format, counts, determinism, and answers and supporting facts checked by replaying
each story with an independent world model (the same checkers accept the real bAbI files)."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from attn.data.babi import Line, Story, build_vocab, examples, format_stories, parse_stories, read_stories, read_task
from attn.data.babi_world import SIMULATED_TASKS, simulate, write_task

REAL = Path(__file__).parents[2] / "shared" / "babi" / "en"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"the real bAbI files are not at {REAL}")
TASKS = sorted(SIMULATED_TASKS)
PER_STORY = {1: 5, 2: 5, 3: 5, 6: 5, 15: 4, 16: 1}

MOVE = re.compile(r"(\w+) (?:moved|went|journeyed|travelled|went back) to the (\w+)\.")
GET = re.compile(r"(\w+) (?:got|grabbed|picked up|took) the (\w+)(?: there)?\.")
DROP = re.compile(r"(\w+) (?:dropped|discarded|put down|left) the (\w+)(?: there)?\.")
SINGULAR = {"mice": "mouse", "sheep": "sheep", "wolves": "wolf", "cats": "cat"}


@pytest.fixture(scope="module")
def simulated() -> dict[int, list[Story]]:
    return {task: simulate(task, 300, seed=1) for task in TASKS}


# --- independent checkers: replay a story, assert every answer and its supporting ids ---------------------


class Replay:
    """What the statements of a story about people moving objects around have said so far."""

    def __init__(self) -> None:
        self.told: dict[str, tuple[str, int]] = {}  # actor -> (place, id) of their latest move
        self.holder: dict[str, str] = {}
        self.lies: dict[str, str] = {}  # object -> place the text puts it (when it does)
        self.event: dict[str, int] = {}  # object -> id of its latest get/drop
        self.trip: dict[str, list[tuple[str, int]]] = {}  # object -> carrier's moves since the get
        self.dropped: dict[str, tuple[str, int] | None] = {}
        self.statements: list[int] = []

    def statement(self, line: Line) -> None:
        self.statements.append(line.id)
        if m := MOVE.fullmatch(line.text):
            actor, place = m.groups()
            assert self.told.get(actor, (None,))[0] != place, f"{line}: moves to where they already are"
            self.told[actor] = (place, line.id)
            for obj, who in self.holder.items():
                if who == actor:
                    self.trip[obj].append((place, line.id))
        elif m := GET.fullmatch(line.text):
            actor, obj = m.groups()
            assert obj not in self.holder, f"{line}: {obj} is carried by {self.holder.get(obj)}"
            if obj in self.lies and actor in self.told:
                assert self.lies[obj] == self.told[actor][0], f"{line}: the {obj} is in the {self.lies[obj]}"
            self.lies.pop(obj, None)
            self.holder[obj], self.event[obj], self.trip[obj] = actor, line.id, []
        elif m := DROP.fullmatch(line.text):
            actor, obj = m.groups()
            assert self.holder.pop(obj, None) == actor, f"{line}: {actor} does not carry the {obj}"
            self.event[obj], self.dropped[obj] = line.id, self.told.get(actor)
            if actor in self.told:
                self.lies[obj] = self.told[actor][0]
        else:
            raise AssertionError(f"unexpected statement {line}")

    def recent(self, line_id: int) -> bool:
        return line_id in self.statements[-5:]


def check_where_is_actor(story: Story) -> None:
    """Task 1: the actor's latest move, told in the last five statements."""
    replay = Replay()
    for line in story:
        if not line.is_question:
            replay.statement(line)
            continue
        actor = re.fullmatch(r"Where is (\w+)\?", line.text).group(1)
        place, move_id = replay.told[actor]
        assert line.answer == (place,) and line.supporting == (move_id,), line
        assert replay.recent(move_id), line


def check_where_is_object(story: Story) -> None:
    """Task 2: the carrier's move after the get, or where the dropper was; support = get/drop, then move."""
    replay = Replay()
    for line in story:
        if not line.is_question:
            replay.statement(line)
            continue
        obj = re.fullmatch(r"Where is the (\w+)\?", line.text).group(1)
        if obj in replay.holder:
            place, move_id = replay.trip[obj][-1]
        else:
            place, move_id = replay.dropped[obj]
        assert line.answer == (place,) and line.supporting == (replay.event[obj], move_id), line
        assert replay.recent(replay.event[obj]), line


def check_where_was_object(story: Story) -> None:
    """Task 3: two consecutive moves of the object's carrier since its latest get; support = the latest
    get/drop, the move to the place asked about, the move before it."""
    replay = Replay()
    for line in story:
        if not line.is_question:
            replay.statement(line)
            continue
        obj, place = re.fullmatch(r"Where was the (\w+) before the (\w+)\?", line.text).groups()
        event, to_id, from_id = line.supporting
        assert event == replay.event[obj] and replay.recent(event), line
        steps = list(zip(replay.trip[obj], replay.trip[obj][1:], strict=False))
        matching = [before for before, after in steps if after == (place, to_id) and before[1] == from_id]
        assert len(matching) == 1 and line.answer == (matching[0][0],), line


def check_is_actor_there(story: Story) -> None:
    """Task 6: yes iff the actor's latest move went there."""
    replay = Replay()
    for line in story:
        if not line.is_question:
            replay.statement(line)
            continue
        actor, place = re.fullmatch(r"Is (\w+) in the (\w+)\?", line.text).groups()
        told, move_id = replay.told[actor]
        assert line.answer == ("yes" if told == place else "no",) and line.supporting == (move_id,), line
        assert replay.recent(move_id), line


def check_deduction(story: Story) -> None:
    """Task 15: the fear of the actor's kind; support = "X is a sheep.", then "Sheep are afraid of ..."."""
    fear: dict[str, tuple[str, int]] = {}
    kind: dict[str, tuple[str, int]] = {}
    for line in story:
        if m := re.fullmatch(r"(\w+) are afraid of (\w+)\.", line.text):
            fear[SINGULAR[m.group(1).lower()]] = (SINGULAR[m.group(2)], line.id)
        elif m := re.fullmatch(r"(\w+) is an? (\w+)\.", line.text):
            assert m.group(2) in fear, f"{line}: told before what {m.group(2)} fear"
            kind[m.group(1).lower()] = (m.group(2), line.id)
        else:
            name = re.fullmatch(r"What is (\w+) afraid of\?", line.text).group(1)
            animal, isa_id = kind[name]
            afraid_of, fear_id = fear[animal]
            assert line.answer == (afraid_of,) and line.supporting == (isa_id, fear_id), line


def check_induction(story: Story) -> None:
    """Task 16: the colour of the same-species actor introduced last; support = the asked actor's species,
    that actor's species, that actor's colour. The asked actor's colour is never told."""
    species: dict[str, tuple[str, int]] = {}
    color: dict[str, tuple[str, int]] = {}
    for line in story[:-1]:
        m = re.fullmatch(r"(\w+) is (an? )?(\w+)\.", line.text)
        if m.group(2):
            species[m.group(1)] = (m.group(3), line.id)
        else:
            assert m.group(1) in species, f"{line}: colour told before species"
            color[m.group(1)] = (m.group(3), line.id)
    question = story[-1]
    asked = re.fullmatch(r"What color is (\w+)\?", question.text).group(1)
    assert asked in species and asked not in color, question
    same = [a for a in species if a != asked and species[a][0] == species[asked][0]]
    witness = max(same, key=lambda a: species[a][1])
    assert question.answer == (color[witness][0],), question
    assert question.supporting == (species[asked][1], species[witness][1], color[witness][1]), question


CHECKERS = {
    1: check_where_is_actor,
    2: check_where_is_object,
    3: check_where_was_object,
    6: check_is_actor_there,
    15: check_deduction,
    16: check_induction,
}


# --- the simulator ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_round_trip_through_the_file_format(simulated, task):
    stories = simulated[task]
    assert parse_stories(format_stories(stories).splitlines()) == stories


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("n", [1, 7, 300])
def test_exact_question_count_and_story_shape(task, n):
    stories = simulate(task, n, seed=2)
    questions = [sum(line.is_question for line in story) for story in stories]
    assert sum(questions) == n
    assert questions[:-1] == [PER_STORY[task]] * (len(stories) - 1)
    assert 1 <= questions[-1] <= PER_STORY[task]
    for story in stories:
        assert [line.id for line in story] == list(range(1, len(story) + 1))
        assert story[-1].is_question  # a story ends with its last question


@pytest.mark.parametrize("task", TASKS)
def test_deterministic_from_seed_and_no_global_random_state(task):
    np.random.seed(0)
    random.seed(0)
    first = simulate(task, 40, seed=3)
    after = (np.random.random(), random.random())
    np.random.seed(0)
    random.seed(0)
    assert (np.random.random(), random.random()) == after  # simulate drew nothing from the global generators
    assert simulate(task, 40, seed=3) == first
    assert simulate(task, 40, seed=4) != first


@pytest.mark.parametrize("task", TASKS)
def test_answers_and_supporting_facts(simulated, task):
    for story in simulated[task]:
        CHECKERS[task](story)


@needs_real
@pytest.mark.parametrize("task", TASKS)
def test_the_checkers_accept_the_real_files(task):
    """The rules the checkers assert are the real data's rules."""
    (path,) = REAL.glob(f"qa{task}_*_train.txt")
    for story in read_stories(path):
        CHECKERS[task](story)


@needs_real
@pytest.mark.parametrize("task", TASKS)
def test_vocabulary_and_answers_match_the_real_files(task):
    real = read_task(REAL, task, "train")
    sim = examples(simulate(task, len(real), seed=5))
    assert set(build_vocab(sim).tokens) <= set(build_vocab(real).tokens)
    real_answers = Counter(ex.answer_token for ex in real)
    sim_answers = Counter(ex.answer_token for ex in sim)
    assert set(sim_answers) == set(real_answers)
    for answer in real_answers:  # roughly the same share of each answer
        assert abs(sim_answers[answer] - real_answers[answer]) / len(real) < 0.08, answer


@needs_real
@pytest.mark.parametrize("task", TASKS)
def test_story_lengths_match_the_real_files(task):
    def statements(stories):
        return np.mean([sum(not line.is_question for line in story) for story in stories])

    (path,) = REAL.glob(f"qa{task}_*_train.txt")
    real = statements(read_stories(path))
    assert abs(statements(simulate(task, 1000, seed=6)) - real) < 0.2 * real


def test_sample_story_reads_like_babi():
    story = simulate(2, 5, seed=0)[0]
    for line in story:
        if line.is_question:
            assert re.fullmatch(r"Where is the (apple|football|milk)\?", line.text)
        else:
            assert MOVE.fullmatch(line.text) or GET.fullmatch(line.text) or DROP.fullmatch(line.text)


# --- writing files ------------------------------------------------------------------------------------------


def test_write_task_writes_files_read_task_reads(tmp_path):
    train, test = write_task(tmp_path, 1)
    assert (train.name, test.name) == ("qa1_single-supporting-fact_train.txt", "qa1_single-supporting-fact_test.txt")
    assert len(read_task(tmp_path, 1, "train")) == len(read_task(tmp_path, 1, "test")) == 1000
    assert train.read_text() != test.read_text()  # different seeds


@pytest.mark.parametrize("task", TASKS)
def test_write_task_small(tmp_path, task):
    write_task(tmp_path, task, n_train=12, n_test=7, seed=9)
    assert len(read_task(tmp_path, task, "train")) == 12
    assert len(read_task(tmp_path, task, "test")) == 7


def test_write_task_refuses_to_overwrite(tmp_path):
    train, test = write_task(tmp_path, 6, n_train=10, n_test=10)
    before = train.read_text()
    with pytest.raises(FileExistsError, match="overwrite=True"):
        write_task(tmp_path, 6, n_train=10, n_test=10, seed=1)
    assert train.read_text() == before
    test.unlink()  # one file present is enough to refuse, and neither is written
    with pytest.raises(FileExistsError):
        write_task(tmp_path, 6, n_train=10, n_test=10, seed=1)
    assert not test.exists() and train.read_text() == before
    write_task(tmp_path, 6, n_train=10, n_test=10, seed=1, overwrite=True)
    assert train.read_text() != before and test.exists()


# --- bad arguments ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", [0, 4, 20, "1", True])
def test_unknown_task(tmp_path, task):
    with pytest.raises(ValueError, match=r"not simulated.*1 \(single-supporting-fact\).*16 \(basic-induction\)"):
        simulate(task, 10)
    with pytest.raises(ValueError, match="not simulated"):
        write_task(tmp_path, task)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("n", [0, -3, 2.5, "10"])
def test_bad_question_counts(tmp_path, n):
    with pytest.raises(ValueError, match="n_questions must be an integer >= 1"):
        simulate(1, n)
    with pytest.raises(ValueError, match="n_train must be an integer >= 1"):
        write_task(tmp_path, 1, n_train=n)
    with pytest.raises(ValueError, match="n_test must be an integer >= 1"):
        write_task(tmp_path, 1, n_test=n)
    assert not list(tmp_path.iterdir())
