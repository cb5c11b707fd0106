/* The layout checks of tests/test_report_browser.py, run inside the rendered report. */
window.paradnnChecks = {
  /* Elements reaching past the page's right edge (table and nav boxes scroll inside). */
  wide() {
    const W = document.documentElement.clientWidth, out = [];
    if (document.documentElement.scrollWidth > W) out.push("page " + document.documentElement.scrollWidth);
    for (const el of document.body.querySelectorAll("*")) {
      if (el.closest(".tblwrap, nav, svg, .js-plotly-plot, [hidden]")) continue;
      const r = el.getBoundingClientRect();
      if (r.width && r.right > W + 1) out.push(el.tagName + "#" + el.id + "." + el.className + " " + Math.round(r.right));
    }
    return out.slice(0, 10);
  },
  /* Table rows taller than `max` px: [table id, height, text]. */
  tall(max) {
    return Array.from(document.querySelectorAll("table.tbl tr"))
      .map(r => [r.closest("table").id, Math.round(r.getBoundingClientRect().height), r.textContent.slice(0, 60)])
      .filter(x => x[1] > max);
  },
  /* Cells (and key results) with a number in scientific notation. */
  sci() {
    return Array.from(document.querySelectorAll("td, th, #key li"))
      .map(c => c.textContent).filter(t => /\d(\.\d+)?e[+-]?\d/i.test(t));
  },
  /* A drawn figure's labels (titles, ticks, legend, annotations, colour bar) that overlap
     one another or leave the figure's box. */
  labels(fig) {
    const box = fig.getBoundingClientRect();
    const sel = [".gtitle", ".xtitle", ".ytitle", ".xtick text", ".ytick text", ".legendtext",
                 ".annotation-text", ".cbtitle text", ".cbaxis text"].join(", ");
    const rs = Array.from(fig.querySelectorAll(sel))
      .filter(t => t.textContent.trim() && getComputedStyle(t).display !== "none")
      .map(t => [t.textContent.trim(), t.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && r.height > 0);
    const bad = [];
    for (const [t, r] of rs)
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        bad.push("outside: " + t);
    const cut = 1.5;  // px of overlap tolerated (anti-aliased glyph edges)
    for (let i = 0; i < rs.length; i++) for (let j = i + 1; j < rs.length; j++) {
      const [a, p] = rs[i], [b, q] = rs[j];
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > cut && h > cut) bad.push("overlap: " + a + " / " + b);
    }
    return bad;
  },
};
