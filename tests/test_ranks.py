"""Runs written by several ranks (issue 16, section 4), and whether a sweep's
first origins reproduce (section 5): a run folder whose dumps lie in
``rank_<R>/`` is compared rank by rank (paired by R); a rank in one run only
is an error for that rank while the others are compared; each rank has its
verdict and origins, the report the worst verdict and the earliest first
divergent step; the text says whether the ranks share their first origin.
``hash`` writes and ``compare`` reads manifests of such runs, ``sweep``
compares them, ``watch`` refuses them with one line. A run of one rank's
report is unchanged (``tests/test_origins.py`` pins its JSON byte for byte).

Every test runs the command line (``helpers.fastdiff``).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from helpers import f32, fastdiff

SCHEMA = """\
name = "pipe"

[[group]]
key = "P"
title = "pipeline"
hint = "Look at the pipeline kernels."
[group.members]
src = { dtype = "f32", inputs = [] }
mid = { dtype = "f32", inputs = ["src"] }
acc = { dtype = "f32", inputs = ["mid", "acc@prev"] }

[[group]]
key = "Q"
title = "consumers"
hint = "Look at the consumers."
[group.members]
out = { dtype = "f32", inputs = ["acc"] }
"""
NAMES = ("src", "mid", "acc", "out")
STEPS = 3


def write_rank(folder: Path, rank: int, bumps: set[tuple[int, str]] = frozenset()) -> None:
    """One rank's dumps (its own values); ``bumps``: (step, name) changed."""
    folder.mkdir(parents=True)
    for step in range(STEPS):
        for i, name in enumerate(NAMES):
            values = [1000 * rank + 100 * step + 10 * i + k for k in range(4)]
            if (step, name) in bumps:
                values[0] += 1
            (folder / f"step_{step}_{name}.bin").write_bytes(f32(*values))


def ranked_run(root: Path, bumps: dict[int, set[tuple[int, str]]], ranks: range = range(3)) -> Path:
    for r in ranks:
        write_rank(root / f"rank_{r}", r, bumps.get(r, set()))
    return root


def schema_file(tmp: Path) -> Path:
    path = tmp / "s.toml"
    path.write_text(SCHEMA, encoding="utf-8")
    return path


def compare(tmp: Path, a: Path, b: Path, *opts: str) -> tuple[int, dict[str, Any], str]:
    p = fastdiff("compare", "--schema", schema_file(tmp), a, b, "--format", "json", *opts)
    return p.returncode, json.loads(p.stdout), p.stderr


def text(tmp: Path, a: Path, b: Path) -> list[str]:
    p = fastdiff("compare", "--schema", schema_file(tmp), a, b)
    return p.stdout.splitlines()


# --- compare ---------------------------------------------------------------------------


def test_ranks_pair_by_number_and_each_gets_its_verdict(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {1: {(1, "mid"), (1, "acc")}, 2: {(2, "out")}})
    code, doc, err = compare(tmp_path, a, b)
    assert code == 1 and err == ""
    assert doc["verdict"] == "diverged"
    assert doc["first_divergent_step"] == 1  # the earliest over ranks
    assert doc["first_divergent_groups"] == ["P"]
    assert doc["ranks"] == [
        {"rank": 0, "verdict": "identical", "first_divergent_step": None,
         "first_divergent_groups": [], "origins": []},
        {"rank": 1, "verdict": "diverged", "first_divergent_step": 1,
         "first_divergent_groups": ["P"],
         "origins": [{"rank": 1, "step": 1, "name": "mid", "group": "P"}]},
        {"rank": 2, "verdict": "diverged", "first_divergent_step": 2,
         "first_divergent_groups": ["Q"],
         "origins": [{"rank": 2, "step": 2, "name": "out", "group": "Q"}]},
    ]  # fmt: skip
    assert doc["origins"] == [
        {"rank": 1, "step": 1, "name": "mid", "group": "P"},
        {"rank": 2, "step": 2, "name": "out", "group": "Q"},
    ]
    # every buffer carries its rank, rank after rank; paths are the rank folders'
    assert [x["rank"] for x in doc["buffers"]] == sorted(x["rank"] for x in doc["buffers"])
    assert len(doc["buffers"]) == 3 * STEPS * len(NAMES)
    first = doc["buffers"][0]
    assert list(first)[:2] == ["rank", "step"]
    assert first["path_a"] == str(a / "rank_0" / "step_0_acc.bin")
    acc = next(x for x in doc["buffers"] if (x["rank"], x["step"], x["name"]) == (1, 1, "acc"))
    assert (acc["role"], acc["differing_inputs"]) == ("receiver", ["mid"])
    # the steps sum the ranks
    assert doc["steps"][1]["counts"] == {"equal": 10, "diverged": 2}

    assert doc["born"] == {
        "step": 1, "origins": [{"step": 1, "group": "P", "name": "mid", "rank": 1}],
        "received": ["acc"], "undetermined": [], "later": [
            {"step": 2, "group": "Q", "name": "out", "rank": 2}], "declared": True,
    }  # fmt: skip
    assert firsts(doc) == [(("P", "mid", 1), [1]), (("Q", "out", 2), [2])]
    assert doc["rank_pattern"]["quiet"] == [0]


def test_golden_the_text_report_of_ranks_is_the_guides_example(tmp_path: Path) -> None:
    """The text renderer's words for ranks, once: the rank sections, the
    born-in line, the per-rank table (the ranks guide quotes it) and the verdict."""
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {1: {(1, "mid"), (1, "acc")}, 2: {(2, "out")}})
    lines = text(tmp_path, a, b)
    assert "3 ranks: 0, 1, 2" in lines
    assert f"=== rank 1 (A: {a / 'rank_1'}, B: {b / 'rank_1'})" in lines
    assert "  born in: P mid at step 1 (inputs src matched); received: acc" in lines
    table = lines[lines.index("per rank:") : lines.index("per rank:") + 5]
    assert table == [
        "per rank:",
        "  rank  verdict    first divergent step  groups  first origin",
        "     0  identical  -                     -       -",
        "     1  diverged   1                     P       P mid at step 1",
        "     2  diverged   2                     Q       Q out at step 2",
    ]
    assert lines[-1] == (
        "VERDICT: diverged: first divergent step 1 on rank 1 (of 3 ranks); groups: P (pipeline)"
    )
    # the docs' example is this output
    page = Path(__file__).resolve().parents[1] / "docs" / "guides" / "ranks.md"
    section = page.read_text(encoding="utf-8")
    block = section[section.index("```\nper rank:") + 4 :]
    block_lines = block[: block.index("```")].splitlines()
    assert block_lines == lines[lines.index("per rank:") :]
    # one pattern, in words (the rest of this file reads the rank_pattern finding)
    (line,) = [x for x in lines if x.startswith("pattern: ")]
    assert line == (
        "pattern: the first origin is on some ranks only: P mid at step 1 on rank 1; "
        "Q out at step 2 on rank 2; no divergence on rank 0: look at what sets those ranks "
        "apart: their data, their place in the topology, the order of cross-rank reductions"
    )


def rank_pattern(tmp: Path, a: Path, b: Path, *opts: str) -> dict[str, Any]:
    """The report's ``rank_pattern`` finding (the JSON's), for the pipe schema."""
    code, doc, err = compare(tmp, a, b, *opts)
    assert code in (1, 2), err
    return doc["rank_pattern"]  # type: ignore[no-any-return]


def firsts(doc: dict[str, Any]) -> list[tuple[tuple[str, str, int], list[int]]]:
    """Each first origin of the rank pattern, as (group, name, step), with its ranks."""
    pattern = doc.get("rank_pattern", doc)
    return [
        ((f["origin"]["group"], f["origin"]["name"], f["origin"]["step"]), f["ranks"])
        for f in pattern["firsts"]
    ]


def test_ranks_that_share_their_first_origin_point_at_a_kernel(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {r: {(1, "acc")} for r in range(3)})
    got = rank_pattern(tmp_path, a, b)
    assert got["kind"] == "kernel"
    assert firsts(got) == [(("P", "acc", 1), [0, 1, 2])]
    assert (got["quiet"], got["unfound"], got["uncompared"]) == ([], [], [])


def test_ranks_diverging_differently_point_at_what_sets_them_apart(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {}, range(4))
    b = ranked_run(tmp_path / "b", {0: {(1, "acc")}, 1: {(2, "src")}, 2: {(1, "acc")}},
                   range(4))  # fmt: skip
    got = rank_pattern(tmp_path, a, b)
    assert got["kind"] == "some_ranks"
    assert firsts(got) == [(("P", "acc", 1), [0, 2]), (("P", "src", 2), [1])]
    assert got["quiet"] == [3]


def test_one_rank_diverging_while_the_others_are_identical_is_some_ranks_only(
    tmp_path: Path,
) -> None:
    # The newcomer's case: of 3 ranks only rank 1 diverged; a kernel that is
    # nondeterministic wherever it runs would have moved ranks 0 and 2 too.
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {1: {(1, "acc")}})
    got = rank_pattern(tmp_path, a, b)
    assert got["kind"] == "some_ranks"  # not "kernel"
    assert firsts(got) == [(("P", "acc", 1), [1])]
    assert got["quiet"] == [0, 2]


def test_ranks_within_tolerance_count_as_not_diverged(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {0: {(1, "acc")}, 1: {(1, "acc")}, 2: {(1, "acc")}})
    # rank 2's bump is within --atol 1 as all are; rank 0 and 1 get a larger one
    for r in (0, 1):
        path = b / f"rank_{r}" / "step_1_acc.bin"
        values = list(struct.unpack("<4f", path.read_bytes()))
        values[0] += 5
        path.write_bytes(f32(*values))
    got = rank_pattern(tmp_path, a, b, "--atol", "1")
    assert got["kind"] == "some_ranks"
    assert firsts(got) == [(("P", "acc", 1), [0, 1])]
    assert got["quiet"] == [2]


def test_a_rank_not_compared_leaves_the_pattern_open(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {}, range(3))
    b = ranked_run(tmp_path / "b", {0: {(1, "acc")}, 1: {(1, "acc")}}, range(2))
    got = rank_pattern(tmp_path, a, b)
    assert got["kind"] == "not_known"
    assert firsts(got) == [(("P", "acc", 1), [0, 1])]
    assert (got["uncompared"], got["quiet"]) == ([2], [])


def test_diverging_ranks_without_a_found_origin_leave_the_pattern_open(tmp_path: Path) -> None:
    schema = tmp_path / "open.toml"
    schema.write_text(SCHEMA.replace('inputs = ["src"]', 'inputs = ["src", "logits"]'))
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {r: {(1, "mid")} for r in range(3)})
    p = fastdiff("compare", "--schema", schema, a, b, "--format", "json")
    assert p.returncode == 1, p.stderr
    got = json.loads(p.stdout)["rank_pattern"]
    assert got["kind"] == "not_known"
    assert (got["firsts"], got["unfound"]) == ([], [0, 1, 2])


def test_one_rank_shows_no_pattern_across_ranks(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {}, range(1))
    b = ranked_run(tmp_path / "b", {0: {(1, "acc")}}, range(1))
    code, doc, err = compare(tmp_path, a, b)
    assert code == 1, err
    assert [r["rank"] for r in doc["ranks"]] == [0]
    assert doc["rank_pattern"]["kind"] == "one_rank"
    assert firsts(doc) == [(("P", "acc", 1), [0])]


def test_a_rank_in_one_run_only_is_an_error_and_the_others_are_compared(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {}, range(3))
    b = ranked_run(tmp_path / "b", {0: {(0, "src")}}, range(2))
    code, doc, err = compare(tmp_path, a, b)
    assert code == 2
    message = (
        f"{a / 'rank_2'}: rank 2 is in run A only (run B has no rank_2); nothing was compared "
        "for it: copy that rank's dumps, or compare the ranks both runs hold"
    )
    assert err == f"fastdiff: error: {message}\n"
    assert doc["verdict"] == "error"
    assert [(r["rank"], r["verdict"]) for r in doc["ranks"]] == [
        (0, "diverged"), (1, "identical"), (2, "error"),
    ]  # fmt: skip
    assert doc["first_divergent_step"] == 0
    assert [f"{e['path']}: {e['message']}" for e in doc["errors"]] == [message]


def test_ranks_without_declared_inputs_have_no_origins(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {1: {(1, "mid")}})
    p = fastdiff("compare", "--schema", "raw", a, b, "--format", "json")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert "origins" not in doc and not any("role" in x for x in doc["buffers"])
    assert [(r["rank"], r["verdict"], r["origins"]) for r in doc["ranks"]] == [
        (0, "identical", None), (1, "diverged", None), (2, "identical", None),
    ]  # fmt: skip
    assert "rank_pattern" not in doc and "born" not in doc


def test_runs_of_one_rank_and_of_several_do_not_mix(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {})
    b = tmp_path / "b"
    write_rank(b, 0)
    code, doc, err = compare(tmp_path, a, b)
    assert code == 2 and "ranks" not in doc and doc["buffers"] == []
    assert err == (
        f"fastdiff: error: {a}: run A holds the dumps of several ranks (rank_<R> folders) and "
        f"run B, {b}, those of one: compare rank by rank ({a}/rank_0 against {b}), or give run "
        "B's folder of ranks\n"
    )


def test_dumps_beside_rank_folders_and_two_folders_of_one_rank_are_errors(
    tmp_path: Path,
) -> None:
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {})
    (b / "step_0_src.bin").write_bytes(f32(1, 2, 3, 4))
    write_rank(b / "rank_01", 1)
    code, doc, err = compare(tmp_path, a, b)
    assert code == 2
    assert len(err.splitlines()) == 2  # one line each
    errors = [e["message"] for e in doc["errors"]]
    assert any(
        m.startswith("holds both step_<N>_<name>.bin dumps and rank folders") for m in errors
    )
    assert "a second folder of rank 1 (beside rank_01); rename or remove one" in errors
    assert [r["verdict"] for r in doc["ranks"]] == ["identical"] * 3


def test_runs_a_recorder_wrote_rank_by_rank_compare_whole(tmp_path: Path) -> None:
    """``Recorder(rank=R)`` writes ``rank_<R>/`` (a folder of .npy dumps and
    a digest log, digests only at the steps not in ``data``): the whole
    runs compare rank by rank, each rank's folder read as its format."""
    np = pytest.importorskip("numpy")
    from fastdiff import Recorder

    for run, late in (("a", 0.0), ("b", 1.0)):
        for rank in (0, 1):
            with Recorder(tmp_path / run, rank=rank, data={0}) as rec:
                for step in range(3):
                    w = np.arange(16, dtype=np.float32) + 100 * rank + step
                    if rank == 1 and step == 2:
                        w[3] += late  # run B's rank 1 differs at step 2
                    rec.dump(step, "w", w)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["rank_0", "rank_1"]
    p = fastdiff("compare", "--schema", "raw", tmp_path / "a", tmp_path / "b", "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert [(r["rank"], r["verdict"], r["first_divergent_step"]) for r in doc["ranks"]] == [
        (0, "identical", None), (1, "diverged", 2),
    ]  # fmt: skip
    (w,) = [x for x in doc["buffers"] if x["status"] != "equal"]
    assert (w["rank"], w["step"], w["name"]) == (1, 2, "w")
    assert w["first_divergent_chunk"] is not None  # step 2 was recorded as digests only
    # The ranks' notes are the whole's: how to record rank 1's step 2 in full,
    # as a compare of rank 1 alone says (the combined report dropped it).
    from fastdiff import compare_runs
    from fastdiff.model.findings import NoteKind

    whole = compare_runs(tmp_path / "a", tmp_path / "b")
    (rerecord,) = [n for n in whole.notes if n.kind is NoteKind.RERECORD]
    assert rerecord["step"] == 2
    assert whole.notes == compare_runs(tmp_path / "a" / "rank_1", tmp_path / "b" / "rank_1").notes


def test_runs_of_several_ranks_choose_the_schema_a_run_of_one_rank_would(tmp_path: Path) -> None:
    """Without --schema, runs of several ranks whose files give their dtypes
    (a recorder's .npy dumps, containers) are read by-name, their groups the
    names' first parts, as a run of one rank of the same files is, not with
    rl-state (every buffer then in group 'other'); in compare and in sweep."""
    np = pytest.importorskip("numpy")
    from fastdiff import Recorder

    def record(run: Path, rank: int | None, bump: float = 0.0) -> None:
        with Recorder(run, rank=rank) as rec:
            w = np.arange(8, dtype=np.float32)
            rec.dump(0, "model.w", w)
            rec.dump(0, "optim.m", w + bump)

    for run, bump in (("a", 0.0), ("b", 1.0), ("c", 0.0)):
        for rank in (0, 1):
            record(tmp_path / run, rank, bump if rank == 1 else 0.0)
    record(tmp_path / "one", None)
    record(tmp_path / "one_b", None, 1.0)

    def doc(*args: object) -> dict[str, Any]:
        p = fastdiff("compare", *args, "--format", "json")
        assert p.returncode in (0, 1), p.stderr
        return json.loads(p.stdout)  # type: ignore[no-any-return]

    one = doc(tmp_path / "one", tmp_path / "one_b")
    several = doc(tmp_path / "a", tmp_path / "b")
    assert one["schema"] == several["schema"] == "by-name"
    assert [g["key"] for g in several["groups"]] == [g["key"] for g in one["groups"]]
    assert [g["key"] for g in several["groups"]] == ["model", "optim"]
    assert several["first_divergent_groups"] == ["optim"]
    assert {b["group"] for b in several["buffers"]} == {"model", "optim"}
    p = fastdiff("sweep", "--baseline", tmp_path / "a", tmp_path / "b", tmp_path / "c",
                 "--no-cache", "--format", "jsonl")  # fmt: skip
    assert p.returncode == 1, p.stderr
    *pairs, summary = map(json.loads, p.stdout.splitlines())
    assert [(r["schema"], r["verdict"]) for r in pairs] == [
        ("by-name", "diverged"), ("by-name", "identical"),
    ]  # fmt: skip
    assert pairs[0]["first_divergent_groups"] == ["optim"] and "notes" not in summary


# --- hash, sweep, watch -------------------------------------------------------------------


def test_hash_writes_the_ranks_and_compare_reads_them(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {1: {(1, "mid"), (1, "acc")}})
    schema = schema_file(tmp_path)
    for run in (a, b):
        p = fastdiff("hash", run, "-o", tmp_path / f"{run.name}.json", "--schema", schema)
        assert p.returncode == 0, p.stderr
    manifest = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    names = [f["file"] for f in manifest["buffers"]]
    assert names[:2] == ["rank_0/step_0_acc.bin", "rank_0/step_0_mid.bin"]
    assert names[-1] == "rank_2/step_2_src.bin"
    assert len(manifest["buffers"]) == 3 * STEPS * len(NAMES)
    _, folders, _ = compare(tmp_path, a, b)
    for left, right in ((tmp_path / "a.json", tmp_path / "b.json"), (tmp_path / "a.json", b)):
        code, doc, err = compare(tmp_path, left, right)
        assert code == 1, err
        for key in ("verdict", "first_divergent_step", "first_divergent_groups", "ranks",
                    "origins"):  # fmt: skip
            assert doc[key] == folders[key], key
        roles = [(x["rank"], x["step"], x["name"], x.get("role")) for x in doc["buffers"]]
        assert roles == [
            (x["rank"], x["step"], x["name"], x.get("role")) for x in folders["buffers"]
        ]


def test_hash_names_a_malformed_dump_of_a_rank_by_its_rank_folder(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {})
    (a / "rank_1" / "step_0_src.bin").write_bytes(bytes(7))  # not a whole number of f32
    p = fastdiff("hash", a, "-o", tmp_path / "a.json", "--schema", schema_file(tmp_path))
    assert p.returncode == 2
    assert f"{a / 'rank_1' / 'step_0_src.bin'}: size 7 bytes" in p.stderr
    doc = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert [(m["file"], m["step"], m["buffer"]) for m in doc["malformed"]] == [
        ("rank_1/step_0_src.bin", 0, "src")
    ]


def test_a_manifest_never_mixes_files_of_ranks_and_of_none(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {})
    assert fastdiff("hash", a, "-o", tmp_path / "a.json").returncode == 0
    doc = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    doc["buffers"][1]["file"] = doc["buffers"][1]["file"].split("/", 1)[1]
    (tmp_path / "mixed.json").write_text(json.dumps(doc), encoding="utf-8")
    p = fastdiff("compare", tmp_path / "mixed.json", a)
    assert p.returncode == 2
    assert "files of ranks and files of no rank are mixed" in p.stderr
    doc["buffers"][1]["file"] = doc["buffers"][0]["file"]  # the same rank, step and buffer
    doc["buffers"][1]["buffer"] = doc["buffers"][0]["buffer"]
    (tmp_path / "twice.json").write_text(json.dumps(doc), encoding="utf-8")
    p = fastdiff("compare", tmp_path / "twice.json", a)
    assert p.returncode == 2
    assert "buffer 'acc' of step 0 of rank 0 is listed twice" in p.stderr


def test_sweep_compares_runs_of_several_ranks(tmp_path: Path) -> None:
    base = ranked_run(tmp_path / "base", {})
    same = ranked_run(tmp_path / "same", {})
    other = ranked_run(tmp_path / "other", {2: {(0, "out")}})
    p = fastdiff("sweep", "--schema", schema_file(tmp_path), "--baseline", base, same, other,
                 "--no-cache", "--format", "jsonl")  # fmt: skip
    assert p.returncode == 1, p.stderr
    *pairs, summary = map(json.loads, p.stdout.splitlines())
    assert [r["verdict"] for r in pairs] == ["identical", "diverged"]
    assert [r["verdict"] for r in pairs[1]["ranks"]] == ["identical", "identical", "diverged"]
    assert summary["reproducible_origin"] is True
    assert summary["first_origins"] == [
        {"origin": {"rank": 2, "step": 0, "name": "out", "group": "Q"}, "pairs": [1]}
    ]


def test_watch_refuses_runs_of_several_ranks_in_one_line(tmp_path: Path) -> None:
    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {})
    p = fastdiff("watch", a, b, "--idle-timeout", "1")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (
        f"fastdiff: error: {a} holds the dumps of several ranks (rank_0, rank_1, rank_2); watch "
        f"compares runs of one rank: watch each rank's folders ({a}/rank_0 against the other "
        "run's), or compare the whole runs once they are written\n"
    )


# --- does the first origin reproduce? ------------------------------------------------------


def one_rank(folder: Path, bumps: set[tuple[int, str]]) -> Path:
    write_rank(folder, 0, bumps)
    return folder


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_a_sweep_says_whether_its_first_origin_reproduces(tmp_path: Path, fmt: str) -> None:
    # text: the sweep renderer's golden line for a reproducible origin
    base = one_rank(tmp_path / "base", set())
    runs = [one_rank(tmp_path / f"r{i}", {(1, "acc"), (2, "out")}) for i in range(3)]
    p = fastdiff("sweep", "--schema", schema_file(tmp_path), "--baseline", base, *runs,
                 "--no-cache", "--format", fmt)  # fmt: skip
    assert p.returncode == 1, p.stderr
    if fmt == "text":
        assert p.stdout.splitlines()[-1] == (
            "first origin reproducible: P acc at step 1 in all 3 diverging pairs"
        )
    else:
        summary = json.loads(p.stdout.splitlines()[-1])
        assert summary["reproducible_origin"] is True
        assert summary["first_origins"] == [
            {"origin": {"step": 1, "name": "acc", "group": "P"}, "pairs": [0, 1, 2]}
        ]


def test_a_sweep_names_the_pairs_whose_first_origins_disagree(tmp_path: Path) -> None:
    base = one_rank(tmp_path / "base", set())
    r1 = one_rank(tmp_path / "r1", {(1, "acc")})
    r2 = one_rank(tmp_path / "r2", {(2, "mid"), (2, "acc")})
    r3 = one_rank(tmp_path / "r3", {(1, "acc"), (2, "out")})
    r4 = one_rank(tmp_path / "r4", set())
    args = ("sweep", "--schema", schema_file(tmp_path), "--baseline", base, r1, r2, r3, r4,
            "--no-cache")  # fmt: skip
    p = fastdiff(*args, "--format", "jsonl")
    assert p.returncode == 1, p.stderr
    *pairs, summary = map(json.loads, p.stdout.splitlines())
    assert [r["run_b"] for r in pairs] == [str(r) for r in (r1, r2, r3, r4)]
    assert summary["reproducible_origin"] is False
    assert summary["first_origins"] == [
        {"origin": {"step": 1, "name": "acc", "group": "P"}, "pairs": [0, 2]},
        {"origin": {"step": 2, "name": "mid", "group": "P"}, "pairs": [1]},
    ]


def test_a_sweep_without_declared_inputs_keeps_its_summary_record(tmp_path: Path) -> None:
    base = one_rank(tmp_path / "base", set())
    r1 = one_rank(tmp_path / "r1", {(1, "acc")})
    p = fastdiff("sweep", "--schema", "raw", "--baseline", base, r1, "--no-cache",
                 "--format", "jsonl")  # fmt: skip
    summary = json.loads(p.stdout.splitlines()[-1])
    # no first_origins, no reproducible_origin
    assert list(summary) == [
        "record", "schema_version", "pairs", "identical", "diverged", "error",
        "error_and_diverged", "classes", "unclassified", "cache_hits", "elapsed_s", "interrupted",
    ]  # fmt: skip
