"""A trace's dataflow: every record's inputs, written as a schema file.

``Dataflow`` gathers, step after step, what each record read: the records
that made its input tensors (``name``; ``name@prev`` for one made at the
step before: state carried between steps). A record recorded at several
steps lists the union of what it read at each, first seen first: a record
is an origin only where every input it ever read matched. Inputs left
unknown at some step (a tensor made by code the trace does not see) make
the record's inputs unknown (``None``: no role), never a guess.

Within one step a record reads only records made before it, so one step's
inputs form no cycle; steps that ran their ops in different orders could
close one between them (the schema file refuses it): such an input is left
out where it is first met, and counted (``dropped``).

``to_schema`` makes the schema ``compare`` reads (``sources.traced``): a
group per kind of record (``tracenames.GROUPS``, in pipeline order), each
record an exact member with its dtype and inputs. ``write`` writes it,
atomically, into the run folder (``names.DATAFLOW``). Pure but for
``write``: no torch.
"""

from __future__ import annotations

import contextlib
import os

from ..schema import PREV, Group, Member, Schema, literal_pattern
from ..sources.names import DATAFLOW, TEMP_PREFIX
from ..tracenames import GROUPS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    #: A record of one step: (name, dtype, inputs as written, or None: unknown).
    StepRecord = tuple[str, str, tuple[str, ...] | None]

__all__ = ["Dataflow", "schema_name"]


def schema_name(level: str) -> str:
    """The name of a trace's dataflow schema (the report's ``schema``)."""
    return f"traced dataflow ({level} level)"


class Dataflow:
    """The inputs of every record traced so far (see the module's doc).
    ``changed``: something was added since the file was last written."""

    __slots__ = ("_dtypes", "_inputs", "_last", "changed", "dropped", "level")

    def __init__(self, level: str) -> None:
        self.level = level
        #: name -> its inputs (insertion-ordered), or None: unknown.
        self._inputs: dict[str, dict[str, None] | None] = {}
        self._dtypes: dict[str, str] = {}
        #: name -> the inputs it was last added with: a step like the last one costs a compare.
        self._last: dict[str, tuple[str, ...] | None] = {}
        self.changed = False
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._inputs)

    def inputs_of(self, name: str) -> tuple[str, ...] | None:
        """The inputs of record ``name`` so far (None: unknown); KeyError if none."""
        found = self._inputs[name]
        return None if found is None else tuple(found)

    def add_step(self, records: Iterable[StepRecord]) -> None:
        """Add one step's records, in the order they were made."""
        known = self._inputs
        checked = bool(known)  # edges across steps could close a cycle; within one, never
        last = self._last
        for name, dtype, inputs in records:
            if last.get(name, ()) == inputs and name in known:
                continue  # the usual case: read what it read the step before
            last[name] = inputs
            if name not in known:
                self._dtypes[name] = dtype
                self.changed = True
                if inputs is None:
                    known[name] = None
                    continue
                if checked:
                    known[name] = {}
                    for written in inputs:
                        self._add(name, written)
                else:
                    known[name] = dict.fromkeys(inputs)
                continue
            before = known[name]
            if before is None:
                continue
            if inputs is None:
                known[name] = None
                self.changed = True
                continue
            for written in inputs:
                if written not in before:
                    self._add(name, written)

    def _add(self, name: str, written: str) -> None:
        """Add input ``written`` to record ``name`` unless it closes a cycle
        within a step (``name`` is then upstream of it)."""
        target = self._inputs[name]
        assert target is not None
        if not written.endswith(PREV) and self._reaches(written, name):
            self.dropped += 1
            return
        target[written] = None
        self.changed = True

    def _reaches(self, start: str, goal: str) -> bool:
        """Whether ``goal`` is ``start`` or among its inputs within a step, at any depth."""
        stack, seen = [start], {start}
        known = self._inputs
        while stack:
            node = stack.pop()
            if node == goal:
                return True
            for written in known.get(node) or ():
                if not written.endswith(PREV) and written not in seen:
                    seen.add(written)
                    stack.append(written)
        return False

    def to_schema(self) -> Schema:
        """The dataflow as a schema (see the module's doc)."""
        members: dict[str, list[Member]] = {key: [] for key, _, _ in GROUPS}
        for name, inputs in self._inputs.items():
            key = name.partition(".")[0]
            if key not in members:
                continue  # not a record name of a trace: in no group
            declared = None if inputs is None else tuple(inputs)
            members[key].append(Member(literal_pattern(name), self._dtypes[name], inputs=declared))
        groups = []
        for key, title, hint in GROUPS:
            found = members[key]
            if found:
                groups.append(Group(key, title, hint, tuple(found)))
        return Schema(schema_name(self.level), tuple(groups), inputs_complete=True)

    def write(self, folder: str) -> None:
        """Write the dataflow into run folder ``folder`` as ``names.DATAFLOW``,
        atomically (a hidden temporary, renamed into place); OSError names the
        file when it cannot be written, and leaves the one written before."""
        from ..schemafile import schema_to_toml

        head = [
            f"# The dataflow fastdiff.trace recorded ({self.level} level): each record's inputs,",
            "# the records that made the tensors it read (NAME@prev: made at the step before).",
            "# compare reads it as the schema of this run when none is given.",
        ]
        if self.dropped:
            head.append(
                f"# {self.dropped} inputs were left out: steps that ran their ops in different "
                "orders would have closed a cycle."
            )
        text = "\n".join(head) + "\n" + schema_to_toml(self.to_schema())
        final = os.path.join(folder, DATAFLOW)
        tmp = os.path.join(folder, f"{TEMP_PREFIX}{os.getpid()}-dataflow")
        try:
            os.makedirs(folder, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            why = f"{exc.strerror} (fastdiff trace: the dataflow was not written)"
            raise OSError(exc.errno, why, final) from exc
        self.changed = False
