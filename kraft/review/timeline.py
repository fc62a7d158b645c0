"""A client history as a timeline (inline SVG), as Porcupine and Jepsen draw them.

One lane per process; each operation a bar from its invocation to its completion (positions in the
history, which is in real-time order); ``fail`` ops hatched, ``info``/never-completed ops open to
the right. The ops an anomaly names are red, the longest linearizable prefix (for a
linearizability failure) green, the op the search got stuck on outlined. Histories longer than
:data:`WINDOW` ops are drawn around the anomaly, with the cut said in words.

The history itself is read with :func:`spark_validation.ingest.history.read_history` (the audit's own
reader) and paired with :func:`spark_validation.ingest.history.pair_ops`. Every text is escaped.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, Iterable

from spark_validation.ingest.history import pair_ops, read_history

__all__ = ["TimelineOp", "ops_from_history", "timeline_svg", "WINDOW"]

WINDOW = 160  # history positions drawn at most
LANE_H = 26
LEFT = 110
PX_MIN, PX_MAX = 7, 56  # pixels per history position
MAX_WIDTH = 1500

STYLE = (
    "text{font:11px system-ui,sans-serif;fill:#1f2328}"
    ".lane{stroke:#d0d7de}.proc{font-weight:600}"
    ".op rect{fill:#dbe9f6;stroke:#7aa7d6}.op.fail rect{fill:url(#hatch);stroke:#8c959f}"
    ".op.info rect,.op.pending rect{fill:#fff1d6;stroke:#d4a72c;stroke-dasharray:4 2}"
    ".op.prefix rect{fill:#d1f0d8;stroke:#2da44e}"
    ".op.bad rect{fill:#ffd7d5;stroke:#cf222e;stroke-width:2}"
    ".op.stuck rect{fill:#ffd7d5;stroke:#cf222e;stroke-width:3}"
    ".optext{font:10px ui-monospace,monospace}.axis{fill:#6e7781;font-size:10px}"
)


class TimelineOp:
    __slots__ = ("process", "start", "end", "f", "text", "outcome", "ids")

    def __init__(self, process: Any, start: int, end: int | None, f: str, text: str, outcome: str,
                 ids: Iterable[int]):
        self.process, self.start, self.end, self.f = process, start, end, f
        self.text, self.outcome, self.ids = text, outcome, frozenset(ids)


def _txt(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


def ops_from_history(path: str) -> list[TimelineOp]:
    """The paired operations of a history file (raises ``HistoryFormatError``/``OSError``)."""
    h = read_history(path)
    operations, _ = pair_ops(h.ops)
    out = []
    for o in operations:
        inv, c = o.invoke, o.complete
        key = f"[{_txt(inv.key)}] " if inv.key is not None else ""
        text = f"{inv.f} {key}" + (_txt(inv.value) if inv.value is not None else "")
        if c is not None and c.type == "ok" and c.value != inv.value:
            text = text.rstrip() + f" \u2192 {_txt(c.value)}"
        elif c is not None and c.type != "ok":
            text += f" ({c.type})"
        ids = [inv.index] + ([c.index] if c is not None else [])
        out.append(TimelineOp(inv.process, inv.index, c.index if c is not None else None, str(inv.f), text,
                              o.outcome, ids))
    return out


def timeline_svg(ops: list[TimelineOp], bad: set[int] = frozenset(), prefix: set[int] = frozenset(),
                 stuck: set[int] = frozenset(), title: str = "") -> tuple[str, str]:
    """(svg, note): the timeline of ``ops``; ``bad``/``prefix``/``stuck`` are op indexes (either
    the invocation's or the completion's) to highlight. ``note`` says what part is drawn."""
    if not ops:
        return "<p class='muted'>(no client operations in this history)</p>", ""
    last = max(max(o.start, o.end if o.end is not None else o.start) for o in ops)
    marked = [o for o in ops if o.ids & (bad | stuck)]
    note = ""
    lo, hi = 0, last
    if last + 1 > WINDOW:
        if marked:
            centre_lo = min(o.start for o in marked)
            centre_hi = max(o.end if o.end is not None else o.start for o in marked)
        else:
            centre_lo = centre_hi = last
        span = max(WINDOW, 0)
        if centre_hi - centre_lo + 20 >= span:
            lo, hi = max(0, centre_hi - span + 10), centre_hi + 10  # the end of the anomaly matters most
        else:
            pad = (span - (centre_hi - centre_lo)) // 2
            lo = max(0, centre_lo - pad)
            hi = min(last, lo + span)
            lo = max(0, hi - span)
        note = (f"positions {lo}\u2013{hi} of {last + 1} drawn (the window around the highlighted ops); "
                "the rest are in the history file")
    shown = [o for o in ops if o.start <= hi and (o.end if o.end is not None else last) >= lo]
    procs: list[Any] = []
    for o in sorted(shown, key=lambda o: (str(type(o.process)), str(o.process))):
        if o.process not in procs:
            procs.append(o.process)
    try:
        procs.sort()
    except TypeError:
        procs.sort(key=str)
    lane = {p: i for i, p in enumerate(procs)}
    px = max(PX_MIN, min(PX_MAX, (MAX_WIDTH - LEFT) / max(1, hi - lo + 1)))
    width = int(LEFT + px * (hi - lo + 2) + 20)
    height = 30 + LANE_H * len(procs) + 20

    def X(pos: float) -> float:
        return LEFT + (pos - lo) * px

    out = [f"<svg xmlns='http://www.w3.org/2000/svg' class='timeline' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' role='img' aria-label='history timeline'>",
           f"<title>{escape(title or 'history')}</title><style>{STYLE}</style>",
           "<defs><pattern id='hatch' width='6' height='6' patternUnits='userSpaceOnUse' "
           "patternTransform='rotate(45)'><rect width='6' height='6' fill='#eaeef2'/>"
           "<line x1='0' y1='0' x2='0' y2='6' stroke='#afb8c1' stroke-width='2'/></pattern></defs>"]
    step = max(1, int(80 / px))
    for t in range(lo - lo % step, hi + 1, step):
        if t >= lo:
            out.append(f"<text x='{X(t):.0f}' y='14' class='axis'>{t}</text>")
    for p, i in lane.items():
        y = 24 + i * LANE_H
        out.append(f"<line x1='{LEFT}' y1='{y + LANE_H - 2}' x2='{width}' y2='{y + LANE_H - 2}' class='lane'/>"
                   f"<text x='6' y='{y + 15}' class='proc'>process {escape(_txt(p)[:14])}</text>")
    for o in shown:
        y = 24 + lane[o.process] * LANE_H + 3
        end = o.end if o.end is not None else min(last, hi) + 1
        x1, x2 = X(max(o.start, lo - 1)), X(min(end, hi + 1)) + px * 0.8
        cls = "op " + o.outcome
        if o.ids & stuck:
            cls += " stuck"
        elif o.ids & bad:
            cls += " bad"
        elif o.ids & prefix:
            cls += " prefix"
        label = o.text
        chars = int((x2 - x1 - 6) / 6)
        if chars < len(label):
            label = label[: max(0, chars - 1)] + "\u2026" if chars > 2 else ""
        tip = f"op {o.start}" + (f"\u2013{o.end}" if o.end is not None else " (never completed)") + \
              f", process {_txt(o.process)}, {o.outcome}: {o.text}"
        out.append(f"<g class='{cls}'><title>{escape(tip[:600])}</title>"
                   f"<rect x='{x1:.1f}' y='{y}' width='{max(3.0, x2 - x1):.1f}' height='{LANE_H - 8}' rx='3'/>"
                   + (f"<text x='{x1 + 3:.1f}' y='{y + 13}' class='optext'>{escape(label)}</text>" if label else "")
                   + "</g>")
    out.append("</svg>")
    return "".join(out), note
