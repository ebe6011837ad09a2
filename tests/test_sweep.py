"""Sweeps, manifests and the digest cache, through the CLI and the library."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import fastdiff as cli
from hypothesis import given, settings
from hypothesis import strategies as st

import fastdiff.stages.hash
from fastdiff import render_json
from fastdiff.bench.synth import write_rl_run
from fastdiff.engine.cache import DigestCache
from fastdiff.errors import FastdiffError
from fastdiff.model.findings import Unclassified
from fastdiff.model.results import BufferResult, Report
from fastdiff.options import CompareOptions
from fastdiff.sweep import (
    UnclassifiedRun,
    all_pairs,
    baseline_pairs,
    identity_classes,
    read_pairs_file,
    split_words,
    sweep,
)

REPO = Path(__file__).resolve().parents[1]


def strict_json(text: str) -> object:
    def no_constants(name: str) -> object:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=no_constants)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A baseline, two identical copies, and candidates diverging in F and in D."""
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for name, diverge in [
        ("base", None),
        ("same1", None),
        ("same2", None),
        ("divF", [(2, "rewards", 3)]),
        ("divD", [(1, "unit_lots", 0), (3, "rewards", 1)]),
    ]:
        out[name] = root / name
        write_rl_run(out[name], batch=64, steps=4, seed=1, diverge=diverge)
    return out


@pytest.fixture
def cache_env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "xdg")}


def test_baseline_sweep_jsonl(runs: dict[str, Path], cache_env: dict[str, str]) -> None:
    cands = [str(runs[k]) for k in ("same1", "divF", "divD")]
    r = cli("sweep", "--baseline", str(runs["base"]), *cands, env=cache_env)
    assert r.returncode == 1, r.stderr
    assert r.stderr == ""
    records = [strict_json(line) for line in r.stdout.splitlines()]
    assert [rec["record"] for rec in records] == ["pair", "pair", "pair", "summary"]
    pairs = records[:3]
    assert [p["index"] for p in pairs] == [0, 1, 2]
    assert [(p["run_a"], p["run_b"]) for p in pairs] == [(str(runs["base"]), c) for c in cands]
    assert [p["verdict"] for p in pairs] == ["identical", "diverged", "diverged"]
    assert [p["first_divergent_step"] for p in pairs] == [None, 2, 1]
    assert [p["first_divergent_groups"] for p in pairs] == [[], ["F"], ["D"]]
    # The same fields as compare --format json.
    one = cli("compare", str(runs["base"]), cands[1], "--format", "json")
    want = strict_json(one.stdout)
    assert set(want) <= set(pairs[1])
    for key in ("verdict", "first_divergent_step", "first_divergent_groups", "buffers", "errors"):
        assert pairs[1][key] == want[key]
    summary = records[3]
    assert (summary["pairs"], summary["identical"], summary["diverged"], summary["error"]) == (
        3,
        1,
        2,
        0,
    )


def test_all_sweep_text_classes(runs: dict[str, Path], cache_env: dict[str, str]) -> None:
    names = ["base", "divF", "same1", "same2"]
    r = cli("sweep", "--all", *[str(runs[k]) for k in names], "--format", "text", env=cache_env)
    assert r.returncode == 1, r.stderr
    rows = r.stdout.splitlines()
    assert len([x for x in rows if x.endswith("identical")]) == 3
    assert len([x for x in rows if "diverged at step 2 [F]" in x]) == 3
    assert "6 pairs: 3 identical, 3 diverged, 0 with errors" in r.stdout
    classes = rows[rows.index("classes of bit-identical runs:") + 1 :]
    assert classes == [
        f"  1: {runs['base']} {runs['same1']} {runs['same2']}",
        f"  2: {runs['divF']}",
        # rl-state declares inputs: every diverging pair has divF's first origin
        "first origin reproducible: F rewards at step 2 in all 3 diverging pairs",
    ]


def f32_run(path: Path, *bits: int) -> str:
    """A run of one f32 buffer ``rewards`` at step 0, from bit patterns."""
    path.mkdir()
    (path / "step_0_rewards.bin").write_bytes(struct.pack(f"<{len(bits)}I", *bits))
    return str(path)


def f32_bits(x: float) -> int:
    return int.from_bytes(struct.pack("<f", x), "little")


def sweep_summaries(*args: str) -> tuple[list[str], dict[str, object], int]:
    """(text summary lines, JSONL summary record, exit code) of one sweep, both formats."""
    text = cli("sweep", *args, "--no-cache", "--format", "text")
    jsonl = cli("sweep", *args, "--no-cache", "--format", "jsonl")
    assert text.returncode == jsonl.returncode
    lines = text.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("classes of"))
    # up to the first origins, which tests/test_origins.py checks
    end = next((i for i, line in enumerate(lines) if line.startswith("first origin")), None)
    return lines[start:end], strict_json(jsonl.stdout.splitlines()[-1]), text.returncode  # type: ignore[return-value]


def test_runs_within_tolerance_never_form_a_class(tmp_path: Path) -> None:
    """The issue's case: 0.0, 0.6, 1.2 with --atol 1. R0~R1 and R1~R2 are within
    tolerance, R0-R2 diverges, and no two runs are bit-identical: three classes
    (before: one class of all three, chained through R1)."""
    runs = [f32_run(tmp_path / f"R{i}", f32_bits(v)) for i, v in enumerate((0.0, 0.6, 1.2))]
    text, summary, code = sweep_summaries("--all", *runs, "--atol", "1")
    assert code == 1
    assert (summary["identical"], summary["diverged"]) == (2, 1)
    assert summary["classes"] == [[runs[0]], [runs[1]], [runs[2]]]
    assert summary["unclassified"] == []
    assert text == [
        "classes of bit-identical runs:",
        *[f"  {i}: {r}" for i, r in enumerate(runs, 1)],
    ]
    rows = cli("sweep", "--all", *runs, "--atol", "1", "--no-cache", "--format", "text")
    rows = rows.stdout.splitlines()
    # A pair only within tolerance is not called "identical", as compare says it.
    assert f"{runs[0]}  {runs[1]}  identical within tolerance" in rows
    assert f"{runs[1]}  {runs[2]}  identical within tolerance" in rows
    assert not any(row.endswith("  identical") for row in rows)


QNAN, QNAN_PAYLOAD, NEG_QNAN = 0x7FC00000, 0x7FC00001, 0xFFC00000
ONE = 0x3F800000


@pytest.mark.parametrize(
    ("option", "others"),
    [
        (("--atol", "1"), (f32_bits(1.5), f32_bits(1.9))),
        (("--rtol", "0.5"), (f32_bits(1.4), f32_bits(1.9))),
        (("--ulp", "1"), (ONE + 1, ONE + 2)),
        (("--nan-equal",), (QNAN_PAYLOAD, NEG_QNAN)),
    ],
)
def test_only_bitwise_equal_pairs_join_a_class(
    tmp_path: Path, option: tuple[str, ...], others: tuple[int, int]
) -> None:
    """A and its copy form a class whatever the tolerance; B and C, each within
    tolerance of A (and of each other, or not), stay alone."""
    first = QNAN if option == ("--nan-equal",) else ONE
    a = f32_run(tmp_path / "A", first)
    copy = f32_run(tmp_path / "A-copy", first)
    b, c = (f32_run(tmp_path / n, x) for n, x in zip("BC", others, strict=True))
    text, summary, code = sweep_summaries("--all", a, b, copy, c, *option)
    assert code in (0, 1)
    assert summary["classes"] == [[a, copy], [b], [c]]
    assert text == ["classes of bit-identical runs:", f"  1: {a} {copy}", f"  2: {b}", f"  3: {c}"]


def test_runs_whose_pairs_all_failed_are_in_no_class(runs: dict[str, Path], tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    names = [str(runs["base"]), missing, str(runs["same1"]), str(runs["divF"])]
    text, summary, code = sweep_summaries("--all", *names)
    assert code == 2
    assert summary["classes"] == [[names[0], names[2]], [names[3]]]
    reason = "every pair with it ended in error"
    assert summary["unclassified"] == [{"run": missing, "reason": reason}]
    assert text == [
        "classes of bit-identical runs:",
        f"  1: {names[0]} {names[2]}",
        f"  2: {names[3]}",
        "in no class (a pair ended in error):",
        f"  {missing}: {reason}",
    ]
    # Nothing could be compared: no class at all, and both runs set apart.
    text, summary, code = sweep_summaries("--all", missing, names[0])
    assert summary["classes"] == []
    assert [u["run"] for u in summary["unclassified"]] == [missing, names[0]]  # type: ignore[attr-defined]
    assert text[0] == "classes of bit-identical runs: none"


def test_a_pair_with_an_error_that_also_diverged_says_both(tmp_path: Path) -> None:
    """Run b holds an entry that cannot be read (a folder named like a dump)
    and differs from a and c at step 3: its rows say 'error, and diverged at
    step 3 [...]', as compare does; it is a class of its own (it is known to
    differ from every other run), and the summary counts the pairs that
    erred and diverged."""
    data = struct.pack("<4f", 1, 2, 3, 4)
    names = []
    for run in ("a", "b", "c"):
        folder = tmp_path / run
        folder.mkdir()
        for step in range(4):
            differs = run == "b" and step == 3
            (folder / f"step_{step}_w.bin").write_bytes(data[::-1] if differs else data)
        names.append(str(folder))
    (tmp_path / "b" / "step_1_x.bin").mkdir()
    args = ("--all", *names, "--default-dtype", "f32")
    rows = cli("sweep", *args, "--no-cache", "--format", "text").stdout.splitlines()
    ab = next(r for r in rows if r.startswith(f"{names[0]}  {names[1]}  "))
    assert ab.endswith(
        "error, and diverged at step 3 [other] (1 problem: named like a dump but is a folder; "
        "only regular files are read)"
    )
    _, summary, code = sweep_summaries(*args)
    assert code == 2
    assert summary["classes"] == [[names[0], names[2]], [names[1]]]
    assert summary["unclassified"] == []
    assert (summary["error"], summary["error_and_diverged"]) == (2, 2)
    first = cli("sweep", *args, "--no-cache", "--format", "text").stdout.splitlines()
    assert any("2 with errors (2 of them diverged too)" in line for line in first)
    # The test a script makes: first_divergent_step, set whatever the verdict.
    jsonl = cli("sweep", *args, "--no-cache", "--format", "jsonl").stdout.splitlines()
    pairs = [strict_json(line) for line in jsonl[:-1]]
    assert [(p["verdict"], p["first_divergent_step"]) for p in pairs] == [  # type: ignore[index]
        ("error", 3),
        ("identical", None),
        ("error", 3),
    ]
    from fastdiff import compare_runs

    report = compare_runs(names[0], names[1])
    assert report.verdict == "error" and report.diverges


def _report(a: str, b: str, verdict: str, status: str = "equal") -> Report:
    buffer = BufferResult(0, "rewards", "F", "f32", status)  # type: ignore[arg-type]
    return Report(a, b, "rl-state", verdict, None, (), (), (), (buffer,), (), ())  # type: ignore[arg-type]


def test_identity_classes_never_chain_and_set_doubtful_runs_apart() -> None:
    eq, tol = "identical", "within_tolerance"
    # Bitwise A=B and B=C but A-C reported diverged (say, a file changed mid-sweep):
    # C cannot join A's class, whose members must all equal it.
    reports = [
        _report("A", "B", eq),
        _report("B", "C", eq),
        _report("A", "C", "diverged", "diverged"),
    ]
    assert identity_classes(["A", "B", "C"], reports) == ([["A", "B"], ["C"]], [])
    # An identical verdict through a tolerance joins nothing.
    assert identity_classes(["A", "B"], [_report("A", "B", eq, tol)]) == ([["A"], ["B"]], [])
    # D failed with everyone: apart. A-B failed though both are sound: whether they
    # are equal is unknown, so neither is classified. E took part in no pair.
    reports = [
        _report("A", "B", "error", "error"),
        _report("A", "C", "diverged", "diverged"),
        _report("B", "C", "diverged", "diverged"),
        *[_report(x, "D", "error", "error") for x in "ABC"],
    ]
    classes, apart = identity_classes(["A", "B", "C", "D", "E"], reports)
    assert classes == [["C"]]
    assert apart == [
        UnclassifiedRun("A", Unclassified.PAIR_ERROR, ("B",)),
        UnclassifiedRun("B", Unclassified.PAIR_ERROR, ("A",)),
        UnclassifiedRun("D", Unclassified.EVERY_PAIR_ERROR),
        UnclassifiedRun("E", Unclassified.NO_PAIR),
    ]


def test_pairs_file(runs: dict[str, Path], tmp_path: Path, cache_env: dict[str, str]) -> None:
    f = tmp_path / "pairs.txt"
    f.write_text(
        f"# nightly\n{runs['base']} {runs['same1']}\n\n"
        f"'{runs['base']}' {runs['divD']}  # with a comment\n"
    )
    r = cli("sweep", "--pairs", str(f), "--format", "jsonl", env=cache_env)
    assert r.returncode == 1
    verdicts = [strict_json(x).get("verdict") for x in r.stdout.splitlines()]
    assert verdicts == ["identical", "diverged", None]
    f.write_text(f"{runs['base']}\n")
    bad = cli("sweep", "--pairs", str(f), env=cache_env)
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        f"fastdiff: error: {f}:1: expected two run paths, found 1 (quote paths that contain spaces)"
    )


def test_pairs_file_hash_inside_a_word_is_not_a_comment(
    runs: dict[str, Path], tmp_path: Path, cache_env: dict[str, str]
) -> None:
    """The issue's line ``"pf/run a" pf/r#c``: shlex cut it to ``pf/r``, which
    exists and is identical, and the sweep said identical."""
    pf = tmp_path / "pf"
    pf.mkdir()
    shutil.copytree(runs["base"], pf / "run a")
    shutil.copytree(runs["same1"], pf / "r")
    shutil.copytree(runs["divF"], pf / "r#c")
    f = tmp_path / "pairs.txt"
    f.write_text(f'"{pf}/run a" {pf}/r#c\n')
    r = cli("sweep", "--pairs", str(f), "--format", "jsonl", "--no-cache", env=cache_env)
    assert r.returncode == 1, r.stderr
    pair = strict_json(r.stdout.splitlines()[0])
    assert (pair["run_a"], pair["run_b"]) == (f"{pf}/run a", f"{pf}/r#c")
    assert pair["verdict"] == "diverged"


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("# the whole line", []),
        ("   # after blanks only", []),
        ("a b # a comment after whitespace", ["a", "b"]),
        ("a b\t#after a tab", ["a", "b"]),
        ("a b#c", ["a", "b#c"]),
        ("a#b c#", ["a#b", "c#"]),
        ("'a #b' c", ["a #b", "c"]),
        ('"a #b" c', ["a #b", "c"]),
        ("'#a' \"#b\"", ["#a", "#b"]),
        ('"x"#y z', ["x#y", "z"]),
        ("'x'#y z", ["x#y", "z"]),
        ('"x" #y z', ["x"]),
        ("\\#a b", ["#a", "b"]),
        ("a\\ b c", ["a b", "c"]),
        ('"a\\"b\\\\" c', ['a"b\\', "c"]),
        ('"a\\b" c', ["a\\b", "c"]),
        ("'' c", ["", "c"]),
    ],
)
def test_split_words_comments_only_where_a_word_starts(line: str, words: list[str]) -> None:
    assert split_words(line) == words


@given(st.text(alphabet="ab #'\"\\\t", max_size=16))
@settings(max_examples=150, deadline=None)
def test_split_words_agrees_with_the_shell(line: str) -> None:
    """The words bash makes of the line (globbing off; no $, `, operators or
    globs in the alphabet), or an error where bash finds the quotes unclosed."""
    if line.endswith("\\"):
        return  # bash keeps a final backslash; fastdiff refuses it (and says so)
    script = "set -f\nprintf '%s\\0' X " + line + "\n"
    sh = subprocess.run(["bash", "-c", script], capture_output=True, timeout=30, check=False)
    if sh.returncode != 0:
        with pytest.raises(ValueError):
            split_words(line)
        return
    assert split_words(line) == sh.stdout.decode().split("\0")[1:-1]


def test_pairs_file_syntax_errors_name_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "pairs.txt"
    for text, why in [
        ("a b\n'c d\n", "no closing single quote"),
        ('a b\n"c d\n', "no closing double quote"),
        ("a b\nc d\\\n", "a backslash at the end of the line escapes nothing"),
    ]:
        f.write_text(text)
        with pytest.raises(FastdiffError) as info:
            read_pairs_file(str(f))
        assert str(info.value) == f"{f}:2: cannot parse the line ({why}); quote paths as in a shell"
    f.write_bytes(b"# runs\r\nx#1 'y #2'  # two\r\n\r\n")
    assert read_pairs_file(str(f)) == [("x#1", "y #2")]


def test_sweep_errors_give_exit_2_and_keep_other_pairs(
    runs: dict[str, Path], tmp_path: Path, cache_env: dict[str, str]
) -> None:
    missing = tmp_path / "nope"
    r = cli(
        "sweep", "--baseline", str(runs["base"]), str(runs["divF"]), str(missing), env=cache_env
    )
    assert r.returncode == 2
    records = [strict_json(x) for x in r.stdout.splitlines()]
    assert [rec.get("verdict") for rec in records] == ["diverged", "error", None]
    assert r.stderr == f"fastdiff: error: {missing}: run folder not found; check the path\n"


def test_an_error_every_pair_shares_is_printed_once(
    runs: dict[str, Path], tmp_path: Path, cache_env: dict[str, str]
) -> None:
    """A missing baseline is an error of every pair: each pair's record holds
    it, stderr says it once."""
    missing = tmp_path / "nope"
    r = cli("sweep", "--baseline", str(missing), str(runs["base"]), str(runs["divF"]),
            env=cache_env)  # fmt: skip
    assert r.returncode == 2
    *pairs, _ = [strict_json(x) for x in r.stdout.splitlines()]
    assert [[e["path"] for e in rec["errors"]] for rec in pairs] == [[str(missing)]] * 2
    assert r.stderr == f"fastdiff: error: {missing}: run folder not found; check the path\n"


def test_pair_list_builders(tmp_path: Path) -> None:
    assert baseline_pairs("a", ["b", "c"]) == [("a", "b"), ("a", "c")]
    assert all_pairs(["a", "b", "c", "a"]) == [("a", "b"), ("a", "c"), ("b", "c")]
    f = tmp_path / "p"
    f.write_text("x y\n")
    assert read_pairs_file(str(f)) == [("x", "y")]


def _counting(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    real = fastdiff.stages.hash.hash_buffer

    def counting(f, chunk_size=fastdiff.stages.hash.DEFAULT_CHUNK_SIZE):  # type: ignore[no-untyped-def]
        calls[f.path] += 1
        return real(f, chunk_size)

    monkeypatch.setattr(fastdiff.stages.hash, "hash_buffer", counting)
    return calls


def test_each_file_is_hashed_once_per_sweep(
    runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    names = ["base", "same1", "same2", "divF", "divD"]
    _, summary = sweep(
        all_pairs([str(runs[k]) for k in names]), CompareOptions(executor="thread", jobs=2)
    )
    assert summary.pairs == 10
    assert len(calls) == 5 * 34 * 4
    assert set(calls.values()) == {1}


def test_each_run_is_listed_once_per_sweep(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep lists each run (and each rank of a run of several) once, and
    chooses its schema and compares from that one listing."""
    import fastdiff.sources.folder

    listed: Counter[str] = Counter()
    real = fastdiff.sources.folder.open_source

    def counting(spec: str, steps: object = None):  # type: ignore[no-untyped-def]
        listed[spec] += 1
        return real(spec, steps)  # type: ignore[arg-type]

    monkeypatch.setattr(fastdiff.sources.folder, "open_source", counting)
    ranked = []
    for name in ("r1", "r2"):
        for rank in (0, 1):
            shutil.copytree(runs["base"], tmp_path / name / f"rank_{rank}")
        ranked.append(str(tmp_path / name))
    folders = [str(runs[k]) for k in ("base", "same1", "divF")]
    reports, _ = sweep(all_pairs(folders))
    assert [r.verdict for r in reports] == ["identical", "diverged", "diverged"]
    assert dict(listed) == dict.fromkeys(folders, 1)
    listed.clear()
    reports, _ = sweep([(ranked[0], ranked[1])])
    assert reports[0].verdict == "identical" and reports[0].ranks is not None
    ranks = [os.path.join(r, f"rank_{k}") for r in ranked for k in (0, 1)]
    assert dict(listed) == dict.fromkeys([*ranked, *ranks], 1)


def _without_work(report: object) -> str:
    return render_json(report.replace(work=type(report.work)()))  # type: ignore[attr-defined]


def test_warm_cache_rehashes_only_what_changed(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    pairs = baseline_pairs(str(runs["base"]), [str(runs["same1"]), str(runs["divF"])])
    cold_cache = DigestCache(cache_dir, min_age_s=0)
    cold, s1 = sweep(pairs, cache=cold_cache)
    cold_cache.close()
    assert s1.cache_hits == 0
    calls = _counting(monkeypatch)
    warm_cache = DigestCache(cache_dir, min_age_s=0)
    warm, s2 = sweep(pairs, cache=warm_cache)
    warm_cache.close()
    assert s2.cache_hits == 3 * 136
    assert calls == Counter()
    assert [_without_work(r) for r in warm] == [_without_work(r) for r in cold]
    # Rewriting a file with the same bytes still moves its ctime: rehashed, not trusted.
    target = runs["same1"] / "step_0_rewards.bin"
    target.write_bytes(target.read_bytes())
    third = DigestCache(cache_dir, min_age_s=0)
    _, s3 = sweep(pairs, cache=third)
    third.close()
    assert list(calls) == [str(target)]
    assert s3.cache_hits == 3 * 136 - 1


def test_corrupt_or_foreign_cache_is_set_aside(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    db = cache_dir / "digests-v2.sqlite3"
    db.write_bytes(b"this is not a database" * 100)
    pairs = [(str(runs["base"]), str(runs["same1"]))]
    c = DigestCache(cache_dir, min_age_s=0)
    reports, _ = sweep(pairs, cache=c)
    c.close()
    assert reports[0].verdict == "identical"
    assert "set aside" in capsys.readouterr().err or c.warnings
    assert any(p.name.startswith("digests-v2.sqlite3.bad-") for p in cache_dir.iterdir())
    # A SQLite file of some other program is not trusted either.
    db.unlink()
    other = sqlite3.connect(db)
    other.execute("CREATE TABLE digests (x)")
    other.commit()
    other.close()
    c2 = DigestCache(cache_dir, min_age_s=0)
    assert c2.warnings and "not a fastdiff digest cache" in c2.warnings[0]
    reports2, s = sweep(pairs, cache=c2)
    c2.close()
    assert reports2[0].verdict == "identical" and s.cache_hits == 0


def test_concurrent_sweeps_share_the_cache(
    runs: dict[str, Path], cache_env: dict[str, str]
) -> None:
    args = [sys.executable, "-m", "fastdiff", "sweep", "--all"]
    args += [str(runs[k]) for k in ("base", "same1", "divF")]
    procs = [
        subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, **cache_env},
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [1, 1, 1]
    assert all(err == "" for _, err in outs)
    summaries = [strict_json(out.splitlines()[-1]) for out, _ in outs]
    assert all(s["diverged"] == 2 and s["identical"] == 1 for s in summaries)


# --- manifests --------------------------------------------------------------------


def test_manifests_in_place_of_runs(runs: dict[str, Path], tmp_path: Path) -> None:
    ma, mb = tmp_path / "base.manifest.json", tmp_path / "divD.manifest.json"
    assert cli("hash", str(runs["base"]), "-o", str(ma), "--no-cache").returncode == 0
    assert cli("hash", str(runs["divD"]), "-o", str(mb), "--no-cache").returncode == 0
    doc = strict_json(ma.read_text())
    assert doc["fastdiff_manifest"] == 2 and len(doc["buffers"]) == 136
    entry = next(f for f in doc["buffers"] if f["file"] == "step_0_rewards.bin")
    assert (entry["buffer"], entry["step"], entry["dtype"], entry["size"]) == (
        "rewards",
        0,
        "f32",
        256,
    )
    folders = strict_json(
        cli("compare", str(runs["base"]), str(runs["divD"]), "--format", "json").stdout
    )
    for a, b in [(ma, mb), (ma, runs["divD"]), (runs["base"], mb)]:
        r = cli("compare", str(a), str(b), "--format", "json")
        assert r.returncode == 1, r.stderr
        got = strict_json(r.stdout)
        assert got["first_divergent_step"] == folders["first_divergent_step"] == 1
        assert got["first_divergent_groups"] == folders["first_divergent_groups"] == ["D"]
        statuses = {(x["step"], x["name"]): x["status"] for x in got["buffers"]}
        assert statuses == {(x["step"], x["name"]): x["status"] for x in folders["buffers"]}
        lots = next(x for x in got["buffers"] if (x["step"], x["name"]) == (1, "unit_lots"))
        assert lots["first_divergent_chunk"] == [0, 256]
    same = cli("compare", str(ma), str(runs["base"]))
    assert same.returncode == 0, same.stdout


def test_bad_manifests(runs: dict[str, Path], tmp_path: Path) -> None:
    m = tmp_path / "m.json"
    assert cli("hash", str(runs["base"]), "-o", str(m), "--no-cache").returncode == 0
    doc = strict_json(m.read_text())
    doc["fastdiff_manifest"] = 99
    m.write_text(json.dumps(doc))
    r = cli("compare", str(m), str(runs["base"]))
    assert r.returncode == 2
    assert r.stderr.splitlines()[0].startswith(f"fastdiff: error: {m}: manifest format version 99")
    doc["fastdiff_manifest"] = 2
    doc["buffers"][0]["chunks"] = ["00" * 16]
    m.write_text(json.dumps(doc))
    r = cli("compare", str(m), str(runs["base"]))
    assert r.returncode == 2 and "file digest does not match" in r.stderr
    inside = cli("hash", str(runs["base"]), "-o", str(runs["base"] / "m.json"))
    assert inside.returncode == 2 and "never writes into a run folder" in inside.stderr
    assert not (runs["base"] / "m.json").exists()


def test_progress_on_stderr_only_when_asked_or_a_terminal(
    runs: dict[str, Path], cache_env: dict[str, str]
) -> None:
    args = ["sweep", "--baseline", str(runs["base"]), str(runs["same1"]), "--no-cache"]
    quiet = cli(*args, env=cache_env)  # stderr is a pipe here: no progress by default
    assert quiet.returncode == 0 and quiet.stderr == ""
    shown = cli(*args, "--progress", env=cache_env)
    assert shown.returncode == 0
    assert "hashed 0/272 files" in shown.stderr and "pairs 0/1" in shown.stderr
    assert shown.stderr.endswith("\x1b[K")  # the line is erased at the end
    assert len(shown.stdout.splitlines()) == len(quiet.stdout.splitlines()) == 2


# --- manifests of different chunk sizes in one sweep (issue 8, item 6) --------------------


def _pair_json(record: dict[str, object]) -> dict[str, object]:
    """A pair's JSON without what depends on the run (timings, sweep index)."""
    return {k: v for k, v in record.items() if k not in ("work", "record", "index")}


@pytest.fixture(scope="module")
def chunk_manifests(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """base hashed in 256-byte chunks, divD in 64-byte chunks."""
    out = tmp_path_factory.mktemp("manifests")
    made = []
    for run, chunk in (("base", "256"), ("divD", "64")):
        m = out / f"{run}-{chunk}.manifest.json"
        r = cli("hash", str(runs[run]), "-o", str(m), "--chunk-size", chunk, "--no-cache")
        assert r.returncode == 0, r.stderr
        made.append(m)
    return made


def test_each_pair_of_a_sweep_gets_what_compare_gives_it_alone(
    runs: dict[str, Path], chunk_manifests: list[Path], tmp_path: Path
) -> None:
    m256, m64 = chunk_manifests
    pairs = [
        (m256, runs["same1"]),  # identical, compared in 256-byte chunks
        (m64, runs["same1"]),  # diverged, compared in 64-byte chunks: same1 is hashed twice
        (runs["divF"], m64),
        (runs["base"], runs["divD"]),  # two folders: the --chunk-size of the options
    ]
    f = tmp_path / "pairs.txt"
    f.write_text("".join(f"{a} {b}\n" for a, b in pairs))
    opts = ["--chunk-size", "128", "--no-cache"]
    r = cli("sweep", "--pairs", str(f), "--format", "jsonl", *opts)
    assert r.returncode == 1, r.stderr
    assert r.stderr == ""
    records = [strict_json(line) for line in r.stdout.splitlines()][:-1]
    assert [rec["verdict"] for rec in records] == ["identical", "diverged", "diverged", "diverged"]
    for (a, b), got in zip(pairs, records, strict=True):
        alone = cli("compare", str(a), str(b), "--format", "json", *opts)
        assert alone.returncode == (1 if got["verdict"] == "diverged" else 0), alone.stderr
        assert _pair_json(got) == _pair_json(strict_json(alone.stdout))  # type: ignore[arg-type]
    # The 64-byte manifest's pair names its first differing chunk in 64-byte units.
    lots = next(x for x in records[1]["buffers"] if (x["step"], x["name"]) == (1, "unit_lots"))
    assert lots["first_divergent_chunk"] == [0, 64]


def test_a_file_is_hashed_once_per_chunk_size_it_is_needed_at(
    runs: dict[str, Path],
    chunk_manifests: list[Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: Counter[tuple[str, int]] = Counter()
    real = fastdiff.stages.hash.hash_buffer

    def counting(f, chunk_size=fastdiff.stages.hash.DEFAULT_CHUNK_SIZE):  # type: ignore[no-untyped-def]
        calls[(f.path, chunk_size)] += 1
        return real(f, chunk_size)

    monkeypatch.setattr(fastdiff.stages.hash, "hash_buffer", counting)
    m256, m64 = chunk_manifests
    same1, same2 = str(runs["same1"]), str(runs["same2"])
    pairs = [(str(m256), same1), (same1, str(m64)), (same1, same2), (str(m64), same1)]
    opts = CompareOptions(chunk_size=128, executor="thread", jobs=2)
    cache = DigestCache(tmp_path / "cache", min_age_s=0)
    reports, summary = sweep(pairs, opts, cache=cache)
    cache.close()
    assert [r.verdict for r in reports] == ["identical", "diverged", "identical", "diverged"]
    assert not any(r.errors for r in reports)
    files1 = sorted(str(p) for p in runs["same1"].iterdir())
    files2 = sorted(str(p) for p in runs["same2"].iterdir())
    want = {(p, c) for p in files1 for c in (256, 64, 128)} | {(p, 128) for p in files2}
    assert set(calls) == want
    assert set(calls.values()) == {1}
    # The cache is looked up at each chunk size a file is needed at.
    calls.clear()
    warm = DigestCache(tmp_path / "cache", min_age_s=0)
    again, summary = sweep(pairs, opts, cache=warm)
    warm.close()
    assert calls == Counter()
    assert summary.cache_hits == len(want)
    assert [_without_work(r) for r in again] == [_without_work(r) for r in reports]
