"""The anatomy of a divergence, through the command line: shapes and named
fields from the schema, the per-buffer facts in JSON and text, the timeline
(JSON, the text table, ``--plot``), ``--rounding-ulp``; and issue 12's note on
buffers read as raw bytes, the ``schema`` command's own argument in errors,
schema typos at the line of their table header, and the report's wording.

Runs ``python -m fastdiff`` in a subprocess on the committed example
(``examples/anatomy/``, written by ``examples/anatomy/make_runs.py``) and on small
runs written here.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, f32, fastdiff

from fastdiff import CompareOptions, compare_runs
from fastdiff.model.findings import NoteKind

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ("examples/anatomy/run-a", "examples/anatomy/run-b")
SCHEMA = "examples/anatomy/schema.toml"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def example_json(*opts: str) -> dict[str, Any]:
    p = fastdiff("compare", "--schema", SCHEMA, *EXAMPLE, "--format", "json", *opts)
    assert p.returncode == 1, p.stderr
    return json.loads(p.stdout)


def buffer(doc: dict[str, Any], step: int, name: str) -> dict[str, Any]:
    (b,) = [b for b in doc["buffers"] if (b["step"], b["name"]) == (step, name)]
    return b


def write_run(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def next_up(value: float, k: int = 1) -> float:
    """The f32 k units in the last place above ``value`` (> 0)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return struct.unpack("<f", struct.pack("<I", bits + k))[0]


# --- the committed example ----------------------------------------------------------


def test_the_example_matches_its_generator(tmp_path: Path) -> None:
    folder = ROOT / "examples" / "anatomy"
    sys.path.insert(0, str(folder))
    try:
        import make_runs
    finally:
        sys.path.remove(str(folder))
    make_runs.main(tmp_path)
    for run in ("run-a", "run-b"):
        made = {p.name: p.read_bytes() for p in (tmp_path / run).iterdir()}
        committed = {p.name: p.read_bytes() for p in (folder / run).iterdir()}
        assert made == committed, "run: python examples/anatomy/make_runs.py"


def test_fields_shape_and_magnitude_of_the_first_divergence() -> None:
    doc = example_json()
    assert doc["first_divergent_step"] == 4 and doc["first_divergent_groups"] == ["E"]
    isv = buffer(doc, 4, "isv_full")
    assert isv["shape"] == [757]
    assert (isv["first_index"], isv["first_index_nd"]) == (725, [725])
    assert (isv["ranges"], isv["n_ranges"], isv["rows"], isv["n_rows"]) == (
        [[725, 727]], 1, None, None
    )  # fmt: skip
    assert isv["fields"] == [
        {"name": "popart_sigma_welford", "start": 725, "stop": 727, "n_diff": 2,
         "first_index": 725, "max_abs_delta": isv["max_abs_delta"], "max_ulp": 2},
    ]  # fmt: skip
    assert isv["n_diff_outside_fields"] == 0
    assert (isv["max_ulp"], isv["ulp_log2_histogram"], isv["n_signed_zero"]) == (2, [1, 1], 0)
    assert isv["magnitude"] == "rounding"
    assert isv["diff_fraction"] == 2 / 757
    (e,) = [g for g in doc["groups"] if g["key"] == "E"]
    assert e["magnitude"] == "rounding"
    assert (e["cause"]["kind"], e["cause"]["rounding_ulp"]) == ("rounding", 16)
    assert e["cause"]["large"] is None and e["cause"]["changes"] == []


def test_rows_fields_and_every_field_in_order_later_on() -> None:
    doc = example_json()
    logits = buffer(doc, 7, "policy_logits")
    assert logits["shape"] == [8, 8]  # [-1, 8] over 64 elements
    assert (logits["rows"], logits["n_rows"]) == ([2, 5], 2)
    assert logits["first_index_nd"] == [2, 0] and logits["max_abs_delta_index_nd"] == [2, 0]
    assert logits["magnitude"] == "large"
    isv = buffer(doc, 8, "isv_full")
    names = [f["name"] for f in isv["fields"]]
    assert names == ["kelly_avg_win_ema", "win_rate_ema", "popart_sigma_welford", "ph_edge_decay"]
    assert sum(f["n_diff"] for f in isv["fields"]) == isv["n_diff"] == 23
    actions = buffer(doc, 7, "actions")  # integers: no ULP, always large
    assert (actions["max_ulp"], actions["ulp_log2_histogram"], actions["magnitude"]) == (
        None, None, "large"
    )  # fmt: skip
    assert "shape" not in buffer(doc, 0, "isv_full")  # equal: no anatomy in the JSON


def test_the_timeline_in_json() -> None:
    doc = example_json()
    rows = [(r["step"], r["group"], r["magnitude"]) for r in doc["timeline"]]
    assert rows[:4] == [(4, "E", "rounding"), (5, "E", "rounding"), (5, "F", "rounding"),
                        (6, "E", "large")]  # fmt: skip
    assert [r["group"] for r in doc["timeline"] if r["step"] == 8] == ["C", "E", "F"]
    (f6,) = [r for r in doc["timeline"] if (r["step"], r["group"]) == (6, "F")]
    assert f6["n_buffers"] == 3  # advantages, policy_logits, rewards
    assert f6["n_diff"] == sum(
        buffer(doc, 6, n)["n_diff"] for n in ("advantages", "policy_logits", "rewards")
    )
    assert f6["max_abs_delta"] == 128.0 and f6["magnitude"] == "large"
    assert doc["tolerance"]["rounding_ulp"] == 16


def test_the_text_report_shows_where_and_how_big() -> None:
    p = fastdiff("compare", "--schema", SCHEMA, *EXAMPLE)
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    assert (
        "    E  isv_full [f32, (757,)]  DIVERGED; 2 of 757 elements differ (0.264%) in 1 range "
        "[725, 727); first at (725,): A=29.078125 B=29.0781288; max |A-B| 3.8147e-06 at (725,), "
        "max 2 ULP (rounding); fields: popart_sigma_welford [725, 727) 2 differ (max 2 ULP)"
    ) in lines
    assert any(
        ln.startswith("    F  policy_logits [f32, (8, 8)]  DIVERGED; 8 of 64 elements differ "
                      "(12.5%) in 1 row (2); first at (2, 0)")
        for ln in lines
    )  # fmt: skip
    # Listed where it diverges first (step 6); -v lists its later steps too.
    verbose = fastdiff("compare", "--schema", SCHEMA, *EXAMPLE, "-v").stdout.splitlines()
    assert any(
        ln.startswith("    F  policy_logits [f32, (8, 8)]  DIVERGED; 16 of 64 elements differ "
                      "(25%) in 2 rows (2, 5); first at (2, 0)")
        for ln in verbose
    )  # fmt: skip
    at = lines.index("  step         C         E      F")
    assert lines[at - 1].startswith("timeline: per group, the largest |A-B|")
    assert lines[at + 1 : at + 4] == [
        "     4         .     2 ulp      .",
        "     5         .     4 ulp  1 ulp",
        "     6         .  0.000153    128",
    ]
    assert lines[-1] == "    11  2.59e+09      31.5    448"


def test_rounding_ulp_moves_the_line() -> None:
    doc = example_json("--rounding-ulp", "1")
    assert doc["tolerance"]["rounding_ulp"] == 1
    # 2 ULP of 29.08 apart, 1 ULP of the larger value beside it: of the scale
    isv = buffer(doc, 4, "isv_full")
    assert (isv["max_ulp"], isv["max_ulp_of_scale"]) == (2, 1.0)
    assert isv["magnitude"] == "rounding" and isv["cancellation"] is True
    assert buffer(doc, 5, "rewards")["magnitude"] == "rounding"  # 1 ULP
    doc = example_json("--rounding-ulp", "0")
    assert buffer(doc, 4, "isv_full")["magnitude"] == "large"  # 2 ULP, 1 of the scale > 0
    assert buffer(doc, 5, "rewards")["magnitude"] == "large"
    (e,) = [g for g in doc["groups"] if g["key"] == "E"]
    assert e["magnitude"] == "large"
    assert (e["cause"]["kind"], e["cause"]["rounding_ulp"]) == ("large", 0)
    large = e["cause"]["large"]
    assert (large["beyond"], large["of_scale"], large["n_nan"], large["n_inf"]) == (
        True, True, 0, 0
    )  # fmt: skip
    assert doc["verdict"] == "diverged"  # it forgives nothing
    bad = fastdiff("compare", *EXAMPLE, "--rounding-ulp", "-1")
    assert bad.returncode == 2 and "--rounding-ulp" in bad.stderr


# --- shapes decide what is malformed ---------------------------------------------------


def test_a_size_that_does_not_fit_the_shape_is_malformed(tmp_path: Path) -> None:
    schema = tmp_path / "s.toml"
    schema.write_text('[[group]]\nkey = "E"\n[group.members]\nx = { dtype = "f32", shape = [4] }\n')
    a = write_run(tmp_path / "a", {"step_0_x.bin": f32(1, 2, 3, 4)})
    b = write_run(tmp_path / "b", {"step_0_x.bin": f32(1, 2, 3, 4, 5)})
    p = fastdiff("compare", "--schema", schema, a, b, "--format", "json")
    assert p.returncode == 2
    (buf,) = json.loads(p.stdout)["buffers"]
    assert buf["status"] == "malformed"
    message = (
        "size 20 bytes is 5 f32 elements, but the schema's shape [4] holds 4; nothing was "
        "compared for this buffer (truncated dump, or wrong shape in the schema?)"
    )
    assert buf["message"] == message
    assert p.stderr == f"fastdiff: error: {b / 'step_0_x.bin'}: {message}\n"


def test_an_inferred_dimension_and_a_length_mismatch(tmp_path: Path) -> None:
    schema = tmp_path / "s.toml"
    schema.write_text(
        '[[group]]\nkey = "E"\n[group.members]\nx = { dtype = "f32", shape = [-1, 2] }\n'
    )
    a = write_run(tmp_path / "a", {"step_0_x.bin": f32(1, 2, 3, 4, 5, 6)})
    b = write_run(tmp_path / "b", {"step_0_x.bin": f32(1, 2, 3, 9, 5, 6, 7, 8)})
    p = fastdiff("compare", "--schema", schema, a, b, "--format", "json")
    assert p.returncode == 1, p.stderr
    (buf,) = json.loads(p.stdout)["buffers"]
    assert buf["status"] == "length_mismatch"
    assert buf["shape"] == [3, 2]  # over the common prefix of 6 elements
    assert (buf["first_index_nd"], buf["rows"], buf["n_rows"]) == ([1, 1], [1], 1)
    odd = write_run(tmp_path / "odd", {"step_0_x.bin": f32(1, 2, 3)})
    p = fastdiff("compare", "--schema", schema, a, odd, "--format", "json")
    assert p.returncode == 2
    assert json.loads(p.stdout)["buffers"][0]["message"].startswith(
        "size 12 bytes is 3 f32 elements, but not a whole number of 2 (the schema's shape [-1, 2])"
    )


# --- pieces and chunks ------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["python", "numpy", "numba"])
def test_a_run_across_chunks_is_one_range_and_fields_add_up(tmp_path: Path, engine: str) -> None:
    """Chunks of 64 bytes (16 f32): a run [10, 70) crosses four chunk edges and
    two field edges; every chunk size and engine gives the same report."""
    n = 256
    va = [float(i % 7) + 0.5 for i in range(n)]
    vb = list(va)
    for i in range(10, 70):
        vb[i] = next_up(va[i], 1 + i % 3)
    vb[200] = va[200] + 100.0
    schema = tmp_path / "s.toml"
    schema.write_text(
        '[[group]]\nkey = "E"\n[group.members]\n'
        'x = { dtype = "f32", shape = [16, 16], fields = { lo = [0, 32], mid = [32, 64] } }\n'
    )
    a = write_run(tmp_path / "a", {"step_0_x.bin": f32(*va)})
    b = write_run(tmp_path / "b", {"step_0_x.bin": f32(*vb)})
    docs = []
    for chunk in ("64", "4M"):
        p = fastdiff("compare", "--schema", schema, a, b, "--format", "json",
                     "--chunk-size", chunk, "--engine", engine)  # fmt: skip
        assert p.returncode == 1, p.stderr
        doc = json.loads(p.stdout)
        doc.pop("work")
        docs.append(doc)
    assert docs[0] == docs[1]
    (buf,) = docs[0]["buffers"]
    assert (buf["ranges"], buf["n_ranges"]) == ([[10, 70], [200, 201]], 2)
    assert (buf["rows"], buf["n_rows"]) == ([0, 1, 2, 3, 4, 12], 6)
    fields = {f["name"]: (f["n_diff"], f["first_index"], f["max_ulp"]) for f in buf["fields"]}
    assert fields == {"lo": (22, 10, 3), "mid": (32, 32, 3)}
    assert buf["n_diff_outside_fields"] == 61 - 54
    assert buf["magnitude"] == "large"  # the one element 100 away
    assert buf["ulp_log2_histogram"][:2] == [20, 40]  # 1 ULP x20; 2 and 3 ULP x40


# --- the plot ------------------------------------------------------------------------


def test_plot_writes_a_png_matplotlib_reads_back(tmp_path: Path) -> None:
    image = pytest.importorskip("matplotlib.image")
    png = tmp_path / "timeline.png"
    p = fastdiff("compare", "--schema", SCHEMA, *EXAMPLE, "--plot", png)
    assert p.returncode == 1
    assert p.stderr == f"fastdiff: timeline plot written to {png}\n"
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    pixels = image.imread(png)
    assert pixels.ndim == 3 and pixels.shape[0] > 300 and pixels.shape[1] > 500
    identical = tmp_path / "identical.png"
    same = fastdiff("compare", "tests/fixtures/identical/a", "tests/fixtures/identical/b",
                    "--plot", identical)  # fmt: skip
    assert same.returncode == 0 and identical.read_bytes()[:8] == PNG_SIGNATURE


def _figure(run_a: str | Path, run_b: str | Path, schema: str | None = None) -> Any:
    """The timeline figure of the report of two runs (``render.plot.timeline_figure``)."""
    pytest.importorskip("matplotlib")
    from fastdiff import compare_runs
    from fastdiff.options import CompareOptions
    from fastdiff.render.plot import timeline_figure

    report = compare_runs(run_a, run_b, CompareOptions(schema=schema))
    return report, timeline_figure(report)


def test_plot_marks_each_origin_at_its_step() -> None:
    """A star on its group's line at each step an origin was born."""
    report, fig = _figure(
        ROOT / "examples/origins/run-a", ROOT / "examples/origins/run-b",
        str(ROOT / "examples/origins/schema.toml"),
    )  # fmt: skip
    top = fig.axes[0]
    born = sorted((o.group, o.step) for o in report.origins)
    assert born and born[0] == ("F", 3)
    rows = {(r.group, r.step): r for r in report.timeline}
    stars = [line for line in top.lines if line.get_marker() == "*"]
    marked = []
    for line in stars:
        for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True):
            group = next(g for g, step in born if step == x and rows[(g, step)].max_abs_delta == y)
            marked.append((group, int(x)))
    assert sorted(marked) == born
    assert "star: an origin" in top.get_title(loc="left")


def test_plot_label_of_the_last_step_stays_inside_the_panel(tmp_path: Path) -> None:
    """Runs first diverging at their last step: the label of the first divergent
    step is drawn on the side of the line where the panel has room."""
    files_a = {f"step_{s}_rewards.bin": f32(1, 2, 3) for s in range(4)}
    files_b = {**files_a, "step_3_rewards.bin": f32(1, 2, 4)}
    report, fig = _figure(write_run(tmp_path / "a", files_a), write_run(tmp_path / "b", files_b))
    assert report.first_divergent_step == 3 == report.steps[-1].step
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    top = fig.axes[0]
    (label,) = [t for t in top.texts if "first divergent step 3" in t.get_text()]
    box, panel = label.get_window_extent(renderer), top.get_window_extent(renderer)
    assert panel.x0 <= box.x0 and box.x1 <= panel.x1, (box, panel)


def test_plot_of_one_step_has_that_step_as_its_one_tick(tmp_path: Path) -> None:
    """A run of one step: the step axis has one tick, the step, not -0.4, -0.2, ..."""
    a = write_run(tmp_path / "a", {"step_7_rewards.bin": f32(1, 2, 3)})
    b = write_run(tmp_path / "b", {"step_7_rewards.bin": f32(1, 2, 4)})
    _, fig = _figure(a, b)
    bottom = fig.axes[1]
    lo, hi = bottom.get_xlim()
    assert [t for t in bottom.get_xticks() if lo <= t <= hi] == [7]


def test_a_plot_that_cannot_be_written_says_why_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The error names --plot and the file once, then the reason (it said
    '--plot F: cannot write the timeline plot (--plot F: cannot write (...))')."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from fastdiff.cli import main

    def full(self: object, *args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    png = tmp_path / "t.png"
    assert main(["compare", "--schema", SCHEMA, *EXAMPLE, "--plot", str(png)]) == 2
    out, err = capsys.readouterr()
    assert "VERDICT: diverged" in out
    (line,) = [x for x in err.splitlines() if "--plot" in x]
    assert line.startswith(f"fastdiff: error: --plot {png}: ") and line.count("--plot") == 1
    assert line.count(str(png)) == 1 and "No space left on device" in line


def test_plot_refuses_a_run_folder_and_a_missing_folder(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", {"step_0_x.bin": b"\x01"})
    b = write_run(tmp_path / "b", {"step_0_x.bin": b"\x02"})
    p = fastdiff("compare", a, b, "--plot", a / "t.png")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (
        f"fastdiff: error: --plot {a / 't.png'} is inside the run folder {a}, and fastdiff "
        "never writes into a run folder; write the plot elsewhere\n"
    )
    assert sorted(x.name for x in a.iterdir()) == ["step_0_x.bin"]
    p = fastdiff("compare", a, b, "--plot", tmp_path / "nowhere" / "t.png")
    assert p.returncode == 2
    assert f"folder {tmp_path / 'nowhere'} does not exist" in p.stderr
    for command in (("compare", a, b), ("bench", "--max-size", "4K")):
        p = fastdiff(*command, "--plot", tmp_path / "t.txt")  # a PNG under another name: no
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr == (
            f"fastdiff: error: --plot {tmp_path / 't.txt'}: the plot is a PNG image; give a "
            "file name ending in .png\n"
        )
        assert not (tmp_path / "t.txt").exists()


def test_plot_without_matplotlib_is_a_clear_error_before_comparing(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None  # as if not installed\n"
        "from fastdiff.cli import main\n"
        f"sys.exit(main(['compare', {EXAMPLE[0]!r}, {EXAMPLE[1]!r}, '--plot', "
        f"{str(tmp_path / 'x.png')!r}]))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert p.returncode == 2
    assert p.stderr == (
        "fastdiff: error: --plot needs matplotlib, the optional extra 'plot': pip install "
        "'fastdiff-dumps[plot]' (in a checkout of fastdiff: pip install '.[plot]')\n"
    )
    assert p.stdout == "" and list(tmp_path.iterdir()) == []


def test_the_plot_module_imports_matplotlib_only_when_drawing() -> None:
    code = (
        "import sys, fastdiff.render.plot, fastdiff.cli.compare\n"
        "print(any(m.startswith('matplotlib') for m in sys.modules))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert p.stdout == "False\n", p.stderr


# --- issue 12: bytes, the schema command, schema typos, wording ------------------------


UNKNOWN = (REPO / "tests/fixtures/unknown_names/a", REPO / "tests/fixtures/unknown_names/b")


def test_buffers_read_as_bytes_get_one_note() -> None:
    report = compare_runs(*UNKNOWN)
    assert report.verdict == "diverged"
    (note,) = report.notes  # once, though two steps have it
    assert (note.kind, note["names"], note.warning) == (
        NoteKind.RAW_BYTES,
        ("my_debug_buf",),
        False,
    )
    (other,) = [g for g in report.groups if g.key == "other"]
    assert other.cause is not None and other.cause.kind == "bytes"


def test_golden_the_raw_bytes_note_in_words() -> None:
    """The text and the JSON renderers' words for the note, once (the other
    tests read the note as data)."""
    p = fastdiff("compare", *UNKNOWN)
    assert p.returncode == 1
    note = (
        "1 buffer in no schema group (my_debug_buf) was compared as raw bytes (u8): its indices "
        "are byte offsets and its values bytes. To compare them as numbers, give their element "
        "type: --default-dtype f32 (or another dtype), or a schema file (fastdiff schema > "
        "my.toml, add them to a group, then --schema my.toml)"
    )
    lines = p.stdout.splitlines()
    assert lines[3] == f"note: {note}"
    assert sum(ln.startswith("note:") for ln in lines) == 1
    assert "next, other: These buffers were compared as raw bytes" in p.stdout
    j = fastdiff("compare", *UNKNOWN, "--format", "json")
    assert json.loads(j.stdout)["notes"] == [note]


@pytest.mark.parametrize(
    "opts", [(), ("--default-dtype", "f32")], ids=["all-in-groups", "default-dtype"]
)
def test_no_note_when_nothing_is_read_as_bytes(opts: tuple[str, ...]) -> None:
    case = "identical" if not opts else "unknown_names"
    p = fastdiff("compare", f"tests/fixtures/{case}/a", f"tests/fixtures/{case}/b",
                 "--format", "json", *opts)  # fmt: skip
    assert json.loads(p.stdout)["notes"] == []


def test_many_buffers_as_bytes_are_counted_and_a_few_named(tmp_path: Path) -> None:
    files = {f"step_0_{n}.bin": b"\x00\x01" for n in ("d", "c", "b", "a", "e")}
    a = write_run(tmp_path / "a", files)
    report = compare_runs(a, a, CompareOptions(schema="raw"))
    assert report.verdict == "identical"
    (note,) = report.notes
    assert (note.kind, note["names"]) == (NoteKind.RAW_BYTES, ("a", "b", "c", "d", "e"))
    # the words name a few and count the rest
    p = fastdiff("compare", a, a, "--schema", "raw", "--format", "json")
    (words,) = json.loads(p.stdout)["notes"]
    assert words.startswith("5 buffers in no schema group (a, b, c and 2 more) were compared")


def test_the_schema_command_names_its_own_argument() -> None:
    p = fastdiff("schema", "nosuch")
    assert p.returncode == 2
    assert p.stderr == (
        "fastdiff: error: fastdiff schema 'nosuch': no such preset or file (presets: rl-state, "
        "raw; or a path to a .toml file)\n"
    )
    q = fastdiff("compare", "tests/fixtures/identical/a", "tests/fixtures/identical/b",
                 "--schema", "nosuch")  # fmt: skip
    assert q.returncode == 2 and "error: --schema 'nosuch': no such preset" in q.stderr


def test_a_schema_typo_is_reported_at_its_table_header(tmp_path: Path) -> None:
    schema = tmp_path / "typo.toml"
    schema.write_text(
        'name = "x"\n\n[[group]]\nkey = "E"\ntitle = "ISV"\nhint = "h"\n\n'
        '[group.member]\nisv_full = "f32"\n'
    )
    p = fastdiff("compare", "tests/fixtures/identical/a", "tests/fixtures/identical/b",
                 "--schema", schema)  # fmt: skip
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (
        f"fastdiff: error: {schema}:8: group 1: unknown table [group.member] (known tables: "
        "[[group]], [group.members], [group.members.NAME] (a member given as a table) and "
        "[group.members.NAME.fields])\n"
    )


def test_within_tolerance_wording(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", {"step_0_x.bin": f32(*([1.0] * 64))})
    b = write_run(tmp_path / "b", {"step_0_x.bin": f32(*([1.0] * 62), next_up(1.0), 1.0)})
    p = fastdiff("compare", a, b, "--schema", "raw", "--default-dtype", "f32", "--ulp", "1")
    assert p.returncode == 0
    assert (
        "  other  x [f32]  within tolerance; 1 of 64 elements differs, all within tolerance, in "
        "1 range [62, 63); first at [62]: A=1 B=1.00000012; max |A-B| 1.19209e-07 at [62], "
        "max 1 ULP (rounding)"
    ) in p.stdout.splitlines()
    assert p.stdout.splitlines()[-1] == (
        "VERDICT: identical within tolerance: 1 buffer over 1 step, differing only within tolerance"
    )


def test_a_manifest_records_members_in_the_form_given(tmp_path: Path) -> None:
    manifest = tmp_path / "a.json"
    h = fastdiff("hash", "--schema", SCHEMA, EXAMPLE[0], "-o", manifest)
    assert h.returncode == 0, h.stderr
    groups = json.loads(manifest.read_text())["schema"]["group"]
    members = {k: v for g in groups for k, v in g["members"].items()}
    assert members["isv_full"]["shape"] == [757]
    assert members["isv_full"]["fields"]["win_rate_ema"] == [712, 713]
    assert members["policy_logits"] == {"dtype": "f32", "shape": [-1, 8]}
    p = fastdiff("compare", manifest, EXAMPLE[1], "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "anatomy-example" and doc["first_divergent_groups"] == ["E"]


def cells(a: Path, b: Path, *opts: str) -> list[tuple[int, str]]:
    """The timeline's cells (the JSON's), by step, of runs with one group."""
    p = fastdiff("compare", a, b, *opts, "--format", "json")
    assert p.returncode == 1, p.stderr
    return [(r["step"], r["cell"]) for r in json.loads(p.stdout)["timeline"]]


def test_timeline_cells_without_element_facts_say_why(tmp_path: Path) -> None:
    """A buffer in one run only is 'missing'; one a manifest shows differs only
    by its digests is 'differs' (it is in both runs; no element was read)."""
    a = write_run(tmp_path / "a", {f"step_{s}_rewards.bin": f32(1.0, 2.0) for s in (0, 1, 2)})
    b = write_run(tmp_path / "b", {f"step_{s}_rewards.bin": f32(1.0, 3.0) for s in (0, 1)})
    assert cells(a, b) == [(0, "delta"), (1, "delta"), (2, "missing")]
    p = fastdiff("compare", a, b)
    assert p.returncode == 1, p.stderr
    table = p.stdout.split("\ntimeline: ", 1)[1].splitlines()
    # the legend names the words the table uses
    assert table[0].endswith("(N ulp: rounding-size; . equal; missing: in one run only)")
    manifest = tmp_path / "a.json"
    assert fastdiff("hash", a, "--no-cache", "-o", manifest).returncode == 0
    assert cells(manifest, b) == [(0, "differs"), (1, "differs"), (2, "missing")]
    p = fastdiff("compare", manifest, b)
    assert p.returncode == 1, p.stderr
    table = p.stdout.split("\ntimeline: ", 1)[1].splitlines()
    assert "differs: by digests only" in table[0]


def test_a_missing_buffer_outweighs_a_rounding_difference_in_its_cell(tmp_path: Path) -> None:
    """One group, one step: x differs by 1 ULP, y is in run A only. The cell
    says 'missing' (it said '1 ulp', hiding the missing buffer)."""
    a = write_run(tmp_path / "a", {
        "step_0_x.bin": f32(1.0), "step_1_x.bin": f32(1.0), "step_1_y.bin": f32(2.0),
    })  # fmt: skip
    b = write_run(tmp_path / "b", {"step_0_x.bin": f32(2.0), "step_1_x.bin": f32(next_up(1.0))})
    assert cells(a, b, "--schema", "raw", "--default-dtype", "f32") == [
        (0, "delta"), (1, "missing"),
    ]  # fmt: skip


def test_a_hint_without_a_full_stop_gets_one_before_the_magnitude_sentence(
    tmp_path: Path,
) -> None:
    schema = tmp_path / "s.toml"
    schema.write_text(
        '[[group]]\nkey = "G"\nhint = "no full stop"\n[group.members]\n'
        'rewards = "f32"\nadvantages = "f32"\n'
    )
    p = fastdiff(
        "compare", "--schema", schema, "examples/run-a", "examples/run-b", "--format", "json"
    )
    assert p.returncode == 1, p.stderr
    (g,) = [g for g in json.loads(p.stdout)["groups"] if g["key"] == "G"]
    assert g["hint"].startswith("no full stop. Its differences are rounding-size")
    text = fastdiff("compare", "--schema", schema, "examples/run-a", "examples/run-b").stdout
    assert "next, G: no full stop. Its differences are rounding-size" in text
    assert not any(line.rstrip().endswith("rounding-") for line in text.splitlines())
