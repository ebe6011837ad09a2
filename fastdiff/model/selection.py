"""Which steps and buffers a comparison looks at: ``Selection`` (``--steps``,
``--names``), and the parser of a ``--steps`` value.

Part of the result model: a report holds the selection it was made under.
"""

from __future__ import annotations

from .value import Value

#: The most digits a step number given to ``--steps`` may have (as a dump's
#: name may: ``sources.names.MAX_STEP_DIGITS``).
MAX_STEP_DIGITS = 600


def parse_steps(text: str) -> tuple[int, int | None]:
    """``--steps``' value as a half-open range ``(start, stop)``, as a Python
    slice reads it: ``3`` is step 3 alone, ``3:8`` steps 3 to 7, ``3:`` step 3
    and every later one (``stop`` None), ``:8`` steps 0 to 7. Steps are
    decimal integers >= 0 (ASCII digits); a range that holds no step is a
    ValueError, as is anything else."""
    body = text.strip()
    lo, colon, hi = body.partition(":")
    for part in (lo, hi):
        if part and not (part.isascii() and part.isdigit()):
            raise ValueError(
                f"not a step or step range: {text!r} (examples: 3, 3:8 for steps 3 to 7, 3: "
                "for step 3 on, :8 for steps before 8)"
            )
        if len(part) > MAX_STEP_DIGITS:
            raise ValueError(f"a step number of {len(part):,} digits: {text[:20]!r}...")
    if not colon:
        if not lo:
            raise ValueError("an empty step range: give a step (3) or a range (3:8)")
        return int(lo), int(lo) + 1
    if not lo and not hi:
        raise ValueError(f"{text!r} selects every step: leave --steps out to compare them all")
    start, stop = int(lo or 0), (int(hi) if hi else None)
    if stop is not None and stop <= start:
        raise ValueError(
            f"{text!r} holds no step: START:STOP is half-open, as a Python slice (3:8 is "
            f"steps 3 to 7), so STOP must be greater than START"
        )
    return start, stop


def _spans(steps: object) -> tuple[tuple[int, int | None], ...]:
    """Selection's ``steps`` as sorted, merged half-open spans."""
    items = [steps] if isinstance(steps, str | int | range) else steps
    if not isinstance(items, list | tuple | set | frozenset):
        raise TypeError(
            "Selection: steps must be a step (int), a range, a string such as '3:8', or a "
            f"list of them, got {type(steps).__name__}"
        )
    spans: list[tuple[int, int | None]] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | range):
            raise TypeError(
                "Selection: each step must be an int, a range or a string such as '3:8', got "
                f"{item!r}"
            )
        if isinstance(item, str):
            spans.append(parse_steps(item))
        elif isinstance(item, int):
            if item < 0:
                raise ValueError(f"Selection: steps are >= 0, got {item}")
            spans.append((item, item + 1))
        else:
            if item.step != 1 or item.start < 0 or not len(item):
                raise ValueError(
                    f"Selection: a range of steps >= 0, one apart and not empty, got {item!r}"
                )
            spans.append((item.start, item.stop))
    if not spans:
        raise ValueError("Selection: no step given (None compares every step)")
    spans.sort(key=lambda s: s[0])
    merged = [spans[0]]
    for start, stop in spans[1:]:
        last_start, last_stop = merged[-1]
        if last_stop is None or start <= last_stop:  # overlapping or adjacent: one span
            end = None if last_stop is None or stop is None else max(last_stop, stop)
            merged[-1] = (last_start, end)
        else:
            merged.append((start, stop))
    return tuple(merged)


class Selection(Value):
    """Which steps and buffers a comparison looks at (an immutable value):
    what is not selected is neither listed nor read, and the report, its
    verdict included, is about what is.

    ``steps``: a step (``3``), a ``range`` (``range(3, 8)``: steps 3 to 7), a
    string as ``--steps`` takes it (``"3"``, ``"3:8"``, ``"3:"``, ``":8"``;
    half-open, as a Python slice), or a list of them (their union); kept as
    sorted, merged half-open spans ``(start, stop)``, ``stop`` None for no
    end. None: every step. ``names``: glob patterns (``*``, ``?``, ``[...]``,
    matched as a schema's members are, case-sensitive), one of which a
    buffer's name must match; None: every buffer.
    """

    __slots__ = ("names", "steps")

    steps: tuple[tuple[int, int | None], ...] | None
    names: tuple[str, ...] | None

    def __init__(self, steps: object = None, names: object = None) -> None:
        self.steps = None if steps is None else _spans(steps)
        if names is not None:
            if isinstance(names, str):
                names = (names,)
            if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
                raise TypeError(f"Selection: names must be glob strings, got {names!r}")
            if not names:
                raise ValueError("Selection: no name given (None compares every buffer)")
            names = tuple(dict.fromkeys(names))
        self.names = names

    def __repr__(self) -> str:
        return f"Selection(steps={self.steps!r}, names={self.names!r})"

    def wants_step(self, step: int) -> bool:
        """Whether ``step`` is selected."""
        if self.steps is None:
            return True
        return any(start <= step and (stop is None or step < stop) for start, stop in self.steps)

    def wants_name(self, name: str) -> bool:
        """Whether a buffer of this name is selected."""
        if self.names is None:
            return True
        from fnmatch import fnmatchcase

        return any(fnmatchcase(name, pattern) for pattern in self.names)

    def options(self) -> str:
        """The selection as the options that ask for it: ``--steps 3:8 --names 'w*'``."""
        parts = []
        for start, stop in self.steps or ():
            if stop == start + 1:
                parts.append(f"--steps {start}")
            else:
                parts.append(f"--steps {start or ''}:{'' if stop is None else stop}")
        parts += [f"--names {_quoted(n)}" for n in self.names or ()]
        return " ".join(parts)


#: Characters a shell word may hold unquoted (``shlex.quote``'s, without importing ``re``).
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def _quoted(word: str) -> str:
    """``word`` as a shell reads it back (``shlex.quote``)."""
    if word and set(word) <= _SAFE:
        return word
    return "'" + word.replace("'", "'\\''") + "'"
