"""The documentation site (docs/, mkdocs.yml): the generated reference pages
are current, every page is in the nav, and the tutorials' commands print
what the pages show. (Other pages' examples are checked beside the code they
document: test_origins, test_ranks, test_testing, test_api, test_scheduler,
test_recorder, test_trace_cli, test_dtypes.)"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from test_readme import blocks, run, shown_in

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def generator():  # the module docs/gen_reference.py
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    return tmp_path


# --- the generated reference ---------------------------------------------------------


def test_the_generated_reference_pages_are_current() -> None:
    """Regenerated from the code, every generated block is what the page holds:
    run ``python docs/gen_reference.py`` after changing an option, a fact, a
    status, a problem kind, a dtype or an exit code."""
    stale = [str(p.relative_to(ROOT)) for p in generator().stale()]
    assert stale == [], "run: python docs/gen_reference.py"


def test_every_option_of_every_command_is_in_the_cli_reference() -> None:
    from fastdiff.cli.commands import COMMANDS, command_module

    text = page("reference/cli.md")
    for name in COMMANDS:
        assert f"\n## {name}\n" in text
        for arg in command_module(name).ARGUMENTS:
            for option in arg.names:
                assert f"`{option}" in text or f", {option}" in text, (name, option)


def test_every_result_fact_is_in_the_json_reference() -> None:
    from fastdiff.model.facts import RESULT_FACTS

    text = page("reference/json.md")
    for fact in RESULT_FACTS:
        assert f"| `{fact.name}` |" in text, fact.name


def test_a_new_exit_code_without_words_stops_the_generator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fastdiff import errors

    gen = generator()
    monkeypatch.setattr(errors, "EXIT_NEW", 3, raising=False)
    with pytest.raises(gen.Undocumented, match="EXIT_NEW"):
        gen.exit_codes()


def test_a_fact_without_a_comment_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = generator()
    words, sections = gen._fact_comments()
    monkeypatch.setattr(gen, "_fact_comments", lambda: ({**words, "n_diff": ""}, sections))
    with pytest.raises(gen.Undocumented, match="n_diff"):
        gen.buffer_fields()


def test_the_json_reference_names_every_top_level_field() -> None:
    """Every key a report's top level (and its ``work``) holds is named on the page."""
    text = page("reference/json.md")
    for args in (
        ["examples/run-a", "examples/run-b", "--steps", "1:"],
        ["examples/anatomy/run-a", "examples/anatomy/run-b", "--schema",
         "examples/anatomy/schema.toml"],
    ):  # fmt: skip
        p = run(" ".join(["fastdiff", "compare", "--format", "json", *args]), ROOT)
        report = json.loads(p.stdout)
        for key in [*report, *report["work"], *report["tolerance"]]:
            assert f"`{key}`" in text or f'"{key}"' in text, key


def test_the_schema_reference_lists_every_key() -> None:
    from fastdiff import schemafile

    rows = re.findall(r"^\| (top level|`\[\[group\]\]`|a member's table) \| `(\w+)` \|",
                      page("reference/schema.md"), re.MULTILINE)  # fmt: skip
    keys: dict[str, set[str]] = {}
    for where, key in rows:
        keys.setdefault(where, set()).add(key)
    assert keys["top level"] == schemafile._TOP_KEYS
    assert keys["`[[group]]`"] == schemafile._GROUP_KEYS
    assert keys["a member's table"] == schemafile._MEMBER_KEYS


# --- the site ---------------------------------------------------------------------


def test_every_page_is_in_the_nav() -> None:
    """``mkdocs build --strict`` (CI) refuses a page left out; this says so sooner."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r"^\s*- [^:]+: (\S+\.md)$", config, re.MULTILINE))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages == nav
    assert all((DOCS / name).exists() for name in nav)


def test_the_site_is_not_committed() -> None:
    assert "/site/" in (ROOT / ".gitignore").read_text().splitlines()


# --- the tutorials -------------------------------------------------------------------


def test_the_first_comparison_shows_what_the_cli_prints(workdir: Path) -> None:
    text = page("tutorials/first-compare.md")
    shown = next(b for b in blocks(text) if b.startswith("$ fastdiff compare examples/run-a"))
    command, _, rest = shown.partition("\n")
    p = run(command.removeprefix("$ "), workdir)
    assert p.returncode == 1, p.stderr
    shown_in(rest, p.stdout)
    assert rest.count("\n") > 20
    (more,) = [b for b in blocks(text, "sh") if "--ulp 1" in b]
    for line in more.splitlines():
        command = line.split("   #", 1)[0].strip()
        expected = 0 if "--ulp 1" in command else 1  # the page: "--ulp 1 ... exit 0"
        assert run(command, workdir).returncode == expected, command


def test_the_schema_tutorial_runs_as_shown(workdir: Path) -> None:
    text = page("tutorials/schema.md")
    (make_runs,) = blocks(text, "python")
    (workdir / "make_runs.py").write_text(make_runs)
    assert run("python make_runs.py", workdir).returncode == 0
    outputs = [b for b in blocks(text) if b.startswith("$ ")]
    raw = run("fastdiff compare runs/a runs/b", workdir)
    assert raw.returncode == 1, raw.stderr
    shown_in(outputs[0].partition("\n")[2], raw.stdout)
    started, finished = blocks(text, "toml")
    assert run("fastdiff schema --from runs/a > my.toml", workdir).returncode == 0
    assert (workdir / "my.toml").read_text() == started
    (workdir / "my.toml").write_text(finished)
    assert run("fastdiff schema my.toml", workdir).returncode == 0
    typed = run("fastdiff compare --schema my.toml runs/a runs/b", workdir)
    assert typed.returncode == 1, typed.stderr
    shown_in(outputs[1].partition("\n")[2], typed.stdout)


def test_the_anatomy_walk_through_is_the_examples_output(workdir: Path) -> None:
    text = page("explanation/magnitude.md")
    shown = next(b for b in blocks(text) if b.startswith("$ fastdiff compare --schema examples"))
    command, _, rest = shown.partition("\n")
    assert command.endswith(" --plot timeline.png")
    # the plot needs matplotlib (the plot extra): its line is checked where it is there
    plot = importlib.util.find_spec("matplotlib") is not None
    if not plot:
        command = command.removesuffix(" --plot timeline.png")
        rest = "\n".join(line for line in rest.splitlines() if "timeline plot" not in line)
    p = run(command.removeprefix("$ "), workdir)
    assert p.returncode == 1, p.stderr
    shown_in(rest, p.stdout + p.stderr)
    assert not plot or (workdir / "timeline.png").exists()


def test_the_tolerances_example_says_what_the_cli_does() -> None:
    text = page("guides/tolerances.md")
    assert "the first divergent step is 5" in text
    p = run(
        "fastdiff compare --ulp 2 --schema examples/anatomy/schema.toml "
        "examples/anatomy/run-a examples/anatomy/run-b",
        ROOT,
    )
    assert "VERDICT: diverged: first divergent step 5; groups: E (ISV controllers)" in p.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
