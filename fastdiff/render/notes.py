"""The words of notes: each ``model.findings.Note`` kind as one line.

``note_text(note)`` is the line a report prints (``note: ...`` or
``warning: ...``), the JSON's ``notes`` and stderr alike; the stages only
say which note and with what (its fields, as the comments below name them).
Every name, path and message is shown as given: the renderers that print it
escape it (``textkit.escape.display_path``).
"""

from __future__ import annotations

from ..model.findings import NoteKind
from ..textkit.fmt import first_few, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..model.findings import Note

__all__ = ["NOTE_TEXT", "note_json", "note_text"]

#: Buffers, lines or files a note names before "and N more".
SHOWN = 3


def _listed(names: tuple[str, ...]) -> str:
    return ", ".join(names[:SHOWN]) + (
        f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    )


def _dumps(n: int) -> str:
    return "1 dump" if n == 1 else f"{n:,} dumps"


# --- how buffers were read --------------------------------------------------------------


def _raw_bytes(n: Note) -> str:
    shown = tuple(sorted(n["names"]))
    one = len(shown) == 1
    return (
        f"{len(shown)} {'buffer' if one else 'buffers'} in no schema group ({_listed(shown)}) "
        f"{'was' if one else 'were'} compared as raw bytes (u8): "
        f"{'its' if one else 'their'} indices are byte offsets and {'its' if one else 'their'} "
        "values bytes. To compare them as numbers, give their element type: --default-dtype "
        "f32 (or another dtype), or a schema file (fastdiff schema > my.toml, add them to a "
        "group, then --schema my.toml)"
    )


def _dtype_unset(n: Note) -> str:
    unset = dict(n["unset"])
    shown = sorted(unset)
    one = len(shown) == 1
    read = sorted(set(unset.values()))
    how = " or ".join(read)
    if read == ["u8"]:
        how = (
            "raw bytes (u8): indices are byte offsets, values bytes, and how large a "
            "difference is says nothing"
        )
    whose = "its" if one else "each one's"
    return (
        f"{len(shown)} {'buffer' if one else 'buffers'} ({_listed(tuple(shown))}) "
        f"{'has' if one else 'have'} a dtype the schema {n['schema']!r} does not set yet (written "
        f"with a '?', as \"{read[0]}?\"), so {'it was' if one else 'they were'} read as {how}. "
        f"Write {whose} dtype in the schema file, without the '?'"
    )


def _undecided(n: Note) -> str:
    k = n["n"]
    which = "1 buffer whose bits differ was" if k == 1 else f"{k} buffers whose bits differ were"
    return (
        f"{which} compared by digests only (a manifest holds digests, not values), so the "
        f"tolerance could not be judged for {'it' if k == 1 else 'them'}: "
        f"{'it is an error' if k == 1 else 'they are errors'}, neither within tolerance nor "
        "diverged. Compare the run folders themselves to apply the tolerance"
    )


def _header_dtype(n: Note) -> str:
    listed = [f"{name} ({said} in the schema, {found} in the file)"
              for name, said, found in n["buffers"]]  # fmt: skip
    shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
    return (
        f"the files' headers give another dtype than schema {n['schema']!r} for "
        f"{len(listed)} {'buffer' if len(listed) == 1 else 'buffers'}: {shown}; the headers' "
        "dtypes are used"
    )


def _rerecord(n: Note) -> str:
    step, sides = n["step"], n["sides"]
    shown = first_few(list(n["names"]), SHOWN)
    runs = " and ".join(f"{side} ({spec})" for side, spec in sides)
    return (
        f"{'runs' if len(sides) > 1 else 'run'} {runs} recorded digests only at step {step}, "
        f"where the runs first diverge ({shown}): the digests show where, not the values; to "
        f"see them, record step {step} in full, Recorder(..., data={{{step}}}) (or data=lambda "
        f"step: step >= {step}), run the job again and compare again"
    )


# --- the schema chosen ----------------------------------------------------------------------


def _no_recorded_schema(n: Note) -> str:
    if n["sweep"]:
        return (
            f"{n['spec']} records no schema (written by an older fastdiff); read with schema "
            f"{n['schema']!r}, as every pair of the sweep; pass --schema to choose, or hash the "
            "run again"
        )
    return (
        f"{n['spec']} records no schema (written by an older fastdiff); read with schema "
        f"{n['schema']!r}; pass --schema to choose, or hash the run again"
    )


def _manifest_schemas_differ(n: Note) -> str:
    a, b = n["name_a"], n["name_b"]
    names = f"two versions of {a!r}" if a == b else f"{a!r} and {b!r}"
    return (
        f"{n['spec_a']} and {n['spec_b']} were hashed under different schemas ({names}); groups "
        f"and dtypes are {n['spec_a']}'s; pass --schema to choose"
    )


def _manifest_dtypes_differ(n: Note) -> str:
    return (
        f"buffer {n['name']!r} was hashed as {n['dtype_a']} in {n['spec_a']} but as "
        f"{n['dtype_b']} in {n['spec_b']}; read as {n['read_as']} (pass --schema to choose)"
    )


def _manifest_read_as(n: Note) -> str:
    given, recorded = n["given"], n["recorded"]
    if given is not None:
        what = (
            f"the schema given ({given!r}) is used, not the one recorded in it ({recorded!r})"
            if recorded is not None
            else f"the schema given ({given!r}) is used"
        )
    else:
        what = f"read with schema {n['chosen']!r}"
    differ = [f"{name} (recorded {was}, read as {now})" for name, was, now in n["buffers"]]
    return (
        f"{n['spec']}: {what}; the dtype differs for {plural(len(differ), 'buffer')}: "
        f"{', '.join(differ)}"
    )


def _pairs_text(pairs: tuple[tuple[str, str], ...], total: int) -> str:
    shown = [f"{a} {b}" for a, b in pairs]
    more = f" and {total - len(pairs)} more" if total > len(pairs) else ""
    return f"{'pair' if total == 1 else 'pairs'} {', '.join(shown)}{more}"


#: Where a sweep's schema comes from, by its name, when no manifest records it.
_WHENCE = {"by-name": "its groups from the buffer names", "rl-state": "the default"}


def _sweep_schema(n: Note) -> str:
    changed = "".join(
        f"; {_pairs_text(pairs, total)} alone would be read with {name!r}"
        for name, pairs, total in n["alone"]
    )
    source = n["recorded_in"]
    whence = (
        f"recorded in {source}"
        if source is not None
        else _WHENCE.get(n["schema"], "chosen for every run")
    )
    every = f"every pair is read with {n['schema']!r} ({whence}) as if given with --schema"
    recorded = n["recorded"]
    if n.warning:
        listed = ", ".join(f"{sc!r} in {spec}" for spec, sc in recorded)
        versions = ": versions of one schema" if len({sc for _, sc in recorded}) == 1 else ""
        head = f"the manifests of this sweep record different schemas ({listed}{versions})"
    else:
        head = "one schema for the whole sweep"
    return f"{head}: {every}{changed}; pass --schema to choose"


# --- a recorder's digest log -----------------------------------------------------------------


def _log_unusable(n: Note) -> str:
    return (
        f"{n['path']}: not used: {n['why']}; every dump is hashed, and buffers recorded as "
        "digests only are missing"
    )


def _log_lines_ignored(n: Note) -> str:
    lines = n["lines"]
    k = len(lines)
    shown = first_few(list(lines), SHOWN, "; ")
    return (
        f"{n['path']}: {k} {'line' if k == 1 else 'lines'} ignored ({shown}); the dumps they "
        "describe are hashed, and buffers they recorded as digests only are missing"
    )


def _log_dumps_changed(n: Note) -> str:
    files = n["files"]
    k = len(files)
    what = "1 dump changed since it was" if k == 1 else f"{k} dumps changed since they were"
    return (
        f"{n['spec']}: {what} recorded ({first_few(list(files), SHOWN)}): hashed again, not "
        "taken from the digest log"
    )


def _log_dumps_copied(n: Note) -> str:
    files = n["files"]
    one = len(files) == 1
    return (
        f"{n['spec']}: {_dumps(len(files))} {'was' if one else 'were'} copied or touched since "
        f"{'it was' if one else 'they were'} recorded ({first_few(list(files), SHOWN)}: "
        f"{'its' if one else 'their'} file identity is not the recorded one, so the log cannot "
        "vouch for the bytes): hashed again, not taken from the digest log"
    )


def _log_conflict(n: Note) -> str:
    files = n["files"]
    return (
        f"{n['path']}: {_dumps(len(files))} recorded by lines that disagree and neither replaces "
        f"the other (two logs joined into one?) ({first_few(list(files), SHOWN)}): not taken "
        "from the log; the files are hashed"
    )


def _log_beside_file(n: Note) -> str:
    files = n["files"]
    return (
        f"{n['path']}: {_dumps(len(files))} recorded as digests only, yet the folder holds a "
        f"file of {'it' if len(files) == 1 else 'each'} that the log does not describe "
        f"({first_few(list(files), SHOWN)}): the files are compared, not the log's records"
    )


def _log_header_disagrees(n: Note) -> str:
    files = n["files"]
    return (
        f"{n['path']}: {len(files)} lines disagree with the header of the file they name "
        f"({first_few(list(files), SHOWN)}): not used; the files are hashed"
    )


def _log_other_chunk_size(n: Note) -> str:
    return (
        f"{n['path']}: {n['n']} buffers recorded as digests only at another chunk size than the "
        f"log's newest lines ({n['chunk_size']}): missing"
    )


# --- a tracer's files -------------------------------------------------------------------


def _trace_dataflow(n: Note) -> str:
    return (
        f"{n['spec']} is a trace: read with the dataflow it recorded ({n['file']}: each "
        "record's inputs, for where a divergence was born); pass --schema to choose"
    )


def _dataflow_differs(n: Note) -> str:
    owner, other = n["owner"], n["other"]
    parts = []
    if n["differ"]:
        differ = list(n["differ"])
        parts.append(f"{plural(len(differ), 'record')} read other inputs ({first_few(differ)})")
    if n["only_other"]:
        only = list(n["only_other"])
        parts.append(f"{len(only)} only in {other} ({first_few(only)})")
    if n["only_owner"]:
        only = list(n["only_owner"])
        parts.append(f"{len(only)} only in {owner} ({first_few(only)})")
    return (
        f"the dataflow of {other} differs from {owner}'s: {'; '.join(parts)}: the roles read "
        f"{owner}'s, with what {other}'s adds (a record's other inputs, its records of its "
        "own); the structural difference says where the traces part"
    )


def _dataflow_unusable(n: Note) -> str:
    return (
        f"{n['path']}: the dataflow of this trace cannot be used ({n['why']}); no buffer of it "
        "has a role unless a schema is given"
    )


def _sequence_unusable(n: Note) -> str:
    return f"{n['path']}: not used: {n['why']}; where the traces part is not known"


def _sequence_lines_ignored(n: Note) -> str:
    lines = list(n["lines"])
    k = len(lines)
    return (
        f"{n['path']}: {k} {'line' if k == 1 else 'lines'} ignored "
        f"({first_few(lines, 3, '; ')}): the steps they held are not aligned"
    )


def _ignored(n: Note) -> str:
    k = n["n"]
    what = "buffer or value" if k == 1 else "buffers and values"
    patterns = ", ".join(list(n["patterns"]))
    return f"{k:,} {what} left out of the comparison (--ignore {patterns})"


#: The words of each kind of note.
NOTE_TEXT: dict[NoteKind, Callable[[Note], str]] = {
    NoteKind.RAW_BYTES: _raw_bytes,
    NoteKind.DTYPE_UNSET: _dtype_unset,
    NoteKind.UNDECIDED: _undecided,
    NoteKind.HEADER_DTYPE: _header_dtype,
    NoteKind.RERECORD: _rerecord,
    NoteKind.NO_RECORDED_SCHEMA: _no_recorded_schema,
    NoteKind.MANIFEST_SCHEMAS_DIFFER: _manifest_schemas_differ,
    NoteKind.MANIFEST_DTYPES_DIFFER: _manifest_dtypes_differ,
    NoteKind.MANIFEST_READ_AS: _manifest_read_as,
    NoteKind.SWEEP_SCHEMA: _sweep_schema,
    NoteKind.LOG_UNUSABLE: _log_unusable,
    NoteKind.LOG_LINES_IGNORED: _log_lines_ignored,
    NoteKind.LOG_DUMPS_CHANGED: _log_dumps_changed,
    NoteKind.LOG_DUMPS_COPIED: _log_dumps_copied,
    NoteKind.LOG_CONFLICT: _log_conflict,
    NoteKind.LOG_BESIDE_FILE: _log_beside_file,
    NoteKind.LOG_HEADER_DISAGREES: _log_header_disagrees,
    NoteKind.LOG_OTHER_CHUNK_SIZE: _log_other_chunk_size,
    NoteKind.TRACE_DATAFLOW: _trace_dataflow,
    NoteKind.DATAFLOW_DIFFERS: _dataflow_differs,
    NoteKind.DATAFLOW_UNUSABLE: _dataflow_unusable,
    NoteKind.SEQUENCE_UNUSABLE: _sequence_unusable,
    NoteKind.SEQUENCE_LINES_IGNORED: _sequence_lines_ignored,
    NoteKind.IGNORED: _ignored,
}


def note_text(note: Note) -> str:
    """The line of a note: ``note: ...`` or, where something disagrees, ``warning: ...``."""
    return ("warning: " if note.warning else "note: ") + NOTE_TEXT[note.kind](note)


def note_json(note: Note) -> str:
    """A note as a report's JSON ``notes`` hold it: a warning as its line, a
    plain note without the ``note: `` its line starts with."""
    return ("warning: " if note.warning else "") + NOTE_TEXT[note.kind](note)
