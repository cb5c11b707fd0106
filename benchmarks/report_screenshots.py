"""Screenshots of a report for the docs (docs/img/report-*.png) and the page's measures
(height at 1,400 px wide, file size, what the first screen holds), in headless Chromium.

    python benchmarks/report_screenshots.py report/report.html [--out docs/img] [--measure]

Uses the system's Chromium through Playwright (never a downloaded browser): `make setup`
installs it where it can; PARADNN_CHROMIUM names another. --measure prints the measures only
(also of an older report without interactive figures, for a before/after)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
WIDTH, HEIGHT = 1400, 900

MEASURE = """() => ({
  height_px: document.documentElement.scrollHeight,
  width_px: document.documentElement.scrollWidth,
  tallest_row_px: Math.round(Math.max(0, ...Array.from(document.querySelectorAll('tr'))
    .map(r => r.getBoundingClientRect().height))),
  tables_wider_than_their_box: Array.from(document.querySelectorAll('table'))
    .filter(t => t.scrollWidth > t.parentElement.clientWidth + 1).length,
  cells_in_scientific_notation: Array.from(document.querySelectorAll('td'))
    .filter(c => /\\d(\\.\\d+)?e[+-]\\d/.test(c.textContent)).length,
  first_screen: Array.from(document.querySelectorAll('main h2, main .tblcap, #key li, nav'))
    .filter(e => e.getBoundingClientRect().top < innerHeight)
    .map(e => e.tagName + ': ' + e.textContent.trim().replace(/\\s+/g, ' ').slice(0, 90)),
})"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html", type=Path)
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    ap.add_argument("--measure", action="store_true", help="print the measures, no screenshots")
    a = ap.parse_args()
    if not a.html.is_file():
        print(f"html: {a.html} is not a file; give a report.html", file=sys.stderr)
        return 2
    exe = os.environ.get("PARADNN_CHROMIUM") or shutil.which("chromium")
    if not exe:
        print("no chromium: `make setup` installs it (apt, as root)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        ctx = pw.chromium.launch_persistent_context(
            profile, executable_path=exe, args=ARGS, headless=True, offline=True,
            viewport={"width": WIDTH, "height": HEIGHT},
        )  # fmt: skip
        page = ctx.new_page()
        page.goto(a.html.resolve().as_uri())
        page.wait_for_load_state("load")
        if page.locator("#plotly-gz").count():
            page.wait_for_selector("body[data-plotted]", timeout=120_000)
        got = page.evaluate(MEASURE)
        got["bytes"] = a.html.stat().st_size
        print(json.dumps(got, indent=1, ensure_ascii=False))
        if not a.measure:
            _shots(page, a.out)
        ctx.close()
    return 0


def _shots(page, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(out / "report-first-screen.png"))
    page.add_style_tag(content="nav { position: static !important; }")  # clear of the shots
    fig = page.locator("#rooflines figure.ix").first
    fig.evaluate("f => f.scrollIntoView({block: 'center'})")
    points = fig.locator(".one:not([hidden]) .scatterlayer .trace .points path")
    box = points.nth(points.count() // 2).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)
    fig.screenshot(path=str(out / "report-hover.png"))
    page.mouse.move(0, 0)
    table = page.locator("#t-predicted-vs-measured, #t-roofline-points").first
    wrap = table.locator("xpath=..")
    tools = (
        page.locator(".tools")
        .filter(has=page.locator("input"))
        .nth(
            page.evaluate(
                "t => Array.from(document.querySelectorAll('.tools')).findIndex("
                "b => b.nextElementSibling && b.nextElementSibling.contains(t))",
                table.element_handle(),
            )
        )
    )
    first = table.locator("tbody tr td").nth(1).text_content()
    tools.locator("input").fill(first.strip())
    table.locator("thead th").nth(2).click()
    tools.evaluate("b => b.previousElementSibling.scrollIntoView({block: 'start'})")
    top = tools.evaluate("b => b.previousElementSibling.getBoundingClientRect().top")
    bottom = wrap.evaluate("w => w.getBoundingClientRect().bottom")
    page.screenshot(
        path=str(out / "report-filtered-table.png"),
        clip={"x": 0, "y": top - 4, "width": WIDTH, "height": min(bottom - top + 12, 640)},
    )


if __name__ == "__main__":
    raise SystemExit(main())
