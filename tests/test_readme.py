"""The README's first commands say what they do: checked against the real CLI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def setup_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Set up on a fresh machine")
    return text[start : text.index("\n## ", start + 1)]


def test_the_example_comparison_exits_1_with_the_verdict_the_readme_shows() -> None:
    section = setup_section()
    assert "fastdiff compare examples/run-a examples/run-b" in section
    assert "exits with code 1" in section
    (verdict,) = [line for line in section.splitlines() if line.startswith("VERDICT:")]
    p = subprocess.run(
        [sys.executable, "-m", "fastdiff", "compare", "examples/run-a", "examples/run-b"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    assert verdict in p.stdout.splitlines()


def test_install_hints_name_the_distribution_not_the_unrelated_fastdiff() -> None:
    """'fastdiff' on the package index is another project: every hint names
    fastdiff-dumps (or a checkout's '.')."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'name = "fastdiff-dumps"' in pyproject
    for path in [ROOT / "README.md", *sorted((ROOT / "fastdiff").rglob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        assert "fastdiff[" not in text, path
        assert not re.search(r"pip install\s+'?fastdiff(?!-dumps)\b", text), path


def test_the_torch_example_shows_what_the_cli_prints() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### torch.save archives")
    section = text[start : text.index("\n## ", start)]
    at = section.index("```\n$ fastdiff compare") + 4
    block = section[at : section.index("\n```\n", at)]
    command, *lines = block.splitlines()
    args = command.split()[2:]
    p = subprocess.run(
        [sys.executable, "-m", "fastdiff", *args], cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert p.returncode == 1, p.stderr
    out = p.stdout.splitlines()
    for line in lines:
        if line == "...":
            continue
        shown = line.removesuffix(" ...")
        assert any(o.startswith(shown) for o in out), line
    assert "26 values that are not tensors (numbers, strings, ...) are not compared" in p.stdout
    assert "26 values that are not tensors" in section


def test_no_text_file_holds_merge_conflict_markers() -> None:
    # A merge once left README's schema section with both sides of a conflict.
    tracked = subprocess.run(
        ["git", "ls-files", "*.md", "*.py", "*.toml", "*.txt"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    marker = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)
    found = [name for name in tracked if marker.search((ROOT / name).read_text(encoding="utf-8"))]
    assert found == []
