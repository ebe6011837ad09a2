"""The command line is parsed as argparse would parse it, without argparse
where it can.

``cli.spec.fast_parse`` takes the plain cases; everything else goes to the
argparse parser built from the same declarations. hypothesis drives both with
random command lines (abbreviations, ``--``, values that look like options,
``--opt=value``, misplaced and missing positionals, exclusive options): the
fast parser may decline any line, but a line it accepts must give exactly
argparse's namespace; and the whole top level (``cli.parse``) must end as the
one argparse tree of every command (``cli.full.build_parser``) does: the same
namespace, or the same exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
from pathlib import Path
from typing import NoReturn

import pytest
from helpers import fastdiff
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff import cli
from fastdiff.cli import COMMANDS, command_module, common, full, hints
from fastdiff.cli.spec import APPEND, DEBUG, STORE, Arg, BadValue, fast_parse

ROOT = Path(__file__).resolve().parents[1]

#: Words that argparse reads in more than one way: negative numbers, lone
#: dashes, words with spaces, empty words.
VALUES = st.one_of(
    st.sampled_from(
        ["0", "1", "8", "1e-3", "4K", "64KiB", "nan", "inf", "", " ", "x y", "-1", "-1.5", "-x",
         "-", "--", "---", "-v", "--x", "=", "a=b", "text", "json", "jsonl", "auto", "serial"]
    ),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=4),
)  # fmt: skip
#: Values that look like options.
TRICKY = st.sampled_from(["-x", "-1", "-1.5", "-", "--", "--format", "-v"])
POSITIONALS = st.sampled_from(["a", "b", "run", "x y", "", "-", "-1", "compare", "a=b"])


def arguments(name: str) -> tuple[Arg, ...]:
    return (*command_module(name).ARGUMENTS, DEBUG)


def spellings(arg: Arg) -> list[str]:
    """Its names, and abbreviations of its long names (argparse accepts
    unambiguous ones, and says which are ambiguous)."""
    words = list(arg.names)
    for n in arg.names:
        if n.startswith("--") and len(n) > 4:
            words.append(n[: len(n) - 2])
    return words


def accepts(arg: Arg, value: str) -> bool:
    try:
        converted = arg.type(value) if arg.type else value
    except ValueError:
        return False
    return arg.choices is None or converted in arg.choices


@st.composite
def option_words(draw: st.DrawFn, arg: Arg, clean: bool) -> list[str]:
    """An option as a user may type it; if ``clean``, as the fast parser takes it."""
    if clean:
        name = draw(st.sampled_from(arg.names))
        if arg.action not in (STORE, APPEND):
            return [name]
        candidates = (*(arg.choices or ()), "1", "3", "0.5", "64K", "a", "")
        good = [v for v in candidates if accepts(arg, v)]
        value = draw(st.sampled_from(good) if draw(st.integers(0, 4)) else TRICKY)
        return draw(st.sampled_from([[name, value], [f"{name}={value}"]]))
    name = draw(st.sampled_from(spellings(arg)))
    value = draw(st.sampled_from(arg.choices) | VALUES) if arg.choices else draw(VALUES)
    if arg.action not in (STORE, APPEND):
        return draw(st.sampled_from([[name], [f"{name}={value}"]]))
    return draw(st.sampled_from([[name, value], [f"{name}={value}"], [name]]))


def positional_counts(declared: tuple[Arg, ...]) -> range:
    slots = [arg for arg in declared if not arg.names]
    least = sum(arg.nargs is None for arg in slots)
    extra = sum({None: 0, "?": 1, "*": 3}[arg.nargs] for arg in slots)
    return range(least, least + extra + 1)


@st.composite
def command_lines(draw: st.DrawFn, name: str) -> list[str]:
    """Options in random order and a block of positionals somewhere. Half of
    the lines are near what the fast parser takes (exact names, good values,
    one block of as many positionals as the command takes, no exclusive pair)
    with now and then one of the cases it must get right or decline (a value
    that looks like an option, a split block, a positional too many or too
    few, two exclusive options); the other half anything (abbreviations, bad
    values, stray words)."""
    declared = arguments(name)
    clean = draw(st.booleans())
    options = [arg for arg in declared if arg.names]
    chosen = draw(st.lists(st.sampled_from(options), max_size=6))
    if clean:
        if draw(st.integers(0, 2)):
            chosen = [a for a in chosen if a.exclusive is None]
        modes = [a for a in options if a.exclusive is not None and a.exclusive.required]
        if modes:
            chosen.append(draw(st.sampled_from(modes)))
        draw(st.randoms()).shuffle(chosen)
    groups = [draw(option_words(arg, clean)) for arg in chosen]
    if clean:
        counts = positional_counts(declared)
        count = draw(st.sampled_from(counts) | st.sampled_from([counts[0] - 1, counts[-1] + 1]))
        words = st.sampled_from(["a", "b", "x y", "", "a=b"])
        positionals = draw(st.lists(words, min_size=max(count, 0), max_size=max(count, 0)))
        cut = draw(st.sampled_from([0, 0, 0, len(positionals) // 2]))
    else:
        positionals = draw(st.lists(POSITIONALS, max_size=4))
        cut = draw(st.integers(0, len(positionals)))
    for block in (positionals[:cut], positionals[cut:]):
        if block:
            groups.insert(draw(st.integers(0, len(groups))), block)
    if not clean and draw(st.integers(0, 3)) == 0:
        stray = draw(st.sampled_from(["--", "-h", "--help", "-vv", "--debug", "--nosuch", "-"]))
        groups.insert(draw(st.integers(0, len(groups))), [stray])
    return [word for group in groups for word in group]


def argparse_reading(parse: object, words: list[str]) -> tuple[object, str]:
    """(namespace as a dict, or the exit code; stderr) of ``parse(words)``."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            return vars(parse(words)), err.getvalue()  # type: ignore[operator]
        except SystemExit as exc:
            return exc.code, err.getvalue()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_what_the_fast_parser_accepts_argparse_reads_the_same(name: str) -> None:
    parser = full.command_parser(name)
    declared = arguments(name)
    accepted = 0

    @given(command_lines(name))
    @settings(max_examples=400, deadline=None)
    def check(words: list[str]) -> None:
        nonlocal accepted
        fast = fast_parse(declared, words)
        if fast is None:
            return
        accepted += 1
        expected, err = argparse_reading(parser.parse_args, words)
        assert expected == vars(fast), (words, err)

    check()
    # The lines it accepts are not a rare case (for hash, as few as 39 of 400 were seen).
    assert accepted > 20


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_top_level_ends_as_the_whole_argparse_tree_does(name: str) -> None:
    tree = full.build_parser()

    @given(st.lists(st.just("--debug"), max_size=2), command_lines(name))
    @settings(max_examples=150, deadline=None)
    def check(before: list[str], words: list[str]) -> None:
        line = [*before, name, *words]
        ours, _ = argparse_reading(cli.parse, line)
        theirs, err = argparse_reading(tree.parse_args, line)
        assert ours == theirs, (line, err)

    check()


PLAIN = [
    ("compare", ["a", "b"]),
    ("compare", ["--format", "json", "a", "b", "-v"]),
    ("compare", ["a", "b", "--atol=1e-3", "--rtol", "0", "--ulp", "2", "--nan-equal"]),
    ("compare", ["a", "b", "--chunk-size", "64K", "--executor=serial", "--jobs", "2"]),
    ("compare", ["--cache", "--cache-dir", "c", "a", "b", "--schema", "raw", "--debug"]),
    ("sweep", ["--all", "a", "b", "c", "--format", "text", "--no-progress"]),
    ("sweep", ["--pairs=", "--no-cache"]),
    ("sweep", ["--baseline", "a", "b"]),
    ("hash", ["a", "-o", "m.json"]),
    ("stats", ["a", "--top", "3", "--format=json"]),
    ("bench", ["--max-size", "4K", "--no-ladder", "--repeat", "1"]),
    ("schema", []),
    ("schema", ["raw"]),
]


@pytest.mark.parametrize(("name", "words"), PLAIN)
def test_plain_command_lines_need_no_argparse(name: str, words: list[str]) -> None:
    fast = fast_parse(arguments(name), words)
    assert fast is not None
    assert vars(fast) == vars(full.command_parser(name).parse_args(words))


@pytest.mark.parametrize(
    "words",
    [
        ["a"],  # missing RUN_B
        ["a", "b", "c"],  # one too many
        ["a", "--format", "json", "b"],  # positionals split: argparse's nargs rules decide
        ["a", "b", "--form", "json"],  # an abbreviation
        ["a", "b", "--atol", "-1"],  # a value that starts with "-"
        ["a", "b", "--atol=-1"],  # a value the converter rejects
        ["a", "b", "--format=yaml"],  # not a choice
        ["a", "b", "--nan-equal=1"],  # a flag with a value
        ["a", "b", "--atol"],  # no value
        ["a", "b", "--schema=--"],  # argparse 3.11 reads the value as []
        ["a", "b", "-h"],
        ["--", "a", "b"],
    ],
)
def test_the_fast_parser_leaves_the_rest_to_argparse(words: list[str]) -> None:
    assert fast_parse(arguments("compare"), words) is None


def test_exclusive_options_are_left_to_argparse() -> None:
    declared = arguments("sweep")
    assert fast_parse(declared, ["--all", "--baseline", "a", "b"]) is None
    assert fast_parse(declared, ["a", "b"]) is None  # the mode is required
    assert fast_parse(declared, ["--all", "a", "--progress", "--no-progress"]) is None
    assert fast_parse(declared, ["--all", "--all", "a"]) is not None  # the same one twice


# --- unknown options (hints) -----------------------------------------------------------


class _Failed(Exception):
    """argparse's error, raised instead of exiting."""


class _Plain(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Failed(message)


def plain_parser(name: str) -> _Plain:
    """argparse alone: the command's declarations, without fastdiff's error hook."""
    parser = _Plain(prog=f"fastdiff {name}")
    full.add_arguments(parser, arguments(name))
    return parser


@st.composite
def option_like_words(draw: st.DrawFn, name: str) -> str:
    """Words that start with a dash: names, their prefixes and near misses, with
    and without a value attached; negative numbers; words with a space."""
    names = [n for arg in arguments(name) for n in arg.names] + ["-h", "--help"]
    base = draw(st.sampled_from(names))
    body = draw(
        st.sampled_from([base, base[: draw(st.integers(1, len(base)))], base + "x", base[1:]])
        | st.text(alphabet="-abcdefhjlmnoqrstuvxy0123456789. ", max_size=6).map(lambda t: "-" + t)
    )
    return body + draw(st.sampled_from(["", "", "=", "=1", "=-x", "=a=b"]))


def argparse_unknown(parser: argparse.ArgumentParser, word: str) -> bool:
    """Whether argparse reads ``word`` as an option it does not have."""
    try:
        got = parser._parse_optional(word)  # type: ignore[attr-defined]
    except _Failed:  # ambiguous: argparse's own error
        return False
    if isinstance(got, list):  # Python >= 3.12.7: a list of candidates
        return len(got) == 1 and got[0][0] is None
    return got is not None and got[0] is None


@pytest.mark.parametrize("name", list(COMMANDS))
def test_unknown_options_are_the_words_argparse_does_not_know(name: str) -> None:
    parser = plain_parser(name)
    declared = arguments(name)

    @given(option_like_words(name))
    @settings(max_examples=400, deadline=None)
    def check(word: str) -> None:
        want = [word.split("=", 1)[0]] if argparse_unknown(parser, word) else []
        assert hints.unknown_options(declared, [word]) == want

    check()


STRAYS = st.sampled_from(
    ["--json", "--tol", "-q", "--atoll=1", "-x", "--nosuch", "-1e-3", "-x y", "---", "-vq", "--"]
)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_an_unknown_option_is_named_only_where_argparse_fails(name: str) -> None:
    """The hook changes what a failing line says, never whether it fails: a
    line argparse accepts has no unknown option; on one that has, fastdiff
    fails as argparse does, naming the first unknown option."""
    plain = plain_parser(name)
    ours = full.command_parser(name)
    declared = arguments(name)

    @given(command_lines(name), st.lists(STRAYS, max_size=2), st.randoms())
    @settings(max_examples=200, deadline=None)
    def check(words: list[str], strays: list[str], rnd: random.Random) -> None:
        for stray in strays:
            words.insert(rnd.randint(0, len(words)), stray)
        unknown = hints.unknown_options(declared, words)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                accepted: object = vars(plain.parse_args(words))
        except _Failed:
            accepted = None
        except SystemExit as exc:  # help
            accepted = exc.code
        got, err = argparse_reading(ours.parse_args, words)
        if isinstance(accepted, dict):
            assert unknown == [], words
            assert got == accepted
        elif accepted is None:
            assert got == 2, (words, err)
            if unknown:
                assert err.startswith(f"fastdiff: error: unknown option {unknown[0]!r}"), err
        else:
            assert got == accepted  # -h: help, exit 0

    check()


# --- values --------------------------------------------------------------------------

#: The size syntax as it was first written (a regular expression).
OLD_SIZE = re.compile(r"^\s*(\d+)\s*([kKmMgG]?)(i?[bB])?\s*$")


def old_parse_size(text: str) -> int | None:
    m = OLD_SIZE.match(text)
    if not m:
        return None
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


SIZE_TEXT = st.lists(
    st.sampled_from(["1", "0", "9", "\u0664", " ", "\t", "\n", "\u3000", "k", "K", "M", "g", "G",
                     "i", "b", "B", "iB", "x", "-", "+", "_", "."]),
    max_size=8,
).map("".join)  # fmt: skip


@given(SIZE_TEXT)
def test_parse_size_reads_what_the_regular_expression_read(text: str) -> None:
    try:
        got: int | None = common.parse_size(text)
    except BadValue as exc:
        assert str(exc) == f"not a size: {text!r} (examples: 65536, 64K, 4M)"
        got = None
    assert got == old_parse_size(text)


# --- the top level -------------------------------------------------------------------


def test_help_lists_every_command_with_its_summary() -> None:
    p = fastdiff("--help")
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.startswith("usage: fastdiff [-h] [--version] [--debug] COMMAND ...\n")
    listed = " ".join(p.stdout.split())  # summaries may wrap
    for name, (_, summary) in COMMANDS.items():
        assert f" {name} {summary}" in listed


def test_unknown_command_suggests_the_closest() -> None:
    p = fastdiff("comapre", "a", "b")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == (
        "fastdiff: error: unknown command 'comapre'; did you mean 'compare'? "
        "(see 'fastdiff --help')\n"
    )
    p = fastdiff("xyz")
    assert p.returncode == 2
    assert p.stderr == (
        "fastdiff: error: unknown command 'xyz'; the commands are compare, watch, sweep, rerun, "
        "hash, stats, bench, schema (see 'fastdiff --help')\n"
    )


def test_no_command_and_version() -> None:
    p = fastdiff("--debug")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == (
        "fastdiff: error: the following arguments are required: COMMAND (see 'fastdiff --help')\n"
    )
    p = fastdiff("--version")
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.startswith("fastdiff ")


def test_a_command_option_error_points_at_the_command_help() -> None:
    p = fastdiff("compare", "a", "b", "--json")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == (
        "fastdiff: error: unknown option '--json'; did you mean '--format json'? "
        "(see 'fastdiff compare --help')\n"
    )


def test_abbreviations_still_work_through_argparse() -> None:
    args = cli.parse(["compare", "a", "b", "--form", "json", "--nan"])
    assert (args.format, args.nan_equal, args.command, args.debug) == (
        "json",
        True,
        "compare",
        False,
    )
    args = cli.parse(["--deb", "schema", "raw"])  # a top-level abbreviation: the whole tree
    assert (args.name, args.command, args.debug) == ("raw", "schema", True)
