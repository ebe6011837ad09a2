"""The HTML report at 2,000 steps x 40 buffers: its size, the time to render
it, and the time a headless Chromium takes to load it and to scroll it.

    python benchmarks/bench_html.py                 # the report built in memory
    python benchmarks/bench_html.py --real /tmp/x   # also real runs written there (~630 MB),
                                                    # compared with --format html and text

The report in memory is tests/html_reports.py's (8 groups of 5 f32 buffers,
a divergence born at step 1000 that spreads and grows); the real runs hold
the same layout (256 elements a buffer). The browser part needs chromium,
chromedriver and selenium (tests/browser.py), and is skipped without them.
Not a test: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fastdiff.render.html import render_html  # noqa: E402
from fastdiff.render.text import render_text  # noqa: E402


def median_time(fn, n: int = 3) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def in_browser(page: Path) -> dict[str, float] | None:
    import browser

    why = browser.missing()
    if why is not None:
        print(f"browser: skipped ({why})")
        return None
    loads, scrolls = [], []
    with browser.chromium() as d:
        for _ in range(3):
            d.get(page.as_uri())
            t = d.execute_script(
                "var t = performance.timing; return [t.domContentLoadedEventEnd - "
                "t.navigationStart, t.loadEventEnd - t.navigationStart];"
            )
            loads.append(t[1])
            d.find_element("css selector", '[data-act="open"]').click()
            scrolls.append(
                d.execute_script(
                    "var box = document.getElementById('hm'), t = performance.now();"
                    "box.scrollTop = box.scrollHeight / 2; box.dispatchEvent(new Event('scroll'));"
                    "return new Promise(function (done) { requestAnimationFrame(function () {"
                    "requestAnimationFrame(function () { done(performance.now() - t); }); }); });"
                )
            )
        nodes = d.execute_script("return document.getElementsByTagName('*').length")
        errors = browser.severe(d)
    return {
        "load_ms": statistics.median(loads),
        "scroll_ms": statistics.median(scrolls),
        "nodes": nodes,
        "errors": len(errors),
    }


def write_real(root: Path) -> Path:
    """Two real runs of 2,000 steps x 40 f32 buffers, and their schema."""
    import numpy as np
    from html_reports import long_schema

    schema = long_schema()
    names = [(g.key, m.pattern) for g in schema.groups for m in g.members]
    rng = np.random.default_rng(0)
    base = {n: rng.random(256, dtype=np.float32) for _, n in names}
    start = [n for _, n in names].index("c2")
    for run in "ab":
        folder = root / run
        folder.mkdir(parents=True, exist_ok=True)
        for step in range(2000):
            for k, (_, name) in enumerate(names):
                x = base[name] + np.float32(step)
                reached = 1000 + (k - start)
                if run == "b" and k >= start and step >= reached:
                    x[17:20] = np.nextafter(x[17:20], np.float32(1e9))
                    x[17] += np.float32(max(0, step - reached - 4) * 0.01)
                x.tofile(folder / f"step_{step}_{name}.bin")
    lines = ['name = "long"']
    for g in schema.groups:
        lines += ["", "[[group]]", f'key = "{g.key}"', f'title = "{g.title}"',
                  f'hint = "{g.hint}"', "[group.members]"]  # fmt: skip
        for m in g.members:
            inputs = ", ".join(f'"{i}"' for i in m.inputs or ())
            lines.append(f'{m.pattern} = {{ dtype = "f32", inputs = [{inputs}] }}')
    path = root / "schema.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", metavar="DIR", help="also write real runs in DIR and compare")
    args = parser.parse_args()

    from html_reports import long_report

    report = long_report()
    page = render_html(report)
    size = len(page.encode())
    print("2,000 steps x 40 buffers, in memory:")
    print(f"  page: {size:,} bytes ({len(gzip.compress(page.encode())):,} gzipped)")
    print(f"  render_html: {median_time(lambda: render_html(report)):.2f} s; "
          f"render_text: {median_time(lambda: render_text(report)):.2f} s")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.html"
        path.write_text(page, encoding="utf-8")
        found = in_browser(path)
    if found:
        print(f"  chromium: loaded in {found['load_ms']:.0f} ms, a scroll with every group open "
              f"drawn in {found['scroll_ms']:.0f} ms, {found['nodes']:,} elements, "
              f"{found['errors']} console errors")  # fmt: skip
    if args.real:
        root = Path(args.real)
        schema = write_real(root)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for fmt in ("text", "html"):
            out = root / f"report.{fmt}"
            t = time.perf_counter()
            with out.open("w") as fh:
                subprocess.run(
                    [sys.executable, "-m", "fastdiff", "compare", "--schema", str(schema),
                     str(root / "a"), str(root / "b"), "--format", fmt, "--no-cache"],
                    stdout=fh, env=env, check=False,
                )  # fmt: skip
            took = time.perf_counter() - t
            print(f"real runs, compare --format {fmt}: {took:.1f} s, {out.stat().st_size:,} bytes")
        found = in_browser(root / "report.html")
        if found:
            print(f"  chromium: loaded in {found['load_ms']:.0f} ms, a scroll with every group "
                  f"open drawn in {found['scroll_ms']:.0f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
