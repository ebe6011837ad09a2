"""The CLI never answers bad input with a traceback or with exit code 1.

Exit 1 means "diverged" to every script that calls fastdiff, so a crash that
exits 1 is a wrong verdict. The issue's cases run in a subprocess, as a user
types them; the catch-all for unforeseen exceptions is checked with a command
made to fail. Then hypothesis drives the argument parser of every subcommand
with random option values (numbers such as inf, nan, 1e308, negative and huge
integers, random strings, missing paths, empty strings), in-process for
speed: the runs given are identical or missing, so exit 1 is never right, and
every value must get a specific message, never the "this is a bug" one.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fastdiff
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastdiff import cli
from fastdiff.bench import run as bench
from fastdiff.bench.synth import write_rl_run

REPO = Path(__file__).resolve().parents[1]
BUG = "failed unexpectedly"


def python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("robust") / "run"
    write_rl_run(path, batch=8, steps=2, seed=3)
    return path


def one_line_error(p: subprocess.CompletedProcess[str], *starts: str) -> None:
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    assert "Traceback" not in p.stderr
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("fastdiff: error: " + "".join(starts)), p.stderr


# --- the cases ------------------------------------------------------------


def test_huge_cache_min_age(run: Path, tmp_path: Path) -> None:
    """Was an OverflowError in the cache (exit 1)."""
    p = fastdiff(
        "sweep", "--all", str(run), str(run) + "/.", "--cache-min-age", "1e300",
        env={"XDG_CACHE_HOME": str(tmp_path)},
    )  # fmt: skip
    one_line_error(p, "argument --cache-min-age: '1e300' is more than 1e+09 seconds")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="needs the dask extra")
@pytest.mark.parametrize(
    ("scheduler", "why"),
    [
        ("garbage", "missing port number in address 'garbage'"),
        ("tcp://127.0.0.1:notaport", "invalid literal for int() with base 10: 'notaport'"),
        ("http://127.0.0.1:8786", "unknown address scheme 'http'"),
    ],
)
def test_bad_dask_scheduler_address(run: Path, scheduler: str, why: str) -> None:
    """Was a ValueError from distributed (exit 1)."""
    p = fastdiff(
        "sweep", "--baseline", str(run), str(run), "--no-cache",
        "--executor", "dask", "--scheduler", scheduler,
    )  # fmt: skip
    one_line_error(p, f"--scheduler {scheduler}: not a scheduler address ({why}")
    assert p.stderr.endswith("; give tcp://HOST:PORT, as printed by dask scheduler\n")


def test_huge_bench_scale(run: Path) -> None:
    """Was an OverflowError sizing the scaled run (exit 1)."""
    p = fastdiff("bench", "--like", str(run), "--no-ladder", "--scale", "1e308")
    one_line_error(p, "argument --scale: '1e308' is more than 1e+09")


# --- the catch-all ------------------------------------------------------------------

CRASH = """
import sys
from fastdiff import cli
from fastdiff.cli import stats
def crash(args):
    raise {exc}
stats.run = crash
sys.exit(cli.main(["stats", "somewhere"{extra}]))
"""


def crash(
    exc: str, extra: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return python(CRASH.format(exc=exc, extra=extra), env={"FASTDIFF_DEBUG": "", **(env or {})})


def test_unexpected_exception_is_one_line_and_exit_2() -> None:
    p = crash("OverflowError('cannot convert float infinity to integer')")
    assert p.returncode == 2
    assert p.stderr == (
        "fastdiff: error: fastdiff stats failed unexpectedly (OverflowError: cannot convert "
        "float infinity to integer). This is a bug in fastdiff: please report it, with the "
        "command line, to the fastdiff maintainers; run with --debug or FASTDIFF_DEBUG=1 for "
        "the traceback\n"
    )


def test_a_missing_dependency_is_an_environment_to_fix_not_a_bug() -> None:
    p = crash("ModuleNotFoundError(\"No module named 'xxhash'\", name='xxhash')")
    assert p.returncode == 2
    (line,) = p.stderr.splitlines()
    assert line.startswith("fastdiff: error: fastdiff stats needs the package 'xxhash'")
    assert BUG not in line
    p = crash("ModuleNotFoundError(\"No module named 'spam'\", name='spam')")  # not ours: a bug
    assert BUG in p.stderr


@pytest.mark.parametrize(("extra", "env"), [(', "--debug"', {}), ("", {"FASTDIFF_DEBUG": "1"})])
def test_debug_shows_the_traceback_and_still_exits_2(extra: str, env: dict[str, str]) -> None:
    p = crash("RuntimeError('boom')", extra, env)
    assert p.returncode == 2
    lines = p.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "RuntimeError: boom" in lines
    assert lines[-1].startswith("fastdiff: error: fastdiff stats failed unexpectedly (")
    assert lines[-1].endswith("and the traceback above")


def test_interrupt_is_130_and_a_closed_pipe_is_quiet() -> None:
    p = crash("KeyboardInterrupt()")
    assert (p.returncode, p.stderr) == (130, "fastdiff: interrupted\n")
    p = crash("BrokenPipeError()")
    assert (p.returncode, p.stderr) == (2, "")


def test_debug_option_on_every_subcommand_and_at_the_top() -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["schema"]).debug is False
    assert parser.parse_args(["--debug", "schema"]).debug is True
    assert parser.parse_args(["schema", "--debug"]).debug is True
    for name in subcommands():
        assert "--debug" in subcommands()[name].format_help()


# --- random option values, every subcommand -------------------------------------------


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


class Planned(BaseException):
    """Raised instead of running the benchmark: planning is what parses values.
    A BaseException, so the CLI's catch-all lets it through to the test."""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Two identical runs, a missing path and a pairs file listing the runs;
    the cache and TMPDIR in a scratch folder, and the benchmark stopped once
    planned. Each example runs in a fresh, empty current folder (random -o,
    --cache-dir, --workdir values land there), so that no relative name
    refers to what an earlier example left behind: a folder without dumps
    compared with a run is a divergence, legitimately exit 1."""
    root = tmp_path_factory.mktemp("fuzz")
    a = root / "a"
    write_rl_run(a, batch=8, steps=2, seed=5)
    shutil.copytree(a, root / "b")
    pairs = root / "pairs.txt"
    pairs.write_text(f"'{a}' '{root / 'b'}'\n")
    (root / "tmp").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(root / "xdg"))
        mp.setenv("TMPDIR", str(root / "tmp"))
        mp.delenv("FASTDIFF_DEBUG", raising=False)
        mp.setattr(tempfile, "tempdir", None)
        mp.setattr(bench, "run_bench", _planned)
        yield {
            "root": str(root),
            "a": str(a),
            "b": str(root / "b"),
            "missing": str(root / "no"),
            "pairs": str(pairs),
        }


def _planned(*args: object, **kwargs: object) -> None:
    raise Planned


NUMBERS = st.one_of(
    st.sampled_from(
        ["inf", "-inf", "nan", "-nan", "1e308", "1e309", "-1e308", "1e300", "1e-320", "-0",
         "0", "1", "-1", "2", "0.5", "1e9", "1e10", "4K", "1G", "8G", "1T", "99999999999G",
         "0x10", "1_000", " 8 ", "1e3", "18446744073709551616", "9" * 40, "-" + "9" * 30]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.floats().map(repr),
)  # fmt: skip
#: Random strings; no "/" (relative names stay in the example's folder), no
#: NUL and no lone surrogates (a real argv has neither).
WORDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0/"), max_size=10
)
#: Options that name a run: given a run, or the missing run.
RUN_OPTIONS = ("baseline", "like")


def values(sandbox: dict[str, str]) -> st.SearchStrategy[str]:
    """Any option's value. Never the runs nor the missing run: a --cache-dir
    there would write into a run, or make the missing run a folder without
    dumps (compared with a run, a divergence). A path below a regular file
    can be made by nobody."""
    unmakeable = os.path.join(sandbox["pairs"], "no")
    paths = st.sampled_from([sandbox["pairs"], unmakeable, "", ".", ".."])
    return st.one_of(NUMBERS, WORDS, paths)


def option_words(
    action: argparse.Action, value: st.SearchStrategy[str], runs: st.SearchStrategy[str]
) -> st.SearchStrategy[list[str]]:
    name = max(action.option_strings, key=len)  # the long form, so "--x=-1" works
    if action.nargs == 0:
        return st.just([name])
    if action.dest in RUN_OPTIONS:
        value = runs
    choices = st.sampled_from(list(action.choices)) if action.choices else value
    return st.one_of(choices, value).map(lambda v: [f"{name}={v}"])


@st.composite
def command_lines(draw: st.DrawFn, sandbox: dict[str, str]) -> list[str]:
    """A subcommand with a random set of its options, each with a random
    value, and its positional arguments (runs where it takes runs)."""
    name = draw(st.sampled_from(sorted(subcommands())))
    parser = subcommands()[name]
    value = values(sandbox)
    runs = st.sampled_from([sandbox["a"], sandbox["b"], sandbox["missing"]])
    optionals = [a for a in parser._actions if a.option_strings and a.dest not in ("help", "debug")]
    chosen: list[argparse.Action] = []
    for group in parser._mutually_exclusive_groups:
        if group.required and draw(st.integers(0, 9)):  # mostly a valid mode
            chosen.append(draw(st.sampled_from(group._group_actions)))
    if optionals:
        chosen += draw(st.lists(st.sampled_from(optionals), max_size=5, unique_by=id))
    words = [name]
    for action in dict.fromkeys(chosen):
        words += draw(option_words(action, value, runs))
    positional = runs if name != "schema" else value
    for action in parser._actions:
        if not action.option_strings:
            count = {None: 1, "?": draw(st.integers(0, 1)), "*": draw(st.integers(0, 3))}
            words += [draw(positional) for _ in range(count[action.nargs])]
    return words


def run_in_process(argv: list[str]) -> tuple[int, str]:
    """(exit code, stderr) of ``cli.main(argv)``, stdout discarded."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse: usage errors, --help
            code = exc.code if isinstance(exc.code, int) else 2
        except Planned:
            code = 0
    return code, err.getvalue()


def skipped(argv: list[str]) -> bool:
    """Slow or remote executors are left out: a process pool per example, or a
    Dask client that waits 10 s on an address that parses."""
    option = {w.split("=", 1)[0]: w.split("=", 1)[1] for w in argv if "=" in w}
    executor = option.get("--executor", "")
    return executor == "process" or (executor == "dask" and ":" in option.get("--scheduler", ""))


def test_random_option_values_never_exit_1_nor_crash(sandbox: dict[str, str]) -> None:
    @given(command_lines(sandbox))
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(argv: list[str]) -> None:
        if skipped(argv):
            return
        if argv[0] == "watch":  # the last value wins: random ones are still checked
            argv = [*argv, "--poll=0.01", "--settle=0", "--idle-timeout=0.05",
                    "--start-timeout=0.05"]  # fmt: skip
        with tempfile.TemporaryDirectory(dir=sandbox["root"]) as here, contextlib.chdir(here):
            code, err = run_in_process(argv)
        assert not os.path.lexists(sandbox["missing"]), argv
        assert code in (0, 2), (argv, code, err)
        assert "Traceback" not in err, (argv, err)
        assert BUG not in err, (argv, err)

    check()


def test_empty_pairs_value_is_the_pairs_mode(sandbox: dict[str, str]) -> None:
    """Found by the test above: --pairs "" fell through to --baseline (None)."""
    code, err = run_in_process(["sweep", "--pairs=", "--no-cache"])
    assert (code, err) == (
        2,
        "fastdiff: error: --pairs: empty file name; give the file that lists the pairs\n",
    )
    code, err = run_in_process(["sweep", "--pairs=", sandbox["a"], sandbox["b"]])
    assert (code, err) == (
        2,
        "fastdiff: error: --pairs FILE takes no run arguments; list the pairs in FILE\n",
    )
