"""Help and usage errors, as a newcomer meets them (issue 12, items 7 and 11).

An unknown option is the first thing reported, even where argparse would
first complain of what it caused (``--tol 1e-3`` swallowing ``1e-3`` as
RUN_A, ``--json`` leaving the runs "required"), with what was probably meant
(an alias, else the closest names) and a pointer at the command's own help;
run in a subprocess, as typed. Every option and command has a one-line help,
checked over the declarations themselves.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from helpers import fastdiff

from fastdiff.cli import COMMANDS, command_module, full, hints
from fastdiff.cli.spec import DEBUG, HELP, VERSION, Arg

ROOT = Path(__file__).resolve().parents[1]
RUN = "tests/fixtures/identical/a"


def usage_error(args: tuple[str, ...], line: str) -> None:
    p = fastdiff(*args)
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    assert p.stderr == f"fastdiff: error: {line}\n"


# --- item 7: unknown options ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        # The cases: the runs given or not, the option named first.
        (
            ("compare", "--json"),
            "unknown option '--json'; did you mean '--format json'? "
            "(see 'fastdiff compare --help')",
        ),
        (
            ("compare", RUN, RUN, "--json"),
            "unknown option '--json'; did you mean '--format json'? "
            "(see 'fastdiff compare --help')",
        ),
        # argparse took 1e-3 as RUN_A and called the second run unrecognized
        (
            ("compare", "--tol", "1e-3", RUN, RUN),
            "unknown option '--tol'; did you mean '--atol' or '--rtol'? "
            "(see 'fastdiff compare --help')",
        ),
        # argparse said RUN_B was missing
        (
            ("compare", "--tol", "1e-3"),
            "unknown option '--tol'; did you mean '--atol' or '--rtol'? "
            "(see 'fastdiff compare --help')",
        ),
        (
            ("compare", RUN, RUN, "--tol=1e-3"),
            "unknown option '--tol'; did you mean '--atol' or '--rtol'? "
            "(see 'fastdiff compare --help')",
        ),
        # a typo: difflib's closest
        (
            ("compare", RUN, RUN, "--atoll", "1e-3"),
            "unknown option '--atoll'; did you mean '--atol'? (see 'fastdiff compare --help')",
        ),
        (
            ("compare", "--nocache", RUN, RUN),
            "unknown option '--nocache'; did you mean '--no-cache'? "
            "(see 'fastdiff compare --help')",
        ),
        # no quiet option: what to do instead
        (
            ("compare", RUN, RUN, "-q"),
            "unknown option '-q'; there is none: the exit code is the verdict (0 identical, "
            "1 diverged, 2 trouble); send the report to /dev/null "
            "(see 'fastdiff compare --help')",
        ),
        # nothing close: no guess
        (
            ("compare", RUN, RUN, "--xyzzy"),
            "unknown option '--xyzzy' (see 'fastdiff compare --help')",
        ),
        # several: the first with its hint, then the others
        (
            ("compare", "-x", RUN, "--json", RUN, "-x"),
            "unknown option '-x'; also unknown: '--json' (see 'fastdiff compare --help')",
        ),
    ],
)
def test_compare_names_the_unknown_option_first(args: tuple[str, ...], line: str) -> None:
    usage_error(args, line)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("sweep", "--all", RUN, RUN, "--json"),
            "unknown option '--json'; did you mean '--format jsonl'? (see 'fastdiff sweep --help')",
        ),
        (
            ("sweep", "--tol", "0.1", "--baseline", RUN, RUN),
            "unknown option '--tol'; did you mean '--atol' or '--rtol'? "
            "(see 'fastdiff sweep --help')",
        ),
        (
            ("hash", RUN, "--threads", "2"),
            "unknown option '--threads'; did you mean '--jobs'? (see 'fastdiff hash --help')",
        ),
        # hash has no --format (it writes JSON): no alias to offer, and no guess
        (("hash", RUN, "--json"), "unknown option '--json' (see 'fastdiff hash --help')"),
        (
            ("stats", "--json"),
            "unknown option '--json'; did you mean '--format json'? (see 'fastdiff stats --help')",
        ),
        # stats has no tolerance: no --atol offered
        (("stats", RUN, "--tol", "1"), "unknown option '--tol' (see 'fastdiff stats --help')"),
        (
            ("bench", "--maxsize", "4K"),
            "unknown option '--maxsize'; did you mean '--max-size'? (see 'fastdiff bench --help')",
        ),
        (
            ("schema", "--dtype", "f32"),
            "unknown option '--dtype'; did you mean '--default-dtype'? "
            "(see 'fastdiff schema --help')",
        ),
        (
            ("schema", "raw", "--degub"),
            "unknown option '--degub'; did you mean '--debug'? (see 'fastdiff schema --help')",
        ),
    ],
)
def test_every_command_names_the_unknown_option_first(args: tuple[str, ...], line: str) -> None:
    usage_error(args, line)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        # before the command: the top level's help, and where the option belongs
        (
            ("--format", "json", "compare", RUN, RUN),
            "unknown option '--format' before the command; it is an option of compare, watch, "
            "sweep, rerun, stats, bench: give it after the command's name (see 'fastdiff --help')",
        ),
        (("--debug", "--xyz"), "unknown option '--xyz' (see 'fastdiff --help')"),
        (
            ("--verison",),
            "unknown option '--verison'; did you mean '--version'? (see 'fastdiff --help')",
        ),
        # a top-level abbreviation takes the whole tree; the command's help still
        (
            ("--deb", "compare", RUN, RUN, "--json"),
            "unknown option '--json'; did you mean '--format json'? "
            "(see 'fastdiff compare --help')",
        ),
    ],
)
def test_the_top_level_names_the_unknown_option_first(args: tuple[str, ...], line: str) -> None:
    usage_error(args, line)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        # an option-like word where a value belongs: argparse's message says more
        (
            ("compare", RUN, RUN, "--format", "--json"),
            "argument --format: expected one argument (see 'fastdiff compare --help')",
        ),
        (
            ("compare", RUN, RUN, "--atol", "-1"),
            "argument --atol: must be a finite number >= 0, got '-1' "
            "(see 'fastdiff compare --help')",
        ),
        # an abbreviation is not unknown, an ambiguous one is argparse's error
        (
            ("compare", RUN, RUN, "--cache-", "x"),
            "ambiguous option: --cache- could match --cache-dir, --cache-min-age, "
            "--cache-verify (see 'fastdiff compare --help')",
        ),
        # every option known: argparse's own errors stand
        (
            ("compare", RUN),
            "the following arguments are required: RUN_B (see 'fastdiff compare --help')",
        ),
    ],
)
def test_other_usage_errors_are_argparses(args: tuple[str, ...], line: str) -> None:
    usage_error(args, line)


def test_help_still_wins_over_an_unknown_option() -> None:
    p = fastdiff("compare", "--json", "--help")
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.startswith("usage: fastdiff compare ")


def declared(name: str) -> tuple[Arg, ...]:
    return (*command_module(name).ARGUMENTS, DEBUG)


@pytest.mark.parametrize(
    ("words", "unknown"),
    [
        (["a", "b", "--json"], ["--json"]),
        (["--tol", "1e-3", "a", "b"], ["--tol"]),
        (["--tol=1e-3", "a", "b", "--tol", "1"], ["--tol"]),  # each once, no value
        (["--form", "json", "--nan", "-v", "-vv", "a", "b"], []),  # abbreviations, clusters
        (["--atol", "-1", "--rtol", "-x", "a", "b"], []),  # values, left to argparse
        (["--atol=-x", "a", "b", "-1", "-1.5", "-x y"], []),  # values and positionals
        (["a", "b", "--", "--json"], []),  # after "--": positionals
        (["--schema", "raw", "--jobs=2", "-x", "a", "b"], ["-x"]),
        (["-", "--c", "a", "b"], []),  # stdin-like and ambiguous: argparse's
    ],
)
def test_unknown_options_as_argparse_classifies_words(words: list[str], unknown: list[str]) -> None:
    assert hints.unknown_options(declared("compare"), words) == unknown


def test_short_option_values() -> None:
    arguments = declared("hash")
    assert hints.unknown_options(arguments, ["-o", "-x", "run"]) == []  # -x: -o's value
    assert hints.unknown_options(arguments, ["-ofile", "-x", "run"]) == ["-x"]
    assert hints.unknown_options(arguments, ["--out", "-x", "run"]) == []
    assert hints.unknown_options(arguments, ["--out=m", "-x", "run"]) == ["-x"]


def test_aliases_name_only_what_the_command_takes() -> None:
    for alias, targets in hints.ALIASES.items():
        assert alias not in {n for name in COMMANDS for a in declared(name) for n in a.names}
        assert all(t.split()[0].startswith("--") for t in targets)
        taken = [t for name in COMMANDS for t in hints.closest(alias, declared(name))]
        assert set(taken) == set(targets), alias  # each target is some command's option
    assert hints.closest("--json", declared("schema")) == []


# --- item 11: a one-line help for every option and command -------------------------


def one_line(text: object) -> bool:
    """Non-empty, one line, and, like argparse's own, without a final period."""
    return (
        isinstance(text, str)
        and text.strip() == text
        and bool(text)
        and "\n" not in text
        and not text.endswith(".")
    )


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_of_every_command_has_a_one_line_help(name: str) -> None:
    module = command_module(name)
    for arg in (*module.ARGUMENTS, DEBUG):
        assert one_line(arg.help), (name, arg.names or arg.dest, arg.help)
    assert isinstance(module.DESCRIPTION, str) and module.DESCRIPTION.strip()
    # and argparse shows them: every action of the parser (its -h too) has its help
    parser = full.command_parser(name)
    for action in parser._actions:
        assert one_line(action.help), (name, action.option_strings or action.dest)
    assert module.DESCRIPTION.split()[0] in parser.format_help()


def test_every_command_and_top_level_option_has_a_one_line_help() -> None:
    for name, (_, summary) in COMMANDS.items():
        assert one_line(summary), name
    for arg in (HELP, VERSION, DEBUG):
        assert one_line(arg.help), arg.names
    tree = full.build_parser()
    for action in tree._actions:
        assert one_line(action.help), action.option_strings or action.dest
        if isinstance(action, argparse._SubParsersAction):
            assert [one_line(choice.help) for choice in action._choices_actions] == [True] * len(
                COMMANDS
            )


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (
            ("compare", "--help"),
            "--format {text,json,html}\n                        text: the report",
        ),
        (("stats", "--help"), "--format {text,json}  text: tables for people (default); json:"),
        (("bench", "--help"), "--format {text,json}  text: the method and a table (default);"),
        (("sweep", "--help"), "--no-progress         no progress, even when stderr is a"),
        (("schema", "--help"), "Print a schema as TOML: a preset, or a schema file read"),
        (("schema", "--help"), "NAME|FILE.toml        a preset (rl-state, raw) or a TOML"),
        (("schema", "--help"), "--from RUN            a run folder (or manifest): keep the"),
        (("--help",), "  schema   print a schema as TOML (a start for your own)"),
        (("--help",), "  --version   show fastdiff's version and exit"),
    ],
)
def test_help_shows_them(args: tuple[str, ...], shown: str) -> None:
    p = fastdiff(*args)
    assert (p.returncode, p.stderr) == (0, "")
    assert shown in p.stdout, p.stdout


# --- issue 19, item 8: compare's options in its siblings -----------------------------


def _options(command: str) -> set[str]:
    return {n for a in command_module(command).ARGUMENTS for n in a.names}


@pytest.mark.parametrize("command", ["watch", "sweep"])
def test_every_option_of_compare_works_in_watch_and_sweep_or_is_named_as_not(
    command: str,
) -> None:
    """Each of compare's options is one of watch's and sweep's, or in the
    command's NOT_FROM_COMPARE (with why), which its --help names; and the
    ones they do take are taken (a real run for each, as typed)."""
    module = command_module(command)
    missing = _options("compare") - _options(command)
    assert missing == set(module.NOT_FROM_COMPARE), missing
    assert not set(module.NOT_FROM_COMPARE) & _options(command)
    help_text = " ".join(fastdiff(command, "--help").stdout.split())
    start = help_text.index("Every option of compare applies")
    sentence = help_text[start : help_text.index(";", start)]
    for arg in command_module("compare").ARGUMENTS:
        if arg.names and set(arg.names) <= missing:
            assert any(f" {n} " in f" {sentence} " for n in arg.names), (arg.names, sentence)
    but = sentence.partition(" applies but ")[2].partition("(")[0]
    said = {w for w in but.split() if w.startswith("-")}
    assert said <= missing, said  # it names no option the command takes


def test_watch_takes_verbose_rounding_ulp_and_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "t.png"
    args = ("examples/anatomy/run-a", "examples/anatomy/run-b", "--schema",
            "examples/anatomy/schema.toml", "--idle-timeout", "0.5", "--settle", "0",
            "--format", "text", "--keep-going")  # fmt: skip
    p = fastdiff("watch", *args, "-v", "--rounding-ulp", "1", "--plot", plot)
    assert p.returncode == 1, p.stderr
    assert "equal (" in p.stdout  # -v: equal buffers are listed too
    assert "max 2 ULP (large)" in p.stdout  # --rounding-ulp 1: 2 ULP is large
    assert plot.read_bytes().startswith(b"\x89PNG") and "plot written" in p.stderr
    quiet = fastdiff("watch", *args)
    assert "equal (" not in quiet.stdout and "max 2 ULP (rounding)" in quiet.stdout


def test_sweep_takes_rounding_ulp() -> None:
    pairs = ("--baseline", "examples/anatomy/run-a", "examples/anatomy/run-b")
    opts = ("--schema", "examples/anatomy/schema.toml", "--no-cache", "--format", "jsonl")
    import json

    # step 4: isv_full 2 ULP apart, 1 ULP of its scale (rounding down to a line of 1)
    for line_ulp, magnitude in (("0", "large"), ("1", "rounding"), ("16", "rounding")):
        p = fastdiff("sweep", *pairs, *opts, "--rounding-ulp", line_ulp)
        assert p.returncode == 1, p.stderr
        record = json.loads(p.stdout.splitlines()[0])
        groups = {g["key"]: g for g in record["groups"]}
        assert groups["E"]["magnitude"] == magnitude
