"""What a reader of the report sees for each finding, word for word: its claim, the seed passage
it cites and the rule its verdict follows. A change of wording is a change a reviewer should
see in the diff of tests/data/findings_text.json (regenerate it with
`PARADNN_WRITE_GOLDEN=1 pytest tests/test_findings_text.py` and read the diff), never a silent
one: a rule that says "above" while the code tests "below" is a wrong conclusion in words."""

from __future__ import annotations

import json
import os
from pathlib import Path

from paradnn import analysis as A

GOLDEN = Path(__file__).parent / "data" / "findings_text.json"


def _texts() -> list[dict[str, str]]:
    return [
        {"id": f.id, "claim": f.claim, "source": f.source, "rule": f.rule, "no_data": f.evidence}
        for f in A.evaluate(A.from_frames([]))
    ]


def test_every_findings_words_are_the_reviewed_ones():
    got = _texts()
    if os.environ.get("PARADNN_WRITE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert [g["id"] for g in got] == [w["id"] for w in want]  # order is the report's order
    for g, w in zip(got, want, strict=True):
        assert g == w, f"finding {g['id']!r}: its words changed; review and regenerate"
