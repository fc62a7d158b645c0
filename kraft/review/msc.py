"""A counterexample as a message sequence diagram (inline SVG) for the review page.

Input: the states of a TLC counterexample as ``kraft check`` writes them (``runs[].counterexample``:
``index``, ``action``, ``node``, ``back_to``, ``variables``), or any list of steps of the same shape
(the hook for Hypothesis's shrunk steps: see :func:`steps_from_machine`). Output: one SVG with

* one lifeline per node (the nodes are read from the messages' ``msource``/``mdest`` and from the
  per-node variables, i.e. functions or sequences indexed by node),
* one arrow per message, from the step that put it into the network variable to the step that took
  it out (a message never taken out ends in a stub: still in flight; one taken out by the network's
  own action, the protocol's ``drop_message``, ends in a cross),
* one box per step on each node whose variables changed, listing only what changed,
* the violated invariant at the end, in words (the protocol declaration's ``doc``).

Everything taken from the input is escaped (``html.escape``); the SVG has no script and no link.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from html import escape
from typing import Any, Iterable

from kraft.protocols import declarations

__all__ = ["sequence_svg", "invariant_doc", "steps_from_machine", "MAX_STEPS"]

MAX_STEPS = 120  # longer counterexamples show their last MAX_STEPS steps (the rest stays in the JSON)
LANE_W = 250
BOX_CHARS = 36  # characters of one box line (monospace 11px in a lane)
LEFT = 190  # the step column
TOP = 56
LINE_H = 14
MAX_LINES = 7  # per box
VALUE_CHARS = 44
SYSTEM = "(system)"  # the lane of a step no single node takes
SERVER = "(server)"  # the lane of a message without msource or mdest (e.g. a group coordinator)


STYLE = (
    "text{font:12px system-ui,sans-serif;fill:#1f2328}"
    ".life{stroke:#8c959f;stroke-dasharray:4 3}"
    ".head{fill:#ddf4ff;stroke:#54aeff}.headt{text-anchor:middle;font-weight:600}"
    ".step{font-weight:600}.step.last{fill:#cf222e}.muted{fill:#6e7781;font-size:11px}"
    ".loop{fill:#8250df;font-size:11px}"
    ".msg line{stroke:#0969da;stroke-width:1.4}.msg.inflight line{stroke-dasharray:3 3}"
    ".msg.dropped line{stroke:#9a6700;stroke-dasharray:6 3}.cross{fill:#cf222e;font-size:14px;text-anchor:middle}"
    ".mlabel{font-size:11px;fill:#0550ae;text-anchor:middle;paint-order:stroke;stroke:#fff;stroke-width:3px}"
    ".box rect{fill:#fff8c5;stroke:#d4a72c}.box text{font:11px ui-monospace,monospace}"
    ".endline{stroke:#cf222e;stroke-width:2}.end{fill:#cf222e;font-weight:600;font-size:13px}"
)


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _short(v: Any, n: int = VALUE_CHARS) -> str:
    s = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    return s if len(s) <= n else s[: n - 1] + "\u2026"


def _messages_var(states: list[dict[str, Any]]) -> str | None:
    """The variable holding the network: a set/bag (list) of records with an ``mtype`` field."""
    for st in states:
        for name, value in (st.get("variables") or {}).items():
            if isinstance(value, list) and value and all(isinstance(m, dict) for m in value) \
                    and any("mtype" in m for m in value):
                return name
    return None


def _node_name(v: Any) -> str:
    return v if isinstance(v, str) else _short(v, 16)


def _nodes(states: list[dict[str, Any]], mvar: str | None) -> list[str]:
    found: list[str] = []

    def add(v: Any) -> None:
        if v is None:
            return
        n = _node_name(v)
        if n not in found:
            found.append(n)

    for st in states:
        for m in (st.get("variables") or {}).get(mvar, []) if mvar else []:
            if isinstance(m, dict):
                add(m.get("msource"))
                add(m.get("mdest"))
        add(st.get("node"))
    # keys shared by at least two function-valued variables are node names too (a node that never
    # sends still gets its lifeline)
    # sequences indexed by node (TLA+ functions over 1..N): many variables of one length N, with
    # every numeric msource/mdest in 1..N, make the nodes 1..N
    lengths = Counter(len(v) for name, v in ((states[0].get("variables") or {}).items() if states else ())
                      if isinstance(v, list) and name != mvar and len(v) >= 2)
    if lengths:
        n, count = lengths.most_common(1)[0]
        ends = [m.get(k) for st in states for m in ((st.get("variables") or {}).get(mvar) or [] if mvar else [])
                if isinstance(m, dict) for k in ("msource", "mdest") if m.get(k) is not None]
        if count >= 3 and all(isinstance(x, int) and 1 <= x <= n for x in ends):
            for i in range(1, n + 1):
                add(i)
    keysets: Counter[tuple[str, ...]] = Counter()
    for name, value in (states[0].get("variables") or {}).items() if states else ():
        if isinstance(value, dict) and value and name != mvar:
            keysets[tuple(sorted(value))] += 1
    if keysets:
        keys, count = keysets.most_common(1)[0]
        if count >= 2:
            for k in keys:
                add(k)

    def order(n: str) -> tuple[int, str]:
        digits = "".join(c for c in n if c.isdigit())
        return (int(digits) if digits else 0, n)

    return sorted(found, key=order)


def _per_node(value: Any, nodes: list[str]) -> dict[str, Any] | None:
    """``value`` as node -> value when it is a function of the nodes (a dict keyed by node names,
    or a sequence as long as the nodes when the nodes are 1..N), else None."""
    if isinstance(value, dict) and value and all(str(k) in nodes for k in value):
        return {str(k): v for k, v in value.items()}
    numbered = [n for n in nodes if n.isdigit()]
    if isinstance(value, list) and value and numbered == [str(i) for i in range(1, len(numbered) + 1)] \
            and len(value) == len(numbered):
        return {str(i + 1): v for i, v in enumerate(value)}
    return None


def invariant_doc(name: str | None) -> str:
    """What the invariant ``name`` protects, from the protocol declarations ('' if unknown)."""
    if not name:
        return ""
    for p in declarations():
        for inv in p.invariants:
            if inv.name == name:
                return inv.doc
    return ""


def _actors(spec: str | None) -> dict[str, str]:
    """Action name -> the kind of node that takes it (``Action.actor`` of the declarations; the
    protocol of ``spec`` first)."""
    out: dict[str, str] = {}
    for p in sorted(declarations(), key=lambda p: p.spec_module != spec):
        for a in p.actions:
            out.setdefault(a.spec, a.actor)
    return out


def _drop_actions() -> set[str]:
    out = set()
    for p in declarations():
        try:
            out.add(p.drop_message)
        except KeyError:
            pass
    return out


def steps_from_machine(steps: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The hook for Hypothesis's shrunk steps: a list of ``{"action", "node", "variables"}`` (the
    projected spec variables after each rule, as the stateful machine's trace recorder produces
    them) becomes the counterexample shape :func:`sequence_svg` draws. Nothing records shrunk
    steps in a results directory yet; when something does, it writes them under ``"steps"`` of a
    run and the page draws them with this function."""
    out = []
    for i, s in enumerate((s for s in steps if isinstance(s, dict)), 1):
        out.append({"index": i, "action": s.get("action"), "node": s.get("node"), "back_to": None,
                    "variables": s.get("variables") or {}})
    return out


def _layout_steps(states: list[dict[str, Any]], spec: str | None = None):
    mvar = _messages_var(states)
    nodes = _nodes(states, mvar)
    drops = _drop_actions()
    declared = _actors(spec)
    by_length = sorted(declared, key=len, reverse=True)
    class _Actors(dict):  # a TLC action named after a declared one (HandleJoinGroupMsg: HandleJoinGroup)
        def get(self, name: str, default: str = "node") -> str:  # type: ignore[override]
            if name in declared:
                return declared[name]
            for d in by_length:
                if name.startswith(d):
                    return declared[d]
            return default

    actors = _Actors()
    server = SERVER  # the lane of messages without msource/mdest: the actor that consumed one, once seen
    rows = []  # per step: (step, lane, boxes {lane: [lines]}, sends [(msg, lane)], recvs [(msg, lane, dropped)])
    prev_vars: dict[str, Any] | None = None
    prev_msgs: Counter[str] = Counter()
    extra_lanes: list[str] = []
    for st in states:
        vars_ = st.get("variables") or {}
        msgs = vars_.get(mvar, []) if mvar else []
        msgs = msgs if isinstance(msgs, list) else []
        cur = Counter(_key(m) for m in msgs)
        by_key = {_key(m): m for m in msgs}
        removed = list((prev_msgs - cur).elements())
        added = list((cur - prev_msgs).elements())
        action = st.get("action")
        dropped = action in drops
        lane = _node_name(st["node"]) if st.get("node") is not None else None
        if lane is None:
            # the receiver of a message this step took out of the network took the step
            for k in removed:
                m = json.loads(k)
                if not dropped:
                    if m.get("mdest") is not None:
                        lane = _node_name(m["mdest"])
                    else:
                        actor = actors.get(str(action), "node")
                        if actor not in ("node", "network") and server == SERVER:
                            server = actor
                        lane = server
                    break
        boxes: dict[str, list[str]] = defaultdict(list)
        if prev_vars is not None:
            for name in sorted(vars_):
                if name == mvar:
                    continue
                old, new = prev_vars.get(name), vars_[name]
                if old == new:
                    continue
                pn_old, pn_new = _per_node(old, nodes), _per_node(new, nodes)
                if pn_old is not None and pn_new is not None:
                    for n in nodes:
                        if pn_old.get(n) != pn_new.get(n):
                            boxes[n].append((name, pn_old.get(n), pn_new.get(n)))
                else:
                    boxes["\0"].append((name, old, new))
        if prev_vars is None:
            lane = nodes[0] if nodes else ""  # the initial state: no step, no box
        elif lane is None:
            changed_nodes = [n for n in boxes if n != "\0"]
            actor = actors.get(str(action), "node")
            senders = {_node_name(json.loads(k).get("msource")) for k in added if json.loads(k).get("msource") is not None}
            if len(senders) == 1 and (not changed_nodes or changed_nodes == sorted(senders)):
                lane = senders.pop()  # the node that sent what this step put into the network
            elif actor not in ("node", "network") and ("\0" in boxes or len(changed_nodes) != 1):
                lane = actor  # e.g. the controller or the coordinator, which the spec does not name
            else:
                lane = changed_nodes[0] if len(changed_nodes) == 1 else SYSTEM
        if "\0" in boxes:
            boxes[lane].extend(boxes.pop("\0"))
        if lane and lane not in nodes and lane not in extra_lanes:
            extra_lanes.append(lane)
        sends = []
        for k in added:
            m = by_key[k]
            src = _node_name(m["msource"]) if m.get("msource") is not None else (lane if prev_vars is not None else server)
            if src not in nodes and src not in extra_lanes:
                extra_lanes.append(src)
            sends.append((k, src))
        recvs = []
        for k in removed:
            m = json.loads(k)
            dst = _node_name(m["mdest"]) if m.get("mdest") is not None else server
            if dst not in nodes and dst not in extra_lanes:
                extra_lanes.append(dst)
            recvs.append((k, dst, dropped))
        rows.append((st, lane, dict(boxes), sends, recvs))
        prev_vars, prev_msgs = vars_, cur
    return nodes + extra_lanes, rows, server


def sequence_svg(states: list[dict[str, Any]], violated: str | None = None, outcome: str | None = None,
                 title: str = "", spec: str | None = None) -> str:
    """The SVG of a counterexample (see the module docstring). ``violated``: the invariant or
    property TLC reported; ``outcome``: TLC's outcome word (``invariant``, ``liveness``, ``deadlock``...)."""
    if not states:
        return "<p class='muted'>(no counterexample states recorded)</p>"
    skipped = 0
    lanes, rows, server = _layout_steps(states, spec)
    if len(rows) > MAX_STEPS:
        skipped = len(rows) - MAX_STEPS
        rows = rows[-MAX_STEPS:]
    lane_w = LANE_W if len(lanes) <= 4 else 215  # five lanes (3 brokers, a controller...) fit 1280px
    box_chars = BOX_CHARS * lane_w // LANE_W
    x = {lane: LEFT + lane_w * i + lane_w // 2 for i, lane in enumerate(lanes)}
    width = LEFT + lane_w * len(lanes) + 20
    ys: list[int] = []
    heights: list[int] = []
    y = TOP + 10
    for st, lane, boxes, sends, recvs in rows:
        lines = max([min(len(v), MAX_LINES + 1) for v in boxes.values()] or [0])
        h = max(34, 18 + lines * LINE_H + 8)
        ys.append(y)
        heights.append(h)
        y += h
    bottom = y + 10
    doc = invariant_doc(violated)
    end_text = _ending(violated, outcome, doc)
    height = bottom + 30 + 22 * len(end_text)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' class='msc' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' role='img' aria-label='message sequence diagram'>",
           f"<title>{escape(title or 'counterexample')}</title><style>{STYLE}</style>"]
    # lifelines
    for lane in lanes:
        out.append(f"<line x1='{x[lane]}' y1='{TOP - 6}' x2='{x[lane]}' y2='{bottom}' class='life'/>")
        out.append(f"<rect x='{x[lane] - 60}' y='{TOP - 40}' width='120' height='30' rx='5' class='head'/>"
                   f"<text x='{x[lane]}' y='{TOP - 20}' class='headt'><title>{escape(lane)}</title>"
                   f"{escape(_short(lane, 16))}</text>")
    if skipped:
        out.append(f"<text x='10' y='{TOP + 4}' class='muted'>({skipped} earlier steps not drawn)</text>")
    # message arrows: match each receive with the earliest unmatched send of the same message
    pending: dict[str, list[tuple[int, str]]] = defaultdict(list)
    arrows = []
    for i, (st, lane, boxes, sends, recvs) in enumerate(rows):
        for k, dst, dropped in recvs:
            if pending[k]:
                j, src = pending[k].pop(0)
            else:
                j, src = -1, None  # sent before the first drawn step
            arrows.append((k, src, j, dst, i, dropped))
        for k, src in sends:
            pending[k].append((i, src))
    for k, lst in pending.items():
        for j, src in lst:
            arrows.append((k, src, j, _node_name(json.loads(k).get("mdest")) if json.loads(k).get("mdest") is not None
                           else server, None, False))
    labels: list[str] = []
    for k, src, j, dst, i, dropped in arrows:
        m = json.loads(k)
        label = str(m.get("mtype", "message"))
        extra = [f"{f[1:]}={_short(v, 8)}" for f, v in m.items() if f in ("mepoch", "mterm", "mgeneration")]
        if extra:
            label += " (" + ", ".join(extra) + ")"
        y1 = ys[j] + 12 if j >= 0 else TOP
        if src is None:
            src = dst
        x1 = x.get(src, LEFT)
        x2 = x.get(dst, LEFT)
        cls = "msg"
        if i is None:
            y2 = min(y1 + 40, bottom)
            x2 = x1 + (x2 - x1) * 0.35
            cls = "msg inflight"
        else:
            y2 = ys[i] + 12
        if dropped:
            cls = "msg dropped"
        tip = escape(_short(m, 400))
        out.append(f"<g class='{cls}'><title>{tip}</title>"
                   f"<line x1='{x1}' y1='{y1}' x2='{x2:.0f}' y2='{y2}' marker-end='url(#arrow)'/>")
        if dropped:
            out.append(f"<text x='{x2:.0f}' y='{y2 + 5}' class='cross'>\u2715</text>")
        mx, my = (x1 + x2) / 2, (y1 + y2) / 2 - 3
        out.append("</g>")
        # drawn after the boxes, so a box never hides what a message was
        labels.append(f"<text x='{mx:.0f}' y='{my:.0f}' class='mlabel'><title>{tip}</title>{escape(label)}</text>")
    # steps and boxes
    for (st, lane, boxes, sends, recvs), y0, h in zip(rows, ys, heights):
        action = st.get("action") or "Initial state"
        idx = st.get("index", "")
        cls = "step last" if st is rows[-1][0] else "step"
        out.append(f"<text x='8' y='{y0 + 14}' class='{cls}'>{escape(str(idx))}. {escape(_short(action, 24))}</text>")
        if st.get("back_to") is not None:
            out.append(f"<text x='8' y='{y0 + 28}' class='loop'>\u21ba back to state {escape(str(st['back_to']))}</text>")
        elif st.get("action") is not None:
            out.append(f"<text x='8' y='{y0 + 28}' class='muted'>at {escape(lane)}</text>")
        for bl, lines in boxes.items():
            if not lines:
                continue
            shown = [_short(f"{name} = {_short(new, box_chars)}", box_chars) for name, _, new in lines[:MAX_LINES]]
            shown += [f"+{len(lines) - MAX_LINES} more"] if len(lines) > MAX_LINES else []
            tip = "\n".join(f"{name}: {_short(old, 300)} \u2192 {_short(new, 300)}" for name, old, new in lines)
            bx = x.get(bl, LEFT) - lane_w // 2 + 8
            bh = 8 + LINE_H * len(shown)
            out.append(f"<g class='box'><title>{escape(tip)}</title>"
                       f"<rect x='{bx}' y='{y0 + 16}' width='{lane_w - 16}' height='{bh}' rx='4'/>")
            for n, line in enumerate(shown):
                out.append(f"<text x='{bx + 6}' y='{y0 + 28 + n * LINE_H}'>{escape(line)}</text>")
            out.append("</g>")
    out.extend(labels)
    # the end, in words
    out.append(f"<line x1='0' y1='{bottom + 4}' x2='{width}' y2='{bottom + 4}' class='endline'/>")
    for n, line in enumerate(end_text):
        out.append(f"<text x='8' y='{bottom + 26 + 22 * n}' class='end'>{escape(line)}</text>")
    out.append("<defs><marker id='arrow' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' markerHeight='7' "
               "orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' fill='#0969da'/></marker></defs>")
    out.append("</svg>")
    return "".join(out)


def _ending(violated: str | None, outcome: str | None, doc: str) -> list[str]:
    if outcome in ("liveness", "temporal", "property") or (outcome and "live" in outcome):
        first = f"The property {violated or '(unnamed)'} does not hold: the behaviour above can repeat forever."
    elif outcome == "deadlock":
        first = "Deadlock: in the last state no action is enabled."
    else:
        first = f"In the last state the invariant {violated or '(unnamed)'} is false."
    return [first] + ([f"{violated} means: {doc}."] if doc and violated else [])
