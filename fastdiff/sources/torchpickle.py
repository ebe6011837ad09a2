"""A restricted reader of the pickle ``torch.save`` writes (``data.pkl``).

This is not ``pickle``: it is an interpreter of pickle opcodes of its own
that builds plain data only (dicts, lists, tuples, str, int, float, bool,
None, bytes) and the records of this module: ``Storage``, ``Tensor``,
``TorchDType``, ``Array`` (a numpy array) and ``Record`` (anything else).
Nothing the file names is ever imported, looked up or called:

- a global (GLOBAL, STACK_GLOBAL, INST) is a key into the fixed table
  ``_ALLOWED`` of this module's own handlers (the tensor rebuilds, storage
  classes and containers ``torch.save`` writes, and numpy's array and
  scalar rebuilds); any other name is a ``Record`` of that name, inert. A
  REDUCE of such a name, and every object a class-building opcode makes
  (NEWOBJ, NEWOBJ_EX, OBJ, INST), is a ``Record`` of the call: its name,
  its arguments, and what BUILD, SETITEMS and APPENDS then give it. A
  pickle naming ``os.system`` yields a record that says so, and nothing
  runs;
- REDUCE calls a handler of that table only (each checks its arguments and
  builds a record of this module); BUILD sets a record's state, fills a
  numpy array, or drops an ``OrderedDict``'s attributes
  (``state_dict()``'s ``_metadata``); on anything else it is refused;
- the extension registry (EXT1/2/4), out-of-band buffers, and the text
  opcodes of protocol 0 that torch cannot write are refused, and so are
  tensors of kinds fastdiff does not compare (complex, quantized, sparse:
  ``torch._utils``' other rebuilds), by name;
- a dict key must be a str, int, float, bool, None, bytes, torch dtype,
  record or a shallow tuple of those (hashing one runs no code of the file:
  records hash by identity); a persistent id must be a storage tuple
  ``('storage', storage type, key, location, numel)``, handed to the
  caller's ``storage`` function.

Against pickle bombs: the pickle is at most the caller's bytes, and what it
builds is counted against ``MAX_MEMORY`` as it is built (each opcode's
objects, estimated in bytes as CPython lays them out: references, memo
entries, strings and bytes by their length), so a small file cannot make a
large heap. The memo is a list while the pickle numbers its entries in
order (as pickle does): a reference in it costs 8 bytes, not a dict entry.
The result is walked by the caller (``walk``) with caps on depth, on the
nodes visited (shared sub-lists cannot multiply the work) and on the
tensors and arrays.
"""

from __future__ import annotations

import struct
from sys import getsizeof

from ..dtypes import DTYPES, TORCH, from_descr, from_torch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..dtypes import DType

#: What a pickle builds, estimated in bytes as it is built: at most this
#: much (a checkpoint of 160,000 one-element tensors builds about 150 MiB).
MAX_MEMORY = 256 << 20
#: ``walk``: nesting at most this deep, at most this many nodes visited and
#: tensors (and numpy arrays) found, names at most this long.
MAX_DEPTH = 100
MAX_NODES = 1 << 21
MAX_TENSORS = 1 << 18
MAX_NAME = 4096
#: Shapes of at most this many dimensions.
MAX_DIMS = 64
#: A size, stride or offset is below this (torch's are int64).
_MAX_INT = 1 << 62
#: A dict key may be a tuple nested at most this deep.
_KEY_DEPTH = 4
#: At most this many MARKs open at once (each holds a list while open).
MAX_MARKS = 10_000


class PickleRefused(ValueError):
    """A ``data.pkl`` that is refused: what it asked for, or what is wrong."""


def _shown(text: str) -> str:
    """A name from the file, fit for a one-line message."""
    if text.isprintable() and len(text) <= 200:
        return text
    return repr(text[:200]) + ("..." if len(text) > 200 else "")


# --- the records a pickle can build ------------------------------------------------


class Record:
    """What a pickle builds of a class or function fastdiff does not know
    (``argparse.Namespace``, a DeepSpeed loss scaler, a ``Metadata``
    dataclass of ``torch.distributed.checkpoint``, ``os.system``): the
    call or the object as data. Nothing of it is imported or run.

    ``name``: the qualified name the pickle gives (``module.name``);
    ``args``: the positional arguments it is called or built with (REDUCE,
    NEWOBJ, OBJ, INST), a tuple, or None for the name alone (a class or
    function given as a value: ``torch.strided``, a ``defaultdict``'s
    ``list``); ``kwargs``: NEWOBJ_EX's keyword arguments (a dict), else
    None; ``state``: what BUILD gives it, as ``__setstate__`` would get it
    (an object's ``__dict__``, ``(dict, slots)``, or any value), else None;
    ``items`` and ``entries``: what APPEND(S) and SETITEM(S) add to it (a
    subclass of list or dict, a ``defaultdict``), a list and a dict, else
    None. Every field holds plain data (dicts, lists, tuples, str, bytes,
    int, float, bool, None), records, and the tensors and arrays of this
    module. A set of the pickle is a record too (``builtins.set`` of a
    list, as protocol 2 spells it).

    A record is equal only to itself and hashes by identity: it can be a
    dict key as the pickle gives it (``torch.distributed.checkpoint``'s
    ``MetadataIndex``), and hashing it runs nothing."""

    __slots__ = ("args", "entries", "items", "kwargs", "name", "state")

    def __init__(
        self, name: str, args: tuple[object, ...] | None = None,
        kwargs: dict[object, object] | None = None, state: object = None,
    ) -> None:  # fmt: skip
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.state = state
        self.items: list[object] | None = None
        self.entries: dict[object, object] | None = None

    @property
    def attributes(self) -> dict[object, object] | None:
        """Its attributes, when its state is an object's (a dict, or
        ``(dict, slots)`` merged); None for any other state."""
        return _attributes(self.state)

    def __repr__(self) -> str:
        return f"Record({self.name!r})" if self.args is None else f"Record({self.name!r}, ...)"


class TorchDType:
    """A ``torch.<dtype>`` global (``torch.float8_e4m3fn``): a value a
    checkpoint may hold, and ``_rebuild_tensor_v3``'s dtype argument."""

    __slots__ = ("dtype", "name")

    def __init__(self, name: str, dtype: DType) -> None:
        self.name = name
        self.dtype = dtype


class StorageType:
    """A storage class (``torch.FloatStorage``; ``UntypedStorage``: bytes)."""

    __slots__ = ("dtype", "name")

    def __init__(self, name: str, dtype: DType) -> None:
        self.name = name
        self.dtype = dtype


class Storage:
    """A storage of the archive: its key (member ``data/<key>``), element
    type, bytes, and where its bytes start in the archive file. ``problem``:
    why its record cannot be read (its tensors are then not compared), or
    None."""

    __slots__ = ("data_offset", "dtype", "key", "nbytes", "problem")

    def __init__(
        self, key: str, dtype: DType, nbytes: int, data_offset: int, problem: str | None = None
    ) -> None:
        self.key = key
        self.dtype = dtype
        self.nbytes = nbytes
        self.data_offset = data_offset
        self.problem = problem


class Tensor:
    """A tensor as a rebuild call gives it: a view of ``storage`` from
    element ``offset``, of ``shape`` and ``strides`` (in elements) and
    element type ``dtype``. Checked against its storage by the caller.
    ``wrapper``: the tensor subclass it was saved as (a ``DTensor``, whose
    local tensor this is, or any subclass), a ``Record`` of the class's
    name, its rebuild's arguments and its state without this tensor; None
    for a plain tensor or ``Parameter``."""

    __slots__ = ("dtype", "offset", "shape", "storage", "strides", "wrapper")

    def __init__(
        self, storage: Storage, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
        dtype: DType, wrapper: Record | None = None,
    ) -> None:  # fmt: skip
        self.storage = storage
        self.offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.wrapper = wrapper


#: The ``problem`` of an array whose state BUILD has not given yet.
_NO_STATE = "the pickle never gives its data (no BUILD of its state)"


class Array:
    """A numpy array (or scalar: shape ``()``) inside the pickle, as a
    buffer: numpy's ``_reconstruct`` of an ``ndarray`` with the state BUILD
    gives it (protocols 1 to 4), ``_frombuffer`` (protocol 5) or
    ``scalar``, in their ``numpy.core`` and ``numpy._core`` spellings.
    ``dtype`` and ``shape``; ``fortran``: its bytes are in column-major
    order; ``raw``: its bytes as stored; ``at``: where ``raw`` lies in the
    pickle, verbatim (a BINBYTES argument), or -1 (``raw`` was decoded: a
    protocol 2 pickle, ``torch.save``'s default, writes bytes as latin-1
    text in UTF-8). ``problem``: why the array is not compared (a dtype
    fastdiff does not compare, Python objects, a state that does not add
    up), else None."""

    __slots__ = ("at", "dtype", "fortran", "problem", "raw", "shape")

    def __init__(self) -> None:
        self.dtype: DType | None = None
        self.shape: tuple[int, ...] = ()
        self.fortran = False
        self.raw = b""
        self.at = -1
        self.problem: str | None = _NO_STATE


class _ODict(dict):  # type: ignore[type-arg]
    """An ``OrderedDict`` of the pickle (a dict: insertion order is kept);
    only it accepts BUILD among dicts."""

    __slots__ = ()


class _Handler:
    """An allowed global that REDUCE may call: its name as the pickle gives
    it, and this module's function that builds what it stands for (or
    returns None: the call is then a ``Record``, as for any other name)."""

    __slots__ = ("call", "name")

    def __init__(self, name: str, call: Callable[[tuple[object, ...]], object]) -> None:
        self.name = name
        self.call = call


class _Marker:
    """An allowed global that is only an argument (``torch.Tensor``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


# --- the allowed calls -----------------------------------------------------------


def _int(value: object, what: str) -> int:
    if type(value) is not int or not 0 <= value < _MAX_INT:
        raise PickleRefused(f"a tensor's {what} is not an integer in [0, 2**62)")
    return value


def _ints(value: object, what: str) -> tuple[int, ...]:
    if type(value) is not tuple or len(value) > MAX_DIMS:
        raise PickleRefused(f"a tensor's {what} is not a tuple of at most {MAX_DIMS} integers")
    for v in value:
        if type(v) is not int or not 0 <= v < _MAX_INT:
            raise PickleRefused(f"a tensor's {what} is not an integer in [0, 2**62)")
    return value  # type: ignore[return-value]


def _tensor_args(args: tuple[object, ...], dtype: DType | None) -> Tensor:
    storage, offset, size, stride, requires_grad, hooks = args[:6]
    if type(storage) is not Storage:
        raise PickleRefused("a tensor is rebuilt from something that is not a storage")
    shape = _ints(size, "size")
    strides = _ints(stride, "stride")
    if len(strides) != len(shape):
        raise PickleRefused(f"a tensor of size {shape} has {len(strides)} strides")
    if type(requires_grad) is not bool:
        raise PickleRefused("a tensor's requires_grad is not a bool")
    if type(hooks) not in (dict, _ODict) or hooks:
        if type(hooks) is Record:
            raise PickleRefused(
                f"a tensor's backward hooks are {_what(hooks)} (torch.save writes an empty "
                "OrderedDict)"
            )
        raise PickleRefused("a tensor has backward hooks (torch.save writes none)")
    return Tensor(storage, _int(offset, "storage offset"), shape, strides, dtype or storage.dtype)


def _metadata(value: object) -> None:
    """A tensor's metadata (torch writes it for conjugate and negative views,
    whose values are not their stored bytes): none, or refused."""
    if value is None or (type(value) in (dict, _ODict) and not value):
        return
    raise PickleRefused(
        "a tensor with metadata (a conjugate or negative view), whose values are not its "
        "stored bytes"
    )


def _rebuild_tensor_v2(args: tuple[object, ...]) -> Tensor:
    # (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    if len(args) not in (6, 7):
        raise PickleRefused(f"_rebuild_tensor_v2 called with {len(args)} arguments, not 6 or 7")
    _metadata(args[6] if len(args) == 7 else None)
    return _tensor_args(args, None)


def _rebuild_tensor_v3(args: tuple[object, ...]) -> Tensor:
    # (storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata])
    if len(args) not in (7, 8):
        raise PickleRefused(f"_rebuild_tensor_v3 called with {len(args)} arguments, not 7 or 8")
    dt = args[6]
    if type(dt) is not TorchDType:
        if type(dt) is Record and dt.name.startswith("torch."):
            raise PickleRefused(
                f"the pickle holds a tensor of {_shown(dt.name)}, which fastdiff does not "
                "compare (it compares real, integer and bool tensors)"
            )
        raise PickleRefused("_rebuild_tensor_v3's dtype is not a torch dtype")
    _metadata(args[7] if len(args) == 8 else None)
    return _tensor_args(args, dt.dtype)


def _parameter(args: tuple[object, ...]) -> object:
    # (data, requires_grad, backward_hooks[, state]): the state is Python attributes
    if len(args) not in (3, 4) or type(args[0]) not in (Tensor, Record):
        raise PickleRefused("a Parameter is rebuilt from something that is not a tensor")
    return args[0]


def _type_name(value: object) -> str | None:
    """The qualified name of a class the pickle names, else None."""
    kind = type(value)
    if kind is Record:
        return value.name if value.args is None else None  # type: ignore[attr-defined]
    if kind is _Marker or kind is _Handler:
        return value.name  # type: ignore[attr-defined]
    return None


def _attributes(state: object) -> dict[object, object] | None:
    """An object's attributes in its pickled state: its ``__dict__`` (a
    dict) or ``(__dict__ or None, slots or None)``; None for another state."""
    if type(state) in (dict, _ODict):
        return state  # type: ignore[return-value]
    if type(state) is not tuple or len(state) != 2:
        return None
    if not all(part is None or type(part) in (dict, _ODict) for part in state):
        return None
    out: dict[object, object] = {}
    for part in state:
        if part:
            out.update(part)  # type: ignore[call-overload]
    return out


_WRAPPER = "torch._utils._rebuild_wrapper_subclass"
_PLAIN_TYPES = frozenset({"torch.Tensor", "torch.nn.parameter.Parameter"})


def _from_type_v2(args: tuple[object, ...]) -> object:
    # (func, new_type, args, state): a tensor of a subclass, or with Python attributes
    if len(args) != 4:
        raise PickleRefused(f"_rebuild_from_type_v2 called with {len(args)} arguments, not 4")
    func, new_type, inner, state = args
    if type(func) is not _Handler or (
        func.call not in (_rebuild_tensor_v2, _rebuild_tensor_v3) and func.name != _WRAPPER
    ):
        raise PickleRefused("_rebuild_from_type_v2 rebuilds something other than a tensor")
    kind = _type_name(new_type)
    if kind is None:
        raise PickleRefused("_rebuild_from_type_v2 makes a tensor of something not a class")
    if type(inner) is not tuple:
        raise PickleRefused("_rebuild_from_type_v2's arguments are not a tuple")
    if func.name == _WRAPPER:
        # A wrapper subclass (DTensor): an empty shell, whose state holds its
        # tensor (``_local_tensor``). One tensor there is the wrapper's; with
        # more (or none), the wrapper is a record of them, named by attribute.
        attrs = _attributes(state)
        held = [k for k, v in attrs.items() if type(v) is Tensor] if attrs is not None else []
        if len(held) != 1:
            return Record(kind, inner, state=state)
        t: Tensor = attrs[held[0]]  # type: ignore[index,assignment]
        rest = {k: v for k, v in attrs.items() if k != held[0]}  # type: ignore[union-attr]
        wrapper = Record(kind, inner, state=rest)
        return Tensor(t.storage, t.offset, t.shape, t.strides, t.dtype, wrapper)
    t = func.call(inner)  # type: ignore[assignment]
    if kind not in _PLAIN_TYPES:
        t.wrapper = Record(kind, (), state=state)
    return t


def _ordered_dict(args: tuple[object, ...]) -> _ODict:
    if args:
        raise PickleRefused("OrderedDict is called with arguments (torch.save writes none)")
    return _ODict()


def _size(args: tuple[object, ...]) -> tuple[object, ...]:
    if len(args) != 1 or type(args[0]) not in (tuple, list):
        raise PickleRefused("torch.Size is called with something other than a sequence")
    return _ints(tuple(args[0]), "size")  # type: ignore[arg-type]


def _encode(args: tuple[object, ...]) -> bytes:
    # bytes, as protocol 2 pickles them: _codecs.encode(text, "latin1")
    if len(args) != 2 or type(args[0]) is not str or args[1] not in ("latin1", "latin-1"):
        raise PickleRefused("_codecs.encode is called with something other than latin1 text")
    try:
        return args[0].encode("latin-1")
    except UnicodeEncodeError:
        raise PickleRefused("_codecs.encode is given text that is not latin1") from None


def _bytes(args: tuple[object, ...]) -> bytes | None:
    # bytes(): empty bytes, as protocols 0 to 2 pickle them
    return b"" if not args else None


def _reconstructor(args: tuple[object, ...]) -> Record | None:
    # copyreg._reconstructor(cls, base, state): base.__new__(cls, state), as
    # protocols 0 and 1 build an object (then BUILD): of object, no
    # arguments; of tuple (a namedtuple), its items as arguments; of list
    # or dict, its items or entries; else a record of the call.
    if len(args) != 3:
        return None
    cls, base, state = _type_name(args[0]), _type_name(args[1]), args[2]
    if cls is None:
        return None
    if base == "builtins.object" and state is None:
        return Record(cls, ())
    if base == "builtins.tuple" and type(state) is tuple:
        return Record(cls, state)
    rec = Record(cls, ())
    if base == "builtins.list" and type(state) is list:
        rec.items = state
        return rec
    if base == "builtins.dict" and type(state) is dict:
        rec.entries = state
        return rec
    return None


# --- numpy arrays ------------------------------------------------------------------


def _np_dtype(value: object) -> DType:
    """The element type of a ``numpy.dtype`` record (its BUILD state gives
    the byte order); ValueError says why it is not one fastdiff compares."""
    if type(value) is not Record or value.name != "numpy.dtype":  # type: ignore[attr-defined]
        raise ValueError(f"its dtype is {_what(value)}, not a numpy dtype")
    args, state = value.args, value.state  # type: ignore[attr-defined]
    if type(args) is not tuple or not args or type(args[0]) is not str:
        raise ValueError("its numpy dtype is not named")
    descr = args[0]
    if type(state) is not tuple or len(state) < 5 or state[1] not in ("<", ">", "|", "="):
        raise ValueError(f"its numpy dtype {_shown(descr)!r} has no byte order")
    if state[2] is not None or state[3] is not None or state[4] is not None:
        raise ValueError(
            f"numpy dtype {_shown(descr)!r} is structured or a sub-array; fastdiff compares "
            "arrays of plain numbers"
        )
    return from_descr(state[1] + descr)


def _np_fill(arr: Array, shape: object, dtype: object, fortran: object, raw: object) -> Array:
    """``arr`` with its state, or with the problem that keeps it from
    being compared."""
    arr.problem = None
    if (
        type(shape) is not tuple
        or len(shape) > MAX_DIMS
        or any(type(d) is not int or not 0 <= d < _MAX_INT for d in shape)
    ):
        arr.problem = f"its shape is not a tuple of at most {MAX_DIMS} sizes"
        return arr
    arr.shape = shape  # type: ignore[assignment]
    try:
        arr.dtype = dt = _np_dtype(dtype)
    except ValueError as exc:
        arr.problem = str(exc)
        return arr
    if type(fortran) is not bool:
        arr.problem = "its order is not a bool"
        return arr
    arr.fortran = fortran
    if type(raw) is not bytes:
        arr.problem = f"its data is {_what(raw)}, not bytes"
        return arr
    arr.raw = raw
    count = 1
    for d in shape:
        count *= d
    if count * dt.itemsize != len(raw):
        arr.problem = (
            f"its data is {len(raw):,} bytes, but its shape {shape} of {dt.name} needs "
            f"{count * dt.itemsize:,}"
        )
    return arr


def _np_reconstruct(args: tuple[object, ...]) -> Array | None:
    # (numpy.ndarray, (0,), b'b'): an empty array, which BUILD fills
    if (
        len(args) == 3
        and _type_name(args[0]) == "numpy.ndarray"
        and args[1] == (0,)
        and args[2] in (b"b", "b")
    ):
        return Array()
    return None  # a subclass (np.matrix, a masked array): a record


def _np_build(arr: Array, state: object) -> None:
    # (version 1, shape, dtype, is_fortran, data)
    if type(state) is not tuple or len(state) != 5 or state[0] != 1:
        arr.problem = "its state is not numpy's (1, shape, dtype, order, data)"
        return
    _, shape, dtype, fortran, raw = state
    if type(raw) is list:
        arr.problem = "an array of Python objects (dtype object), not of numbers"
        return
    _np_fill(arr, shape, dtype, fortran, raw)


def _np_scalar(args: tuple[object, ...]) -> Array | None:
    # (dtype, data): a numpy scalar (np.float32(1.5))
    if len(args) != 2:
        return None
    return _np_fill(Array(), (), args[0], False, args[1])


def _np_frombuffer(args: tuple[object, ...]) -> Array | None:
    # (data, dtype, shape, order): an array as protocol 5 pickles it
    if len(args) != 4 or args[3] not in ("C", "F"):
        return None
    return _np_fill(Array(), args[2], args[1], args[3] == "F", args[0])


_CALLS: dict[tuple[str, str], Callable[[tuple[object, ...]], object]] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _parameter,
    ("torch._utils", "_rebuild_wrapper_subclass"): lambda args: None,
    ("torch._tensor", "_rebuild_from_type_v2"): _from_type_v2,
    ("collections", "OrderedDict"): _ordered_dict,
    ("torch", "Size"): _size,
    ("_codecs", "encode"): _encode,
    ("builtins", "bytes"): _bytes,
    ("copyreg", "_reconstructor"): _reconstructor,
}
for _np in ("numpy.core", "numpy._core"):
    _CALLS[(f"{_np}.multiarray", "_reconstruct")] = _np_reconstruct
    _CALLS[(f"{_np}.multiarray", "scalar")] = _np_scalar
    _CALLS[(f"{_np}.numeric", "_frombuffer")] = _np_frombuffer
#: Every allowed global: (module, name) -> what it stands for.
_ALLOWED: dict[tuple[str, str], object] = {
    key: _Handler(f"{key[0]}.{key[1]}", call) for key, call in _CALLS.items()
}
_ALLOWED[("torch", "Tensor")] = _Marker("torch.Tensor")
for _key in (("torch", "UntypedStorage"), ("torch.storage", "UntypedStorage")):
    _ALLOWED[_key] = StorageType("UntypedStorage", DTYPES["u8"])
#: Names that are records but part of what fastdiff reads (numpy's arrays,
#: sets, protocol 1's objects): not reported as names the pickle holds.
QUIET = frozenset(
    {
        "numpy.ndarray",
        "numpy.dtype",
        "builtins.object",
        "builtins.tuple",
        "builtins.list",
        "builtins.dict",
        "builtins.set",
        "builtins.frozenset",
    }
)
#: Python 2 spellings of modules (protocols 0 to 2 write them), as pickle
#: reads them.
_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}


#: torch's dtypes (``torch.<name>``): those fastdiff compares, and the
#: others (named in the error that refuses them).
_TORCH_TYPES = frozenset(TORCH) | {
    "complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf", "qint8", "quint8",
    "qint32", "quint4x2", "quint2x4", "float8_e8m0fnu", "float4_e2m1fn_x2", "bits1x8",
    "bits2x4", "bits4x2", "bits8", "bits16", *(f"uint{i}" for i in range(1, 8)),
    *(f"int{i}" for i in range(1, 8)),
}  # fmt: skip


def _global(module: str, name: str) -> object:
    """What an allowed global stands for, or None: the name is a record.
    A tensor of a kind fastdiff does not compare is refused here."""
    found = _ALLOWED.get((module, name))
    if found is not None:
        return found
    if module == "torch" and (name.endswith("Storage") or name in _TORCH_TYPES):
        try:
            dt = from_torch(name)
        except ValueError:
            if not name.endswith("Storage"):
                return None  # a dtype as a value; a tensor of it is refused
            raise PickleRefused(
                f"the pickle holds a tensor or value of torch storage class {_shown(name)}, "
                "which fastdiff does not compare (it compares real, integer and bool tensors)"
            ) from None
        if name.endswith("Storage"):
            return StorageType(name, dt)
        return TorchDType(name, dt)
    if module.split(".")[0] == "torch" and name.startswith("_rebuild"):
        raise PickleRefused(
            f"the pickle holds a tensor rebuilt by {_shown(module)}.{_shown(name)} (a quantized, "
            "sparse, nested or other tensor that is not a plain view of a storage), which "
            "fastdiff does not compare: refused, nothing of it was run"
        )
    return None


# --- the interpreter -------------------------------------------------------------

#: Opcodes that are refused, with what they are.
_REFUSED = {
    0x82: "EXT1 (the extension registry)",
    0x83: "EXT2 (the extension registry)",
    0x84: "EXT4 (the extension registry)",
    0x97: "NEXT_BUFFER (out-of-band data)",
    0x98: "READONLY_BUFFER (out-of-band data)",
    ord("P"): "PERSID (a protocol-0 persistent id)",
    ord("S"): "STRING (a protocol-0 string)",
    ord("V"): "UNICODE (a protocol-0 string)",
    ord("F"): "FLOAT (a protocol-0 float)",
    ord("g"): "GET (protocol 0)",
    ord("p"): "PUT (protocol 0)",
}
#: What each opcode builds, in bytes of CPython's heap (``sys.getsizeof``):
#: the reference it pushes (8) and the object it makes, if any (a str of
#: 49 and its length, a tuple of 40 + 8 per item, a dict of 64, one of this
#: module's records of 72 or 80, a memo entry of 8: a list's slot). Strings
#: and bytes add their length (text that is not ASCII, its size as held);
#: each SETITEMS pair adds a dict entry of 40; a memo entry out of order,
#: 100 (a dict's). A MARK's list lives only until its items are taken (and
#: at most ``MAX_MARKS`` are open): 8.
_COST = [16] * 256
for _op, _cost in (
    (ord("q"), 8), (ord("r"), 8), (0x94, 8), (ord("h"), 8), (ord("j"), 8), (ord("2"), 8),
    (ord("K"), 8), (ord("N"), 8), (0x88, 8), (0x89, 8), (ord(")"), 8), (ord("M"), 36),
    (ord("J"), 36), (ord("I"), 36), (ord("L"), 36), (0x8A, 36), (0x8B, 36), (ord("G"), 32),
    (ord("X"), 56), (0x8C, 56), (0x8D, 56), (ord("T"), 56), (ord("U"), 56),
    (ord("B"), 150), (ord("C"), 150), (0x8E, 150), (0x96, 150),  # and where they lie
    (ord("("), 8), (ord("t"), 48), (0x85, 56), (0x86, 64), (0x87, 72), (ord("l"), 64),
    (ord("]"), 64), (ord("}"), 72), (ord("d"), 72), (ord("a"), 8), (ord("e"), 8),
    (ord("s"), 40), (ord("u"), 8), (ord("R"), 96), (ord("Q"), 200), (ord("c"), 120),
    (0x93, 120), (ord("i"), 200), (ord("o"), 120), (0x81, 120), (0x92, 120), (0x8F, 200),
    (0x90, 8), (0x91, 200), (ord("b"), 8), (ord("0"), 0), (ord("1"), 0), (0x80, 0),
    (0x95, 0), (ord("."), 0),
):  # fmt: skip
    _COST[_op] = _cost
_KEY_TYPES = (str, int, float, bool, type(None), bytes)
#: Leaves ``walk`` counts as values: plain ones, and names of classes and functions.
_LEAF_TYPES = frozenset({*_KEY_TYPES, TorchDType, _Handler, _Marker, StorageType})


def _damaged(what: str, pos: int) -> PickleRefused:
    return PickleRefused(f"the pickle is damaged at byte {pos:,}: {what}")


#: An integer dict key is below this in magnitude: its hash is itself, so
#: distinct keys never collide (many larger ones could, for a slow dict).
_KEY_INT = (1 << 61) - 1


def _key(key: object, depth: int = 0) -> object:
    """``key``, if it can be a dict key with nothing run to hash it, and
    with no hash chosen to collide with others."""
    kind = type(key)
    if kind is int and not -_KEY_INT < key < _KEY_INT:  # type: ignore[operator]
        raise PickleRefused("a dict key is an integer of over 61 bits")
    if kind in _KEY_TYPES or kind is Record or kind is TorchDType:
        return key
    if kind is tuple and depth < _KEY_DEPTH:
        for k in key:  # type: ignore[attr-defined]
            _key(k, depth + 1)
        return key
    raise PickleRefused(
        f"a dict key is a {kind.__name__}, not a str, number, bool, None, bytes, record or "
        f"tuple of them (nested at most {_KEY_DEPTH} deep)"
    )


def _class_of(value: object, opcode: str) -> str:
    """The name of the class an object-building opcode builds."""
    name = _type_name(value)
    if name is None:
        what = getattr(value, "name", None) or type(value).__name__
        raise PickleRefused(
            f"{opcode} builds an object of {_shown(str(what))}, which is not a class the "
            "pickle names"
        )
    return name


def load(
    data: bytes,
    storage: Callable[[str, StorageType, str, int], Storage],
    names: list[str] | None = None,
) -> object:
    """The object pickled in ``data`` (module docstring); ``storage(key,
    storage type, location, numel)``: the storage a persistent id names.
    ``names``, if given, receives the qualified names the pickle reads as
    records, each once, in the order they first appear (``QUIET`` ones
    left out). Raises PickleRefused (or the ValueError ``storage`` raises).

    One loop over the opcodes, with no recursion: nesting costs no stack."""
    n = len(data)
    pos = 0
    stack: list[object] = []
    marks: list[list[object]] = []
    memo: list[object] = []  # entries 0, 1, 2, ... as pickle numbers them
    sparse: dict[int, object] = {}  # any other entries
    spent = 0
    cost = _COST
    unpack_from = struct.unpack_from
    u32 = struct.Struct("<I").unpack_from
    #: The name records made so far, by name (a name is one record).
    named: dict[str, Record] = {}
    #: Where each bytes argument lies in ``data`` (by id; the object is kept).
    where: dict[int, tuple[bytes, int]] = {}

    def need(k: int) -> None:
        if pos + k > n:
            raise _damaged(f"it ends inside an opcode ({k} bytes wanted)", pos)

    def pop_mark() -> list[object]:
        nonlocal stack
        if not marks:
            raise _damaged("an opcode needs a MARK there is none of", pos)
        items = stack
        stack = marks.pop()
        return items

    def line() -> bytes:
        nonlocal pos
        end = data.find(b"\n", pos, pos + 1024)
        if end < 0:
            raise _damaged("a text argument has no end of line (or is over 1 KiB)", pos)
        text = data[pos:end]
        pos = end + 1
        return text

    def counted(width: int) -> bytes:
        """A length-prefixed argument: its length in ``width`` little-endian
        bytes, then that many bytes (counted against ``MAX_MEMORY``)."""
        nonlocal pos, spent
        need(width)
        k = int.from_bytes(data[pos : pos + width], "little")
        pos += width
        need(k)
        spent += k
        pos += k
        return data[pos - k : pos]

    def text(raw: bytes, start: int | None = None) -> str:
        """``raw`` as UTF-8; ``start``: the byte an error names (default: here)."""
        nonlocal spent
        try:
            out = str(raw, "utf-8")
        except UnicodeDecodeError:
            raise _damaged("a string that is not UTF-8", pos if start is None else start) from None
        if not out.isascii():  # 1, 2 or 4 bytes a character
            spent += max(0, getsizeof(out) - 49 - len(raw))
        return out

    def put(index: int, value: object) -> None:
        nonlocal spent
        if index == len(memo):
            memo.append(value)
            if sparse:
                sparse.pop(index, None)
        elif index < len(memo):
            memo[index] = value
        else:
            sparse[index] = value
            spent += 100

    def get(index: int) -> object:
        if index < len(memo):
            return memo[index]
        try:
            return sparse[index]
        except KeyError:
            raise _damaged(f"it refers to memo entry {index}, never stored", pos) from None

    def name_of(module: str, name: str) -> object:
        """What a global stands for: a handler, or the record of its name."""
        module = _PY2_MODULES.get(module, module)
        found = _global(module, name)
        if found is not None:
            return found
        qualified = f"{module}.{name}"
        rec = named.get(qualified)
        if rec is None:
            rec = named[qualified] = Record(qualified)
            if names is not None and qualified not in QUIET:
                names.append(qualified)
        return rec

    def located(arr: object) -> object:
        """``arr`` (a numpy array) told where its bytes lie in ``data``."""
        if type(arr) is Array and arr.problem is None:
            found = where.get(id(arr.raw))
            if found is not None and found[0] is arr.raw:
                arr.at = found[1]
        return arr

    def bytes_arg(width: int) -> bytes:
        raw = counted(width)
        if len(raw) > 1:  # (CPython shares the bytes objects of 0 and 1 byte)
            where[id(raw)] = (raw, pos - len(raw))
        return raw

    try:
        while True:
            if pos >= n:
                raise _damaged("it ends without STOP", pos)
            op = data[pos]
            at = pos
            pos += 1
            spent += cost[op]
            if spent > MAX_MEMORY:
                raise PickleRefused(
                    f"the pickle builds more than fastdiff reads (about {MAX_MEMORY >> 20} MiB "
                    "of objects: a pickle bomb?)"
                )
            # The opcodes torch.save writes most come first, the commonest inline.
            if op == 0x72:  # r LONG_BINPUT
                if pos + 4 > n:
                    need(4)
                index = u32(data, pos)[0]
                pos += 4
                if index == len(memo) and not sparse:
                    memo.append(stack[-1])
                else:
                    put(index, stack[-1])
            elif op == 0x68:  # h BINGET
                if pos >= n:
                    need(1)
                index = data[pos]
                pos += 1
                stack.append(memo[index] if index < len(memo) else get(index))
            elif op == 0x4B:  # K BININT1
                if pos >= n:
                    need(1)
                stack.append(data[pos])
                pos += 1
            elif op == 0x71:  # q BINPUT
                if pos >= n:
                    need(1)
                put(data[pos], stack[-1])
                pos += 1
            elif op == 0x28:  # ( MARK
                if len(marks) >= MAX_MARKS:
                    raise PickleRefused(
                        f"containers nested over {MAX_MARKS:,} deep as they are built (a "
                        "pickle bomb?)"
                    )
                marks.append(stack)
                stack = []
            elif op == 0x58:  # X BINUNICODE
                if pos + 4 > n:
                    need(4)
                k = u32(data, pos)[0]
                pos += 4
                if pos + k > n:
                    need(k)
                spent += k
                pos += k
                stack.append(text(data[pos - k : pos], pos - k))
            elif op == 0x8C or op == 0x8D:  # SHORT_BINUNICODE, BINUNICODE8
                raw = counted(1 if op == 0x8C else 8)
                stack.append(text(raw, pos - len(raw)))
            elif op == 0x74:  # t TUPLE
                items = pop_mark()  # (first: it rebinds ``stack``)
                stack.append(tuple(items))
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x52:  # R REDUCE
                args = stack.pop()
                func = stack[-1]
                kind = type(func)
                if type(args) is not tuple:
                    what = getattr(func, "name", None) or kind.__name__
                    raise PickleRefused(f"REDUCE calls {_shown(what)} with arguments not a tuple")
                if kind is _Handler:
                    made = func.call(args)  # type: ignore[attr-defined]
                    if made is None:
                        made = Record(func.name, args)  # type: ignore[attr-defined]
                    stack[-1] = located(made)
                elif kind is Record and func.args is None:  # type: ignore[attr-defined]
                    stack[-1] = Record(func.name, args)  # type: ignore[attr-defined]
                else:
                    what = getattr(func, "name", None) or kind.__name__
                    if kind is Record:
                        what = f"the result of calling {what}"
                    raise PickleRefused(f"REDUCE calls {_shown(what)}, which is not a function")
            elif op == 0x51:  # Q BINPERSID
                pid = stack.pop()
                if (
                    type(pid) is not tuple
                    or len(pid) != 5
                    or pid[0] != "storage"
                    or type(pid[1]) is not StorageType
                    or type(pid[2]) is not str
                    or type(pid[3]) is not str
                    or type(pid[4]) is not int
                    or not 0 <= pid[4] < _MAX_INT
                ):
                    raise PickleRefused(
                        "a persistent id that is not a storage ('storage', type, key, "
                        "location, numel)"
                    )
                stack.append(storage(pid[2], pid[1], pid[3], pid[4]))
            elif op == 0x89:  # NEWFALSE
                stack.append(False)
            elif op == 0x88:  # NEWTRUE
                stack.append(True)
            elif op == 0x29:  # ) EMPTY_TUPLE
                stack.append(())
            elif op == 0x86:  # TUPLE2
                b = stack.pop()
                stack[-1] = (stack[-1], b)
            elif op == 0x87:  # TUPLE3
                c = stack.pop()
                b = stack.pop()
                stack[-1] = (stack[-1], b, c)
            elif op == 0x75 or op == 0x64:  # u SETITEMS, d DICT
                items = pop_mark()
                if len(items) % 2:
                    raise _damaged("a dict's keys and values do not pair up", at)
                spent += 20 * len(items)
                if op == 0x64:
                    stack.append({})
                target = stack[-1]
                kind = type(target)
                if kind is Record and target.args is not None:  # type: ignore[attr-defined]
                    if target.entries is None:  # type: ignore[attr-defined]
                        target.entries = {}  # type: ignore[attr-defined]
                    target = target.entries  # type: ignore[attr-defined]
                elif kind is not dict and kind is not _ODict:
                    raise PickleRefused(f"SETITEMS on {_what(target)}, not a dict")
                for i in range(0, len(items), 2):
                    target[_key(items[i])] = items[i + 1]  # type: ignore[index]
            elif op == 0x4E:  # N NONE
                stack.append(None)
            elif op == 0x63:  # c GLOBAL
                module = text(line())
                stack.append(name_of(module, text(line())))
            elif op == 0x93:  # STACK_GLOBAL
                name = stack.pop()
                module = stack.pop()
                if type(module) is not str or type(name) is not str:
                    raise PickleRefused("STACK_GLOBAL names a global with something not a str")
                stack.append(name_of(module, name))
            elif op == 0x7D:  # } EMPTY_DICT
                stack.append({})
            elif op == 0x5D:  # ] EMPTY_LIST
                stack.append([])
            elif op == 0x4D:  # M BININT2
                need(2)
                stack.append(int.from_bytes(data[pos : pos + 2], "little"))
                pos += 2
            elif op == 0x4A:  # J BININT
                need(4)
                stack.append(int.from_bytes(data[pos : pos + 4], "little", signed=True))
                pos += 4
            elif op == 0x73:  # s SETITEM
                value = stack.pop()
                key = stack.pop()
                target = stack[-1]
                kind = type(target)
                if kind is Record and target.args is not None:  # type: ignore[attr-defined]
                    if target.entries is None:  # type: ignore[attr-defined]
                        target.entries = {}  # type: ignore[attr-defined]
                    target = target.entries  # type: ignore[attr-defined]
                elif kind is not dict and kind is not _ODict:
                    raise PickleRefused(f"SETITEM on {_what(target)}, not a dict")
                target[_key(key)] = value  # type: ignore[index]
            elif op == 0x61 or op == 0x65:  # a APPEND, e APPENDS
                if op == 0x61:
                    items = [stack.pop()]
                else:
                    items = pop_mark()
                    spent += 8 * len(items)
                target = stack[-1]
                kind = type(target)
                if kind is Record and target.args is not None:  # type: ignore[attr-defined]
                    if target.items is None:  # type: ignore[attr-defined]
                        target.items = []  # type: ignore[attr-defined]
                    target = target.items  # type: ignore[attr-defined]
                elif kind is not list:
                    raise PickleRefused(f"APPENDS to {_what(target)}, not a list")
                target.extend(items)  # type: ignore[attr-defined]
            elif op == 0x6C:  # l LIST
                items = pop_mark()
                stack.append(items)
            elif op == 0x6A:  # j LONG_BINGET
                need(4)
                stack.append(get(int.from_bytes(data[pos : pos + 4], "little")))
                pos += 4
            elif op == 0x94:  # MEMOIZE
                put(len(memo) + len(sparse), stack[-1])
            elif op == 0x47:  # G BINFLOAT
                need(8)
                stack.append(unpack_from(">d", data, pos)[0])
                pos += 8
            elif op == 0x8A or op == 0x8B:  # LONG1, LONG4
                width = 1 if op == 0x8A else 4
                need(width)
                k = int.from_bytes(data[pos : pos + width], "little")
                pos += width
                if k > 64:
                    raise PickleRefused(f"an integer of {k:,} bytes (torch.save writes int64s)")
                need(k)
                stack.append(int.from_bytes(data[pos : pos + k], "little", signed=True))
                pos += k
            elif op == 0x49 or op == 0x4C:  # I INT, L LONG (protocol 1: bools, big ints)
                raw = line()
                if op == 0x49 and raw in (b"00", b"01"):
                    stack.append(raw == b"01")
                else:
                    if op == 0x4C and raw.endswith(b"L"):
                        raw = raw[:-1]
                    if len(raw) > 40:
                        raise PickleRefused("an integer of over 40 digits")
                    try:
                        stack.append(int(raw.decode("ascii")))
                    except (UnicodeDecodeError, ValueError):
                        raise _damaged("an integer that is not digits", at) from None
            elif op == 0x42 or op == 0x43 or op == 0x8E:  # BINBYTES, SHORT_, 8
                stack.append(bytes_arg(4 if op == 0x42 else 1 if op == 0x43 else 8))
            elif op == 0x96:  # BYTEARRAY8: read as bytes (numpy's data in protocol 5)
                stack.append(bytes_arg(8))
            elif op == 0x54 or op == 0x55:  # BINSTRING, SHORT_BINSTRING (ASCII, as pickle)
                raw = counted(4 if op == 0x54 else 1)
                try:
                    stack.append(raw.decode("ascii"))
                except UnicodeDecodeError:
                    raise _damaged("a byte string that is not ASCII", at) from None
            elif op == 0x62:  # b BUILD
                state = stack.pop()
                inst = stack[-1]
                kind = type(inst)
                if kind is Record and inst.args is not None:  # type: ignore[attr-defined]
                    if inst.state is not None:  # type: ignore[attr-defined]
                        raise PickleRefused(
                            f"BUILD sets the state of {_shown(inst.name)} twice"  # type: ignore[attr-defined]
                        )
                    inst.state = state  # type: ignore[attr-defined]
                elif kind is Array:
                    if inst.problem is not _NO_STATE:  # type: ignore[attr-defined]
                        raise PickleRefused("BUILD sets the state of a numpy array twice")
                    _np_build(inst, state)  # type: ignore[arg-type]
                    located(inst)
                elif kind is not _ODict or type(state) not in (dict, type(None)):
                    raise PickleRefused(
                        f"BUILD sets the state of {_what(inst)} (torch.save builds only "
                        "OrderedDicts' attributes and objects of classes)"
                    )
            elif op == 0x81 or op == 0x92:  # NEWOBJ, NEWOBJ_EX: an object of a class
                kwargs = stack.pop() if op == 0x92 else None
                args = stack.pop()
                opname = "NEWOBJ" if op == 0x81 else "NEWOBJ_EX"
                cls = _class_of(stack[-1], opname)
                if type(args) is not tuple or (op == 0x92 and type(kwargs) is not dict):
                    raise PickleRefused(f"{opname} builds {_shown(cls)} with arguments not a tuple")
                stack[-1] = Record(cls, args, kwargs)  # type: ignore[arg-type]
            elif op == 0x6F:  # o OBJ: a class and its arguments, from a MARK
                items = pop_mark()
                if not items:
                    raise _damaged("OBJ without a class", at)
                stack.append(Record(_class_of(items[0], "OBJ"), tuple(items[1:])))
            elif op == 0x69:  # i INST: a class named inline, and its arguments
                module = text(line())
                name = text(line())
                cls = _class_of(name_of(module, name), "INST")
                items = pop_mark()  # (first: it rebinds ``stack``)
                stack.append(Record(cls, tuple(items)))
            elif op == 0x8F:  # EMPTY_SET: a set, as protocol 2 spells it
                stack.append(Record("builtins.set", ([],)))
            elif op == 0x90:  # ADDITEMS
                items = pop_mark()
                spent += 8 * len(items)
                target = stack[-1]
                if type(target) is not Record or target.name != "builtins.set":
                    raise PickleRefused(f"ADDITEMS to {_what(target)}, not a set")
                target.args[0].extend(items)  # type: ignore[index,union-attr]
            elif op == 0x91:  # FROZENSET
                items = pop_mark()  # (first: it rebinds ``stack``)
                stack.append(Record("builtins.frozenset", (items,)))
            elif op == 0x30:  # 0 POP
                if stack:
                    stack.pop()
                else:
                    pop_mark()
            elif op == 0x31:  # 1 POP_MARK
                pop_mark()
            elif op == 0x32:  # 2 DUP
                stack.append(stack[-1])
            elif op == 0x80:  # PROTO
                need(1)
                if data[pos] > 5:
                    raise PickleRefused(f"pickle protocol {data[pos]} (fastdiff reads 1 to 5)")
                pos += 1
            elif op == 0x95:  # FRAME: a hint of how the pickle is framed
                need(8)
                k = int.from_bytes(data[pos : pos + 8], "little")
                pos += 8
                if pos + k > n:
                    raise _damaged("a frame runs past the end of the pickle", at)
            elif op == 0x2E:  # . STOP
                if len(stack) != 1 or marks:
                    raise _damaged("STOP with other than one object on the stack", at)
                if pos != n:
                    raise _damaged(f"{n - pos:,} bytes after STOP", pos)
                return stack[0]
            elif op in _REFUSED:
                raise PickleRefused(
                    f"the pickle uses opcode {_REFUSED[op]} at byte {at:,}, which torch.save "
                    "does not write: refused, nothing of it was run"
                )
            else:
                raise _damaged(f"unknown opcode 0x{op:02x}", at)
    except IndexError:
        raise _damaged("an opcode needs more on the stack than there is", pos) from None


def _what(value: object) -> str:
    """What ``value`` is, for a message: ``a list``, ``the name os.system``."""
    kind = type(value)
    if kind is Record:
        if value.args is None:  # type: ignore[attr-defined]
            return f"the name {_shown(value.name)}"  # type: ignore[attr-defined]
        return f"a record of {_shown(value.name)}"  # type: ignore[attr-defined]
    return f"a {kind.__name__}"


# --- names -----------------------------------------------------------------------


def _part(key: object) -> str:
    """A dict key as a part of a dotted name."""
    kind = type(key)
    if kind is str:
        return key  # type: ignore[return-value]
    if kind is bytes:
        return key.decode("latin-1")  # type: ignore[attr-defined]
    if kind is tuple:
        inner = ", ".join(_part(k) for k in key)  # type: ignore[attr-defined]
        return f"({inner},)" if len(key) == 1 else f"({inner})"  # type: ignore[arg-type]
    if kind is Record or kind is TorchDType:
        return key.name  # type: ignore[attr-defined]
    return str(key)


#: What a leaf that is not a tensor is, for ``walk``'s ``values``: a number,
#: a boolean or None is state (``VALUE``); a string, bytes or a name (a
#: torch dtype, a class or function given as a value) a label (``LABEL``).
VALUE, LABEL = "value", "label"


def leaf_value(obj: object) -> tuple[str, object]:
    """(``VALUE`` or ``LABEL``, the plain value) of a leaf ``walk`` reaches
    that is not a tensor: a name (a torch dtype, a class or a function given
    as a value) is the label of its qualified name."""
    kind = type(obj)
    if kind is int or kind is float or kind is bool or obj is None:
        return VALUE, obj
    if kind is str or kind is bytes:
        return LABEL, obj
    name = getattr(obj, "name", None)
    return LABEL, name if isinstance(name, str) else kind.__name__


def walk(
    root: object, values: list[tuple[str, object]] | None = None
) -> tuple[list[tuple[str, Tensor | Array]], int]:
    """The tensors and numpy arrays of an unpickled object by dotted name
    (dict keys and list indices joined by dots: ``model.fc.weight``,
    ``opt.state.0.exp_avg``, ``rng.np.1``; a lone tensor or array is
    ``tensor``), in pickle order, and the number of other leaves (ints,
    floats, strings, bools, None, bytes, dtypes, names) left out.

    A record is walked as an object: its arguments by index, its keyword
    arguments, attributes (a dict state, or ``(dict, slots)``) and entries
    by key, another state as the value it is, its items by index. A
    wrapper tensor (``DTensor``) is its local tensor (``Tensor.wrapper``
    keeps the rest, not walked).
    ``values``: where to add each other leaf too, as (dotted name, leaf),
    in pickle order (its name unique among the tensors' and values'; the
    count is then of the leaves left out, those with no name to give: none
    but a lone value). Raises PickleRefused past the caps, or for a name
    twice or empty."""
    found: list[tuple[str, Tensor | Array]] = []
    names: set[str] = set()
    others = 0
    nodes = 0

    def visit(obj: object, parts: tuple[str, ...], length: int, depth: int) -> None:
        nonlocal others, nodes
        nodes += 1
        if nodes > MAX_NODES:
            raise PickleRefused(
                f"the pickle's containers hold over {MAX_NODES:,} entries (counting shared "
                "ones each time they are reached: a pickle bomb?)"
            )
        if depth > MAX_DEPTH:
            raise PickleRefused(f"containers nested over {MAX_DEPTH} deep")
        if length > MAX_NAME:
            raise PickleRefused(f"a name of over {MAX_NAME:,} characters")
        kind = type(obj)
        if kind is Tensor or kind is Array:
            name = ".".join(parts) if parts else "tensor"
            if not name or any(not p for p in parts):
                raise PickleRefused(f"a tensor whose name has an empty part ({_shown(name)!r})")
            if name in names:
                raise PickleRefused(f"two tensors are named {_shown(name)!r}")
            if len(found) + (len(values) if values else 0) >= MAX_TENSORS:
                raise PickleRefused(f"over {MAX_TENSORS:,} tensors and numpy arrays")
            names.add(name)
            found.append((name, obj))  # type: ignore[arg-type]
        elif kind is dict or kind is _ODict:
            entries(obj, parts, length, depth)  # type: ignore[arg-type]
        elif kind is list or kind is tuple:
            for i, value in enumerate(obj):  # type: ignore[arg-type]
                part = str(i)
                visit(value, (*parts, part), length + len(part) + 1, depth + 1)
        elif kind is Record:
            if obj.args is None:  # type: ignore[attr-defined]
                leaf(obj, parts)  # a name: a class or function given as a value
                return
            record(obj, parts, length, depth)  # type: ignore[arg-type]
        elif kind in _LEAF_TYPES:
            leaf(obj, parts)
        else:  # a storage left as a value
            what = getattr(obj, "key", None) or kind.__name__
            raise PickleRefused(
                f"the pickle holds storage {_shown(str(what))} as a value (torch.save writes "
                "storages inside tensors only)"
            )

    def leaf(obj: object, parts: tuple[str, ...]) -> None:
        nonlocal others
        if values is None or not parts or any(not p for p in parts):
            others += 1
            return
        name = ".".join(parts)
        if name in names:
            raise PickleRefused(f"two tensors or values are named {_shown(name)!r}")
        if len(found) + len(values) >= MAX_TENSORS:
            raise PickleRefused(f"over {MAX_TENSORS:,} tensors, numpy arrays and values")
        names.add(name)
        values.append((name, obj))

    def entries(obj: dict[object, object], parts: tuple[str, ...], length: int, depth: int) -> None:
        for key, value in obj.items():
            part = _part(key)
            visit(value, (*parts, part), length + len(part) + 1, depth + 1)

    def record(rec: Record, parts: tuple[str, ...], length: int, depth: int) -> None:
        visit(rec.args, parts, length, depth + 1)
        if rec.kwargs:
            entries(rec.kwargs, parts, length, depth + 1)
        attrs = rec.attributes
        if attrs is not None:
            entries(attrs, parts, length, depth + 1)
        elif rec.state is not None:
            visit(rec.state, parts, length, depth + 1)
        if rec.items:
            visit(rec.items, parts, length, depth + 1)
        if rec.entries:
            entries(rec.entries, parts, length, depth + 1)

    visit(root, (), 0, 0)
    return found, others
