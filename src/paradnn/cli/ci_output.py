"""`compare --format markdown|junit`: a comparison as a pull-request comment (a Markdown table)
or as a CI system's test report (JUnit XML, where each gate is a testcase that fails when the
gate fails). The numbers are the table's own (cli/tables.py's formatters), so a comment, a
JUnit report and the terminal never disagree."""

from __future__ import annotations

import json
from typing import Any
from xml.etree import ElementTree as ET

from paradnn.analysis import speedup
from paradnn.cli.tables import _x_ci, compact_config, config_label

MAX_MARKDOWN_ROWS = 50  # a PR comment lists at most this many configs (slowest first)


def _cell(text: Any) -> str:
    """A Markdown table cell: pipes escaped, one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _g(x: Any) -> str:
    return "—" if x is None or x != x else f"{x:.4g}×"


def _verdicts(c: Any, slower: Any, pct: float | None, on: str, min_configs: int | None) -> list:
    """The gates and their outcome: (name, failed, message)."""
    out = []
    if pct is not None:
        limit = f"{1 - pct / 100:.3g}×"
        if on == "geomean":
            failed = slower is not None and len(slower) > 0
            out.append(("geomean", failed, f"geomean slower than {limit} beyond its 95% CI"))
        else:
            n = 0 if slower is None else len(slower)
            out.append(("configs", n > 0, f"{n} config(s) slower than {limit} beyond the 95% CI"))
    if min_configs is not None:
        n = len(c.pairs)
        out.append(
            ("compared", n < min_configs, f"{n} config(s) compared; at least {min_configs} needed")
        )
    return out


def markdown(
    c: Any,
    slower: Any = None,
    pct: float | None = None,
    on: str = "config",
    min_configs: int | None = None,
) -> str:
    """A heading, the overall geomean with its interval and call, the gates, and a table of the
    configs (slowest first, at most MAX_MARKDOWN_ROWS) with each speedup's 95% CI and call."""
    from paradnn.analysis.frames import ordered

    lines = [f"### paradnn compare: {c.b} over {c.a} ({c.by}, {c.metric})", ""]
    overall = c.overall()
    if overall:
        g = _x_ci(overall["geomean"], overall["geomean_ci_low"], overall["geomean_ci_high"])
        lines.append(f"**geomean {g}** (95% CI): {overall['geomean_call']}")
    else:
        lines.append("**no configuration ran ok in both groups**")
    lines += ["", speedup.counts_line(c) + "."]
    gates = _verdicts(c, slower, pct, on, min_configs)
    for name, failed, message in gates:
        lines.append(f"- {'❌ failed' if failed else '✅ passed'} ({name}): {message}")
    if not len(c.pairs):
        return "\n".join(lines) + "\n"
    varying, same = c.shown_identity()
    if same:
        lines += ["", "Shared: " + ", ".join(f"{k}={_cell(v)}" for k, v in same.items())]
    head = ["family", "config", *varying, c.a, c.b, "speedup (±95% CI)", "call"]
    lines += ["", "| " + " | ".join(_cell(h) for h in head) + " |"]
    lines.append("|" + "|".join("---" for _ in head) + "|")
    p = ordered(c.pairs, "speedup", ["family", "config_key"])
    for r in p.head(MAX_MARKDOWN_ROWS).to_dict("records"):
        cells = [
            r["family"],
            compact_config(json.loads(r["config_key"])),
            *(r[k] for k in varying),
            f"{r['value_a']:.4g}",
            f"{r['value_b']:.4g}",
            _x_ci(r["speedup"], r.get("ci_low"), r.get("ci_high")),
            r.get("call", ""),
        ]
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    if len(p) > MAX_MARKDOWN_ROWS:
        lines += ["", f"{len(p) - MAX_MARKDOWN_ROWS} more configs: `--format csv`."]
    return "\n".join(lines) + "\n"


def junit(
    c: Any,
    slower: Any = None,
    pct: float | None = None,
    on: str = "config",
    min_configs: int | None = None,
) -> str:
    """JUnit XML: one testcase per compared config (failed when --fail-if-slower judges it
    slower beyond its interval), one for the geomean, and one for --min-configs (failed when
    fewer configs were compared: a gate never passes on nothing)."""
    varying, _ = c.shown_identity()
    failing = set()
    if pct is not None and on == "config" and slower is not None and len(slower):
        failing = {config_label(r, varying) for r in slower.to_dict("records")}
    limit = None if pct is None else f"{1 - pct / 100:.3g}×"
    cases: list[ET.Element] = []

    def case(name: str, out: str, failure: str | None = None) -> None:
        e = ET.Element("testcase", classname=f"paradnn.compare.{c.by}", name=name)
        if failure is not None:
            ET.SubElement(e, "failure", message=failure, type="slower").text = out
        ET.SubElement(e, "system-out").text = out
        cases.append(e)

    for r in c.pairs.to_dict("records"):
        name = config_label(r, varying)
        text = f"{c.b} over {c.a}: {_x_ci(r['speedup'], r.get('ci_low'), r.get('ci_high'))}"
        text += f" (95% CI {_g(r.get('ci_low'))}–{_g(r.get('ci_high'))}): {r.get('call', '')}"
        why = f"slower than {limit} beyond its 95% CI: {text}" if name in failing else None
        case(name, text, why)
    overall = c.overall()
    if overall:
        g = _x_ci(overall["geomean"], overall["geomean_ci_low"], overall["geomean_ci_high"])
        text = f"geomean {g} (95% CI): {overall['geomean_call']}"
        bad = pct is not None and on == "geomean" and slower is not None and len(slower) > 0
        case("geomean", text, f"the geomean is slower than {limit}: {text}" if bad else None)
    if min_configs is not None:
        n = len(c.pairs)
        text = speedup.counts_line(c)
        why = f"{n} config(s) compared, fewer than {min_configs}: {text}"
        case("configs compared", text, why if n < min_configs else None)
    failures = sum(1 for e in cases if e.find("failure") is not None)
    root = ET.Element("testsuites", name="paradnn compare", tests=str(len(cases)))
    root.set("failures", str(failures))
    suite = ET.SubElement(
        root,
        "testsuite",
        name=f"paradnn compare: {c.b} over {c.a} ({c.by}, {c.metric})",
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped="0",
    )
    props = ET.SubElement(suite, "properties")
    for k, v in (("by", c.by), ("a", c.a), ("b", c.b), ("metric", c.metric)):
        ET.SubElement(props, "property", name=k, value=str(v))
    suite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
