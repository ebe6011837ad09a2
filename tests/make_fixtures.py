"""Write the small committed run pairs that the CLI tests compare.

Run from the repository root after changing this file, and commit the result::

    python tests/make_fixtures.py

It rewrites ``tests/fixtures/<case>/{a,b}`` for every case below and the demo
runs ``examples/run-a`` and ``examples/run-b``. Output is deterministic: the
content of a buffer depends only on (seed, step, name, batch), drawn from
blake2b in counter mode and packed with ``struct``, so neither numpy nor the
Python version changes a byte. Ordinary values are "nice" on purpose: floats
are multiples of 1/16 in [-512, 512) (exact in f32), so every value and delta
a test expects is exact; special values (NaN payloads, -0.0, extremes) are
placed only where a case says so.

Every case is a pair of runs in the ``rl-state`` layout (the 34 buffers of
groups C to F of ``fastdiff.presets.RL_STATE`` per step, what
``compare-rl-state.py``'s dumper writes: groups A and B come from other
dumpers; ``BATCH`` elements each, ``isv_full`` ``ISV_ELEMENTS``), and
tests/test_cli.py states what fastdiff must report for it.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import struct
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make fastdiff importable
    sys.path.insert(0, str(ROOT))

from fastdiff.presets import RL_STATE  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLES = ROOT / "examples"

BATCH = 16
EXAMPLE_BATCH = 64
ISV_ELEMENTS = 757

#: The groups the reference script's dumper writes (A and B are dumped apart).
DUMPED_GROUPS = ("C", "D", "E", "F")
#: (buffer name, dtype) of every member of those groups, in pipeline order.
MEMBERS: list[tuple[str, str]] = [
    (m.pattern, m.dtype) for g in RL_STATE.groups if g.key in DUMPED_GROUPS for m in g.members
]
DTYPE = dict(MEMBERS)

_PACK = {"u8": "B", "i32": "i", "u32": "I", "f32": "f"}
_ITEMSIZE = {"u8": 1, "i32": 4, "u32": 4, "f32": 4}

# f32 bit patterns
QNAN = 0x7FC00000  # the default quiet NaN
QNAN_PAYLOAD = 0x7FC00001  # quiet NaN, non-default payload
NEG_QNAN = 0xFFC00000  # quiet NaN with the sign bit set
SNAN = 0x7F800001  # signalling NaN
NAN_ALL_ONES = 0x7FFFFFFF
ONE_PLUS_ULP = 0x3F800001  # 1.0000001192092896, the f32 after 1.0

Files = dict[str, bytearray]


def dump_name(step: int, name: str) -> str:
    return f"step_{step}_{name}.bin"


def n_elements(name: str, batch: int = BATCH) -> int:
    return ISV_ELEMENTS if name == "isv_full" else batch


def _words(seed: int, step: int, name: str, n: int) -> tuple[int, ...]:
    """``n`` pseudo-random 32-bit words for one buffer."""
    out = bytearray()
    counter = 0
    while len(out) < 4 * n:
        key = f"{seed}/{step}/{name}/{counter}".encode()
        out += hashlib.blake2b(key, digest_size=64).digest()
        counter += 1
    return struct.unpack(f"<{n}I", out[: 4 * n])


def buffer_values(name: str, dtype: str, words: Iterable[int]) -> list[int | float]:
    """Plausible, exactly representable content for one buffer."""
    if dtype == "u32":  # PRNG states: any 32 bits
        return list(words)
    if dtype == "i32":  # counters, lots, indices, actions
        return [w % 1032 - 8 for w in words]
    if dtype == "u8":  # 0/1 flags
        return [w & 1 for w in words]
    if name == "dones":
        return [1.0 if w % 20 == 0 else 0.0 for w in words]
    return [(w % 16384 - 8192) / 16 for w in words]


def rl_run(steps: Iterable[int], batch: int = BATCH, seed: int = 0) -> Files:
    """All 34 rl-state buffers at each step, as file name -> content."""
    files: Files = {}
    for step in steps:
        for name, dtype in MEMBERS:
            n = n_elements(name, batch)
            values = buffer_values(name, dtype, _words(seed, step, name, n))
            files[dump_name(step, name)] = bytearray(struct.pack(f"<{n}{_PACK[dtype]}", *values))
    return files


def put(files: Files, step: int, name: str, index: int, value: float, bits: bool = False) -> None:
    """Set one element; ``bits`` gives an f32 by its bit pattern (NaN payloads)."""
    dtype = DTYPE[name]
    code = "I" if bits else _PACK[dtype]
    struct.pack_into("<" + code, files[dump_name(step, name)], index * _ITEMSIZE[dtype], value)


def pair(steps: Iterable[int], batch: int = BATCH) -> tuple[Files, Files]:
    steps = list(steps)
    return rl_run(steps, batch), rl_run(steps, batch)


def put_both(
    a: Files, b: Files, steps: Iterable[int], name: str, index: int, va: float, vb: float
) -> None:
    """Element ``index`` of ``name`` is ``va`` in A and ``vb`` in B at each step."""
    for step in steps:
        put(a, step, name, index, va)
        put(b, step, name, index, vb)


# --- the cases ---------------------------------------------------------------


def identical() -> tuple[Files, Files]:
    return pair(range(4))


def diverge_c() -> tuple[Files, Files]:
    a, b = pair(range(4))
    put_both(a, b, range(2), "iqn_prng_state", 3, 2_000_000_000, 2_000_000_000)
    put_both(a, b, range(2, 4), "iqn_prng_state", 3, 2_000_000_000, 2_000_000_123)
    return a, b


def diverge_d() -> tuple[Files, Files]:
    # two elements differ; the larger delta is at the later index
    a, b = pair(range(4))
    put_both(a, b, range(2), "unit_entry_price", 7, 101.25, 101.25)
    put_both(a, b, range(2), "unit_entry_price", 12, -3.0, -3.0)
    put_both(a, b, range(2, 4), "unit_entry_price", 7, 101.25, 101.5)
    put_both(a, b, range(2, 4), "unit_entry_price", 12, -3.0, 5.0)
    return a, b


def diverge_e() -> tuple[Files, Files]:
    # one unit in the last place: 1.0 against the next f32 up
    a, b = pair(range(4))
    put_both(a, b, range(4), "isv_full", 725, 1.0, 1.0)
    for step in range(2, 4):
        put(b, step, "isv_full", 725, ONE_PLUS_ULP, bits=True)
    return a, b


def diverge_f() -> tuple[Files, Files]:
    a, b = pair(range(4))
    put_both(a, b, range(2), "rewards", 0, 0.5, 0.5)
    put_both(a, b, range(2, 4), "rewards", 0, 0.5, -0.5)
    return a, b


def multi_group() -> tuple[Files, Files]:
    a, b = pair(range(4))
    put_both(a, b, range(1), "unit_lots", 2, 5, 5)
    put_both(a, b, range(1, 4), "unit_lots", 2, 5, 6)
    put_both(a, b, range(1), "actions", 9, 2, 2)
    put_both(a, b, range(1, 4), "actions", 9, 2, 0)
    put_both(a, b, range(3), "action_prng_state", 0, 1, 1)
    put_both(a, b, range(3, 4), "action_prng_state", 0, 1, 0xFFFFFFFF)
    return a, b


def identical_nans() -> tuple[Files, Files]:
    a, b = pair(range(2))
    for files in (a, b):
        for step in range(2):
            for i, pattern in enumerate((QNAN, QNAN_PAYLOAD, NEG_QNAN, SNAN, NAN_ALL_ONES)):
                put(files, step, "rewards", i, pattern, bits=True)
            put(files, step, "isv_full", 10, NEG_QNAN, bits=True)
            put(files, step, "isv_full", 11, float("inf"))
            put(files, step, "isv_full", 12, float("-inf"))
            put(files, step, "isv_full", 13, -0.0)
    return a, b


def signed_zero() -> tuple[Files, Files]:
    a, b = pair(range(2))
    put_both(a, b, range(1), "outcome_ema", 4, 0.0, 0.0)
    put_both(a, b, range(1, 2), "outcome_ema", 4, -0.0, 0.0)
    return a, b


def nan_payload() -> tuple[Files, Files]:
    # NaN against NaN only: the payload (step 0) or the sign (step 1) differs
    a, b = pair(range(2))
    put(a, 0, "log_pi_old", 6, QNAN, bits=True)
    put(b, 0, "log_pi_old", 6, QNAN_PAYLOAD, bits=True)
    put(a, 1, "log_pi_old", 6, NEG_QNAN, bits=True)
    put(b, 1, "log_pi_old", 6, QNAN, bits=True)
    return a, b


def nonfinite() -> tuple[Files, Files]:
    # infinities, NaN against a number, and one finite delta
    a, b = pair(range(1))
    for i, va, vb in (
        (1, float("inf"), float("-inf")),
        (2, float("nan"), 2.0),
        (3, 1.0, 3.5),
        (4, float("inf"), 1.0),
    ):
        put_both(a, b, range(1), "returns", i, va, vb)
    return a, b


def length_mismatch() -> tuple[Files, Files]:
    # step 1: session_pnl has 4 more elements in B (common prefix equal);
    # unit_lots has 4 fewer in B and its element 2 differs
    a, b = pair(range(2))
    b[dump_name(1, "session_pnl")] += struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    put_both(a, b, range(2), "unit_lots", 2, 40, 40)
    put(b, 1, "unit_lots", 2, 41)
    del b[dump_name(1, "unit_lots")][12 * 4 :]
    return a, b


def malformed() -> tuple[Files, Files]:
    a, b = pair(range(2))
    del a[dump_name(0, "unit_entry_price")][10:]
    return a, b


def only_in_one() -> tuple[Files, Files]:
    a, b = pair(range(2))
    del a[dump_name(0, "unit_active")]
    del b[dump_name(1, "ph_mu")]
    return a, b


def late_steps() -> tuple[Files, Files]:
    steps = [*range(8), 12]
    a, b = pair(steps)
    put_both(a, b, steps[:-1], "ph_count", 15, 3.0, 3.0)
    put_both(a, b, [12], "ph_count", 15, 3.0, 4.0)
    return a, b


def unknown_names() -> tuple[Files, Files]:
    # a buffer the schema does not know, 10 bytes (so u8 by default), which
    # differs at step 0; and a file that is no dump at all
    a, b = pair(range(2))
    debug = bytes(range(10, 20))
    for files in (a, b):
        for step in range(2):
            files[dump_name(step, "my_debug_buf")] = bytearray(debug)
    b[dump_name(0, "my_debug_buf")][4] = 250  # A has 14
    a["notes.txt"] = bytearray(b"run A, seed 0\n")
    return a, b


def int_extremes() -> tuple[Files, Files]:
    a, b = pair(range(2))
    put_both(a, b, range(2), "action_prng_state", 0, 0, 0)
    put_both(a, b, range(2), "action_prng_state", 1, 0xFFFFFFFF, 0xFFFFFFFF)
    put_both(a, b, range(2), "steps_since_done", 0, -(2**31), -(2**31))
    put_both(a, b, range(2), "steps_since_done", 5, 2**31 - 1, 2**31 - 1)
    put(b, 0, "action_prng_state", 0, 0xFFFFFFFF)  # delta 4294967295
    put(b, 0, "action_prng_state", 1, 0xFFFFFFFE)  # delta 1
    put(b, 0, "steps_since_done", 0, 2**31 - 1)  # delta 4294967295
    put(b, 0, "steps_since_done", 5, 2**31 - 2)  # delta 1
    return a, b


CASES: dict[str, Callable[[], tuple[Files, Files]]] = {
    "identical": identical,
    "diverge_C": diverge_c,
    "diverge_D": diverge_d,
    "diverge_E": diverge_e,
    "diverge_F": diverge_f,
    "multi_group": multi_group,
    "identical_nans": identical_nans,
    "signed_zero": signed_zero,
    "nan_payload": nan_payload,
    "nonfinite": nonfinite,
    "length_mismatch": length_mismatch,
    "malformed": malformed,
    "only_in_one": only_in_one,
    "late_steps": late_steps,
    "unknown_names": unknown_names,
    "int_extremes": int_extremes,
}


def example_runs() -> tuple[Files, Files]:
    """The README demo: rewards and advantages drift by one bit from step 2 on."""
    a, b = pair(range(4), EXAMPLE_BATCH)
    for step in (2, 3):
        for name, index in (("rewards", 17), ("advantages", 3), ("advantages", 40)):
            buf = b[dump_name(step, name)]
            buf[index * 4] ^= 0x01
    return a, b


# --- writing -----------------------------------------------------------------


def write_run(folder: Path, files: Files) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, content in sorted(files.items()):
        (folder / name).write_bytes(content)


def write_case(folder: Path, runs: tuple[Files, Files]) -> None:
    write_run(folder / "a", runs[0])
    write_run(folder / "b", runs[1])


def write_all(fixtures: Path = FIXTURES, examples: Path = EXAMPLES) -> None:
    for case, build in CASES.items():
        write_case(fixtures / case, build())
    a, b = example_runs()
    write_run(examples / "run-a", a)
    write_run(examples / "run-b", b)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help="output folder of cases")
    parser.add_argument("--examples", type=Path, default=EXAMPLES, help="output folder of demos")
    args = parser.parse_args(argv)
    write_all(args.fixtures, args.examples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
