"""Start-up: a command imports only what it uses.

Each case runs ``python -X importtime -m fastdiff ...`` in a subprocess and
reads the modules it imported from importtime's tree (which also tells who
imported each first). Comparing two identical runs serially with text output
must not import dataclasses, typing, threads, pools, SQLite, pathlib,
logging, regular expressions, json, numpy, numba, argparse (its plain
command lines are parsed without it) and other costly modules, nor the module
of another command; ``fastdiff --help`` lists the commands without importing
any of them. The set of modules is asserted, never a time.

The interpreter runs with ``-S``: no site hooks, which may import modules of
their own (this machine's system interpreter loads re, typing, pathlib and
threading from ``.pth`` files), so that what the tree shows is fastdiff's.
The checkout and the folder holding xxhash are given on PYTHONPATH instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import xxhash

import fastdiff
from fastdiff.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

#: Costly or needless on the path of a serial comparison of identical runs.
HEAVY = frozenset(
    {
        "argparse", "ast", "asyncio", "concurrent", "concurrent.futures", "dataclasses",
        "difflib", "dis", "gettext", "inspect", "linecache", "logging", "multiprocessing",
        "numba", "numpy",
        "pathlib", "shutil", "sqlite3", "subprocess", "tempfile", "textwrap", "threading",
        "tokenize", "traceback", "typing", "typing_extensions", "unicodedata", "urllib",
    }
)  # fmt: skip
#: Also not for a text report (``--format json`` and ``schema`` may use them).
TEXT_ONLY = frozenset({"json", "re"})

CLI_MODULES = {f"fastdiff.cli.{module.rsplit('.', 1)[1]}" for module, _ in COMMANDS.values()}


#: The command users run, installed by pip as it is (pyproject.toml's script-files).
LAUNCHER = ROOT / "fastdiff" / "cli" / "bin" / "fastdiff"


def imported(*args: str, launcher: bool = False, code: int = 0) -> dict[str, str | None]:
    """The modules ``python -m fastdiff ARGS`` (or the installed command,
    ``launcher``) imports, each with the module that imported it first (None
    at the top level); ``code``: the exit status expected."""
    site_packages = os.path.dirname(os.path.dirname(xxhash.__file__))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTDIFF")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), site_packages])
    p = subprocess.run(
        [
            sys.executable,
            "-S",
            "-X",
            "importtime",
            *([str(LAUNCHER)] if launcher else ["-m", "fastdiff"]),
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert p.returncode == code, p.stderr[-2000:]
    return parents(p.stderr)


def parents(importtime: str) -> dict[str, str | None]:
    """Module -> the module that imported it, from ``-X importtime`` output:
    a module's line follows the lines of what it imports, indented two more
    spaces per level."""
    rows: list[tuple[int, str]] = []
    for line in importtime.splitlines():
        if not line.startswith("import time:") or line.endswith("imported package"):
            continue
        name = line.split("|", 2)[2][1:]
        rows.append(((len(name) - len(name.lstrip(" "))) // 2, name.strip()))
    parent: dict[str, str | None] = {}
    waiting: dict[int, list[str]] = {}  # depth -> modules whose importer is not seen yet
    for depth, name in rows:
        for child in waiting.pop(depth + 1, []):
            parent[child] = name
        waiting.setdefault(depth, []).append(name)
        parent.setdefault(name, None)
    return parent


def chain(module: str, parent: dict[str, str | None]) -> str:
    """``module <- importer <- ... <- top``."""
    links = [module]
    while (up := parent.get(links[-1])) is not None:
        links.append(up)
    return " <- ".join(links)


def is_forbidden(module: str, forbidden: set[str]) -> bool:
    return module in forbidden or module.split(".")[0] in forbidden


def offenders(parent: dict[str, str | None], forbidden: set[str]) -> tuple[list[str], list[str]]:
    """(the forbidden modules imported by allowed ones, each with its chain of
    importers; the forbidden modules those pulled in)."""
    bad = sorted(m for m in parent if is_forbidden(m, forbidden))
    entries = [m for m in bad if not is_forbidden(parent[m] or "", forbidden)]
    return [chain(m, parent) for m in entries], [m for m in bad if m not in entries]


def assert_none_of(parent: dict[str, str | None], forbidden: set[str]) -> None:
    entries, pulled = offenders(parent, forbidden)
    assert not entries, (
        "imported, with who imported each first:\n  "
        + "\n  ".join(entries)
        + ("\nand what those imported: " + ", ".join(pulled) if pulled else "")
    )


def test_parents_read_from_the_importtime_tree() -> None:
    text = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:         1 |          1 |     c\n"
        "import time:         1 |          2 |   b\n"
        "import time:         1 |          1 |   d\n"
        "import time:         1 |          4 | a\n"
        "import time:         1 |          1 | e\n"
    )
    parent = parents(text)
    assert parent == {"c": "b", "b": "a", "d": "a", "a": None, "e": None}
    assert chain("c", parent) == "c <- b <- a"
    assert offenders(parent, {"c", "e"}) == (["c <- b <- a", "e"], [])
    assert offenders(parent, {"b", "c"}) == (["b <- a"], ["c"])


def test_compare_of_identical_runs_imports_only_what_it_uses() -> None:
    a, b = FIXTURES / "identical" / "a", FIXTURES / "identical" / "b"
    parent = imported("compare", str(a), str(b))
    assert "fastdiff.cli.compare" in parent
    others = CLI_MODULES - {"fastdiff.cli.compare"}
    assert_none_of(
        parent, set(HEAVY | TEXT_ONLY) | others | {"fastdiff.cli.full", "fastdiff.bench"}
    )


def test_roles_are_worked_out_only_where_inputs_are_declared_and_a_buffer_diverged() -> None:
    """The rl-state preset declares inputs: identical runs still import no
    roles stage; diverging runs whose schema declares none import nothing
    more than before either (the roles' module among them)."""
    a, b = FIXTURES / "identical" / "a", FIXTURES / "identical" / "b"
    assert "fastdiff.stages.roles" not in imported("compare", str(a), str(b))
    a, b = FIXTURES / "diverge_F" / "a", FIXTURES / "diverge_F" / "b"
    assert "fastdiff.stages.roles" in imported("compare", str(a), str(b), code=1)
    for schema in ("raw", str(ROOT / "examples" / "schema.toml")):
        parent = imported("compare", "--schema", schema, str(a), str(b), code=1)
        assert "fastdiff.stages.roles" not in parent
        assert_none_of(parent, {"difflib", "fastdiff.tomllines"})


def test_the_installed_command_imports_no_more_than_python_m() -> None:
    """The ``fastdiff`` command is our own launcher, not pip's generated one
    (which imports ``re``): pyproject.toml installs it, and a comparison
    through it imports what ``python -m fastdiff`` does, ``re`` not among it."""
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["script-files"] == [str(LAUNCHER.relative_to(ROOT))]
    assert "scripts" not in pyproject["project"]  # one command, not two launchers
    assert LAUNCHER.read_text(encoding="utf-8").startswith("#!python\n")  # pip rewrites it
    assert os.access(LAUNCHER, os.X_OK)
    a, b = FIXTURES / "identical" / "a", FIXTURES / "identical" / "b"
    parent = imported("compare", str(a), str(b), launcher=True)
    assert "fastdiff.cli.compare" in parent
    assert_none_of(parent, set(HEAVY | TEXT_ONLY) | {"runpy", "fastdiff.cli.full"})


def test_a_json_report_imports_neither_json_nor_re() -> None:
    """The JSON report is written by the C encoder json.dumps uses, without
    the json package (its decoder and encoder import ``re``)."""
    a, b = FIXTURES / "identical" / "a", FIXTURES / "identical" / "b"
    parent = imported("compare", str(a), str(b), "--format", "json", launcher=True)
    assert "fastdiff.render.json" in parent
    assert_none_of(parent, set(HEAVY | TEXT_ONLY))


def test_help_imports_no_command() -> None:
    parent = imported("--help")
    ours = {m for m in parent if m.split(".")[0] == "fastdiff"}
    cli = {"fastdiff.cli", "fastdiff.cli.commands", "fastdiff.cli.output"}
    # The exit codes are the result model's (model/exits.py), which errors re-exports.
    model = {"fastdiff.model", "fastdiff.model.exits"}
    assert ours == {"fastdiff", "fastdiff.errors", *model, *cli}, sorted(ours)
    assert_none_of(parent, set(HEAVY | TEXT_ONLY))


def test_schema_imports_only_its_own_command() -> None:
    parent = imported("schema")
    assert "fastdiff.cli.schema" in parent
    others = CLI_MODULES - {"fastdiff.cli.schema"}
    assert_none_of(parent, set(HEAVY) | others | {"fastdiff.cli.full", "fastdiff.compare"})


def test_import_fastdiff_is_cheap_and_every_export_resolves() -> None:
    p = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", "-c", "import fastdiff"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    assert_none_of(parents(p.stderr), set(HEAVY | TEXT_ONLY))
    for name in fastdiff.__all__:  # each was a lazy import of a module that may have moved
        assert getattr(fastdiff, name).__name__ == name


def test_the_command_freezes_what_is_left_before_the_interpreter_exits(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``launch`` (the ``fastdiff`` command, ``python -m fastdiff``) runs the
    command with the cyclic collector on, exits with its code, and freezes
    every object left first (the interpreter's last collections skip them)."""
    import gc

    import fastdiff.cli as cli

    seen: list[bool] = []
    real = cli.main

    def spy() -> int:
        seen.append(gc.isenabled())
        return real()

    a, b = FIXTURES / "diverge_F" / "a", FIXTURES / "diverge_F" / "b"
    monkeypatch.setattr(cli, "main", spy)
    monkeypatch.setattr(sys, "argv", ["fastdiff", "compare", str(a), str(b)])
    assert gc.get_freeze_count() == 0
    try:
        with pytest.raises(SystemExit) as exit:
            cli.launch()
        assert exit.value.code == 1 and seen == [True]
        assert gc.get_freeze_count() > 0 and gc.isenabled()
    finally:
        gc.unfreeze()
    assert "VERDICT: diverged" in capsys.readouterr().out
