"""The README's quickstarts run as shown: each command is run as written and
its output checked against what the README quotes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end >= 0 else len(README)]


def blocks(text: str, lang: str = "") -> list[str]:
    """The fenced code blocks of ``text`` opened with ```lang, in order."""
    out: list[str] = []
    opened: str | None = None  # the open block's language
    lines: list[str] = []
    for line in text.splitlines():
        if opened is None and line.startswith("```"):
            opened, lines = line[3:].strip(), []
        elif opened is not None and line == "```":
            if opened == lang:
                out.append("".join(f"{x}\n" for x in lines))
            opened = None
        elif opened is not None:
            lines.append(line)
    return out


def commands(text: str) -> list[str]:
    """The command lines of the ```sh blocks of ``text``, comments dropped."""
    out = []
    for block in blocks(text, "sh"):
        for line in block.splitlines():
            line = line.split("   #", 1)[0].strip()
            if line:
                out.append(line)
    return out


def run(line: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """A README command line as a shell would run it: ``fastdiff`` and ``python``
    are this interpreter's, ``> FILE`` writes stdout to FILE."""
    words = shlex.split(line)
    target = None
    if ">" in words:
        at = words.index(">")
        words, target = words[:at], words[at + 1]
    argv = [sys.executable if w == "python" else w for w in words]
    if argv[0] == "fastdiff":
        argv = [sys.executable, "-m", "fastdiff", *argv[1:]]
    p = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env={"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
             "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    if target is not None:
        (cwd / target).write_text(p.stdout)
    return p


def shown_in(shown: str, out: str) -> None:
    """Every line the README shows is a line of ``out`` (``...``: lines left
    out; a line ending in `` ...``: a line that starts so), in order."""
    lines, at = out.splitlines(), 0
    for line in shown.splitlines():
        if line == "...":
            continue
        prefix = line.removesuffix(" ...")
        found = [i for i in range(at, len(lines)) if lines[i].startswith(prefix)]
        assert found, f"not in the output: {line!r}\n{out}"
        at = found[0] + 1


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty folder where examples/ and tests/data are the repository's,
    so that the quickstarts' files land in it, not in the checkout."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "data").symlink_to(ROOT / "tests" / "data")
    return tmp_path


def test_the_readme_is_a_landing_page() -> None:
    assert len(README.splitlines()) <= 250
    first_screen = README[: README.index("\n## ")]
    assert "training runs that should match" in first_screen
    assert "rl-state" not in first_screen and "RL" not in first_screen


def test_the_readme_links_to_files_that_exist() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_the_raw_dumps_quickstart_runs_as_shown(workdir: Path) -> None:
    text = section("Quickstart: raw dumps")
    lines = commands(text)
    assert lines == [
        "fastdiff compare examples/run-a examples/run-b",
        "fastdiff schema --from examples/run-a > my.toml",
        "fastdiff compare --schema my.toml examples/run-a examples/run-b",
        "fastdiff compare --format json examples/run-a examples/run-b > report.json",
    ]
    assert "exits with code 1" in text
    (verdict,) = [line for line in text.splitlines() if line.startswith("VERDICT:")]
    first = run(lines[0], workdir)
    assert first.returncode == 1, first.stderr
    assert verdict in first.stdout.splitlines()
    assert run(lines[1], workdir).returncode == 0
    assert "[[group]]" in (workdir / "my.toml").read_text()
    again = run(lines[2], workdir)
    assert again.returncode == 1, again.stderr
    assert verdict in again.stdout.splitlines()
    assert run(lines[3], workdir).returncode == 1
    report = json.loads((workdir / "report.json").read_text())
    assert report["schema_version"] == 1
    assert (report["verdict"], report["first_divergent_step"]) == ("diverged", 2)


def test_the_checkpoint_quickstart_shows_what_the_cli_prints(workdir: Path) -> None:
    text = section("Quickstart: PyTorch")
    (line,) = [c for c in commands(text) if c.startswith("fastdiff compare")]
    p = run(line, workdir)
    assert p.returncode == 1, p.stderr
    at = text.index(line)
    shown_in(blocks(text[at:])[0], p.stdout)


def test_the_recorder_snippet_is_the_examples_own_code() -> None:
    """The README quotes examples/train/train.py: its lines, in order."""
    (code,) = blocks(section("Quickstart: PyTorch"), "python")
    train = [line.strip() for line in (ROOT / "examples/train/train.py").read_text().splitlines()]
    at = 0
    for line in code.splitlines():
        if line.strip() in ("", "..."):
            continue
        assert line.strip() in train[at:], line
        at = train.index(line.strip(), at) + 1


def test_the_pytorch_quickstart_runs_as_shown(workdir: Path) -> None:
    pytest.importorskip("torch")
    text = section("Quickstart: PyTorch")
    reruns = [c for c in commands(text) if c.startswith("fastdiff rerun")]
    assert reruns == [
        "fastdiff rerun -n 3 -- python examples/train/train.py",
        "fastdiff rerun -n 2 -- python examples/train/train.py --seed-shuffle",
    ]
    outputs = [b for b in blocks(text) if "DETERMINISTIC" in b]
    assert len(outputs) == 2
    unseeded = run(reruns[0], workdir)
    assert unseeded.returncode == 1, unseeded.stdout + unseeded.stderr
    shown_in(outputs[0], unseeded.stdout)
    seeded = run(reruns[1], workdir)
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    shown_in(outputs[1], seeded.stdout)


def test_install_hints_name_the_distribution_not_the_unrelated_fastdiff() -> None:
    """'fastdiff' on the package index is another project: every hint names
    fastdiff-dumps (or a checkout's '.')."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'name = "fastdiff-dumps"' in pyproject
    pages = sorted(p for p in (ROOT / "docs").rglob("*.md") if not p.is_symlink())
    others = [ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks/README.md"]
    for path in [ROOT / "README.md", *others, *pages, *sorted((ROOT / "fastdiff").rglob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        assert "fastdiff[" not in text, path
        assert not re.search(r"pip install\s+'?fastdiff(?!-dumps)\b", text), path


def test_no_text_file_holds_merge_conflict_markers() -> None:
    # A merge once left README's schema section with both sides of a conflict.
    tracked = subprocess.run(
        ["git", "ls-files", "*.md", "*.py", "*.toml", "*.txt", "*.yml"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    marker = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)
    found = [
        name
        for name in tracked
        if not (ROOT / name).is_symlink()
        and marker.search((ROOT / name).read_text(encoding="utf-8"))
    ]
    assert found == []
