"""A restricted reader of the pickle ``torch.save`` writes (``data.pkl``).

This is not ``pickle``: it is an interpreter of pickle opcodes of its own
that builds plain data only (dicts, lists, tuples, str, int, float, bool,
None, bytes) and the records of this module (``Storage``, ``Tensor``,
``TorchDType``). What it does not do is what makes it safe:

- it never imports a module, never looks an attribute up by a name the
  file gives, and never calls anything the file names. A global (GLOBAL,
  STACK_GLOBAL) is a key into the fixed table ``_ALLOWED`` of this module's
  own handlers; any other global is refused on sight, naming it, before
  another opcode runs;
- REDUCE calls a handler of that table only (each checks its arguments and
  builds a record); BUILD is accepted on an ``OrderedDict`` only (its state,
  ``state_dict()``'s ``_metadata``, is attributes, not items: dropped);
- INST, OBJ, NEWOBJ, NEWOBJ_EX (building objects of a class), EXT1/2/4 (the
  extension registry), out-of-band buffers, sets, and the text opcodes of
  protocol 0 that torch cannot write are refused;
- a dict key must be a str, int, float, bool, None or bytes (hashing one
  runs no code of the file); a persistent id must be a storage tuple
  ``('storage', storage type, key, location, numel)``, handed to the
  caller's ``storage`` function.

Against pickle bombs: the pickle is at most the caller's bytes, and the
objects it builds are counted against ``MAX_MEMORY`` (an estimate of their
size, references included: ``DUP`` and memo references cost too, so a small
file cannot make a large heap). The
result is walked by the caller (``walk``) with caps on depth, on the nodes
visited (shared sub-lists cannot multiply the work) and on the tensors.
"""

from __future__ import annotations

import struct

from ..dtypes import DTYPES, TORCH, from_torch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..dtypes import DType

#: The objects a pickle builds, memo entries and references included,
#: estimated in bytes: at most this much (about 170,000 tensors).
MAX_MEMORY = 256 << 20
#: ``walk``: nesting at most this deep, at most this many nodes visited and
#: tensors found, names at most this long.
MAX_DEPTH = 100
MAX_NODES = 1 << 21
MAX_TENSORS = 1 << 18
MAX_NAME = 4096
#: Shapes of at most this many dimensions.
MAX_DIMS = 64
#: A size, stride or offset is below this (torch's are int64).
_MAX_INT = 1 << 62


class PickleRefused(ValueError):
    """A ``data.pkl`` that is refused: what it asked for, or what is wrong."""


def _shown(text: str) -> str:
    """A name from the file, fit for a one-line message."""
    if text.isprintable() and len(text) <= 200:
        return text
    return repr(text[:200]) + ("..." if len(text) > 200 else "")


# --- the records a pickle can build ------------------------------------------------


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
    element type ``dtype``. Checked against its storage by the caller."""

    __slots__ = ("dtype", "offset", "shape", "storage", "strides")

    def __init__(
        self, storage: Storage, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
        dtype: DType,
    ) -> None:  # fmt: skip
        self.storage = storage
        self.offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype


class _ODict(dict):  # type: ignore[type-arg]
    """An ``OrderedDict`` of the pickle (a dict: insertion order is kept);
    only it accepts BUILD."""

    __slots__ = ()


class _Handler:
    """An allowed global that REDUCE may call: its name as the pickle gives
    it, and this module's function that builds what it stands for."""

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
    return tuple(_int(v, what) for v in value)


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
    if type(args[6]) is not TorchDType:
        raise PickleRefused("_rebuild_tensor_v3's dtype is not a torch dtype")
    _metadata(args[7] if len(args) == 8 else None)
    return _tensor_args(args, args[6].dtype)


def _parameter(args: tuple[object, ...]) -> Tensor:
    # (data, requires_grad, backward_hooks[, state]): the state is Python attributes
    if len(args) not in (3, 4) or type(args[0]) is not Tensor:
        raise PickleRefused("a Parameter is rebuilt from something that is not a tensor")
    return args[0]


def _from_type_v2(args: tuple[object, ...]) -> Tensor:
    # (func, new_type, args, state): a tensor with Python attributes (state, dropped)
    if len(args) != 4:
        raise PickleRefused(f"_rebuild_from_type_v2 called with {len(args)} arguments, not 4")
    func, new_type, inner, _ = args
    if type(func) is not _Handler or func.call not in (_rebuild_tensor_v2, _rebuild_tensor_v3):
        raise PickleRefused("_rebuild_from_type_v2 rebuilds something other than a tensor")
    if type(new_type) is not _Marker:
        raise PickleRefused("_rebuild_from_type_v2 makes a tensor of a type fastdiff refuses")
    if type(inner) is not tuple:
        raise PickleRefused("_rebuild_from_type_v2's arguments are not a tuple")
    return func.call(inner)  # type: ignore[return-value]


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


_CALLS: dict[tuple[str, str], Callable[[tuple[object, ...]], object]] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _parameter,
    ("torch._tensor", "_rebuild_from_type_v2"): _from_type_v2,
    ("collections", "OrderedDict"): _ordered_dict,
    ("torch", "Size"): _size,
    ("_codecs", "encode"): _encode,
}
#: Every allowed global: (module, name) -> what it stands for.
_ALLOWED: dict[tuple[str, str], object] = {
    key: _Handler(f"{key[0]}.{key[1]}", call) for key, call in _CALLS.items()
}
_ALLOWED[("torch", "Tensor")] = _Marker("torch.Tensor")
for _key in (("torch", "UntypedStorage"), ("torch.storage", "UntypedStorage")):
    _ALLOWED[_key] = StorageType("UntypedStorage", DTYPES["u8"])


#: torch's dtypes (``torch.<name>``): those fastdiff compares, and the
#: others (named in the error that refuses them).
_TORCH_TYPES = frozenset(TORCH) | {
    "complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf", "qint8", "quint8",
    "qint32", "quint4x2", "quint2x4", "float8_e8m0fnu", "float4_e2m1fn_x2", "bits1x8",
    "bits2x4", "bits4x2", "bits8", "bits16", *(f"uint{i}" for i in range(1, 8)),
    *(f"int{i}" for i in range(1, 8)),
}  # fmt: skip


def _global(module: str, name: str) -> object:
    """What an allowed global stands for; anything else is refused here,
    before the pickle can use it."""
    found = _ALLOWED.get((module, name))
    if found is not None:
        return found
    if module == "torch" and (name.endswith("Storage") or name in _TORCH_TYPES):
        try:
            dt = from_torch(name)
        except ValueError:
            kind = "storage class" if name.endswith("Storage") else "dtype"
            raise PickleRefused(
                f"the pickle holds a tensor or value of torch {kind} {_shown(name)}, which "
                "fastdiff does not compare (it compares real, integer and bool tensors)"
            ) from None
        if name.endswith("Storage"):
            return StorageType(name, dt)
        return TorchDType(name, dt)
    hint = ""
    if module.split(".")[0] in ("numpy", "numpy.core"):
        hint = " (a numpy array or scalar: fastdiff reads torch tensors only)"
    elif module.startswith("__torch__"):
        hint = " (a TorchScript object)"
    raise PickleRefused(
        f"the pickle asks for {_shown(module)}.{_shown(name)}{hint}, which is not one of the "
        "tensor rebuilds, storages and containers torch.save writes: refused, nothing of it "
        "was run"
    )


# --- the interpreter -------------------------------------------------------------

#: Opcodes that are refused, with what they are.
_REFUSED = {
    ord("o"): "OBJ (builds an object of a class)",
    0x81: "NEWOBJ (builds an object of a class)",
    0x92: "NEWOBJ_EX (builds an object of a class)",
    0x82: "EXT1 (the extension registry)",
    0x83: "EXT2 (the extension registry)",
    0x84: "EXT4 (the extension registry)",
    0x97: "NEXT_BUFFER (out-of-band data)",
    0x98: "READONLY_BUFFER (out-of-band data)",
    0x96: "BYTEARRAY8 (a bytearray)",
    0x8F: "EMPTY_SET (a set)",
    0x90: "ADDITEMS (a set)",
    0x91: "FROZENSET (a frozenset)",
    ord("P"): "PERSID (a protocol-0 persistent id)",
    ord("S"): "STRING (a protocol-0 string)",
    ord("V"): "UNICODE (a protocol-0 string)",
    ord("F"): "FLOAT (a protocol-0 float)",
    ord("g"): "GET (protocol 0)",
    ord("p"): "PUT (protocol 0)",
}
#: What each value-making opcode costs, roughly, in bytes of the heap (its
#: object, and the reference to it); strings and bytes add their length.
_COST = [16] * 256
for _op, _cost in (
    (ord("]"), 72), (ord("}"), 72), (ord("l"), 72), (ord("d"), 72), (ord("t"), 64),
    (0x85, 64), (0x86, 72), (0x87, 80), (ord("("), 64), (ord("R"), 128), (ord("Q"), 128),
    (ord("q"), 96), (ord("r"), 96), (0x94, 96), (ord("c"), 32), (0x93, 32),
    (ord("X"), 56), (0x8C, 56), (0x8D, 56), (ord("B"), 40), (ord("C"), 40), (0x8E, 40),
    (ord("T"), 56), (ord("U"), 56), (ord("J"), 32), (ord("M"), 32), (ord("K"), 32),
    (ord("I"), 32), (ord("L"), 32), (0x8A, 32), (0x8B, 32), (ord("G"), 32),
    (ord("a"), 8), (ord("e"), 8), (ord("s"), 24), (ord("u"), 24),
):  # fmt: skip
    _COST[_op] = _cost
_KEY_TYPES = (str, int, float, bool, type(None), bytes)


def _damaged(what: str, pos: int) -> PickleRefused:
    return PickleRefused(f"the pickle is damaged at byte {pos:,}: {what}")


def _key(key: object) -> object:
    if type(key) not in _KEY_TYPES:
        raise PickleRefused(
            f"a dict key is a {type(key).__name__}, not a str, number, bool, None or bytes"
        )
    return key


def load(data: bytes, storage: Callable[[str, StorageType, str, int], Storage]) -> object:
    """The object pickled in ``data`` (module docstring); ``storage(key,
    storage type, location, numel)``: the storage a persistent id names.
    Raises PickleRefused (or the ValueError ``storage`` raises).

    One loop over the opcodes, with no recursion: nesting costs no stack."""
    n = len(data)
    pos = 0
    stack: list[object] = []
    marks: list[list[object]] = []
    memo: dict[int, object] = {}
    spent = 0
    cost = _COST
    unpack_from = struct.unpack_from

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

    def text(raw: bytes, where: int | None = None) -> str:
        """``raw`` as UTF-8; ``where``: the byte an error names (default: here)."""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _damaged("a string that is not UTF-8", pos if where is None else where) from None

    def put(index: int, value: object) -> None:
        memo[index] = value  # (its cost is counted with the opcode's)

    def get(index: int) -> object:
        try:
            return memo[index]
        except KeyError:
            raise _damaged(f"it refers to memo entry {index}, never stored", pos) from None

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
            if op == 0x71:  # q BINPUT
                need(1)
                put(data[pos], stack[-1])
                pos += 1
            elif op == 0x68:  # h BINGET
                need(1)
                stack.append(get(data[pos]))
                pos += 1
            elif op == 0x58 or op == 0x8C or op == 0x8D:  # X BINUNICODE, SHORT_, 8
                raw = counted(4 if op == 0x58 else 1 if op == 0x8C else 8)
                stack.append(text(raw, pos - len(raw)))
            elif op == 0x4B:  # K BININT1
                need(1)
                stack.append(data[pos])
                pos += 1
            elif op == 0x4D:  # M BININT2
                need(2)
                stack.append(int.from_bytes(data[pos : pos + 2], "little"))
                pos += 2
            elif op == 0x4A:  # J BININT
                need(4)
                stack.append(int.from_bytes(data[pos : pos + 4], "little", signed=True))
                pos += 4
            elif op == 0x28:  # ( MARK
                marks.append(stack)
                stack = []
            elif op == 0x74:  # t TUPLE
                items = pop_mark()  # (first: it rebinds ``stack``)
                stack.append(tuple(items))
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x86:  # TUPLE2
                b = stack.pop()
                stack[-1] = (stack[-1], b)
            elif op == 0x87:  # TUPLE3
                c = stack.pop()
                b = stack.pop()
                stack[-1] = (stack[-1], b, c)
            elif op == 0x29:  # ) EMPTY_TUPLE
                stack.append(())
            elif op == 0x52:  # R REDUCE
                args = stack.pop()
                func = stack[-1]
                if type(func) is not _Handler:
                    what = getattr(func, "name", None) or type(func).__name__
                    raise PickleRefused(f"REDUCE calls {_shown(what)}, which is not a function")
                if type(args) is not tuple:
                    raise PickleRefused(f"REDUCE calls {func.name} with arguments not a tuple")
                stack[-1] = func.call(args)
            elif op == 0x88:  # NEWTRUE
                stack.append(True)
            elif op == 0x89:  # NEWFALSE
                stack.append(False)
            elif op == 0x4E:  # N NONE
                stack.append(None)
            elif op == 0x63:  # c GLOBAL
                module = text(line())
                stack.append(_global(module, text(line())))
            elif op == 0x93:  # STACK_GLOBAL
                name = stack.pop()
                module = stack.pop()
                if type(module) is not str or type(name) is not str:
                    raise PickleRefused("STACK_GLOBAL names a global with something not a str")
                stack.append(_global(module, name))
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
            elif op == 0x7D:  # } EMPTY_DICT
                stack.append({})
            elif op == 0x5D:  # ] EMPTY_LIST
                stack.append([])
            elif op == 0x75 or op == 0x64:  # u SETITEMS, d DICT
                items = pop_mark()
                if len(items) % 2:
                    raise _damaged("a dict's keys and values do not pair up", at)
                if op == 0x64:
                    stack.append({})
                target = stack[-1]
                if type(target) not in (dict, _ODict):
                    raise PickleRefused(f"SETITEMS on a {type(target).__name__}, not a dict")
                for i in range(0, len(items), 2):
                    target[_key(items[i])] = items[i + 1]  # type: ignore[index]
            elif op == 0x73:  # s SETITEM
                value = stack.pop()
                key = stack.pop()
                target = stack[-1]
                if type(target) not in (dict, _ODict):
                    raise PickleRefused(f"SETITEM on a {type(target).__name__}, not a dict")
                target[_key(key)] = value  # type: ignore[index]
            elif op == 0x61:  # a APPEND
                value = stack.pop()
                if type(stack[-1]) is not list:
                    raise PickleRefused(f"APPEND to a {type(stack[-1]).__name__}, not a list")
                stack[-1].append(value)  # type: ignore[attr-defined]
            elif op == 0x65:  # e APPENDS
                items = pop_mark()
                if type(stack[-1]) is not list:
                    raise PickleRefused(f"APPENDS to a {type(stack[-1]).__name__}, not a list")
                stack[-1].extend(items)  # type: ignore[attr-defined]
            elif op == 0x6C:  # l LIST
                items = pop_mark()
                stack.append(items)
            elif op == 0x72:  # r LONG_BINPUT
                need(4)
                put(int.from_bytes(data[pos : pos + 4], "little"), stack[-1])
                pos += 4
            elif op == 0x6A:  # j LONG_BINGET
                need(4)
                stack.append(get(int.from_bytes(data[pos : pos + 4], "little")))
                pos += 4
            elif op == 0x94:  # MEMOIZE
                put(len(memo), stack[-1])
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
                stack.append(counted(4 if op == 0x42 else 1 if op == 0x43 else 8))
            elif op == 0x54 or op == 0x55:  # BINSTRING, SHORT_BINSTRING (ASCII, as pickle)
                raw = counted(4 if op == 0x54 else 1)
                try:
                    stack.append(raw.decode("ascii"))
                except UnicodeDecodeError:
                    raise _damaged("a byte string that is not ASCII", at) from None
            elif op == 0x62:  # b BUILD
                state = stack.pop()
                inst = stack[-1]
                if type(inst) is not _ODict or type(state) not in (dict, type(None)):
                    raise PickleRefused(
                        f"BUILD sets the state of a {type(inst).__name__} (torch.save builds "
                        "only OrderedDicts' attributes)"
                    )
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
            elif op == 0x69:  # i INST: a class named inline, called
                module = text(line())
                name = text(line())
                raise PickleRefused(
                    f"the pickle asks to call {_shown(module)}.{_shown(name)} (opcode INST), "
                    "which torch.save does not write: refused, nothing of it was run"
                )
            elif op in (0x6F, 0x81, 0x92):  # OBJ, NEWOBJ, NEWOBJ_EX: an object of a class
                depth = {0x81: 2, 0x92: 3}.get(op)
                cls = (stack[-depth] if depth else stack[0]) if stack else None
                what = getattr(cls, "name", None) or type(cls).__name__
                raise PickleRefused(
                    f"the pickle asks to build an object of {_shown(str(what))} (opcode "
                    f"{_REFUSED[op].split()[0]}), which torch.save does not write: refused, "
                    "nothing of it was run"
                )
            elif op in _REFUSED:
                raise PickleRefused(
                    f"the pickle uses opcode {_REFUSED[op]} at byte {at:,}, which torch.save "
                    "does not write for tensors: refused, nothing of it was run"
                )
            else:
                raise _damaged(f"unknown opcode 0x{op:02x}", at)
    except IndexError:
        raise _damaged("an opcode needs more on the stack than there is", pos) from None


# --- names -----------------------------------------------------------------------


def walk(root: object) -> tuple[list[tuple[str, Tensor]], int]:
    """The tensors of an unpickled object by dotted name (dict keys and list
    indices joined by dots: ``model.fc.weight``, ``opt.state.0.exp_avg``; a
    lone tensor is ``tensor``), in pickle order, and the number of other
    leaves (ints, floats, strings, bools, None, bytes, dtypes) left out.
    Raises PickleRefused past the caps, or for a name twice or empty."""
    found: list[tuple[str, Tensor]] = []
    names: set[str] = set()
    others = 0
    nodes = 0

    def visit(obj: object, parts: tuple[str, ...], length: int) -> None:
        nonlocal others, nodes
        nodes += 1
        if nodes > MAX_NODES:
            raise PickleRefused(
                f"the pickle's containers hold over {MAX_NODES:,} entries (counting shared "
                "ones each time they are reached: a pickle bomb?)"
            )
        if len(parts) > MAX_DEPTH:
            raise PickleRefused(f"containers nested over {MAX_DEPTH} deep")
        if length > MAX_NAME:
            raise PickleRefused(f"a name of over {MAX_NAME:,} characters")
        kind = type(obj)
        if kind is Tensor:
            name = ".".join(parts) if parts else "tensor"
            if not name or any(not p for p in parts):
                raise PickleRefused(f"a tensor whose name has an empty part ({_shown(name)!r})")
            if name in names:
                raise PickleRefused(f"two tensors are named {_shown(name)!r}")
            if len(found) >= MAX_TENSORS:
                raise PickleRefused(f"over {MAX_TENSORS:,} tensors")
            names.add(name)
            found.append((name, obj))  # type: ignore[arg-type]
        elif kind is dict or kind is _ODict:
            for key, value in obj.items():  # type: ignore[attr-defined]
                part = key.decode("latin-1") if type(key) is bytes else str(key)
                visit(value, (*parts, part), length + len(part) + 1)
        elif kind is list or kind is tuple:
            for i, value in enumerate(obj):  # type: ignore[arg-type]
                part = str(i)
                visit(value, (*parts, part), length + len(part) + 1)
        elif kind in _KEY_TYPES or kind is TorchDType:
            others += 1
        else:  # a storage, a storage class, a marker or function left as a value
            what = getattr(obj, "name", None) or getattr(obj, "key", None) or kind.__name__
            raise PickleRefused(
                f"the pickle holds {_shown(str(what))} as a value (torch.save writes "
                "storages and functions inside tensors only)"
            )

    visit(root, (), 0)
    return found, others
