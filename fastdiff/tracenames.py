"""The names of a trace's records (``fastdiff.trace``), stable between runs, and their groups.

A record is named by what made it, never by its place in the step, so one
extra op shifts no other name:

- ``fwd.<module path>.<namespace>.<op>#<k>``: an op (``level="op"``) that
  ran in the forward under the module at that path (``fwd.layers.2.mlp.
  aten.mm#1``: the second ``aten.mm`` run directly under ``layers.2.mlp``
  at this step; ``fwd.aten.mse_loss#0``: one outside every module);
  ``bwd.<path>...``: one the backward ran, under the path of the module
  whose forward made the autograd node it belongs to; ``opt.<param>...``:
  one the optimizer's ``step`` ran, under the name of the parameter (or its
  state) its first tensor belongs to. ``k`` counts that op under that path
  in that phase at this step: an occurrence counter per module path.
- ``fwd.<module path>``: a module's output (``level="module"``), ``#<k>``
  added from its second call in a step on; ``bwd.<module path>``: the
  gradient with respect to that output, as the backward hands it on;
  ``grad.<param>``: a parameter's gradient once accumulated.
- ``<record>.<i>`` (``<record>`` with its ``#<k>`` written, even ``#0``):
  its output ``i`` > 0, for an op or a module that returns several tensors,
  or mutates several of its arguments.
- ``param.<name>``, ``buffer.<name>``, ``optim.<param>.<key>``: the model's
  parameters and buffers and the optimizer's state, as ``Trace.step``
  finds them when a step begins.
- ``in.<consumer>.<i>``: a tensor the traced block read but did not make
  (made before the block, or by code the trace does not see), named by the
  first record that read it at that step and its place among that
  record's tensor inputs.

The root module's path is empty: its output is ``fwd``. This module is
pure: no torch, no file.
"""

from __future__ import annotations

__all__ = [
    "GROUPS",
    "PHASES",
    "input_name",
    "module_record",
    "op_of",
    "op_record",
    "output_name",
]

#: The phases of a step, as names begin.
PHASES = ("fwd", "bwd", "opt")

#: The groups of a trace's records (the first dotted part of their names),
#: in pipeline order: (key, title, hint).
GROUPS: tuple[tuple[str, str, str], ...] = (
    (
        "in",
        "step inputs: tensors the traced block read but did not make",
        "A tensor the step reads from outside the trace differs: look at the data (its "
        "order, a loader's seed, augmentation) or at state made outside the traced block, "
        "not at the kernels inside it.",
    ),
    (
        "param",
        "parameters, as the step begins",
        "A parameter differs as the step begins: at the first step, its initialisation "
        "(seed, order of construction); later, the optimizer step before it (its opt or "
        "optim records) or a write the trace does not see.",
    ),
    (
        "buffer",
        "module buffers, as the step begins",
        "A module buffer (running statistics, a cache) differs as the step begins: look at "
        "what updated it in the step before.",
    ),
    (
        "optim",
        "optimizer state, as the step begins",
        "The optimizer's state differs as the step begins: look at its update in the step before.",
    ),
    ("fwd", "forward", "The forward pass differs: the origin's record names the op and module."),
    (
        "bwd",
        "backward",
        "The backward pass differs: the origin's record names the op and the module whose "
        "forward made it (at module level: the gradient that module's consumers handed on).",
    ),
    ("grad", "parameter gradients", "A parameter's accumulated gradient differs."),
    (
        "opt",
        "optimizer step",
        "The optimizer's step differs: the origin's record names the op and the parameter.",
    ),
)


def op_record(phase: str, path: str, op: str, k: int) -> str:
    """The name of the ``k``-th op ``op`` (``aten.mm``) under ``path`` in ``phase``."""
    return f"{phase}.{path}.{op}#{k}" if path else f"{phase}.{op}#{k}"


def module_record(phase: str, path: str, k: int) -> str:
    """The name of the ``k``-th call of the module at ``path`` in ``phase``."""
    base = f"{phase}.{path}" if path else phase
    return f"{base}#{k}" if k else base


def output_name(record: str, i: int) -> str:
    """The name of output ``i`` of ``record`` (``record`` itself for 0)."""
    if not i:
        return record
    return f"{record}.{i}" if "#" in record.rpartition(".")[2] else f"{record}#0.{i}"


def input_name(consumer: str, i: int) -> str:
    """The name of tensor input ``i`` of ``consumer`` that the trace did not see made."""
    return f"in.{consumer}.{i}"


def op_of(name: str, level: str) -> str:
    """What a record runs, as a structural difference says it: at op level,
    an op record's op (``aten.add`` of ``fwd.layers.2.aten.add#0.1``); any
    other record, its name without an output index (``fwd.layers.2#0.1``:
    ``fwd.layers.2#0``)."""
    base, hash_, tail = name.rpartition("#")
    if not hash_ or name.startswith("in.") or not tail.partition(".")[0].isdigit():
        return name
    if level == "op" and name.startswith(("fwd.", "bwd.", "opt.")):
        parts = base.split(".")
        if len(parts) >= 3:
            return f"{parts[-2]}.{parts[-1]}"
    return f"{base}#{tail.partition('.')[0]}"
