"""Which interpreter the scripts in benchmarks/ time fastdiff with.

Users run fastdiff from ``pip install .``, so :func:`prepare_venv` installs
the working tree into a venv kept outside the checkout and returns its
interpreter; :func:`prepare_cli` is the quicker alternative that puts the
tree on PYTHONPATH (not the user's start-up). :func:`bare_start` times
``python -c pass``, the floor of every Python tool.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from harness import median, tail, time_commands

__all__ = [
    "bare_start",
    "bench_cache_dir",
    "copy_source",
    "prepare_cli",
    "prepare_venv",
    "venv_folder",
]


def prepare_cli(repo: str | os.PathLike[str], python: str = sys.executable) -> float:
    """Make ``python -m fastdiff`` in child processes run this working tree as
    an installed package would, and return a bare interpreter start (median s).

    PYTHONPATH gets the tree; its bytecode is compiled once by ``python``, as
    pip does at install time (with PYTHONDONTWRITEBYTECODE=1 every start
    would otherwise recompile every module). The start-up figure, of
    ``python -c pass``, is the floor of every Python tool timed as a command
    on this machine. For what users run, see :func:`prepare_venv`.
    """
    root = os.fspath(repo)
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = root + (os.pathsep + path if path else "")
    subprocess.run(
        [python, "-m", "compileall", "-q", os.path.join(root, "fastdiff")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=False,
    )
    return bare_start(python)


def bare_start(python: str, repeat: int = 11) -> float:
    """Median wall time of ``python -c pass``: what every Python tool pays to start."""
    return median(time_commands({"python": [python, "-c", "pass"]}, repeat=repeat)["python"])


#: What the copy of a checkout that pip installs leaves out: at its top, the
#: VCS, build leftovers and what is not packaged; at any depth, caches.
_NOT_SOURCE = (".git", "build", "dist", "tests", "benchmarks", "examples")
_NOT_SOURCE_ANYWHERE = ("__pycache__", "*.egg-info", ".*_cache", ".hypothesis", ".venv")
_VENV_READY = ".fastdiff-bench-ready"


def bench_cache_dir() -> Path:
    """Where benchmark venvs live: ``$XDG_CACHE_HOME/fastdiff-bench``, else
    ``~/.cache/fastdiff-bench`` (outside any checkout)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fastdiff-bench"


def venv_folder(
    repo: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None
) -> tuple[Path, list[str]]:
    """The venv for this interpreter and the requirements of ``pyproject.toml``,
    and those requirements: ``venv-py311-<hash>`` under ``cache_dir`` (default
    :func:`bench_cache_dir`), the hash of the interpreter's version and path
    and of the requirements, so a change of either makes a new venv."""
    import hashlib
    import json
    import tomllib

    with open(Path(repo) / "pyproject.toml", "rb") as fh:
        requirements = sorted(tomllib.load(fh)["project"].get("dependencies", []))
    key_doc = [sys.version, os.path.realpath(sys.executable), requirements]
    key = hashlib.sha256(json.dumps(key_doc).encode()).hexdigest()[:12]
    name = f"venv-py{sys.version_info.major}{sys.version_info.minor}-{key}"
    return Path(cache_dir or bench_cache_dir()) / name, requirements


def copy_source(repo: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Copy a checkout to ``dest`` (which must not exist) for pip to build from,
    without the VCS, build leftovers, tests, benchmarks and caches."""
    import shutil

    root = Path(repo)

    def skip(folder: str, names: list[str]) -> set[str]:
        top = _NOT_SOURCE if Path(folder) == root else ()
        ignored = shutil.ignore_patterns(*_NOT_SOURCE_ANYWHERE)(folder, names)
        return ignored | {n for n in names if n in top}

    shutil.copytree(root, dest, ignore=skip)


def _pip(python: Path, *args: str) -> None:
    """Run pip in a venv; a failure raises RuntimeError with the end of its output."""
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    if proc.returncode:
        raise RuntimeError(
            f"pip install {shlex.join(args)} failed (exit {proc.returncode}):\n"
            + (tail(proc.stderr, 8) or tail(proc.stdout, 8))
        )


def prepare_venv(
    repo: str | os.PathLike[str],
    cache_dir: str | os.PathLike[str] | None = None,
    say: Callable[[str], None] | None = None,
) -> Path:
    """Install this working tree into a venv as users do; return its interpreter.

    The venv (:func:`venv_folder`) is made from the running interpreter with
    the dependencies of ``pyproject.toml``, once: it is reused until the
    interpreter or the requirements change. The working tree is installed
    into it on every call, NOT editable: ``pip install --no-deps
    --force-reinstall`` of a copy (:func:`copy_source`; building in the tree
    itself would leave a ``build/`` folder whose stale files later builds
    pick up). pip compiles the bytecode at install time, as in a user's
    install.

    Child processes must not find the checkout first: PYTHONPATH is removed
    from this process's environment (the reverse of :func:`prepare_cli`).
    Raises RuntimeError when the venv cannot be made or pip fails.
    """
    import shutil
    import tempfile

    note = say or (lambda _msg: None)
    folder, requirements = venv_folder(repo, cache_dir)
    python = folder / "bin" / "python"
    ready = folder / _VENV_READY
    if not ready.is_file():  # absent, or left half-built by an interrupted run
        note(f"building a venv in {folder} (once per interpreter and requirements) ...")
        shutil.rmtree(folder, ignore_errors=True)
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(folder)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
        if made.returncode:
            raise RuntimeError(f"python -m venv {folder} failed:\n{tail(made.stderr)}")
        if requirements:
            _pip(python, *requirements)
        ready.write_text("\n".join(requirements) + "\n")
    note(f"installing {repo} into {folder} (pip install ., not editable) ...")
    with tempfile.TemporaryDirectory(prefix="fastdiff-src-") as tmp:
        source = Path(tmp) / "src"
        copy_source(repo, source)
        _pip(python, "--no-deps", "--force-reinstall", str(source))
    os.environ.pop("PYTHONPATH", None)
    return python
