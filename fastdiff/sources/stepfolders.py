"""Training checkpoints as runs: a checkpoint folder of one step, and a root of
such step folders, whatever framework saved them.

A **step folder** is one saved step, named by ``STEP_FOLDERS``:
Megatron-LM's ``iter_<N>``, DeepSpeed's ``global_step<N>``, the Hugging Face
Trainer's ``checkpoint-<N>``, torchtitan's ``step-<N>``. A **root** holding
such folders (``checkpoints/``) given as RUN is a run whose steps are the
saved steps: every saved step is compared, and the first divergent step is
the first saved step that differs.

Each step folder is read by what it is:

- a folder another format of ``FORMATS`` claims by its folder test (a
  checkpoint folder of safetensors files; a DCP folder, with ``.metadata``,
  once its format is in the table) is opened as a run of that format
  (``sources.open_run``) and its buffers are that step's: so any checkpoint
  folder a format can read is a step folder, with nothing to add here;
- else (and for a folder with the files the frameworks below save, which
  this format's folder test claims first) it is a **checkpoint folder**:
  every file in it and in its subfolders (two levels) that fastdiff reads,
  each file's buffers named by the file's path in the folder, without its
  suffix, dots for slashes, then the buffer's own name:

  - Megatron-LM legacy: ``mp_rank_<TT>[_<PPP>][_<EEE>]/model_optim_rng.pt``
    (a folder per tensor, pipeline and expert parallel rank):
    ``mp_rank_00_001.model_optim_rng.model.language_model...``, its
    ``args`` (an ``argparse.Namespace``) as values, its RNG states
    (``np.random.get_state()``) as buffers and values;
  - DeepSpeed: ``mp_rank_<M>_model_states.pt`` and each
    ``zero_pp_rank_<D>_mp_rank_<M>_optim_states.pt`` (the flat fp32
    partitions compared as the flat buffers they are; a loss scaler, whose
    class fastdiff lacks, as a record of values);
  - Hugging Face Trainer: ``model.safetensors`` (or its shards),
    ``optimizer.pt``, ``scheduler.pt``, ``rng_state.pth``,
    ``training_args.bin`` (a pickle: values), and the values of every JSON
    file (``trainer_state.json``: ``trainer_state.global_step``,
    ``trainer_state.log_history.3.loss``).

  ``torch.save`` archives (``.pt``, ``.pth``, ``.bin``) are read as
  ``torchzip`` reads them (nothing of a pickle is ever run), safetensors
  files as ``safetensors`` does; a JSON file's numbers, booleans and nulls
  are values, its strings labels (``sources.buffers.Value``). A file that is
  refused is an error for its buffers alone; other files (``latest``,
  ``latest_checkpointed_iteration.txt``, a README) are skipped, said so.
"""

from __future__ import annotations

import os

from ..model.results import Problem, Skipped
from .buffers import BufferRef, RunListing, Unread, Value, step_filter
from .formats import FORMATS, suffix
from .run import RunSource, container_listing, refused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .buffers import StepFilter

__all__ = [
    "STEP_FOLDERS",
    "is_checkpoint_folder",
    "is_step_root",
    "open_checkpoint",
    "open_root",
    "step_of",
]

#: The names of step folders: (prefix, who saves them), each ``<prefix><N>``
#: with N decimal digits. A root of such folders is a run of those steps.
#: Add a framework's here (its folder is read as ``open_step_folder`` says).
STEP_FOLDERS: tuple[tuple[str, str], ...] = (
    ("iter_", "Megatron-LM"),
    ("global_step", "DeepSpeed"),
    ("checkpoint-", "Hugging Face Trainer"),
    ("step-", "torchtitan (DCP)"),
)
#: Files whose names say a folder is a checkpoint folder of one step (it is
#: read file by file, before another format's folder test may claim it:
#: a Trainer's folder holds a model.safetensors).
_MARKERS = ("trainer_state.json", "training_args.bin", "optimizer.pt", "rng_state.pth")
_MARKER_ENDS = ("_model_states.pt", "_optim_states.pt")
#: How deep a checkpoint folder is read (Megatron's mp_rank folders are one down).
_DEPTH = 2
#: A JSON file is read whole: at most this many bytes, nested at most this deep.
MAX_JSON = 64 << 20
_JSON_DEPTH = 100
#: The steps of a root: a step number of at most this many digits.
_MAX_DIGITS = 30
#: Suffixes of the files a checkpoint folder's readers take: the formats'
#: (``formats.FORMATS``), and raw dumps' suffix: in such a folder a
#: ``.bin`` (a Trainer's ``training_args.bin``, ``pytorch_model.bin``) is a
#: ``torch.save`` archive, never a raw dump.
_TORCH = (*FORMATS["torch"].suffixes, suffix("raw"))
_SAFETENSORS = FORMATS["safetensors"].suffixes
_JSON = (".json",)


def step_of(name: str) -> int | None:
    """The step of a step folder's name (``iter_0000100`` -> 100), or None."""
    for prefix, _ in STEP_FOLDERS:
        if name.startswith(prefix):
            digits = name[len(prefix) :]
            if digits.isascii() and digits.isdigit() and len(digits) <= _MAX_DIGITS:
                return int(digits)
    return None


def _is_mp_rank(name: str) -> bool:
    parts = name.split("_")
    return name.startswith("mp_rank_") and all(p.isdigit() for p in parts[2:]) and len(parts) <= 5


def is_checkpoint_folder(names: list[str]) -> bool:
    """Whether a folder of these entries is a checkpoint folder of one step
    (a Trainer's, DeepSpeed's, Megatron-LM's): a marker file, or an
    ``mp_rank_*`` folder."""
    return any(
        n in _MARKERS or n.endswith(_MARKER_ENDS) or _is_mp_rank(n) for n in names
    ) or is_step_root(names)


def is_step_root(names: list[str]) -> bool:
    """Whether a folder of these entries is a root of step folders."""
    return any(step_of(n) is not None for n in names)


def _json_values(
    path: str, step: int, prefix: str, fd: int, st: os.stat_result
) -> list[BufferRef | Unread]:
    """The values of a JSON file, by dotted name (keys, list indices)."""
    import json

    if st.st_size > MAX_JSON:
        raise ValueError(f"{st.st_size:,} bytes, over the {MAX_JSON:,} fastdiff reads")
    raw = b""
    while len(raw) < st.st_size:
        piece = os.pread(fd, st.st_size - len(raw), len(raw))
        if not piece:
            break
        raw += piece
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not JSON ({str(exc)[:200]})") from None
    out: list[BufferRef | Unread] = []

    def visit(obj: object, parts: tuple[str, ...], depth: int) -> None:
        if depth > _JSON_DEPTH:
            raise ValueError(f"nested over {_JSON_DEPTH} deep")
        if isinstance(obj, dict):
            for k, v in obj.items():
                visit(v, (*parts, k), depth + 1)
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                visit(v, (*parts, str(i)), depth + 1)
        else:
            kind = "label" if isinstance(obj, str) else "value"
            codec = Value(kind, obj)
            out.append(BufferRef(
                path, step, ".".join(parts), len(codec.data), st.st_dev, st.st_ino,
                st.st_mtime_ns, st.st_ctime_ns, offset=0, file_size=st.st_size, dtype=kind,
                shape=(), codec=codec,
            ))  # fmt: skip

    visit(doc, (prefix,), 0)
    return out


def _file_items(path: str, step: int, prefix: str) -> tuple[list[BufferRef | Unread], str]:
    """A file's buffers, each named ``prefix.<its name>`` (raises OSError,
    ValueError), and the names its pickle reads as records (for a note)."""
    from .reader import read_regular

    name = os.path.basename(path)
    if name.endswith(_TORCH):
        from .torchzip import TorchError, names_note, read_archive

        archive = read_regular(path, lambda fd, st: read_archive(path, step, fd, st), TorchError)
        items = archive.buffers
        note = names_note(archive.names) if archive.names else ""
    elif name.endswith(_SAFETENSORS):
        from .safetensors import SafetensorsError, file_buffers

        items = read_regular(  # type: ignore[assignment]
            path, lambda fd, st: file_buffers(path, step, fd, st), SafetensorsError
        )
        note = ""
    else:
        items = read_regular(  # type: ignore[assignment]
            path, lambda fd, st: _json_values(path, step, prefix, fd, st), ValueError
        )
        return items, ""
    renamed: list[BufferRef | Unread] = []
    for item in items:
        if isinstance(item, Unread):
            renamed.append(Unread(step, f"{prefix}.{item.name}", item.reason))
        else:
            renamed.append(item.replace(name=f"{prefix}.{item.name}"))
    return renamed, note


def _files(folder: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(path, name prefix) of each file a checkpoint folder's readers take,
    in name order, two levels deep; and the paths of the other entries."""
    taken: list[tuple[str, str]] = []
    others: list[str] = []

    def visit(path: str, rel: tuple[str, ...], depth: int) -> None:
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if depth < _DEPTH:
                    visit(e.path, (*rel, e.name), depth + 1)
                else:
                    others.append(e.path)
            elif e.is_file() and e.name.endswith((*_TORCH, *_SAFETENSORS, *_JSON)):
                stem = e.name.rsplit(".", 1)[0]
                if e.name.endswith(suffix("safetensors") + ".index.json"):
                    others.append(e.path)  # the shards are read themselves
                    continue
                taken.append((e.path, ".".join((*rel, stem))))
            else:
                others.append(e.path)

    visit(folder, (), 1)
    return taken, others


def checkpoint_listing(folder: str, step: int) -> RunListing:
    """The listing of a checkpoint folder of one step (module docstring)."""
    try:
        files, others = _files(folder)
    except OSError as exc:
        problem = Problem(folder, f"cannot list: {exc.strerror}", kind="unreadable")
        return RunListing(folder, (), (), (problem,), readable=False)
    refs: list[BufferRef] = []
    errors: list[Problem] = []
    broken: list[tuple[tuple[int, str], Problem]] = []
    skipped = [Skipped(p, "not a file fastdiff reads in a checkpoint folder") for p in others]
    for path, prefix in files:
        try:
            items, note = _file_items(path, step, prefix)
        except OSError as exc:
            errors.append(Problem(path, f"cannot read: {exc.strerror}", kind="unreadable"))
            continue
        except ValueError as exc:  # the format's refusal: its buffers are unknown
            errors.append(Problem(path, f"refused: {exc}", kind="malformed"))
            continue
        part = container_listing(path, items, (Skipped(path, note),) if note else ())
        refs += part.buffers
        errors += part.errors
        broken += part.broken
        skipped += part.skipped
    broken.sort(key=lambda b: b[0])
    return RunListing(folder, tuple(refs), tuple(skipped), tuple(errors), True, tuple(broken))


def open_step_folder(path: str, step: int) -> RunListing:
    """One step folder's listing at ``step``: a checkpoint folder's
    (``checkpoint_listing``), or, for a folder another format claims (a DCP
    folder, a safetensors checkpoint folder), that format's run, its
    buffers moved to ``step``. The one place a step folder is read."""
    from . import folder_format, open_run

    fmt = folder_format(path)
    if fmt in ("checkpoint", "folder"):
        return checkpoint_listing(path, step)
    listing = open_run(path).listing
    return RunListing(
        listing.root,
        tuple(b.replace(step=step) for b in listing.buffers),
        listing.skipped,
        listing.errors,
        listing.readable,
        tuple(((step, name), p) for (_, name), p in listing.broken),
        tuple((step, p) for _, p in listing.lost),
    )


def open_root(spec: str, steps: StepFilter | None = None) -> RunSource:
    """A root of step folders as a run: each step folder's buffers at its step."""
    want = step_filter(steps)
    try:
        with os.scandir(spec) as it:
            found = sorted(
                (n, e.path) for e in it if e.is_dir() and (n := step_of(e.name)) is not None
            )
    except OSError as exc:
        return refused(spec, f"cannot list: {exc.strerror}", "unreadable")
    seen: dict[int, str] = {}
    refs: list[BufferRef] = []
    skipped: list[Skipped] = []
    errors: list[Problem] = []
    broken: list[tuple[tuple[int, str], Problem]] = []
    lost: list[tuple[int, Problem]] = []
    for step, path in found:
        if step in seen:
            errors.append(Problem(path, f"step {step} is saved twice (also {seen[step]})", "name"))
            continue
        seen[step] = path
        if want is not None and not want(step):
            continue
        listing = open_step_folder(path, step)
        refs += listing.buffers
        skipped += listing.skipped
        errors += listing.errors
        broken += listing.broken
        if not listing.readable:
            lost.append((step, listing.errors[0]))
    listing = RunListing(
        spec, tuple(refs), tuple(skipped), tuple(errors), True, tuple(broken), tuple(lost)
    )
    return RunSource(spec, listing, steps=steps, kind="checkpoint")


def open_checkpoint(spec: str, steps: StepFilter | None = None) -> RunSource:
    """A checkpoint folder given as RUN: a root of step folders, or one step
    folder (its step from its name, ``iter_0000100`` is 100; else 0)."""
    try:
        with os.scandir(spec) as it:
            names = [e.name for e in it]
    except OSError as exc:
        return refused(spec, f"cannot list: {exc.strerror}", "unreadable")
    if is_step_root(names) and not any(n in _MARKERS or _is_mp_rank(n) for n in names):
        return open_root(spec, steps)
    step = step_of(os.path.basename(os.path.normpath(spec)))
    step = 0 if step is None else step
    want = step_filter(steps)
    listing = checkpoint_listing(spec, step)
    if want is not None and not want(step):
        listing = RunListing(spec, (), listing.skipped, (), listing.readable)
    return RunSource(spec, listing, steps=steps, kind="checkpoint")
