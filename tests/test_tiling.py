"""``buffers.tiling_problem`` (do a tensor's chunks tile its shape?) against
a plain reference that counts how often each element is covered, on random
shapes and chunkings: grids, grids spoilt (a chunk moved, dropped, doubled,
grown), and random boxes; through both of its overlap checks (the grid of
boundaries, and pair by pair); and in bounded time on the layouts that
once made it quadratic."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff.sources import buffers
from fastdiff.sources.buffers import tiling_problem

Box = tuple[tuple[int, ...], tuple[int, ...]]


def tiles(shape: tuple[int, ...], boxes: list[Box]) -> bool:
    """The reference: every chunk within the shape, every element in exactly one."""
    seen: dict[tuple[int, ...], int] = {}
    for start, size in boxes:
        if any(s + n > d for s, n, d in zip(start, size, shape, strict=True)):
            return False
        for at in itertools.product(*(range(s, s + n) for s, n in zip(start, size, strict=True))):
            seen[at] = seen.get(at, 0) + 1
    return all(seen.get(at, 0) == 1 for at in itertools.product(*(range(d) for d in shape)))


@st.composite
def layouts(draw: st.DrawFn) -> tuple[tuple[int, ...], list[Box]]:
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    if draw(st.booleans()):  # random boxes, some of size 0
        boxes = []
        for _ in range(draw(st.integers(0, 6))):
            start = tuple(draw(st.integers(0, d)) for d in shape)
            size = tuple(draw(st.integers(0, d)) for d in shape)
            boxes.append((start, size))
        return shape, boxes
    bounds = [
        [0, *sorted(draw(st.sets(st.integers(1, d - 1), max_size=3))), d] if d > 1 else [0, d]
        for d in shape
    ]
    boxes = [
        (tuple(lo for lo, _ in box), tuple(hi - lo for lo, hi in box))
        for box in itertools.product(*(list(itertools.pairwise(b)) for b in bounds))
    ]
    spoil = draw(st.sampled_from(["none", "move", "drop", "double", "grow", "split"]))
    i = draw(st.integers(0, len(boxes) - 1))
    start, size = boxes[i]
    k = draw(st.integers(0, len(shape) - 1))
    if spoil == "move":
        boxes[i] = (tuple(s + (j == k) for j, s in enumerate(start)), size)
    elif spoil == "drop":
        boxes.pop(i)
    elif spoil == "double":
        boxes.append(boxes[i])
    elif spoil == "grow":
        boxes[i] = (start, tuple(n + (j == k) for j, n in enumerate(size)))
    elif spoil == "split" and size[k] > 1:  # still a tiling: one chunk cut in two
        a = size[k] // 2
        boxes[i] = (start, tuple(a if j == k else n for j, n in enumerate(size)))
        boxes.append(
            (
                tuple(s + a if j == k else s for j, s in enumerate(start)),
                tuple(n - a if j == k else n for j, n in enumerate(size)),
            )
        )
    return shape, boxes


@settings(max_examples=600, deadline=None)
@given(layout=layouts(), by_pairs=st.booleans())
def test_tiling_problem_agrees_with_counting_elements(
    layout: tuple[tuple[int, ...], list[Box]], by_pairs: bool
) -> None:
    shape, boxes = layout
    with pytest.MonkeyPatch.context() as m:
        m.setattr(buffers, "_FEW", 0)  # not the few chunks' shortcut: one of the two checks
        if by_pairs:  # no grid is small enough: every overlap is looked for pair by pair
            m.setattr(buffers, "_CELLS", 0)
        problem = tiling_problem(shape, boxes)
    assert (problem is None) == tiles(shape, boxes), (shape, boxes, problem)
    if problem is not None:
        assert "\n" not in problem


@settings(max_examples=300, deadline=None)
@given(layout=layouts())
def test_few_chunks_agree_with_counting_elements(layout: tuple[tuple[int, ...], list[Box]]) -> None:
    shape, boxes = layout
    assert (tiling_problem(shape, boxes) is None) == tiles(shape, boxes), (shape, boxes)


def _row(n: int) -> list[Box]:
    return [((0, j), (1, 1)) for j in range(n)]


@pytest.mark.parametrize(
    ("shape", "boxes", "want"),
    [
        ((1, 16384), _row(16384), None),  # chunks side by side along dimension 1
        ((1, 16384), [*_row(16383), ((0, 0), (1, 1))], "overlap"),
        ((128, 128), [((i, j), (1, 1)) for i in range(128) for j in range(128)], None),
        ((16385, 16385), [((i, i), (1, 1)) for i in range(16384)], "elements"),
    ],
)
def test_large_tilings_are_checked(
    shape: tuple[int, ...], boxes: list[Box], want: str | None
) -> None:
    """Layouts of 16,384 chunks (which pair by pair once took minutes: this
    test would not end) are decided on the grid of their boundaries."""
    problem = tiling_problem(shape, boxes)
    assert (problem is None) if want is None else (want in str(problem))


def test_a_tiling_too_irregular_to_check_is_refused_not_passed() -> None:
    """Column j cut at row 2n - j: a tiling whose boundaries make a grid of
    9 M cells, and whose first strips all share rows (4.5 M pairs to look
    at): refused as too irregular to check, never passed unchecked."""

    def strips(n: int) -> list[Box]:
        return [((0, j), (2 * n - j, 1)) for j in range(n)] + [
            ((2 * n - j, j), (j, 1)) for j in range(n)
        ]

    n = 3000
    boxes = strips(n)
    assert tiles((4, 2), strips(2))
    problem = tiling_problem((2 * n, n), boxes)
    assert problem is not None and "too irregularly" in problem
