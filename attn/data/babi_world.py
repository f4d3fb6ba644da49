"""A bAbI simulator: a small world of actors, objects and places that tells stories and asks questions.

It writes six of the twenty bAbI tasks (Weston et al. 2015) in the format of the real files, with the real
files' names, vocabulary, sentence templates and question forms, and with supporting-fact ids that point at
the statements a question needs. Generation is deterministic from a seed (its own ``numpy`` generator).

Every rule below was checked against the bAbI 1k files (v1.2), not against the released Lua generator,
which differs from the data in several places:

- **the world is hidden**: actors and objects start in random places that no sentence mentions, so people
  can pick things up before the story has said where they are (as in the real files). Nothing said ever
  contradicts the true state: an actor only moves to another place, only gets an object lying where they
  are, and only drops what they carry;
- **questions come in slots**: after every two statements the story asks one question if a question is
  possible, and otherwise tells two more (tasks 2, 3 and 6; task 1 always asks);
- **questions are about recent things**: the newest supporting fact of every question (in tasks 2 and 3,
  the object's latest get/drop) is among the last five statements;
- **the location of a carried object is known only from moves after it was picked up**; an object
  dropped by someone whose place was told lies where that person was last said to be.

There is no deliberate difference in what is asked or how it is answered: a checker that replays the
stories (``tests/test_babi_world.py``) accepts the real files and the simulated ones alike. Where the real
generator's process is unknown, a simple rule reproduces the real files' statistics; those places are marked
``Approximation:`` in the comments.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from attn._checks import check, check_nonnegative_int, checked
from attn.data.babi import Line, Story, write_stories

__all__ = ["SIMULATED_TASKS", "simulate", "write_task"]

SIMULATED_TASKS: dict[int, str] = {
    1: "single-supporting-fact",
    2: "two-supporting-facts",
    3: "three-supporting-facts",
    6: "yes-no-questions",
    15: "basic-deduction",
    16: "basic-induction",
}

ACTORS = ("Daniel", "John", "Mary", "Sandra")
PLACES = ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
OBJECTS = ("apple", "football", "milk")
MOVES = ("moved to", "went to", "journeyed to", "travelled to", "went back to")
GETS = ("got", "grabbed", "picked up", "took")
DROPS = ("dropped", "discarded", "put down", "left")

RECENT = 5  # the newest supporting fact of a question is among the last 5 statements
THERE = 0.2  # share of "... the apple there." where "there" is optional (real files: 19-21%)
# Approximation: a statement is a move with this chance, else a get/drop drawn uniformly among the valid ones;
# tuned so that moves, gets and drops are 64/20/16% (task 2), 63/19/18% (3) and 67/22/12% (6) of the
# statements, as in the real files (the released Lua code's 1/3 moves would give far fewer).
P_MOVE = {2: 0.62, 3: 0.62, 6: 0.65}

# Task 15: the animals with their plurals; task 16: species and colours.
ANIMALS = {"mouse": "mice", "sheep": "sheep", "wolf": "wolves", "cat": "cats"}
DEDUCTION_ACTORS = ("Gertrude", "Winona", "Jessica", "Emily")
INDUCTION_ACTORS = ("Lily", "Bernhard", "Greg", "Julius", "Brian")
SPECIES = ("swan", "lion", "frog", "rhino")
COLORS = ("gray", "white", "yellow", "green")
# Size of the asked actor's species group in task 16 (real files: 89%, 9.7%, 1.3%; never 3).
SPECIES_GROUP = ((2, 0.89), (4, 0.097), (5, 0.013))
SPECIES_COLOR = 0.7  # chance that an actor has its species' colour (real files: 60% of same-species pairs agree)


def _pick(rng: np.random.Generator, options: Sequence):
    """One element of ``options``, uniformly."""
    return options[int(rng.integers(len(options)))]


@dataclass
class World:
    """The true state of actors and objects, what the story has told about it so far, and the story."""

    rng: np.random.Generator
    lines: list[Line] = field(default_factory=list)
    at: dict[str, str] = field(default_factory=dict)  # actor -> true place
    lying: dict[str, str] = field(default_factory=dict)  # object not carried -> true place
    holder: dict[str, str] = field(default_factory=dict)  # carried object -> actor
    told: dict[str, tuple[str, int]] = field(default_factory=dict)  # actor -> (place, id) of latest move
    event: dict[str, int] = field(default_factory=dict)  # object -> id of its latest get/drop statement
    carried: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # object -> moves since its get
    dropped: dict[str, tuple[str, int] | None] = field(default_factory=dict)  # object -> dropper's told place
    statements: list[int] = field(default_factory=list)
    actor_of: dict[int, str] = field(default_factory=dict)  # statement id -> its actor

    def __post_init__(self) -> None:
        self.at = {a: _pick(self.rng, PLACES) for a in ACTORS}
        self.lying = {o: _pick(self.rng, PLACES) for o in OBJECTS}

    def tell(self, text: str, actor: str | None = None) -> int:
        """Append a statement; return its id."""
        line_id = len(self.lines) + 1
        self.lines.append(Line(line_id, text))
        self.statements.append(line_id)
        if actor is not None:
            self.actor_of[line_id] = actor
        return line_id

    def ask(self, text: str, answer: str, supporting: Sequence[int]) -> None:
        """Append a question with its answer and supporting statement ids."""
        self.lines.append(Line(len(self.lines) + 1, text, (answer,), tuple(supporting)))

    def recent(self, line_id: int | None) -> bool:
        """Whether ``line_id`` is one of the last ``RECENT`` statements."""
        return line_id is not None and line_id in self.statements[-RECENT:]

    def move(self, actor: str) -> None:
        """``actor`` goes to another place, and so does everything they carry."""
        place = _pick(self.rng, [p for p in PLACES if p != self.at[actor]])
        self.at[actor] = place
        line_id = self.tell(f"{actor} {_pick(self.rng, MOVES)} the {place}.", actor)
        self.told[actor] = (place, line_id)
        for obj, who in self.holder.items():
            if who == actor:
                self.carried[obj].append((place, line_id))

    def get(self, actor: str, obj: str, there: bool) -> None:
        """``actor`` picks up ``obj``, which lies where they are."""
        del self.lying[obj]
        self.holder[obj] = actor
        suffix = " there" if there else ""
        self.event[obj] = self.tell(f"{actor} {_pick(self.rng, GETS)} the {obj}{suffix}.", actor)
        self.carried[obj] = []

    def drop(self, actor: str, obj: str, there: bool) -> None:
        """``actor`` puts down ``obj``, which they carry."""
        del self.holder[obj]
        self.lying[obj] = self.at[actor]
        suffix = " there" if there else ""
        self.event[obj] = self.tell(f"{actor} {_pick(self.rng, DROPS)} the {obj}{suffix}.", actor)
        self.dropped[obj] = self.told.get(actor)

    def act(self, p_move: float, there_get: float) -> None:
        """One random valid event: a move with chance ``p_move``, else a get or drop (uniform over valid ones)."""
        gets = [("get", a, o) for o, p in self.lying.items() for a in ACTORS if self.at[a] == p]
        drops = [("drop", a, o) for o, a in self.holder.items()]
        if self.rng.random() < p_move or not gets + drops:
            self.move(_pick(self.rng, ACTORS))
            return
        kind, actor, obj = _pick(self.rng, gets + drops)
        if kind == "get":
            self.get(actor, obj, there=bool(self.rng.random() < there_get))
        else:
            self.drop(actor, obj, there=bool(self.rng.random() < THERE))

    def object_place(self, obj: str) -> tuple[str, tuple[int, int]] | None:
        """Where the story says ``obj`` is, with (get/drop id, move id), or None if it has not said."""
        if obj in self.holder:
            if not self.carried.get(obj):  # Carried, but not seen moving since the get: unknown.
                return None
            place, move_id = self.carried[obj][-1]
        elif (dropped := self.dropped.get(obj)) is not None:
            place, move_id = dropped
        else:
            return None
        return place, (self.event[obj], move_id)


def _single_supporting_fact(rng: np.random.Generator, n_questions: int) -> Story:
    """Task 1: two moves, then "Where is Mary?" about the actor of one of the last five statements."""
    world = World(rng)
    for _ in range(n_questions):
        for _ in range(2):
            world.move(_pick(rng, ACTORS))
        actor = world.actor_of[_pick(rng, world.statements[-RECENT:])]
        place, line_id = world.told[actor]
        world.ask(f"Where is {actor}?", place, (line_id,))
    return world.lines


def _two_supporting_facts(rng: np.random.Generator, n_questions: int) -> Story:
    """Task 2: "Where is the football?"; support = its latest get/drop, then the carrier's move."""
    world = World(rng)
    asked = 0
    while asked < n_questions:
        for _ in range(2):
            world.act(P_MOVE[2], there_get=1.0)
        known = {o: world.object_place(o) for o in OBJECTS if world.recent(world.event.get(o))}
        candidates = [o for o, answer in known.items() if answer is not None]
        if candidates:
            obj = _pick(rng, candidates)
            place, support = cast(tuple[str, tuple[int, int]], known[obj])  # a candidate: not None
            world.ask(f"Where is the {obj}?", place, support)
            asked += 1
    return world.lines


def _three_supporting_facts(rng: np.random.Generator, n_questions: int) -> Story:
    """Task 3: "Where was the apple before the kitchen?" about the moves of its latest carrier."""
    world = World(rng)
    asked = 0
    while asked < n_questions:
        for _ in range(2):
            world.act(P_MOVE[3], there_get=THERE)
        candidates = [o for o in OBJECTS if world.recent(world.event.get(o)) and len(world.carried.get(o, ())) >= 2]
        if candidates:
            obj = _pick(rng, candidates)
            moves = world.carried[obj]
            # As in the real files, the step asked about is any step of the carrier's trip since the get, not
            # always the last one, and "before the X" may be ambiguous when the trip visits X twice; support =
            # latest get/drop, move to X, move before it. Approximation: step j of the trip has weight j (the
            # real files favour later steps about this much; their rule is unknown).
            steps = np.arange(1, len(moves))
            j = int(rng.choice(steps, p=steps / steps.sum()))
            (before, before_id), (place, place_id) = moves[j - 1], moves[j]
            world.ask(f"Where was the {obj} before the {place}?", before, (world.event[obj], place_id, before_id))
            asked += 1
    return world.lines


def _yes_no_questions(rng: np.random.Generator, n_questions: int) -> Story:
    """Task 6: "Is Daniel in the hallway?" about an actor who moved recently; half the answers are no."""
    world = World(rng)
    asked = 0
    while asked < n_questions:
        for _ in range(2):
            world.act(P_MOVE[6], there_get=1.0)
        candidates = [a for a in ACTORS if a in world.told and world.recent(world.told[a][1])]
        if candidates:  # Approximation: uniform (the real files slightly favour the latest mover)
            actor = _pick(rng, candidates)
            place, line_id = world.told[actor]
            yes = bool(rng.random() < 0.5)
            asked_place = place if yes else _pick(rng, [p for p in PLACES if p != place])
            world.ask(f"Is {actor} in the {asked_place}?", "yes" if yes else "no", (line_id,))
            asked += 1
    return world.lines


def _ordered(rng: np.random.Generator, n_facts: int, after: dict[int, int]) -> list[int]:
    """An order of facts ``0 .. n_facts - 1`` told one at a time, each chosen uniformly among those whose
    prerequisite (fact ``after[i]``, if any) has been told."""
    order: list[int] = []
    left = set(range(n_facts))
    while left:
        ready = sorted(i for i in left if after.get(i) is None or after[i] in order)
        order.append(_pick(rng, ready))
        left.discard(order[-1])
    return order


def _basic_deduction(rng: np.random.Generator, n_questions: int) -> Story:
    """Task 15: "Sheep are afraid of wolves. Gertrude is a sheep. What is gertrude afraid of?" (4 questions)."""
    animals = list(ANIMALS)
    fears = {a: _pick(rng, [b for b in animals if b != a]) for a in animals}
    kinds = {name: _pick(rng, animals) for name in DEDUCTION_ACTORS}
    facts = [f"{ANIMALS[a].capitalize()} are afraid of {ANIMALS[fears[a]]}." for a in animals]
    facts += [f"{name} is a {kind}." for name, kind in kinds.items()]
    # As in the real files, "X is a sheep." comes after "Sheep are afraid of ...". Approximation: the order
    # (each fact drawn among those allowed) gives the real files' order statistics to within 1-4 points.
    after = {len(animals) + i: animals.index(kind) for i, kind in enumerate(kinds.values())}
    order = _ordered(rng, len(facts), after)
    line_of = {fact: n + 1 for n, fact in enumerate(order)}
    lines = [Line(n + 1, facts[fact]) for n, fact in enumerate(order)]
    for _ in range(n_questions):
        name = _pick(rng, DEDUCTION_ACTORS)
        kind = kinds[name]
        support = (line_of[len(animals) + DEDUCTION_ACTORS.index(name)], line_of[animals.index(kind)])
        lines.append(Line(len(lines) + 1, f"What is {name.lower()} afraid of?", (fears[kind],), support))
    return lines


def _basic_induction(rng: np.random.Generator, n_questions: int) -> Story:
    """Task 16: "Lily is a swan. Lily is white. Bernhard is a swan. What color is Bernhard?" (1 question)."""
    del n_questions  # one question per story
    actors = INDUCTION_ACTORS
    n = len(actors)
    # Fact i < n is "actors[i] is a swan.", fact n + i is "actors[i] is white." and comes after it. The asked
    # actor is the one whose colour would have been told last (this gives the real files' order statistics).
    order = _ordered(rng, 2 * n, {n + i: i for i in range(n)})
    asked = order.pop() - n
    # Approximation: the asked actor shares its species with 1, 3 or 4 others (real files: 89%, 9.7%, 1.3%;
    # never 2); the others' species are drawn among the other three.
    sizes, weights = zip(*SPECIES_GROUP, strict=True)
    size = int(rng.choice(sizes, p=np.array(weights) / sum(weights)))
    group = {asked, *(int(i) for i in rng.choice([i for i in range(n) if i != asked], size - 1, replace=False))}
    kind = _pick(rng, SPECIES)
    species = [kind if i in group else _pick(rng, [s for s in SPECIES if s != kind]) for i in range(n)]
    # As in the real files, an actor has its species' colour only most of the time (approximation: with chance
    # SPECIES_COLOR), and the answer is the colour of the same-species actor introduced last: its two
    # statements are the support, after the asked actor's species.
    species_color = {s: _pick(rng, COLORS) for s in SPECIES}
    colors = [species_color[s] if rng.random() < SPECIES_COLOR else _pick(rng, COLORS) for s in species]
    line_of = {fact: line_id for line_id, fact in enumerate(order, start=1)}
    lines = [
        Line(line_id, f"{actors[f]} is a {species[f]}." if f < n else f"{actors[f - n]} is {colors[f - n]}.")
        for line_id, f in enumerate(order, start=1)
    ]
    witness = max(group - {asked}, key=lambda i: line_of[i])
    support = (line_of[asked], line_of[witness], line_of[n + witness])
    lines.append(Line(len(lines) + 1, f"What color is {actors[asked]}?", (colors[witness],), support))
    return lines


# Task -> (story generator, questions per story), as in the real files.
_GENERATORS: dict[int, tuple[Callable[[np.random.Generator, int], Story], int]] = {
    1: (_single_supporting_fact, 5),
    2: (_two_supporting_facts, 5),
    3: (_three_supporting_facts, 5),
    6: (_yes_no_questions, 5),
    15: (_basic_deduction, 4),
    16: (_basic_induction, 1),
}


def _check_task(task: int) -> None:
    """Raise ``ValueError`` naming the simulated tasks unless ``task`` is one of them."""
    listing = ", ".join(f"{t} ({name})" for t, name in SIMULATED_TASKS.items())
    check(task in SIMULATED_TASKS and not isinstance(task, bool),
          lambda: f"task {task!r} is not simulated; the simulated tasks are {listing}")  # fmt: skip


def _check_count(name: str, value: int) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer >= 1."""
    check(not isinstance(value, bool) and isinstance(value, numbers.Integral) and value >= 1,
          lambda: f"{name} must be an integer >= 1, got {value!r}")  # fmt: skip


def _simulate_args(task: int, n_questions: int, seed: int = 0) -> None:
    _check_task(task)
    _check_count("n_questions", n_questions)
    check_nonnegative_int("seed", seed)


@checked(_simulate_args)
def simulate(task: int, n_questions: int, seed: int = 0) -> list[Story]:
    """Stories of bAbI ``task`` with exactly ``n_questions`` questions in all, deterministic from ``seed``."""
    generate, per_story = _GENERATORS[task]
    rng = np.random.default_rng(seed)
    stories = []
    left = n_questions
    while left > 0:
        stories.append(generate(rng, min(per_story, left)))
        left -= min(per_story, left)
    return stories


def _write_task_args(
    data_dir: str | Path, task: int, n_train: int = 1000, n_test: int = 1000, seed: int = 0, *, overwrite: bool = False
) -> None:
    _check_task(task)
    _check_count("n_train", n_train)
    _check_count("n_test", n_test)


@checked(_write_task_args)
def write_task(
    data_dir: str | Path, task: int, n_train: int = 1000, n_test: int = 1000, seed: int = 0, *, overwrite: bool = False
) -> tuple[Path, Path]:
    """Write ``qa{task}_{name}_train.txt`` and ``_test.txt`` into ``data_dir``; return their paths."""
    data_dir = Path(data_dir)
    paths = tuple(data_dir / f"qa{task}_{SIMULATED_TASKS[task]}_{split}.txt" for split in ("train", "test"))
    existing = [str(p) for p in paths if p.exists()]
    if existing and not overwrite:
        raise FileExistsError(f"{', '.join(existing)} exist(s); pass overwrite=True to replace")
    train_seed, test_seed = (int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(2))
    write_stories(simulate(task, n_train, train_seed), paths[0], overwrite=overwrite)
    write_stories(simulate(task, n_test, test_seed), paths[1], overwrite=overwrite)
    return paths[0], paths[1]
