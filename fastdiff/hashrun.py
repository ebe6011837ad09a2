"""The ``hash`` API: a run folder's digests, written as a manifest.

``hash_manifest`` lists the run (every rank's folder, for a run of several
ranks: ``sources.ranks``), asks the scheduler for the digest of every
dump (the digest cache first, then batched hashing on the executor the
options choose, as a comparison does), and writes the manifest
(``sources.manifest`` is the format) only when every file was hashed: a
``model.hashrun.ManifestResult``. ``write_manifest`` is the same, as the
pair (text, problems) it has always returned.
"""

from __future__ import annotations

import contextlib
import json
import os

from .engine.pool import gc_paused
from .engine.scheduler import Scheduler
from .errors import FastdiffError
from .model.hashrun import ManifestResult
from .model.results import Problem
from .sources import open_run
from .sources.manifest import manifest_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .engine.cache import DigestCache
    from .options import CompareOptions
    from .schema import Schema
    from .sources.buffers import BufferDigest, BufferRef, RunListing


__all__ = ["ManifestResult", "hash_manifest", "write_manifest"]


def write_manifest(
    run: str | os.PathLike[str],
    options: CompareOptions,
    cache: DigestCache | None = None,
    output: str | os.PathLike[str] | None = None,
) -> tuple[str, list[Problem]]:
    """``hash_manifest``, as (the manifest text, the problems)."""
    result = hash_manifest(run, options, cache, output)
    return result.text, list(result.problems)


def hash_manifest(
    run: str | os.PathLike[str],
    options: CompareOptions,
    cache: DigestCache | None = None,
    output: str | os.PathLike[str] | None = None,
) -> ManifestResult:
    """Hash every dump of ``run``: the manifest text and any problems.

    With ``output``, the manifest is written there (atomically, by rename)
    only when every file was hashed: a manifest is complete or absent (the
    text is then empty). A file that was hashed but is malformed under the
    schema (a size that is not a whole number of elements, or misfits its
    shape) is no reason to leave the manifest out: it is written, records
    those files under ``malformed``, and each is a problem of kind
    ``malformed`` (the exit code 2 that ``compare`` and ``stats`` give it).
    """
    root = os.fspath(run)
    if output is not None:
        from .sources import refuse_run_folder

        refuse_run_folder(
            os.fspath(output), f"-o {output}", (root,), "write the manifest elsewhere"
        )
    with gc_paused():
        listing, digests, problems = _hash_run(root, options, cache)
    if problems:
        return ManifestResult("", tuple(problems))
    from .sources import RunSource
    from .sources.schemas import choose_schema

    dataflow = _dataflow(root) if options.schema is None else None
    schema, _ = choose_schema((RunSource(root, listing, dataflow=dataflow),), options.schema)
    malformed = _malformed(listing, schema)
    doc = manifest_dict(listing, digests, options.chunk_size, schema)
    if malformed:
        doc["malformed"] = [
            {"file": os.path.relpath(p.path, root), "step": f.step, "buffer": f.name,
             "message": p.message}
            for f, p in malformed
        ]  # fmt: skip
    text = json.dumps(doc, indent=1) + "\n"
    if output is not None:
        _write_output(os.fspath(output), text)
    out = None if output is None else os.fspath(output)
    return ManifestResult(text, tuple(p for _, p in malformed), out)


def _dataflow(root: str) -> Schema | None:
    """The dataflow a tracer recorded in run folder ``root`` (that of its
    first rank with one, for a run of several ranks), which its manifest then
    records as its schema; None for a run no tracer wrote."""
    from .sources.ranks import rank_folders
    from .sources.traced import read_dataflow

    for folder in (root, *(os.path.join(root, r) for r in rank_folders(root))):
        found = read_dataflow(folder)[0]
        if found is not None:
            return found
    return None


def _malformed(listing: RunListing, schema: Schema) -> list[tuple[BufferRef, Problem]]:
    """The buffers the schema makes malformed, as compare would report them
    (a file's own header dtype and shape win over the schema's, as there)."""
    from .schema import Layout
    from .stages.size import size_problem

    out = []
    for f in listing.buffers:
        dtype, layout = f.dtype or schema.classify(f.name)[1], schema.layout_of(f.name)
        if f.shape is not None:
            layout = Layout(tuple(f.shape), layout.fields if layout is not None else ())
        message = size_problem(f.size, dtype, layout, compared=False)
        if message is not None:
            out.append((f, Problem(f.path, message, kind="malformed")))
    return out


def _ranked_listing(root: str, listing: RunListing) -> tuple[RunListing, list[Problem]] | None:
    """For a run of several ranks (``sources.ranks``): every rank's buffers in
    one listing of the run folder (the manifest names each file by its path
    below it, ``rank_<R>/step_...``), and the problems; None for a run of
    one rank."""
    from .sources import RunSource
    from .sources.buffers import RunListing as Listing
    from .sources.ranks import skipped_beside, split_ranks

    src = RunSource(root, listing)
    ranked = split_ranks(src, open_run)
    if ranked is None:
        return None
    buffers, skipped, problems = [], list(skipped_beside(ranked, src)), list(ranked.problems)
    for _, rank_src in ranked.ranks:
        buffers += rank_src.listing.buffers
        skipped += rank_src.listing.skipped
        problems += rank_src.listing.errors
    return Listing(root, tuple(buffers), tuple(skipped), ()), problems


def _hash_run(
    root: str, options: CompareOptions, cache: DigestCache | None
) -> tuple[RunListing, dict[BufferRef, BufferDigest], list[Problem]]:
    """The run's listing, its files' digests, and the problems met."""
    src = open_run(root)
    if src.is_manifest:
        raise FastdiffError(f"{root}: a manifest already; hash the run folder it describes")
    listing = src.listing
    problems = list(listing.errors)
    ranked = _ranked_listing(root, listing)
    if ranked is not None:
        listing, more = ranked
        problems += more
    if not listing.files and not problems:
        from .sources import dump_subfolder, no_dumps_problem

        sub = dump_subfolder(root) if src.kind == "folder" else None
        problems.append(no_dumps_problem(src, None, sub))
    digests: dict[BufferRef, BufferDigest] = {}

    def hashed(items: list[BufferDigest | Problem]) -> None:
        for f, item in zip(listing.buffers, items, strict=True):
            if isinstance(item, Problem):
                problems.append(item)
            else:
                digests[f] = item

    sched = Scheduler(options, cache)
    sched.request_digests(listing.buffers, options.chunk_size, hashed)
    sched.run()
    return listing, digests, problems


def _write_output(out: str, text: str) -> None:
    """Write atomically (a rename) next to the real file a symlink points to;
    a FIFO or device (``-o /dev/stdout``) is written to as it is."""
    target = os.path.realpath(out)
    try:
        if os.path.exists(target) and not os.path.isfile(target):
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        tmp = f"{target}.tmp-{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise FastdiffError(f"-o {out}: cannot write manifest ({exc.strerror})") from exc
