"""The harness of the scripts in benchmarks/ (``benchmarks/harness.py``,
``benchmarks/venvs.py``) and the compare benchmark's script itself: commands
timed and measured as subprocesses, the venv a checkout is installed into,
the synthetic dumps only benchmarks write. No test asserts a timing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fastdiff.bench import synth

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
if str(BENCHMARKS) not in sys.path:  # as when a script runs: its folder first
    sys.path.insert(0, str(BENCHMARKS))

import harness  # noqa: E402
import venvs  # noqa: E402

KIB = 1 << 10
MIB = 1 << 20


@pytest.mark.parametrize(
    ("start", "end", "density", "block"),
    [(0, 64 * KIB, 1.0, 4 * KIB), (1001, 50_001, 0.01, 8 * KIB), (4092, 4096, 0.5, 8)],
)
def test_flip_spread_flips_evenly_spaced_elements(
    tmp_path: Path, start: int, end: int, density: float, block: int
) -> None:
    np = pytest.importorskip("numpy")
    a, b = synth.write_pair(tmp_path / "a", tmp_path / "b", "x", "f32", 64 * KIB)
    k = harness.flip_spread(b, "f32", start, end, density, block_bytes=block)
    x, y = np.fromfile(a, np.uint32), np.fromfile(b, np.uint32)
    first, last = -(-start // 4), end // 4
    n = last - first
    assert k == max(1, int(n * density))
    want = first + np.arange(k) * n // k
    assert np.array_equal(np.flatnonzero(x != y), want)
    assert set((x ^ y)[want].tolist()) == {1}
    with pytest.raises(ValueError, match="hold no whole element"):
        harness.flip_spread(b, "f32", 5, 7, 1.0)


def test_peak_rss_is_the_commands_not_the_parents() -> None:
    """ru_maxrss of a child counts its parent's memory at fork; the starter is small."""
    ballast = b"x" * (64 * MIB)  # this process is large, whatever pytest loaded
    bare = harness.peak_rss("bare", [sys.executable, "-S", "-c", "pass"])
    big = harness.peak_rss("big", [sys.executable, "-S", "-c", "b = b'x' * (96 << 20)"])
    assert bare.seconds > 0 and bare.max_rss > 0
    assert bare.max_rss < 48 * MIB < len(ballast)
    assert big.max_rss - bare.max_rss >= 90 * MIB
    shell = harness.peak_rss("sh", f"{sys.executable} -S -c \"b = b'x' * (96 << 20)\"")
    assert shell.max_rss >= 90 * MIB  # a shell string: the largest command it waited for
    exits = [sys.executable, "-S", "-c", "raise SystemExit(3)"]
    assert harness.peak_rss("accepted", exits, ok_codes=(3,)).max_rss > 0
    with pytest.raises(harness.CommandFailed) as failed:
        harness.peak_rss("fails", exits)
    assert (failed.value.name, failed.value.returncode, failed.value.command) == (
        "fails", 3, exits
    )  # fmt: skip


def test_write_sparse_pair(tmp_path: Path) -> None:
    a, b = harness.write_sparse_pair(tmp_path / "a", tmp_path / "b", "x", 64 * MIB, step=2)
    assert (a.name, b.name) == ("step_2_x.bin", "step_2_x.bin")
    for path in (a, b):
        st = path.stat()
        assert st.st_size == 64 * MIB
        assert st.st_blocks * 512 < MIB  # a hole, not 64 MiB of data
        with open(path, "rb") as f:
            assert f.read(4096) == bytes(4096)
    with pytest.raises(ValueError, match="must be >= 0"):
        harness.write_sparse_pair(tmp_path / "a", tmp_path / "b", "y", -1)


def test_venv_folder_is_keyed_on_the_requirements(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["b>=2", "a"]\n')
    folder, requirements = venvs.venv_folder(tmp_path, tmp_path / "cache")
    assert requirements == ["a", "b>=2"]
    assert folder.parent == tmp_path / "cache"
    assert folder.name.startswith(f"venv-py{sys.version_info.major}{sys.version_info.minor}-")
    assert venvs.venv_folder(tmp_path, tmp_path / "cache")[0] == folder  # reused
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["a", "b>=3"]\n')
    assert venvs.venv_folder(tmp_path, tmp_path / "cache")[0] != folder
    assert venvs.bench_cache_dir().name == "fastdiff-bench"
    assert ROOT not in venvs.bench_cache_dir().parents  # outside the checkout


def test_copy_source_leaves_out_what_pip_must_not_build_from(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    files = [
        "pyproject.toml", "README.md", "pkg/__init__.py", "pkg/build/kept.py",
        "pkg/__pycache__/x.pyc", "build/lib/pkg/stale.py", "pkg.egg-info/PKG-INFO",
        ".git", "tests/test_x.py", "benchmarks/b.py", ".ruff_cache/x",
    ]  # fmt: skip
    for name in files:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name)
    venvs.copy_source(repo, tmp_path / "copy")
    copied = sorted(
        str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*") if p.is_file()
    )
    assert copied == ["README.md", "pkg/__init__.py", "pkg/build/kept.py", "pyproject.toml"]


def test_bench_compare_quick_runs_end_to_end(tmp_path: Path) -> None:
    """The compare benchmark's script, on the workloads that load neither numpy nor
    numba, with this interpreter (no venv is built): every tool runs and checks
    out, the tables and the targets are printed, the dumps are removed."""
    workloads = ("tiny", "long-1x", "long-8x", "sparse")
    p = subprocess.run(
        [
            sys.executable, "benchmarks/bench_compare.py", "--quick", "--repeat", "1",
            "--warmup", "0", "--python", sys.executable, "--workdir", str(tmp_path),
            "--workloads", ",".join(workloads),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert f"`{sys.executable}` (given with --python" in p.stdout
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in p.stdout.splitlines()
        if line.startswith("| ") and not line.startswith(("| workload", "| target", "| ---"))
    ]
    reference = ["reference"] if "| tiny | reference |" in p.stdout else []
    timed = [(r[0], r[1]) for r in rows if len(r) == 7]
    long_tools = ("fastdiff text", "fastdiff json", "floor read+xxh3")
    assert timed == [
        *[("tiny", t) for t in ("fastdiff", "python -c pass", "floor read+xxh3", *reference)],
        *[("long-1x", t) for t in long_tools],
        *[("long-8x", t) for t in long_tools],
    ]
    assert all(float(r[2]) > 0 and r[6] == "" for r in rows if len(r) == 7)  # none failed
    memory = [(r[0], r[1]) for r in rows if len(r) == 6]
    assert memory == [("sparse", "fastdiff"), ("sparse", "python -c pass")]
    verdicts = {r[0]: r[3] for r in rows if len(r) == 4}
    assert len(verdicts) == 11  # 10 ratios and the peak memory of the sparse pair
    for label, verdict in verdicts.items():
        ran = label.startswith(("tiny", "long", "peak RSS"))
        assert verdict in (("met", "not met") if ran else ("n/a",)), label
    assert list(tmp_path.iterdir()) == []  # the dumps are gone


def test_bench_compare_estimates_only_the_pure_python_baselines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 16 MiB pilot's numpy time is mostly its import: scaled to 512 MiB it
    predicted ~20 s on a busy machine, and the 512 MiB target was then judged
    against that guess. Only the list-building tools may be estimated."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_compare", ROOT / "benchmarks" / "bench_compare.py"
    )
    assert spec is not None and spec.loader is not None
    bc = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_compare", bc)  # its dataclasses look it up
    spec.loader.exec_module(bc)
    a, b = synth.write_pair(tmp_path / "a", tmp_path / "b", "x", "f32", 4 * KIB)
    w = bc.Workload("big", "big", "pair", True, lambda a, b: None, 0, a=a.parent, b=b.parent)
    w.nbytes = 1000
    pilot = bc.Workload("mid", "mid", "pair", True, lambda a, b: None, 0)
    pilot.nbytes = 1
    seen = {name: bc.Cell(times=[1.0]) for name in ("numpy-naive", "pure-python", "reference")}
    commands = {name: ["true"] for name in seen}
    args = bc.parse_args(["--repeat", "1", "--warmup", "0"])
    cells = bc.run_workload(w, commands, args, (pilot, seen))
    assert cells["numpy-naive"].times and cells["numpy-naive"].estimate is None  # measured
    for name in ("pure-python", "reference"):
        assert cells[name].estimate == 1000.0 and not cells[name].times
        assert cells[name].note == "~est (from mid), not run"
