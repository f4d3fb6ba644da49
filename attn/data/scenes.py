"""Generated scenes with a question about one object: "what shape is the red object?".

A scene is a small RGB canvas (black background) with a few shapes of distinct colours at random places, none
overlapping. The question names a colour; the answer is the shape of the object of that colour (``ask="shape"``)
or the quarter of the image it is in (``ask="where"``, which only a model that knows positions can answer).
Because the generator knows where every object is, a model's attention over the image can be scored against the
true object (:meth:`Scenes.target_cells`), as chapter 2 scores alignments against the true ones. Everything is
drawn from a seed; :func:`scene_splits` gives a training set and held-out scenes whose layouts never occur in
training.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import torch

from attn._checks import check, check_nonnegative_int, check_positive_int, check_size, checked

__all__ = ["ASKS", "COLOURS", "QUARTERS", "SHAPES", "Scenes", "make_scenes", "scene_splits", "shape_masks"]

SHAPES = ("square", "circle", "triangle", "cross")
COLOURS = ("red", "green", "blue", "yellow", "magenta", "cyan")
QUARTERS = ("top left", "top right", "bottom left", "bottom right")
ASKS = ("shape", "where")
_RGB = np.array([(1, 0, 0), (0, 1, 0), (0.25, 0.45, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1)], dtype=np.float32)
OBJECT = 7  # every shape is drawn in a 7 x 7 box


def shape_masks() -> np.ndarray:
    """The four shapes as boolean ``(4, 7, 7)`` masks: a filled square, a disc, a triangle, a thin plus sign."""
    y, x = np.mgrid[0:OBJECT, 0:OBJECT] - (OBJECT - 1) / 2  # (7, 7) offsets from the centre
    square = np.ones((OBJECT, OBJECT), dtype=bool)
    circle = x**2 + y**2 <= 3.3**2
    triangle = np.abs(x) <= (y + 3) / 2 + 0.01  # apex at the top row, base at the bottom
    cross = (np.abs(x) < 1) | (np.abs(y) < 1)
    return np.stack([square, circle, triangle, cross])


@dataclass
class Scenes:
    """``N`` scenes: ``images (N, 3, S, S)`` in [0, 1]; per object ``colours``, ``shapes (N, K)`` and ``corners
    (N, K, 2)`` (top-left row, column of its 7 x 7 box); the question ``question (N,)`` (a colour id), the answer
    ``answer (N,)`` (a shape id, or with ``ask="where"`` a quarter of the image) and ``target (N,)``: which of the K
    objects the question is about."""

    images: torch.Tensor
    colours: torch.Tensor
    shapes: torch.Tensor
    corners: torch.Tensor
    question: torch.Tensor
    answer: torch.Tensor
    target: torch.Tensor
    ask: str = "shape"

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitem__(self, index: slice | torch.Tensor | list[int]) -> Scenes:
        """The scenes at ``index`` (an int, a slice, a list or a tensor of indices), as a new :class:`Scenes`: an int
        gives a batch of one scene, never one without its batch axis."""
        if isinstance(index, numbers.Integral) and not isinstance(index, bool):
            if not -len(self) <= index < len(self):
                raise IndexError(f"scene {index} of {len(self)}")
            index = slice(index, index + 1 or None)  # one scene stays a batch of one: (1, 3, S, S)
        fields = [f for f in self.__dataclass_fields__ if f != "ask"]
        return Scenes(**{f: getattr(self, f)[index] for f in fields}, ask=self.ask)

    def object_pixels(self) -> torch.Tensor:
        """``(N, S, S)`` bool: the pixels of the object each question is about."""
        N, _, S, _ = self.images.shape
        masks = torch.from_numpy(shape_masks())[self.shapes[torch.arange(N), self.target]]  # (N, 7, 7)
        out = torch.zeros(N, S + OBJECT, S + OBJECT, dtype=torch.bool)
        rows = self.corners[torch.arange(N), self.target, 0]  # (N,)
        cols = self.corners[torch.arange(N), self.target, 1]
        r = rows[:, None, None] + torch.arange(OBJECT)[None, :, None]  # (N, 7, 1)
        c = cols[:, None, None] + torch.arange(OBJECT)[None, None, :]  # (N, 1, 7)
        out[torch.arange(N)[:, None, None], r, c] = masks
        return out[:, :S, :S]

    def _target_cells_args(self, grid: int) -> None:
        S = self.images.shape[-1]
        check(check_positive_int("grid", grid) and S % grid == 0, f"grid={grid} must divide the image size {S}")

    @checked(_target_cells_args)
    def target_cells(self, grid: int) -> torch.Tensor:
        """``(N, grid * grid)`` bool, row-major: the cells of a ``grid x grid`` partition of the image that hold
        at least one pixel of the object the question is about (the cells attention should go to)."""
        grid, S = int(grid), self.images.shape[-1]
        pixels = self.object_pixels().view(len(self), grid, S // grid, grid, S // grid)
        return pixels.any(dim=(2, 4)).flatten(1)  # (N, grid * grid)

    def question_text(self, i: int) -> str:
        """The question of scene ``i`` in words."""
        colour = COLOURS[int(self.question[i])]
        return f"what shape is the {colour} object?" if self.ask == "shape" else f"where is the {colour} object?"

    def answer_to(self, i: int, question: int) -> str | None:
        """The right answer in words if scene ``i`` were asked about colour ``question``; None without that colour."""
        objects = (self.colours[i] == question).nonzero()
        if len(objects) == 0:
            return None
        k = int(objects[0, 0])
        if self.ask == "shape":
            return SHAPES[int(self.shapes[i, k])]
        centre = self.corners[i, k] + OBJECT / 2
        size = self.images.shape[-1]
        return QUARTERS[2 * int(centre[0] > size / 2) + int(centre[1] > size / 2)]

    def answer_text(self, i: int) -> str:
        """The answer of scene ``i`` in words."""
        return (SHAPES if self.ask == "shape" else QUARTERS)[int(self.answer[i])]


def _layout(rng: np.random.Generator, size: int, objects: int) -> np.ndarray:
    """``(objects, 2)`` top-left corners of 7 x 7 boxes, at least one pixel apart (rejection sampling; the boxes
    placed first can leave no room for the next, so after 1,000 misses the layout starts again)."""
    corners: list[tuple[int, int]] = []
    misses = 0
    while len(corners) < objects:
        r, c = (int(v) for v in rng.integers(0, size - OBJECT + 1, 2))
        if all(abs(r - r2) > OBJECT or abs(c - c2) > OBJECT for r2, c2 in corners):
            corners.append((r, c))
        else:
            misses += 1
            if misses == 1_000:
                corners, misses = [], 0
    return np.array(corners)


def _draw(rng: np.random.Generator, n: int, size: int, objects: int) -> tuple[np.ndarray, ...]:
    masks = shape_masks()
    images = np.zeros((n, 3, size, size), dtype=np.float32)
    colours = np.stack([rng.choice(len(COLOURS), objects, replace=False) for _ in range(n)])  # (n, K)
    shapes = rng.integers(0, len(SHAPES), (n, objects))
    corners = np.stack([_layout(rng, size, objects) for _ in range(n)])  # (n, K, 2)
    brightness = rng.uniform(0.7, 1.0, (n, objects)).astype(np.float32)
    for i in range(n):
        for k in range(objects):
            r, c = corners[i, k]
            paint = _RGB[colours[i, k]][:, None, None] * brightness[i, k]  # (3, 1, 1)
            box = images[i, :, r : r + OBJECT, c : c + OBJECT]
            box[:] = np.where(masks[shapes[i, k]], paint, box)
    target = rng.integers(0, objects, n)
    return images, colours, shapes, corners, target


def _make_scenes_args(n: int, seed: int, *, size: int = 24, objects: int = 3, ask: str = "shape") -> None:
    check(ask in ASKS, lambda: f"ask must be one of {ASKS}, got {ask!r}")
    check_positive_int("n", n)
    check_positive_int("size", size)
    check_positive_int("objects", objects)
    check(objects <= len(COLOURS), f"objects={objects}: a scene's colours are distinct, so at most {len(COLOURS)}")
    per_side = (size + 1) // (OBJECT + 1)
    fits = size >= OBJECT and objects <= max(per_side**2, 1)
    check(fits, f"{objects} objects of {OBJECT} x {OBJECT} pixels do not fit on a {size} x {size} canvas")
    check_nonnegative_int("seed", seed)
    check_size(f"{n} scenes of {size} x {size} pixels", n * 3 * size * size)


@checked(_make_scenes_args)
def make_scenes(n: int, seed: int, *, size: int = 24, objects: int = 3, ask: str = "shape") -> Scenes:
    """``n`` scenes of ``size x size`` pixels with ``objects`` shapes each, drawn from ``seed``; each question asks
    for the shape of one object, or with ``ask="where"`` for the quarter of the image its centre is in."""
    n, size, objects = int(n), int(size), int(objects)
    images, colours, shapes, corners, target = _draw(np.random.default_rng(seed), n, size, objects)
    rows = np.arange(n)
    centre = corners[rows, target] + OBJECT / 2  # (n, 2): row, column
    quarter = 2 * (centre[:, 0] > size / 2) + (centre[:, 1] > size / 2)
    t = torch.from_numpy
    return Scenes(
        images=t(images),
        colours=t(colours),
        shapes=t(shapes),
        corners=t(corners),
        question=t(colours[rows, target]),
        answer=t(shapes[rows, target] if ask == "shape" else quarter),
        target=t(target),
        ask=ask,
    )


def _layouts(scenes: Scenes) -> list[bytes]:
    """One key per scene: its objects' colours, shapes and places, in the order of their colours."""
    order = scenes.colours.argsort(dim=1)  # (N, K): the same scene listed in another order gets the same key
    shapes, corners = scenes.shapes.gather(1, order), scenes.corners.gather(1, order[..., None].expand(-1, -1, 2))
    keys = torch.cat([scenes.colours.gather(1, order), shapes, corners.flatten(1)], dim=1).numpy()
    return [row.tobytes() for row in keys]


def _scene_splits_args(
    train: int, test: int, seed: int, *, size: int = 24, objects: int = 3, ask: str = "shape"
) -> None:
    check_positive_int("train", train)
    check_positive_int("test", test)
    _make_scenes_args(train, seed, size=size, objects=objects, ask=ask)
    _make_scenes_args(test, seed + 1_000_003, size=size, objects=objects, ask=ask)


@checked(_scene_splits_args)
def scene_splits(
    train: int, test: int, seed: int, *, size: int = 24, objects: int = 3, ask: str = "shape"
) -> tuple[Scenes, Scenes]:
    """``train`` scenes and ``test`` held-out scenes from one ``seed``; no held-out scene repeats the layout (the
    colours, shapes and places of its objects) of a training scene (so, in the rare case of a repeat, there are
    fewer than ``test``)."""
    training = make_scenes(train, seed, size=size, objects=objects, ask=ask)
    held_out = make_scenes(test, seed + 1_000_003, size=size, objects=objects, ask=ask)
    seen = set(_layouts(training))
    fresh = [i for i, key in enumerate(_layouts(held_out)) if key not in seen]
    return training, held_out[torch.tensor(fresh, dtype=torch.long)]
