"""The report's shape, pinned: one synthetic store that feeds every section (the paired studies
included) is built into a report, and its structure is compared with tests/data/report_golden.json:
each section's id, title, intro, empty text, notes and lists, each figure's file and caption, each
table's caption, columns and cells, and the figure and table files written. Digits are masked
(`#`), so a heading, a column, a row, a verdict word or a figure that moved fails it while a
number that moved in its digits does not.

Masking digits alone does not make it independent of the CPU: a float that is 5.6e-17 on one
CPU and 0.0 on another shows `#.#` or `#`, and a verdict, a wording or an order that hinges on
it moves. That independence is the code's (paradnn/rounding.py: one tolerance for verdicts,
orders and the formatter), and it is tested: tests/test_lastbit.py builds this store with every
float a few ulps off and holds it to the same golden file, and `make test` runs this file again
on a second numerical path (Makefile, AVX2_ENV: OpenBLAS's Haswell kernels, numpy's AVX2 loops,
oneDNN and ATen capped at AVX2).

Regenerate after an intended change: PARADNN_GOLDEN=write pytest tests/test_report_golden.py."""

from __future__ import annotations

import json
import os
import re
from html import unescape
from pathlib import Path

import pytest

from paradnn import report
from paradnn.store import open_store

import synth

GOLDEN = Path(__file__).parent / "data" / "report_golden.json"

FC = {"layers": [2, 4], "nodes": [64, 256, 1024], "input": [100], "output": [10],
      "batch": [32, 128]}  # fmt: skip
MODES = {"layers": [2], "nodes": [64, 128], "input": [20], "output": [10], "batch": [8, 16]}
CNN = {"blocks": [1], "filters": [4, 8], "image": [16], "output": [3], "batch": [4, 8]}
COMPILED = dict(compile_cold_s=20.0, compile_warm_s=3.0, graph_count=1, graph_breaks=0)


def _keyed(rows: list[dict], tag: str, **extra) -> list[dict]:
    return [{**r, "run_key": f"{r['run_key']}-{tag}", **extra} for r in rows]


def _samples(family: str, space: dict, faster=lambda c: 1.0, seed0: int = 0, **kw) -> list[dict]:
    return [
        synth.row(family, c, 0.1 * faster(c), n_samples=20, spread=0.02, seed=seed0 + i, **kw)
        for i, c in enumerate(synth.grid(space))
    ]


def _fed(source: str, slower: float, share: float, seed0: int) -> list[dict]:
    out = []
    for i, c in enumerate(synth.grid(CNN)):
        r = synth.row("cnn", c, 0.1 / slower, n_samples=20, spread=0.02, seed=seed0 + i)
        if source != "device":
            r |= {
                "infeed_share": share,
                "data_wait_s": share * r["step_time_s"],
                "data_copy_s": 0.0,
                "loader_examples_per_s": r["examples_per_s"] * 0.9,
                "model_only_examples_per_s": r["examples_per_s"] * slower,
                "input_bound": share > 0.5,
                "loader_workers": 2,
            }
        out.append({**r, "run_key": f"{r['run_key']}-{source}", "data_source": source})
    return out


def _backends() -> list[dict]:
    torch = _samples("rnn", {"layers": [1], "embed": [8], "length": [5], "vocab": [7],
                             "batch": [2, 4, 8]}, seed0=300)  # fmt: skip
    jax = _samples("rnn", {"layers": [1], "embed": [8], "length": [5], "vocab": [7],
                           "batch": [2, 4, 8]}, lambda c: 1.3, seed0=400)  # fmt: skip
    xla = dict(xla_lower_s=0.2, xla_compile_s=1.5, xla_flops_ratio=1.04, xla_flops_mismatch=0)
    return _keyed(torch, "torch", backend="torch") + _keyed(jax, "jax", backend="jax", **xla)


def _scaling() -> list[dict]:
    ladder = [{"bytes": b, "time_s": 1e-4 + b / 1e9} for b in (4096, 10**6, 4 * 10**6)]
    rows = [synth.scale_row(1, 0.010), synth.scale_row(1, 0.010, family="cnn",
            config={"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": 8})]  # fmt: skip
    for fam, cfg in (("fc", {}), ("cnn", {"config": rows[1]["config"]})):
        rows.append(
            synth.scale_row(2, 0.0125, family=fam, allreduce_s=1.1e-3, allreduce_bytes=10**6,
                            compute_nosync_s=0.011, ladder=ladder, **cfg)
        )  # fmt: skip
    env = dict(torch_version="2.13.0", hostname="host-a", optimizer="rmsprop")
    return [{**r, **env, "run_key": f"scale-{i}"} for i, r in enumerate(rows)]


def _store(tmp: Path) -> list[str]:
    """Two databases: platform A (every study, ceilings, ops, profiles, failures) and B (the
    same FC grid, faster at small widths, for the platform speedups)."""
    fast = {64: 2.0, 256: 1.0, 1024: 0.5}
    a_rows = synth.rows("fc", FC, lambda c: None if c["nodes"] == 1024 and c["batch"] == 128
                        and c["layers"] == 4 else 0.1, platform="PlatA")  # fmt: skip
    a_rows += _keyed(synth.rows("fc", FC, lambda c: 0.15, platform="PlatA", precision="bf16"),
                     "bf16")  # fmt: skip
    a_rows += _keyed(synth.rows("fc", FC, lambda c: 0.12, platform="PlatA",
                                torch_version="2.14.0"), "v214")  # fmt: skip
    a_rows += _keyed(synth.rows("fc", FC, lambda c: 0.08, platform="PlatA", threads=1), "t1")
    a_rows += _keyed(_samples("fc", MODES, seed0=100), "eager", mode="eager")
    a_rows += _keyed(_samples("fc", MODES, lambda c: 1.5, seed0=150, **COMPILED), "compile",
                     mode="compile")  # fmt: skip
    a_rows += _fed("device", 1.0, 0.0, 200) + _fed("pipeline", 2.0, 0.6, 250)
    a_rows += _backends() + _scaling()
    ceilings = [
        dict(device="cpu", device_name="PlatA", fingerprint="f", kind=k, precision=p,
             value=v, unit=u, measured_at="2026-11-21T00:00:00")
        for k, p, v, u in (("matmul", "fp32", 1.628e11, "FLOP/s"), ("copy", None, 2e10, "B/s"))
    ]  # fmt: skip
    a = synth.write_db(
        tmp / "a.db",
        a_rows,
        ceilings=ceilings,
        ops=[synth.op_row("512", 2 * 512**3, 0.01, threads=t, device_name="PlatA") for t in (1, 2)]
        + [synth.op_row("1024", 2 * 1024**3, 0.07, device_name="PlatA")],
    )
    b = synth.write_db(
        tmp / "b.db",
        synth.rows("fc", FC, lambda c: 0.1 * fast[c["nodes"]], platform="PlatB", hostname="b"),
    )
    for db, scale in ((a, 1.0), (b, 0.5)):
        with open_store(db) as store:
            store.insert_rows("op_profile", synth.op_profile(1, scale) + synth.op_profile(2, scale))
    return [a, b]


_WHERE: dict[str, str] = {}  # the store's folder: pytest names it apart under xdist (popen-gwN)


def _mask(text: object) -> str:
    text = str(text)
    if _WHERE.get("tmp"):
        text = text.replace(_WHERE["tmp"], "<tmp>")
    return re.sub(r"\d+", "#", text)


_CELL = re.compile(r"<t([hd])[^>]*>(.*?)</t[hd]>", re.S)
_SAME = re.compile(r'<p class="same">(.*?)</p>', re.S)


def _text(html: str) -> str:
    """A cell's text: its markup (a clamped long text's <div>) dropped, entities undone."""
    return unescape(re.sub(r"<[^>]+>", "", html))


def _table(caption: str, html: str) -> dict:
    """Caption, the line naming the columns equal in every row, the columns that vary and
    their cells (report/cells.py: a column that is — everywhere is not shown)."""
    same = _SAME.search(html)
    head, _, body = html.partition("</thead>")
    columns = [_text(c) for _, c in _CELL.findall(head)]
    rows = [
        [_mask(_text(c)) for _, c in _CELL.findall(tr)]
        for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]
    return {
        "caption": _mask(caption),
        "same": _mask(_text(same.group(1))) if same else "",
        "columns": columns,
        "rows": rows,
    }


def _figure(f) -> list[str]:
    f = f if isinstance(f, dict) else vars(f)
    return [f["name"], _mask(f["caption"])]


def shape(rep: report.Report) -> dict:
    return {
        "sections": [
            {
                "id": s.id,
                "title": s.title,
                "intro": _mask(s.intro),
                "empty": None if s.empty is None else _mask(s.empty),
                "figures": [_figure(f) for f in s.figures],
                "tables": [_table(c, h) for c, h in s.tables],
                "lists": [[_mask(h), [_mask(x) for x in xs]] for h, xs in getattr(s, "lists", [])],
                "notes": [_mask(n) for n in s.notes],
            }
            for s in rep.sections
        ],
        "figure_files": [p.name for p in rep.figures],
        "table_files": [p.name for p in rep.tables],
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("golden")
    _WHERE["tmp"] = str(tmp)
    return report.build(_store(tmp), tmp / "out")


def test_the_report_has_the_pinned_sections_tables_figures_and_verdicts(built):
    got = shape(built)
    if os.environ.get("PARADNN_GOLDEN") == "write":
        GOLDEN.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert [s["id"] for s in got["sections"]] == [s["id"] for s in want["sections"]]
    for g, w in zip(got["sections"], want["sections"], strict=True):
        assert g == w, g["id"]
    assert got["figure_files"] == want["figure_files"]
    assert got["table_files"] == want["table_files"]


def test_the_synthetic_store_feeds_every_section(built):
    """The golden file is only worth its name if no section of it is empty."""
    empty = [s.id for s in built.sections if s.empty and s.id not in ("prediction",)]
    assert empty == []
    ids = [s.id for s in built.sections]
    for paired in ("speedups", "scaling", "modes", "infeed", "backends"):
        assert paired in ids and built.sections[ids.index(paired)].tables, paired
    speed = built.sections[ids.index("speedups")]
    for by in ("platform", "precision", "torch_version", "mode", "threads"):
        assert any(f.name.startswith(f"speedup-{by}-") for f in speed.figures), by


def _specs(rep: report.Report) -> list[tuple[str, dict]]:
    return [(f.name, json.loads(f.spec)) for s in rep.sections for f in s.figures if f.spec]


def test_every_figure_hovers_clean_and_its_titles_fit_a_phone(built):
    """Issue 45: a heat map's hover showed a literal `<extra></extra>` and "trace 0"; at 390 px
    titles were cut on both sides. Each interactive figure of the page: plotly's own markup
    raw and no trace unnamed; every title and axis title in lines of at most TITLE_CHARS
    characters as read, the top margin holding the title's lines."""
    from paradnn.plots.interactive import AXIS_CHARS, TITLE_CHARS, TITLE_LINE_PX

    specs = _specs(built)
    assert len(specs) >= 20
    for name, spec in specs:
        for tr in spec["data"]:
            hover = tr.get("hovertemplate", "")
            assert "&lt;" not in hover and "&gt;" not in hover, name
            assert hover.count("<extra>") == hover.endswith("<extra></extra>"), name
            assert tr.get("name") or hover.endswith("<extra></extra>"), name
            assert "trace" not in str(tr.get("name", "")), name
        layout = spec["layout"]
        title = layout.get("title", {}).get("text", "")
        axes = [layout[a]["title"]["text"] for a in ("xaxis", "yaxis") if "title" in layout[a]]
        legend = sum(tr.get("showlegend", True) for tr in spec["data"]) > 1
        for text, most in ((title, TITLE_CHARS), *((a, AXIS_CHARS) for a in axes)):
            for line in text.split("<br>"):
                assert len(unescape(line)) <= (TITLE_CHARS if legend else most), (name, line)
        if legend and layout["xaxis"].get("title"):  # one line: a second runs into the legend
            assert "<br>" not in layout["xaxis"]["title"]["text"], name
        if title:
            assert layout["title"]["xref"] == "container" and layout["title"]["x"] == 0
            lines = title.count("<br>") + 1
            assert layout["margin"]["t"] >= 26 + TITLE_LINE_PX * lines, name
        assert layout["xaxis"]["automargin"] and layout["yaxis"]["automargin"], name
    maps = [s for n, s in specs if n.startswith("heatmap-")]
    assert maps and all(s["data"][0]["hovertemplate"].endswith(": %{text}<extra></extra>")
                        for s in maps)  # fmt: skip


def test_a_family_swept_in_two_precisions_gets_a_heat_map_of_each(built):
    heat = next(s for s in built.sections if s.id == "heatmaps")
    names = [f.name for f in heat.figures]
    precs = {n.rsplit("-", 1)[1] for n in names if n.startswith("heatmap-fc-")}
    assert {"fp32", "bf16"} <= precs, names
    groups = {json.loads(f.spec)["group"] for f in heat.figures if f.name.startswith("heatmap-fc")}
    assert len(groups) == 1  # one box: the precision is the selector's choice
