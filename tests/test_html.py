"""The HTML report (``--format html``, issue 24 section 2): one self-contained
page built from the findings, with the text report's words.

Two kinds of test. Those of the page as text run everywhere: it loads
nothing, no name becomes markup, it says what the text report says, and the
commands write it (to stdout, never to a terminal or into a run folder).
Those in a real browser (headless Chromium through selenium, ``browser.py``)
skip cleanly where chromium, chromedriver or selenium is missing: the page
loads with no console error, shows the verdict and the first divergent
step, the heatmap holds the cell of the first divergence, a group opens
into its buffers, 2,000 steps x 40 buffers draw only the rows in view, a
hostile name runs nothing, and the page prints. Each browser test saves
screenshots in its tmp dir (and in ``$FASTDIFF_SCREENSHOTS``, when set, for
people to look at).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, severe
from helpers import REPO, f32, fastdiff, write_runs
from html_reports import HOSTILE, hostile_report, long_report

from fastdiff.render.html import render_html
from fastdiff.render.htmlfiles import SCRIPT, STYLE
from fastdiff.render.text import format_buffer, render_text

ORIGINS = REPO / "examples" / "origins"
ANATOMY = REPO / "examples" / "anatomy"


def origins_page() -> str:
    p = fastdiff("compare", "--schema", ORIGINS / "schema.toml", ORIGINS / "run-a",
                 ORIGINS / "run-b", "--format", "html")  # fmt: skip
    assert p.returncode == 1, p.stderr
    return p.stdout


def data_of(page: str) -> dict[str, Any]:
    """The page's script data (the JSON block)."""
    m = re.search(r'<script type="application/json" id="fd-data">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1))


def texts(page: str) -> str:
    """The page's text as a browser shows it, roughly: tags out, entities in."""
    from html import unescape

    return unescape(re.sub(r"<[^>]+>", "", page))


# --- the page as text --------------------------------------------------------------------


def test_the_page_loads_nothing_from_anywhere() -> None:
    page = origins_page()
    assert page.startswith("<!DOCTYPE html>\n<html")
    markup = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    assert not re.search(r"""\s(?:src|href|srcset|action|poster)=(?!["']?#)""", markup)
    for call in ("fetch(", "XMLHttpRequest", "import(", "WebSocket", "sendBeacon", "eval("):
        assert call not in SCRIPT
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert not re.search(r"https?://", page)
    (csp,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    assert page.count("<script") == 2 and page.count("<style>") == 1  # data, code; style


def test_the_page_says_what_the_text_report_says() -> None:
    """The verdict, where it was born, the groups, the hint and every buffer's
    line are the text report's, word for word."""
    page = texts(origins_page())
    text = fastdiff("compare", "--schema", ORIGINS / "schema.toml", ORIGINS / "run-a",
                    ORIGINS / "run-b").stdout  # fmt: skip
    lines = text.splitlines()
    (verdict,) = [ln for ln in lines if ln.startswith("VERDICT: ")]
    assert verdict.removeprefix("VERDICT: ") in page
    for line in lines:
        if line.startswith(("  born in: ", "  undetermined: ", "  4 later origins: ")):
            assert line.strip() in page, line
        if line.startswith("    F  "):  # a buffer's line
            assert line.strip() in page, line
    hint = " ".join(text[text.index("next, F: ") :].split("\n\n")[0].split())
    assert hint.removeprefix("next, F: ") in " ".join(page.split())
    assert "first divergent step 3" in page


def test_the_heatmap_is_the_timeline() -> None:
    """A cell per group and step: every timeline row's cell is marked, the
    origins too, the first divergent step is known; a buffer column per
    buffer."""
    page = origins_page()
    (view,) = data_of(page)["views"]
    steps = view["steps"]
    assert steps == list(range(8)) and steps[view["first"]] == 3
    assert view["firstGroups"] == ["F"]
    groups = {g["key"]: g for g in view["groups"]}
    assert list(groups) == ["O", "C", "D", "E", "F"]
    f, o = groups["F"], groups["O"]
    assert f["cells"][:3] == "..." and " " not in f["cells"] and "." not in f["cells"][3:]
    assert f["o"] == [3, 4, 5, 6, 7]  # an origin at every step from 3, as the text's *
    assert f["texts"] == ["3 ulp", "3 ulp", "4 ulp", "5 ulp", "3.05e-05"]  # the text's cells
    assert o["cells"][:6] == "......" and "." not in o["cells"][6:]
    names = [b["name"] for b in groups["F"]["buffers"]]
    assert sorted(names) == ["advantages", "dones", "entropy_bonus", "returns", "rewards"]


def test_no_name_becomes_markup() -> None:
    """Names, paths, titles, hints and messages full of markup come out as
    text: no element, attribute or script of theirs reaches the page."""
    page = render_html(hostile_report())
    assert HOSTILE not in page
    assert "<img" not in page and "</script><script>" not in page.replace("</script>\n<script>", "")
    assert page.count("<script") == 2
    assert "window.pwned" in texts(page)  # shown, as text
    data = page[page.index('id="fd-data">') :].split("</script>", 1)[0]
    assert "<" not in data[len('id="fd-data">') :] and "&" not in data
    assert "w\\nx\\u202ey\\xff" in texts(page)  # the text report's escapes: no bidi override
    assert "\u202e" not in page and "\udcff" not in page


def test_a_long_run_makes_a_light_page() -> None:
    """2,000 steps x 40 buffers: the page holds a character per cell and a
    short text per differing cell, not a line per buffer (its size is
    asserted, never a time)."""
    report = long_report()
    page = render_html(report)
    assert len(page.encode()) < 1_500_000, len(page.encode())
    (view,) = data_of(page)["views"]
    assert len(view["steps"]) == 2000 and len(view["groups"]) == 8
    assert sum(len(g["buffers"]) for g in view["groups"]) == 40
    assert page.count('<details class="buf') <= 300  # the text report's list, capped
    assert "missing" in {t for g in view["groups"] for t in g["texts"]}
    assert any("e" in g["cells"] for g in view["groups"])  # the unreadable buffer


def test_first_changes_only_the_list_of_buffers() -> None:
    report = long_report(steps=1100)
    whole, first = render_html(report), render_html(report, first=True)
    assert first.count('<details class="buf') == 1 < whole.count('<details class="buf')

    def cells(page: str) -> list[Any]:  # the heatmap, without its links to the cards
        groups = data_of(page)["views"][0]["groups"]
        return [{**g, "buffers": [{**b, "k": None} for b in g["buffers"]]} for g in groups]

    assert cells(first) == cells(whole)
    listed = [ln for ln in render_text(report).splitlines() if ln.startswith("    C  c2")]
    assert listed[0].strip() in texts(first)
    assert format_buffer(report.buffers[0]).strip() not in texts(whole)  # equal: not listed


# --- the commands -------------------------------------------------------------------------


def test_compare_writes_the_page_to_stdout_with_its_exit_code(tmp_path: Path) -> None:
    a, b = write_runs(tmp_path, {"step_0_x.bin": (f32(1, 2), f32(1, 3))})
    p = fastdiff("compare", a, b, "--format", "html")
    assert p.returncode == 1 and p.stdout.startswith("<!DOCTYPE html>"), p.stderr
    assert p.stdout.endswith("</html>\n")
    (tmp_path / "same").mkdir()
    same = write_runs(tmp_path / "same", {"step_0_x.bin": (f32(1), f32(1))})
    p = fastdiff("compare", *same, "--format", "html")
    assert p.returncode == 0 and "bit-for-bit equal" in texts(p.stdout)


def test_the_page_never_goes_to_a_terminal_or_into_a_run_folder(tmp_path: Path) -> None:
    import pty

    a, b = write_runs(tmp_path, {"step_0_x.bin": (f32(1, 2), f32(1, 3))})

    def compare(stdout: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fastdiff", "compare", a, b, "--format", "html"],
            stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=120,
            check=False,
        )  # fmt: skip

    leader, follower = pty.openpty()
    try:
        p = compare(follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert p.returncode == 2
    assert "redirect it to a file (> report.html)" in p.stderr
    if not Path("/proc/self/fd/1").exists():
        pytest.skip("no /proc here: stdout's path cannot be known")
    inside = a / "report.html"
    with inside.open("w") as out:
        p = compare(out)
    assert p.returncode == 2
    assert f"is inside the run folder {a}, and fastdiff never writes into a run folder" in (
        p.stderr
    )
    assert inside.read_text() == ""


def test_sweep_watch_and_rerun_write_a_page(tmp_path: Path) -> None:
    a, b = write_runs(tmp_path, {"step_0_x.bin": (f32(1, 2), f32(1, 3))})
    c = tmp_path / "c"
    shutil.copytree(a, c)
    p = fastdiff("sweep", "--all", a, b, c, "--format", "html", "--no-cache")
    assert p.returncode == 1, p.stderr
    page = p.stdout
    assert page.count("<!DOCTYPE html>") == 1 and 'class="matrix"' in page
    assert "Classes of bit-identical runs" in texts(page)
    # Each run is written once, in the list beside the matrix (the classes
    # and the summary name runs by number, not again by path).
    listed = re.findall(
        r'<li value="(\d+)"><code>([^<]*)</code>( <span class="class">class (\d+))?', page
    )
    assert [(n, path, c) for n, path, _, c in listed] == [
        ("1", str(a), "1"),
        ("2", str(b), "2"),
        ("3", str(c), "1"),
    ]
    assert re.findall(r'<section id="classes".*?</section>', page, re.S)[0].count("<li>") == 2
    body = texts(page.split('<section id="matrix"')[0])  # the verdict card
    assert str(c) not in body
    p = fastdiff("watch", a, b, "--format", "html", "--poll", "0.05", "--settle", "0.1",
                 "--idle-timeout", "1")  # fmt: skip
    assert p.returncode == 1, p.stderr
    assert p.stdout.count("<!DOCTYPE html>") == 1 and "stopped: " in texts(p.stdout)
    job = tmp_path / "job.py"
    job.write_text(
        "import os\nimport numpy as np\nfrom fastdiff import Recorder\n"
        "with Recorder() as rec:\n"
        "    rec.dump(0, 'x', np.array([os.getpid() % 7 + 0.5], dtype=np.float32))\n"
    )
    p = fastdiff("rerun", "-n", "2", "--format", "html", "--", sys.executable, job,
                 env={"PYTHONPATH": str(REPO)})  # fmt: skip
    assert p.returncode in (0, 1), p.stderr
    assert p.stdout.count("<!DOCTYPE html>") == 1 and "command: " in texts(p.stdout)


def test_the_text_report_does_not_import_the_html_one() -> None:
    from test_startup import FIXTURES, imported

    a, b = FIXTURES / "diverge_F" / "a", FIXTURES / "diverge_F" / "b"
    assert "fastdiff.render.html" not in imported("compare", str(a), str(b), code=1)
    assert "fastdiff.render.html" not in imported(
        "compare", str(a), str(b), "--format", "json", code=1
    )


# --- in a real browser --------------------------------------------------------------------


def shoot(driver: Any, tmp: Path, name: str, full: bool = True, part: str = "") -> Path:
    """A screenshot in the test's tmp dir (and in $FASTDIFF_SCREENSHOTS);
    ``full``: the whole page, not just the window; ``part``: only the
    element of that CSS selector."""
    path = tmp / f"{name}.png"
    if part:
        element = driver.find_element("css selector", part)
        driver.execute_script("arguments[0].scrollIntoView()", element)
        element.screenshot(str(path))
    elif full:
        size = driver.get_window_size()
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(size["width"], min(height + 20, 6000))
        driver.save_screenshot(str(path))
        driver.set_window_size(size["width"], size["height"])
    else:
        driver.save_screenshot(str(path))
    out = os.environ.get("FASTDIFF_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(out) / path.name)
    return path


def load(driver: Any, path: Path) -> dict[str, float]:
    """Open a page from its file URL; its timings (ms) and no console error."""
    driver.get(path.as_uri())
    timing = driver.execute_script(
        "var t = performance.timing; return {dom: t.domContentLoadedEventEnd - "
        "t.navigationStart, load: t.loadEventEnd - t.navigationStart, nodes: "
        "document.getElementsByTagName('*').length};"
    )
    assert severe(driver) == []
    return timing


def test_in_a_browser_the_page_shows_the_verdict_and_the_first_divergence(
    tmp_path: Path,
) -> None:
    page = tmp_path / "origins.html"
    page.write_text(origins_page(), encoding="utf-8")
    with chromium() as d:
        load(d, page)
        assert d.find_element("css selector", ".badge").text == "diverged"
        assert d.find_element("css selector", "#first-step").text == "3"
        assert "first divergent step 3; groups: F" in d.find_element("css selector", "h1").text
        first = d.find_elements("css selector", '.hm-row[data-step="3"] .c.first[data-group="F"]')
        assert len(first) == 1 and first[0].is_displayed()
        assert "3 ulp" in first[0].get_attribute("title")
        assert d.find_elements("css selector", "svg.flow .self")  # the dataflow graphs
        shoot(d, tmp_path, "html-origins")  # resizes the window: the rows are drawn anew
        d.find_element("css selector", '.hm-row[data-step="3"] .c.first[data-group="F"]').click()
        detail = d.find_element("css selector", "#hm-detail").text
        assert "F (reward shaping and RL outputs), step 3" in detail
        assert "rewards: 3 ulp (origin)" in detail and "1 equal" in detail
        assert severe(d) == []


def test_in_a_browser_a_group_opens_into_its_buffers(tmp_path: Path) -> None:
    page = tmp_path / "anatomy.html"
    p = fastdiff("compare", "--schema", ANATOMY / "schema.toml", ANATOMY / "run-a",
                 ANATOMY / "run-b", "--format", "html")  # fmt: skip
    page.write_text(p.stdout, encoding="utf-8")
    with chromium() as d:
        load(d, page)
        assert d.find_elements("css selector", ".hm-b") == []  # buffers only on demand
        d.find_element("css selector", '.hm-g[data-group="F"]').click()
        heads = [e.get_attribute("data-buffer") for e in d.find_elements("css selector", ".hm-b")]
        assert sorted(heads) == ["actions", "advantages", "policy_logits", "rewards"]
        cell = d.find_element("css selector", '.hm-row[data-step="6"] .c[data-buffer="advantages"]')
        assert "128" in cell.get_attribute("title")
        cell.click()
        detail = d.find_element("css selector", "#hm-detail")
        assert "F advantages, step 6" in detail.text
        link = detail.find_element("link text", "the buffer below")
        card = link.get_attribute("href").rpartition("#")[2]
        assert d.find_element("id", card).get_attribute("open") is None
        link.click()
        assert d.find_element("id", card).get_attribute("open") == "true"
        line = d.find_element("css selector", f"#{card} .line").text
        assert line.startswith("F  advantages [f32, (64,)]  DIVERGED; 4 of 64 elements differ")
        shoot(d, tmp_path, "html-anatomy-open")
        d.find_element("css selector", '.hm-g[data-group="F"]').click()
        assert d.find_elements("css selector", ".hm-b") == []
        assert severe(d) == []


def test_in_a_browser_2000_steps_by_40_buffers_draw_only_the_rows_in_view(
    tmp_path: Path, record_property: Any
) -> None:
    page = tmp_path / "long.html"
    page.write_text(render_html(long_report()), encoding="utf-8")
    size = page.stat().st_size
    with chromium() as d:
        timing = load(d, page)
        record_property("page_bytes", size)
        record_property("load_ms", timing["load"])
        print(
            f"\n2000 x 40: {size:,} bytes; loaded in {timing['load']} ms; {timing['nodes']} nodes"
        )
        rows = d.find_elements("css selector", ".hm-row")
        assert 10 < len(rows) < 120  # the rows in view, not 1,001
        assert d.find_elements("css selector", '.hm-row[data-step="1000"] .c.first')
        shoot(d, tmp_path, "html-long", part="#heatmap")
        d.find_element("css selector", '[data-act="open"]').click()  # all 40 buffer columns
        ms = d.execute_script(
            "var box = document.getElementById('hm'), t = performance.now();"
            "box.scrollTop = box.scrollHeight; box.dispatchEvent(new Event('scroll'));"
            "return new Promise(function (done) { requestAnimationFrame(function () {"
            "requestAnimationFrame(function () { done(performance.now() - t); }); }); });"
        )
        print(f"scroll to the end with every group open: {ms:.0f} ms")
        assert d.find_elements("css selector", '.hm-row[data-step="1999"]')
        cells = d.execute_script("return document.querySelectorAll('.hm-rows .c').length")
        assert cells < 120 * 48, cells
        nodes = d.execute_script("return document.getElementsByTagName('*').length")
        assert nodes < 20_000, nodes
        shoot(d, tmp_path, "html-long-open", part="#heatmap")
        assert severe(d) == []


def test_in_a_browser_a_hostile_name_runs_nothing(tmp_path: Path) -> None:
    page = tmp_path / "hostile.html"
    page.write_text(render_html(hostile_report()), encoding="utf-8")
    with chromium() as d:
        load(d, page)
        assert d.execute_script("return window.pwned === undefined")
        assert d.find_elements("css selector", "img") == []
        assert "window.pwned=2" in d.find_element("css selector", "header").text
        d.find_element("css selector", "[data-act='open']").click()
        for cell in d.find_elements("css selector", ".hm-rows .c")[:12]:
            cell.click()
        assert d.execute_script("return window.pwned === undefined")
        assert d.find_elements("css selector", "img") == []
        shoot(d, tmp_path, "html-hostile")
        assert severe(d) == []  # a refused script or style would be a SEVERE entry


def test_in_a_browser_the_page_prints(tmp_path: Path) -> None:
    """Printing opens every buffer, shows the heatmap's rows from the first
    divergent step on, and hides the controls."""
    page = tmp_path / "long.html"
    page.write_text(render_html(long_report(steps=1300)), encoding="utf-8")
    with chromium() as d:
        load(d, page)
        pdf = d.print_page()  # WebDriver's print: a PDF, as base64
        assert len(pdf) > 10_000
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        d.execute_script("window.dispatchEvent(new Event('beforeprint'))")
        assert d.execute_script(
            "return document.querySelectorAll('details:not([open])').length"
        ) == 0  # fmt: skip
        assert not d.find_element("css selector", ".controls").is_displayed()
        note = d.find_element("css selector", "#hm-print").text
        assert note.startswith("printed: rows 1 to 160 of 301 (steps 0 to 1158)"), note
        shoot(d, tmp_path, "html-print")
        d.execute_script("window.dispatchEvent(new Event('afterprint'))")
        assert d.execute_script(
            "return document.querySelectorAll('details:not([open])').length"
        ) > 0  # fmt: skip
        assert severe(d) == []


def test_in_a_browser_sweep_and_ranks_pages_load(tmp_path: Path) -> None:
    from test_ranks import ranked_run, schema_file

    a = ranked_run(tmp_path / "a", {})
    b = ranked_run(tmp_path / "b", {0: {(1, "mid")}, 2: {(1, "mid")}})
    p = fastdiff("compare", "--schema", schema_file(tmp_path), a, b, "--format", "html")
    assert p.returncode == 1, p.stderr
    ranks = tmp_path / "ranks.html"
    ranks.write_text(p.stdout, encoding="utf-8")
    c = tmp_path / "c"
    shutil.copytree(a, c)
    p = fastdiff("sweep", "--all", "--schema", schema_file(tmp_path), a, b, c,
                 "--format", "html", "--no-cache")  # fmt: skip
    sweep = tmp_path / "sweep.html"
    sweep.write_text(p.stdout, encoding="utf-8")
    with chromium() as d:
        load(d, ranks)
        assert [e.text for e in d.find_elements("css selector", "table.ranks th")] == [
            "rank", "verdict", "first divergent step", "groups", "first origin",
        ]  # fmt: skip
        assert "pattern:" in d.find_element("css selector", "#ranks").text
        options = d.find_elements("css selector", "#hm-view option")
        assert [o.text for o in options] == ["every rank", "rank 0", "rank 1", "rank 2"]
        options[2].click()  # rank 1 never diverged
        assert d.find_elements("css selector", ".hm-row .c.first") == []
        options[1].click()
        assert d.find_elements("css selector", '.hm-row[data-step="1"] .c.first')
        shoot(d, tmp_path, "html-ranks")
        load(d, sweep)
        cells = d.find_elements("css selector", "table.matrix td a")
        assert sorted(c.text for c in cells) == ["1", "1", "="]
        cells[0].click()
        assert d.find_elements("css selector", "details.pair[open]")
        shoot(d, tmp_path, "html-sweep")
        assert severe(d) == []


def test_the_style_and_script_are_package_data() -> None:
    """The page inlines them from the installed package: pyproject.toml ships them."""
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["fastdiff.render.htmlfiles"]
    folder = REPO / "fastdiff" / "render" / "htmlfiles"
    shipped = {p.name for pattern in patterns for p in folder.glob(pattern)}
    assert shipped == {"report.css", "report.js"}
    assert "</script" not in SCRIPT and "</style" not in STYLE
