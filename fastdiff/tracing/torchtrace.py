"""The tracer of a PyTorch program: ``Trace``, what ``fastdiff.trace`` returns.

Each record is a buffer of the run, written by a ``Recorder``: its chunk
digests (``Recorder.digests``, hashed on the calling thread, then one
``record_digests`` per step) or, at the steps ``data`` asks for, the tensor
in full (``Recorder.dump``, as it runs: later in-place ops would change it).
Beside the records, at the end of every step, the tracer writes the order
they were made in (``sources.traced``, the sequence log) and, where it
grew, the dataflow (``dataflow.Dataflow``): each record's inputs are the
records that made the tensors it read.

**Which record made a tensor.** Every tensor a record outputs is kept by
its identity (``id``, checked through a weak reference, so an id reused by
a new tensor is never taken for the old one) with its version counter
(``Tensor._version``, which every in-place write bumps, through any view).
A tensor read at the version it was made at comes from its record; one
read at a later version was written since: by the in-place op that wrote
its storage last, when the trace saw it (kept by storage, so a write
through a view counts for its base; the base's earlier record is kept as an
input too, since a write through a view may change a part only); else by
code the trace does not see. A view (``views=False``) and ``detach`` make
no record: they compute nothing, so a view cannot be where a divergence is
born, and it comes from its base's record. A tensor the trace did not see
made (made before the block, or by a data loader; at module level, by
functional code between modules with no autograd graph to follow) is
recorded where it is first read, as ``in.<consumer>.<i>``. One made at the
step before is read as ``NAME@prev``; one made earlier still is recorded
again as an input of this step.

**Op level** (``level="op"``): a ``TorchDispatchMode`` sees every aten op
dispatched in the block. The module path of an op in the forward is that
of the innermost module of ``model`` running (forward hooks on every
submodule); in the backward, that of the module whose forward made the
autograd node the engine is running (``torch._C._current_autograd_node``,
looked up among the nodes the forward made); in ``optimizer.step``
(``torch.optim``'s global step hooks), the name of the parameter, or the
parameter of the optimizer state, its first tensor belongs to.

**Module level** (``level="module"``): forward hooks on every submodule
record each module's output, its inputs found as above and, for a tensor
made by functional code between modules, by following its autograd graph
back to the records it came from (``grad_fn.next_functions``, at most
``WALK_NODES`` nodes). A module's record reads the records of the modules
it called (a divergence born in a child is the child's; one born in the
parent's own code, the parent's). In the backward, a hook on each output
records the gradient with respect to it (``bwd.<path>``), which the
backward of its consumers computes: its inputs are their forward's and
backward's records (where a parent hands on its child's output, the
parent's gradient); ``grad.<param>`` records each parameter's gradient once
accumulated (``register_post_accumulate_grad_hook``), read from its
module's backward. The optimizer's step is seen as a whole: a parameter and
its state, as the next step begins, read the parameter, its gradient and
its state at the step before.

At each ``step(N)``, both levels record the model's parameters and buffers
and the state of every optimizer that has stepped in the block (or was
given), and nothing is recorded before the first ``step``.

Costs: a record is a hash on the calling thread of the tensor's bytes (a
tensor on a GPU is copied to the host first, as ``Recorder.dump`` does), a
few dictionary operations, and its part of one log write per step. Not
thread-safe across training threads: records come from the thread the
block runs in and from the autograd engine's, one at a time (a lock).
"""

from __future__ import annotations

import os
import threading
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..recorder import Recorder
from ..sources.names import SEQUENCE_LOG
from ..sources.traced import sequence_line
from ..tracenames import input_name, module_record, op_record, output_name
from .dataflow import Dataflow

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..recorder import DataSteps

    #: Where a tensor's value comes from: (record name, step), one or more.
    Sources = tuple[tuple[str, int], ...]

__all__ = ["UNSEEN", "WALK_NODES", "Trace"]

#: The most autograd nodes a module-level trace follows back from a tensor
#: made between modules to the records it came from.
WALK_NODES = 64

Tensor = torch.Tensor
_graph_task_id = torch._C._current_graph_task_id  # -1 outside the backward
#: What made a tensor written since by code the trace does not see (compared with ``is``).
UNSEEN: Sources = (("<unseen>", -1),)
_ALIAS_OPS = frozenset({"aten::detach", "aten::alias", "aten::lift_fresh"})
#: Ops whose outputs hold memory nobody wrote yet: not hashed (it would be noise).
_UNINIT_OPS = frozenset(
    {
        "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
        "aten::new_empty_strided", "aten::empty_permuted", "aten::resize_", "aten::resize_as_",
    }
)  # fmt: skip


class _OpInfo:
    """What the tracer needs of an op, worked out once per overload."""

    __slots__ = ("kind", "mut_kw", "mut_pos", "name")

    def __init__(self, func: Any) -> None:
        schema = func._schema
        base = schema.name
        self.name = f"{func.namespace}.{func._overloadpacket.__name__}"
        if base in _ALIAS_OPS:
            self.kind = "alias"
        elif base in _UNINIT_OPS:
            self.kind = "uninit"
        elif getattr(func, "is_view", False):
            self.kind = "view"
        else:
            self.kind = "op"
        pos, kw = [], []
        for i, a in enumerate(schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                (kw if a.kwarg_only else pos).append(a.name if a.kwarg_only else i)
        self.mut_pos = tuple(pos)
        self.mut_kw = tuple(kw)


def _version(t: Tensor) -> int:
    try:
        return t._version
    except RuntimeError:  # an inference tensor: no version counter
        return -1


def _storage_key(t: Tensor) -> int | None:
    """The address of ``t``'s storage (None: it has none, or an empty one)."""
    try:
        return t.untyped_storage().data_ptr() or None
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def _flat(obj: Any, out: list[Tensor]) -> list[Tensor]:
    """The tensors in ``obj`` (tensors, and tuples, lists and dicts of them), in order."""
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            if isinstance(x, Tensor):
                out.append(x)
            elif isinstance(x, (tuple, list, dict)):
                _flat(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _flat(x, out)
    return out


class _Mode(TorchDispatchMode):
    """The op-level tracer's dispatch mode: every op to ``Trace._op``."""

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        return self.trace._op(func, args, kwargs or {})


class Trace:
    """Traces a program's modules (``level="module"``) or ops (``"op"``) into
    run folder ``path``; use it as a context manager around the training
    loop, calling ``step(N)`` as each step begins. See ``fastdiff.trace``."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        model: torch.nn.Module,
        level: str = "module",
        optimizer: torch.optim.Optimizer | Iterable[torch.optim.Optimizer] | None = None,
        data: DataSteps = False,
        rank: int | None = None,
        views: bool = False,
        chunk_size: int | None = None,
    ) -> None:
        if level not in ("module", "op"):
            raise ValueError(f"fastdiff.trace: level must be 'module' or 'op', got {level!r}")
        if not isinstance(model, torch.nn.Module):
            raise TypeError(
                f"fastdiff.trace: model must be a torch.nn.Module, got {type(model).__name__}"
            )
        if isinstance(optimizer, torch.optim.Optimizer):
            optimizers = [optimizer]
        else:
            optimizers = list(optimizer or ())
            for o in optimizers:
                if not isinstance(o, torch.optim.Optimizer):
                    raise TypeError(
                        "fastdiff.trace: optimizer must be a torch.optim.Optimizer or several, "
                        f"got {type(o).__name__}"
                    )
        kw = {} if chunk_size is None else {"chunk_size": chunk_size}
        self._rec = Recorder(path, rank=rank, data=data, **kw)  # type: ignore[arg-type]
        #: The run folder the trace is written in (a rank's, for a job of several).
        self.path = self._rec.path
        self.level = level
        self.model = model
        self._views = bool(views)
        self._optimizers = optimizers
        self._paths = {id(m): p for p, m in model.named_modules()}
        self._params = list(model.named_parameters())
        self._buffers = list(model.named_buffers())
        self._param_names = {id(p): n for n, p in self._params}
        buffer_names = {id(b): n for n, b in self._buffers}
        #: module level: each module's own parameters and buffers, as records.
        self._own: dict[int, tuple[str, ...]] = {}
        for m in model.modules():
            own = [f"param.{self._param_names[id(p)]}" for _, p in m.named_parameters(recurse=False)
                   if id(p) in self._param_names]  # fmt: skip
            own += [f"buffer.{buffer_names[id(b)]}" for _, b in m.named_buffers(recurse=False)
                    if id(b) in buffer_names]  # fmt: skip
            self._own[id(m)] = tuple(own)
        self._infos: dict[Any, _OpInfo] = {}
        self._lock = threading.Lock()
        self._dataflow = Dataflow(level)
        self._handles: list[Any] = []
        self._mode: _Mode | None = None
        self._seq_fd: int | None = None
        self._busy = False
        self._in_opt = False
        self._full = False
        self._active = False
        self.closed = False
        self._step: int | None = None
        self._prev: int | None = None
        self._reset_step()
        #: id(tensor) -> (weak reference, version, sources, owner, module path):
        #: ``owner``, the parameter an optimizer's tensor belongs to; the module
        #: path, that of the forward op that made it (op level).
        self._by_id: dict[int, tuple[Any, int, Sources, str | None, str | None]] = {}
        #: storage address -> (version, sources, weak reference to the storage) of
        #: the last in-place write the trace saw to it.
        self._writers: dict[int, tuple[int, Sources, Any]] = {}
        self._prev_names: set[str] = set()
        self._prev_optim: dict[str, list[str]] = {}
        self._state_cache: dict[str, tuple[str, ...]] = {}

    def __repr__(self) -> str:
        return f"Trace({self.path!r}, level={self.level!r}{', closed' if self.closed else ''})"

    def _reset_step(self) -> None:
        self._counts: dict[tuple[str, str, str], int] = {}
        self._digests: list[tuple[str, Any]] = []
        self._records: list[tuple[str, str, tuple[str, ...] | None]] = []
        self._names: set[str] = set()
        self._stack: list[str] = []  # op level: the paths of the modules running
        self._frames: list[list[Any]] = []  # module level: [name, inputs, children]
        self._node_paths: dict[int, str] = {}  # op level: autograd node -> module path
        self._node_sources: dict[int, Sources] = {}  # module level: node -> its record
        self._node_refs: list[Any] = []  # the nodes above, kept alive for their ids
        self._bwd: dict[str, str] = {}  # module level: bwd record -> fwd record it is of
        self._same: dict[str, str] = {}  # module level: a child's output -> the parent's
        self._parent: dict[str, str] = {}  # module level: a record -> its caller's
        self._grads: list[str] = []  # module level: the grad records of this step

    # --- the block

    def __enter__(self) -> Trace:
        if self.closed:
            raise ValueError(f"{self!r}: entered after close")
        if self._active:
            raise ValueError(f"{self!r}: entered twice")
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        self._active = True
        handles = self._handles
        handles.append(register_optimizer_step_pre_hook(self._opt_pre))
        handles.append(register_optimizer_step_post_hook(self._opt_post))
        for m in self.model.modules():
            if self.level == "op":
                handles.append(m.register_forward_pre_hook(self._op_pre))
                handles.append(m.register_forward_hook(self._op_post, always_call=True))
            else:
                handles.append(m.register_forward_pre_hook(self._mod_pre, with_kwargs=True))
                handles.append(
                    m.register_forward_hook(self._mod_post, with_kwargs=True, always_call=True)
                )
        if self.level == "module":
            for name, p in self._params:
                if p.requires_grad:
                    handles.append(p.register_post_accumulate_grad_hook(self._grad_hook(name)))
        else:
            self._mode = _Mode(self)
            self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Record what the last step holds still, write the dataflow, remove
        every hook and close the recorder. Idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            if self._mode is not None:
                self._mode.__exit__(None, None, None)
                self._mode = None
            for h in self._handles:
                h.remove()
            self._handles = []
            if self._step is not None:
                self._busy = True
                self._flush()
            if self._dataflow.changed:
                self._dataflow.write(self.path)
        finally:
            self._active = False
            if self._seq_fd is not None:
                os.close(self._seq_fd)
                self._seq_fd = None
            self._rec.close()

    # --- steps

    def step(self, step: int) -> None:
        """Begin step ``step`` (an integer >= 0): what the step before
        recorded is written, then the model's parameters and buffers and the
        optimizers' state are recorded as this step begins."""
        import operator

        if self.closed:
            raise ValueError(f"{self!r}: step after close")
        step = operator.index(step)
        if step < 0:
            raise ValueError(f"fastdiff.trace: step must be >= 0, got {step}")
        if self._step is not None and step == self._step:
            raise ValueError(f"fastdiff.trace: step {step} begun twice")
        with self._lock:
            self._busy = True
            try:
                if self._step is not None:
                    self._flush()
                self._prev, self._step = self._step, step
                self._full = self._rec.wants_data(step)
                self._by_id = {k: e for k, e in self._by_id.items() if e[0]() is not None}
                self._writers = {k: w for k, w in self._writers.items() if w[2]() is not None}
                self._state()
            finally:
                self._busy = False

    def _flush(self) -> None:
        """Write the step's records' digests, its sequence and the dataflow."""
        step = self._step
        assert step is not None
        if self.level == "module":
            self._module_backward_inputs()
        if self._digests:
            self._rec.record_digests(step, self._digests)
        records = self._records
        self._dataflow.add_step(records)
        if self._seq_fd is None:
            os.makedirs(self.path, exist_ok=True)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
            self._seq_fd = os.open(os.path.join(self.path, SEQUENCE_LOG), flags, 0o666)
        # The records in the order they ran: the step's inputs (what it read) are not run.
        line = sequence_line(self.level, step, [r[0] for r in records if r[0][:3] != "in."])
        if os.write(self._seq_fd, line) != len(line):
            raise OSError(28, "No space left on device", os.path.join(self.path, SEQUENCE_LOG))
        if self._dataflow.changed:
            self._dataflow.write(self.path)
        names = {r[0] for r in records}
        if names != self._prev_names:
            self._state_cache = {}  # module level: state inputs read these names
        self._prev_names = names
        optim: dict[str, list[str]] = {}
        for n, _, _ in records:
            if n.startswith("optim."):
                optim.setdefault(n[6:].rpartition(".")[0], []).append(n)
        self._prev_optim = optim  # parameter -> its optimizer state's records
        self._reset_step()

    def _state(self) -> None:
        """Record the parameters, buffers and optimizer state as the step begins."""
        module = self.level == "module"
        prev = self._prev_names
        for name, p in self._params:
            rec = f"param.{name}"
            self._record_state(rec, p, name, self._state_inputs(rec, name, p, module, prev))
        for name, b in self._buffers:
            rec = f"buffer.{name}"
            inputs = self._state_inputs(rec, None, b, module, prev)
            owner = name.rpartition(".")[0]
            if module and (f"fwd.{owner}" if owner else "fwd") in prev:
                inputs = (*inputs, f"fwd.{owner}@prev" if owner else "fwd@prev")
            self._record_state(rec, b, name, inputs)
        for oi, opt in enumerate(self._optimizers):
            for gi, group in enumerate(opt.param_groups):
                for pi, p in enumerate(group["params"]):
                    state = opt.state.get(p)
                    if not state:
                        continue
                    pname = self._param_names.get(id(p), f"{oi}.{gi}.{pi}")
                    for key, value in state.items():
                        if isinstance(key, str) and isinstance(value, Tensor):
                            rec = f"optim.{pname}.{key}"
                            inputs = self._state_inputs(rec, pname, value, module, prev)
                            self._record_state(rec, value, pname, inputs)

    def _state_inputs(
        self, rec: str, pname: str | None, t: Tensor, module: bool, prev: set[str]
    ) -> tuple[str, ...]:
        """The inputs of state record ``rec`` as a step begins: at op level,
        what made the tensor (the optimizer's ops of the step before, or the
        record itself then); at module level, the optimizer's step as a whole
        (``pname``'s parameter, gradient and state at the step before), the
        same while the step before recorded the same records."""
        if self._prev is None:
            return ()
        if not module:
            srcs = self._lookup(t)
            if srcs is not None and srcs is not UNSEEN:
                return self._written(srcs)
            return (f"{rec}@prev",) if rec in prev else ()
        found = self._state_cache.get(rec)
        if found is not None:
            return found
        out = [f"{rec}@prev"] if rec in prev else []
        if pname is not None:
            for name in (f"param.{pname}", f"grad.{pname}"):
                if name in prev and f"{name}@prev" not in out:
                    out.append(f"{name}@prev")
            out += [f"{n}@prev" for n in self._prev_optim.get(pname, ()) if n != rec]
        found = self._state_cache[rec] = tuple(out)
        return found

    def _record_state(self, rec: str, t: Tensor, owner: str, inputs: tuple[str, ...]) -> None:
        if self._record(rec, t, inputs):
            self._by_id[id(t)] = (weakref.ref(t), _version(t), ((rec, self._step),), owner, None)  # type: ignore[assignment]

    # --- records

    def _record(self, name: str, t: Tensor, inputs: tuple[str, ...] | None) -> bool:
        """Record tensor ``t`` as ``name`` at this step (False: it cannot be
        recorded, or ``name`` was recorded at this step already)."""
        if name in self._names:
            return False
        rec = self._rec
        try:
            if self._full:
                rec.dump(self._step, name, t)  # type: ignore[arg-type]
                dtype = _dtype(t)
            else:
                d = rec.digests(t)
                self._digests.append((name, d))
                dtype = d.dtype
        except (TypeError, ValueError):  # a sparse, complex or wrapper tensor: not a record
            return False
        self._names.add(name)
        self._records.append((name, dtype, inputs))
        return True

    def _lookup(self, t: Tensor) -> Sources | None:
        """What made ``t``'s value: its records (None: the trace did not see
        it made, or it was made before the step before; ``UNSEEN``: it was
        written since by code the trace does not see)."""
        e = self._by_id.get(id(t))
        if e is None or e[0]() is not t:
            return None
        v = _version(t)
        srcs = e[2]
        if e[1] != v:
            key = _storage_key(t)
            w = None if key is None else self._writers.get(key)
            if w is None or w[0] != v or w[2]() is not t.untyped_storage():
                return UNSEEN  # written since by code the trace does not see
            srcs = w[1] + tuple(s for s in srcs if s not in w[1])
        step, prev = self._step, self._prev
        for _, st in srcs:
            if st != step and st != prev:
                return None
        return srcs

    def _as_sources(self, inputs: tuple[str, ...]) -> Sources:
        """Inputs as written (``NAME``, ``NAME@prev``) as sources again."""
        step, prev = self._step, self._prev
        return tuple(
            (n[: -len("@prev")], prev) if n.endswith("@prev") else (n, step)  # type: ignore[misc]
            for n in inputs
        )

    def _written(self, srcs: Sources) -> tuple[str, ...]:
        """Sources as inputs are written: ``NAME``, ``NAME@prev``."""
        step = self._step
        return tuple(n if st == step else f"{n}@prev" for n, st in srcs)

    def _inputs(
        self, tensors: list[Tensor], consumer: str, walk: bool = False, root: bool = True
    ) -> tuple[str, ...]:
        """The inputs of record ``consumer`` that reads ``tensors``; a tensor the
        trace did not see made is recorded as an input of the step
        (``in.<consumer>.<i>``: a source, or with its inputs unknown where
        ``root`` is False: made by code between modules)."""
        out: dict[str, None] = {}
        step = self._step
        nodes = self._node_paths if self.level == "op" else None
        for i, t in enumerate(tensors):
            if nodes is not None:
                self._map_node(t, nodes)
            srcs = self._lookup(t)
            if srcs is None and walk and t.grad_fn is not None:
                srcs = self._walk(t)
            if srcs is UNSEEN:  # written by code the trace does not see: what it reads is all
                srcs = self._input(t, input_name(consumer, i), False)
            elif srcs is not None and len(srcs) == 1 and srcs[0][1] != step:
                carried = srcs[0][0]
                if carried.startswith("in."):  # read again: recorded again at this step
                    srcs = self._input(t, carried, root) or self._input(
                        t, input_name(consumer, i), root
                    )
            elif srcs is None:
                srcs = self._input(t, input_name(consumer, i), root)
            if srcs is None:
                continue
            for name, st in srcs:
                out[name if st == step else f"{name}@prev"] = None
        return tuple(out)

    def _map_node(self, t: Tensor, nodes: dict[int, str]) -> None:
        """Remember the module path of ``t``'s autograd node (op level), for
        the backward's ops that node runs: it is set only once the op that made
        ``t`` has returned, so it is looked up as ``t`` is read (or leaves a
        module)."""
        fn = t.grad_fn
        if fn is None or id(fn) in nodes:
            return
        e = self._by_id.get(id(t))
        if e is not None and e[4] is not None and e[0]() is t:
            nodes[id(fn)] = e[4]
            self._node_refs.append(fn)

    def _input(self, t: Tensor, name: str, source: bool) -> Sources | None:
        if not self._record(name, t, () if source else None):
            return None
        srcs = ((name, self._step),)
        self._by_id[id(t)] = (weakref.ref(t), _version(t), srcs, None, None)  # type: ignore[assignment]
        return srcs  # type: ignore[return-value]

    def _register(self, t: Tensor, srcs: Sources, owner: str | None) -> None:
        self._by_id[id(t)] = (weakref.ref(t), _version(t), srcs, owner, None)

    # --- op level

    def _op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._step is None or self._busy:
            return func(*args, **kwargs)
        info = self._infos.get(func)
        if info is None:
            info = self._infos[func] = _OpInfo(func)
        kind = info.kind
        # One lock for the op and its bookkeeping: the op itself never calls
        # back into the tracer (this mode is off while it runs).
        with self._lock:
            if kind != "op" and not (kind == "view" and self._views):
                out = func(*args, **kwargs)
                self._pass(out, args, info)
                return out
            tensors = _flat(args, [])
            if kwargs:
                for k, v in kwargs.items():
                    if k not in info.mut_kw:
                        _flat(v, tensors)
            if _graph_task_id() == -1 and not self._in_opt:
                phase, path = "fwd", self._stack[-1] if self._stack else ""
            else:
                phase, path = self._where(tensors)
            key = (phase, path, info.name)
            k = self._counts.get(key, 0)
            self._counts[key] = k + 1
            name = op_record(phase, path, info.name, k)
            inputs = self._inputs(tensors, name)
            out = func(*args, **kwargs)
            outs = _flat(out, [])
            mutated: list[Tensor] = []
            if info.mut_pos or info.mut_kw:
                for i in info.mut_pos:
                    if i < len(args):
                        _flat(args[i], mutated)
                for kname in info.mut_kw:
                    _flat(kwargs.get(kname), mutated)
                outs += [m for m in mutated if not any(m is o for o in outs)]
            step = self._step
            owner = path if phase == "opt" else None
            # Autograd gives an output its node once this op returns: the node is
            # looked up where a later op reads the output (``_inputs``).
            node_path = path if phase == "fwd" else None
            written = {id(m) for m in mutated} if mutated else ()
            # A view shares its base's version counter once this op returns.
            base_version = _version(tensors[0]) if kind == "view" and tensors else None
            by_id = self._by_id
            for i, t in enumerate(outs):
                oname = output_name(name, i) if i else name
                # An in-place write bumps the version once this op returns (autograd's
                # ADInplaceOrView kernel, above this mode): the version it will show.
                if id(t) in written:
                    version = _version(t) + 1
                else:
                    version = _version(t) if base_version is None else base_version
                ref = weakref.ref(t)
                if not self._record(oname, t, inputs):
                    srcs = self._as_sources(inputs)  # comes from its inputs
                    by_id[id(t)] = (ref, version, srcs, owner, node_path)
                    continue
                srcs = ((oname, step),)  # type: ignore[assignment]
                by_id[id(t)] = (ref, version, srcs, owner, node_path)
                if id(t) in written:
                    skey = _storage_key(t)
                    if skey is not None:  # kept by its storage, alive while any view of it is
                        self._writers[skey] = (version, srcs, weakref.ref(t.untyped_storage()))
        return out

    def _pass(self, out: Any, args: tuple[Any, ...], info: _OpInfo) -> None:
        """An op that makes no record: a view or ``detach`` comes from its
        base's record; memory nobody wrote yet, from none."""
        outs = _flat(out, [])
        if not outs:
            return
        if self.level == "op":
            for a in args:
                if isinstance(a, Tensor):
                    self._map_node(a, self._node_paths)
        kind = info.kind
        bump = 1 if info.mut_pos else 0  # an in-place op's version is bumped once it returns
        if kind == "uninit":
            srcs: Sources | None = ()
            owner = None
            node_path = None
            version = -2  # set per tensor below
        else:
            base = next((a for a in args if isinstance(a, Tensor)), None)
            srcs = None if base is None else self._lookup(base)
            if srcs is None or srcs is UNSEEN:
                return  # a view of what the trace did not see made: recorded where it is read
            e = self._by_id.get(id(base))
            owner = e[3] if e is not None else None
            node_path = e[4] if e is not None else None
            # A view shares its base's version counter once autograd has set it up,
            # after this op returns: the base's version is the one it will show.
            version = _version(base)  # type: ignore[arg-type]
        if torch._C._current_graph_task_id() == -1 and not self._in_opt:
            node_path = self._stack[-1] if self._stack else ""  # a view's node is its own
        for t in outs:
            v = version if version != -2 else _version(t) + bump
            self._by_id[id(t)] = (weakref.ref(t), v, srcs, owner, node_path)  # type: ignore[assignment]

    def _where(self, tensors: list[Tensor]) -> tuple[str, str]:
        """The phase and module path of an op about to run."""
        if torch._C._current_graph_task_id() != -1:
            node = torch._C._current_autograd_node()
            if node is None:
                return "bwd", ""
            path = self._node_paths.get(id(node))
            if path is None:
                path = ""
                if type(node).__name__ == "AccumulateGrad":
                    pname = self._param_names.get(id(node.variable))
                    path = "" if pname is None else pname.rpartition(".")[0]
            return "bwd", path
        if self._in_opt:
            for t in tensors:
                e = self._by_id.get(id(t))
                if e is not None and e[3] is not None and e[0]() is t:
                    return "opt", e[3]
            return "opt", ""
        return "fwd", self._stack[-1] if self._stack else ""

    def _op_pre(self, module: Any, args: Any) -> None:
        self._stack.append(self._paths.get(id(module), ""))

    def _op_post(self, module: Any, args: Any, output: Any) -> None:
        if self._stack:
            self._stack.pop()
        if self._step is not None and not self._busy:
            with self._lock:
                for t in _flat(output, []):
                    self._map_node(t, self._node_paths)

    def _opt_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not any(o is optimizer for o in self._optimizers):
            self._optimizers.append(optimizer)
        self._in_opt = True

    def _opt_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._in_opt = False

    # --- module level

    def _mod_pre(self, module: Any, args: Any, kwargs: Any) -> None:
        if self._step is None:
            return
        with self._lock:
            path = self._paths.get(id(module), "")
            key = ("fwd", path, "")
            k = self._counts.get(key, 0)
            self._counts[key] = k + 1
            name = module_record("fwd", path, k)
            tensors = _flat(kwargs, _flat(args, []))
            root = not self._frames
            inputs = self._inputs(tensors, name, walk=True, root=root)
            own = [n for n in self._own.get(id(module), ()) if n in self._names]
            if own:  # its own parameters and buffers, as the step began
                inputs = (*inputs, *(n for n in own if n not in inputs))
            self._frames.append([name, inputs, []])

    def _mod_post(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        if self._step is None or not self._frames:
            return
        with self._lock:
            name, inputs, children = self._frames.pop()
            if self._frames:
                self._frames[-1][2].append(name)
                self._parent[name] = self._frames[-1][0]
            inputs = (*inputs, *(c for c in children if c not in inputs))
            step = self._step
            for i, t in enumerate(_flat(output, [])):
                oname = output_name(name, i)
                e = self._by_id.get(id(t))
                if e is not None and e[0]() is t and len(e[2]) == 1 and e[2][0][0] in children:
                    self._same[e[2][0][0]] = oname  # a child's output, handed on as the parent's
                if not self._record(oname, t, inputs):
                    continue
                srcs = ((oname, step),)
                self._register(t, srcs, None)  # type: ignore[arg-type]
                fn = t.grad_fn
                if fn is not None:
                    self._node_sources[id(fn)] = srcs  # type: ignore[assignment]
                    self._node_refs.append(fn)
                if t.requires_grad:
                    t.register_hook(self._bwd_hook(oname))

    def _walk(self, t: Tensor) -> Sources | None:
        """The records a tensor made between modules comes from, by its
        autograd graph (None: not found within ``WALK_NODES`` nodes)."""
        found: dict[tuple[str, int], None] = {}
        stack = [t.grad_fn]
        seen = {id(t.grad_fn)}
        budget = WALK_NODES
        while stack:
            fn = stack.pop()
            budget -= 1
            if budget < 0:
                return None
            srcs = self._node_sources.get(id(fn))
            if srcs is not None:
                found.update(dict.fromkeys(srcs))
                continue
            if type(fn).__name__ == "AccumulateGrad":
                leaf = self._lookup(fn.variable)
                if leaf is None:
                    return None
                found.update(dict.fromkeys(leaf))
                continue
            for nxt, _ in fn.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    seen.add(id(nxt))
                    stack.append(nxt)
        return tuple(found) if found else None

    def _bwd_hook(self, fwd_name: str) -> Any:
        step = self._step
        bwd = "bwd" + fwd_name[3:]

        def hook(grad: Tensor) -> None:
            if self._step != step or self.closed:
                return
            with self._lock:
                if self._record(bwd, grad, None):
                    self._bwd[bwd] = fwd_name

        return hook

    def _grad_hook(self, pname: str) -> Any:
        rec = f"grad.{pname}"

        def hook(p: Tensor) -> None:
            if self._step is None or self.closed or p.grad is None:
                return
            with self._lock:
                if self._record(rec, p.grad, None):
                    self._grads.append(rec)

        return hook

    def _module_backward_inputs(self) -> None:
        """The inputs of the step's backward records, from its forward's: the
        gradient of a record's output is computed by the backward of the
        modules that read it (their forward's inputs and their own gradient);
        a child's output handed on by its parent has the parent's gradient; a
        parameter's gradient, by its module's backward."""
        records = self._records
        fwd = {n: inputs for n, _, inputs in records if n.startswith("fwd")}
        consumers: dict[str, list[str]] = {}
        for n, inputs in fwd.items():
            for u in inputs or ():
                consumers.setdefault(u, []).append(n)
        bwd = self._bwd
        parent_of = self._parent
        done: dict[str, tuple[str, ...] | None] = {}
        for b, f in bwd.items():
            out: dict[str, None] = {}
            parent = self._same.get(f)
            if parent is not None and "bwd" + parent[3:] in bwd:
                out["bwd" + parent[3:]] = None  # the parent's output: the same gradient
            else:
                caller = parent_of.get(_module_call(f))
                readers = [c for c in consumers.get(f, ()) if c != caller]
                if not readers and caller is not None:
                    readers = [caller]  # read by the caller's own code: its backward's
                for c in readers:
                    cb = "bwd" + c[3:]
                    if cb in bwd:
                        out[cb] = None
                    out[c] = None
                    out.update(dict.fromkeys(fwd[c] or ()))
                if not readers:
                    out[f] = None  # read by no module: by the loss, outside them
            out.pop(b, None)
            done[b] = tuple(out)
        calls_of: dict[str, list[str]] = {}  # a module's record -> its calls' records
        for n in fwd:
            calls_of.setdefault(_module_call(n).partition("#")[0], []).append(n)
        for g in self._grads:
            module = g[5:].rpartition(".")[0]
            calls = calls_of.get(f"fwd.{module}" if module else "fwd", [])
            out = {}
            for c in calls:
                cb = "bwd" + c[3:]
                if cb in bwd:
                    out[cb] = None
                out.update(dict.fromkeys(fwd[c] or ()))
            done[g] = tuple(out) if calls else None
        if done:
            self._records = [(n, d, done.get(n, i)) for n, d, i in records]


def _module_call(name: str) -> str:
    """The module record an output's name belongs to (``fwd.x#0.1``: ``fwd.x``;
    ``fwd.x#2.1``: ``fwd.x#2``)."""
    head, hash_, tail = name.rpartition("#")
    k, dot, i = tail.partition(".")
    if not hash_ or not dot or not i.isdigit():
        return name
    return head if k == "0" else f"{head}#{k}"


def _dtype(t: Tensor) -> str:
    from ..recorder import _TORCH_TYPES, _torch_type

    found = _TORCH_TYPES.get(t.dtype)
    return (found if found is not None else _torch_type(t.dtype))[0]
