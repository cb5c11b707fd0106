"""The report's layout, checked in a real browser: the golden test's synthetic store (every
section filled) built into a report and opened in headless Chromium at 1,400 px wide. Nothing
is wider than the page, no table row is taller than ROW_MAX_PX, no two labels of a figure
overlap or leave it (every slice of every selector drawn), no cell is in scientific notation,
the first screen holds the key results, and the tables sort and filter and the figures say a
point's configuration on hover.

Needs Playwright (the `test` extra) and a system Chromium (`make setup` installs it with apt
where it can; PARADNN_CHROMIUM names another). Playwright never downloads a browser here;
without one the test is skipped and says why."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

import test_report_golden as golden
from paradnn import report

WIDTH, HEIGHT = 1400, 900
ROW_MAX_PX = 80
CHECKS = Path(__file__).parent / "data" / "report_checks.js"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip

pytestmark = pytest.mark.slow


def _chromium() -> str | None:
    named = os.environ.get("PARADNN_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install '.[test]')"
    )
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine (`make setup` installs it with apt as root)")
    tmp = tmp_path_factory.mktemp("browser")
    golden._WHERE.setdefault("tmp", str(tmp))
    rep = report.build(golden._store(tmp), tmp / "out")
    errors: list[str] = []
    with sync_api.sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        ctx = pw.chromium.launch_persistent_context(
            profile,
            executable_path=exe,
            args=ARGS,
            headless=True,
            viewport={"width": WIDTH, "height": HEIGHT},
            offline=True,
        )
        pg = ctx.new_page()
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(rep.html.as_uri())
        pg.wait_for_selector("body[data-plotted]", timeout=120_000)
        pg.add_script_tag(path=str(CHECKS))
        pg.errors = errors
        yield pg
        ctx.close()


def test_the_page_runs_without_errors_and_draws_every_figure_offline(page):
    assert page.errors == []
    shown = page.locator("figure.ix .one:not([hidden]) .plot").count()
    assert shown >= 5
    assert page.locator("figure.ix .one:not([hidden]) .plot .main-svg").count() >= shown


def test_the_first_screen_says_what_was_learned(page):
    page.evaluate("window.scrollTo(0, 0)")
    first = page.evaluate(
        """() => Array.from(document.querySelectorAll('#key li')).filter(
             li => li.getBoundingClientRect().top < innerHeight).map(li => li.textContent)"""
    )
    assert len(first) >= 4
    assert any(t.startswith(("holds", "does not hold")) for t in first)
    assert any("utilization" in t for t in first)
    assert any(t.startswith(("faster", "slower")) for t in first)
    # verdicts coloured, and each line links to the table it rests on
    colour = page.evaluate("getComputedStyle(document.querySelector('#key .tone.v-holds')).color")
    assert colour not in ("rgb(0, 0, 0)", "rgb(29, 35, 42)")
    hrefs = page.evaluate(
        "Array.from(document.querySelectorAll('#key li a')).map(a => a.getAttribute('href'))"
    )
    for h in hrefs:
        assert page.locator(f'[id="{h.removeprefix("#")}"]').count() == 1, h


def test_nothing_is_wider_than_the_page(page):
    assert page.evaluate("paradnnChecks.wide()") == []


def test_no_table_row_is_taller_than_the_limit(page):
    assert page.evaluate(f"paradnnChecks.tall({ROW_MAX_PX})") == []


def test_no_cell_is_in_scientific_notation(page):
    assert page.evaluate("paradnnChecks.sci()") == []


_LABELS = "fig => paradnnChecks.labels(fig)"


def test_no_figure_label_overlaps_another_or_leaves_its_figure(page):
    """Every slice of every selector is drawn and checked: titles, tick labels, legend
    entries, annotations and colour-bar labels."""
    bad = []
    for k in range(page.locator("figure.ix").count()):
        fig = page.locator("figure.ix").nth(k)
        pick = fig.locator("select.pick")
        options = pick.locator("option").count() if pick.count() else 1
        for o in range(options):
            if pick.count():
                pick.select_option(str(o))
                page.wait_for_function(
                    "f => f.querySelector('.one:not([hidden]) .main-svg')", arg=fig.element_handle()
                )
            plot = fig.locator(".one:not([hidden]) .plot")
            plot.scroll_into_view_if_needed()
            found = plot.evaluate(_LABELS)
            bad += [f"figure {k} slice {o}: {b}" for b in found]
        if pick.count():
            pick.select_option("0")
    assert bad == []


def test_tables_sort_and_filter(page):
    table = page.locator("#t-predicted-vs-measured")
    rows = table.locator("tbody tr")
    n = rows.count()
    assert n > 10
    box = page.locator(".tools:has(+ .tblwrap #t-predicted-vs-measured) input")
    box.fill("memory")
    shown = rows.evaluate_all("rs => rs.filter(r => !r.hidden).length")
    assert 0 < shown < n
    assert all(
        "memory" in t
        for t in rows.evaluate_all("rs => rs.filter(r => !r.hidden).map(r => r.textContent)")
    )
    box.fill("")
    col = table.locator("thead th", has_text="abs. % error").first
    idx = col.evaluate("th => Array.from(th.parentNode.children).indexOf(th)")
    col.click()
    col.click()  # descending
    vals = rows.evaluate_all(f"rs => rs.map(r => parseFloat(r.cells[{idx}].textContent))")
    assert vals == sorted(vals, reverse=True) and vals[0] > vals[-1]


def test_hovering_a_point_names_its_configuration(page):
    fig = page.locator("#rooflines figure.ix").first
    fig.scroll_into_view_if_needed()
    point = fig.locator(".one:not([hidden]) .scatterlayer .trace .points path").first
    point.evaluate("p => p.scrollIntoView({block: 'center'})")
    box = point.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)
    text = page.locator(".hoverlayer .hovertext").first.text_content()
    assert "batch=" in text and "FLOP/B" in text


PHONE = 390  # px: a phone held upright (issue 45: titles were cut on both sides here)
_TITLES = """fig => { const box = fig.getBoundingClientRect();
  return Array.from(fig.querySelectorAll('.gtitle, .xtitle, .ytitle'))
    .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)
    .filter(t => { const r = t.getBoundingClientRect();
      return r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1; })
    .map(t => t.textContent.trim()); }"""


def test_every_title_fits_its_figure_on_a_phone(page):
    """At 390 px every figure's title and axis titles stay inside it, in every slice of every
    selector (a slice drawn at 1,400 px is resized when shown)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    resize = """() => Promise.all(Array.from(document.querySelectorAll('.plot[data-drawn]'))
                                 .map(p => Plotly.Plots.resize(p)))"""
    page.set_viewport_size({"width": PHONE, "height": 844})
    try:
        page.evaluate(resize)
        page.wait_for_function(f"document.documentElement.scrollWidth <= {PHONE}", timeout=20_000)
        bad, seen = [], 0
        for k in range(page.locator("figure.ix").count()):
            fig = page.locator("figure.ix").nth(k)
            pick = fig.locator("select.pick")
            for o in range(pick.locator("option").count() if pick.count() else 1):
                if pick.count():
                    pick.select_option(str(o))
                    page.wait_for_function(
                        "f => f.querySelector('.one:not([hidden]) .main-svg')",
                        arg=fig.element_handle(),
                    )
                plot = fig.locator(".one:not([hidden]) .plot")
                plot.scroll_into_view_if_needed()
                page.wait_for_function(  # laid out at the phone's width
                    f"p => p.querySelector('.main-svg').getBoundingClientRect().width < {PHONE}",
                    arg=plot.element_handle(),
                )
                seen += 1
                try:  # a resized plot lays its titles out again a moment later
                    page.wait_for_function(
                        f"p => ({_TITLES})(p).length === 0", arg=plot.element_handle(), timeout=5000
                    )
                except sync_api.TimeoutError:
                    bad += [f"figure {k} slice {o}: {t}" for t in plot.evaluate(_TITLES)]
            if pick.count():
                pick.select_option("0")
        assert seen >= 20
        assert bad == []
    finally:
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
        page.evaluate(resize)


def test_the_checks_catch_what_they_are_for(page):
    """Each check above fails on the defect it looks for, planted in the page."""
    fig = page.locator("figure.ix").first
    plot = fig.locator(".one:not([hidden]) .plot")
    plot.evaluate(
        """p => { const a = {text: 'planted label', xref: 'paper', yref: 'paper', x: 0.5,
                              y: 0.5, showarrow: false};
                  return Plotly.relayout(p, {annotations: [a, a]}); }"""
    )
    assert any("overlap: planted label" in b for b in plot.evaluate(_LABELS))
    plot.evaluate("p => Plotly.relayout(p, {annotations: []})")
    planted = page.evaluate(
        f"""() => {{
          const d = document.createElement('div');
          d.style.width = '3000px'; d.textContent = 'planted';
          document.querySelector('main').appendChild(d);
          const t = document.querySelector('table.tbl td'), was = t.innerHTML;
          t.innerHTML = 'x<br>'.repeat(12);
          const got = [paradnnChecks.wide().length, paradnnChecks.tall({ROW_MAX_PX}).length];
          t.innerHTML = was; d.remove();
          return got;
        }}"""
    )
    assert planted[0] >= 1 and planted[1] == 1
    assert page.evaluate(
        """() => { const t = document.querySelector('table.tbl td'), was = t.textContent;
                   t.textContent = '5.9e-06'; const got = paradnnChecks.sci();
                   t.textContent = was; return got; }"""
    ) == ["5.9e-06"]
