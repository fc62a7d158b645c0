"""``kraft report RESULTS_DIR``: one self-contained HTML page a reviewer can read.

It reads every JSON document a ``kraft`` command wrote under RESULTS_DIR (each starts with the shared
header of kraft/outcome.py: ``command, verdict, summary, exit_code``): ``review``'s summary.json,
``check``'s check.json, ``simulate``'s and ``audit``'s summary.json (with the audit's results.json
beside it), ``conform``'s conform.json; any mix of them, at any depth. The page has

* a verdict banner and a one-screen summary in the user's words,
* model checking: spec, size, states, distinct, depth, time, verdict, the raw details folded away,
  and every counterexample as a message sequence diagram (kraft/review/msc.py),
* conformance: per trace accepted/rejected; a rejection as the trace line, the logged action and
  the spec's expectation side by side,
* audit: per invalid history the anomalies in words and a timeline (kraft/review/timeline.py).

No script, no network: inline CSS and SVG only. Every text taken from the results (file names,
histories, traces, messages) goes through :func:`e` (``html.escape``).

Exit codes (kraft/outcome.py): 0 the page was written from readable documents; 2 no document could
be read (no page), or the page was written but some file could not be read (each is named, on the
page and on stderr).
"""

from __future__ import annotations

import html
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import click

from kraft.outcome import EXIT_ERROR, EXIT_OK, HeaderError, Verdict, plural, read_header, write_document

from . import msc
from .timeline import ops_from_history, timeline_svg

__all__ = ["write_report", "build_page", "collect", "report", "e"]

COLOURS = {"passed": "#1a7f37", "clean": "#1a7f37", "ok": "#1a7f37", "accepted": "#1a7f37", "valid": "#1a7f37",
           "violation": "#cf222e", "rejected": "#cf222e", "invalid": "#cf222e", "missed": "#cf222e",
           "caught": "#1a7f37", "error": "#9a6700", "inconclusive": "#8250df", "unknown": "#8250df", "skipped": "#6e7781"}
TIMELINES_MAX = 40  # invalid histories drawn as timelines (all are listed in the table)
DIAGRAMS_OPEN = 2  # counterexample diagrams shown unfolded
MAX_FILES = 5000  # JSON files looked at under RESULTS_DIR
MAX_BYTES = 200_000_000
SIDECARS = {"results.json", "malformed.json"}  # the audit's header-less lists (read with its summary.json)


def e(x: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape(x if isinstance(x, str) else str(x), quote=True)


def _seq(x: Any) -> list[Any]:
    """A list from a document (any other value counts as no list: documents may be damaged)."""
    return x if isinstance(x, list) else []


def _mapping(x: Any) -> dict[Any, Any]:
    return x if isinstance(x, dict) else {}


def _num(x: Any) -> str:
    return f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else ("-" if x is None else e(x))


def _badge(word: Any) -> str:
    w = str(word)
    colour = COLOURS.get(w.split(" ")[0].lower(), "#57606a")
    return f"<span class='badge' style='background:{colour}'>{e(w)}</span>"


# --------------------------------------------------------------------------- reading the results

class Doc:
    """A JSON document with the kraft header, and where it came from."""

    def __init__(self, path: Path, data: dict[str, Any], verdict: Verdict):
        self.path, self.data, self.verdict = path, data, verdict
        self.command = str(data["command"])
        self.summary = str(data["summary"])


class Found:
    def __init__(self, root: Path):
        self.root = root
        self.docs: list[Doc] = []
        self.problems: list[tuple[str, str]] = []  # (file, why)
        self.seen: set[Path] = set()


def _load_json(path: Path) -> Any:
    """The JSON in ``path``; raises ValueError with ``file:line: why``."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ValueError(f"{path}: larger than {MAX_BYTES:,} bytes, not read")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not JSON (column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise ValueError(f"{path}:1: not JSON a report can read (nested too deeply)") from None


def resolve(p: str | None, root: Path) -> Path | None:
    """A path a command wrote into its JSON (relative to the directory it ran in), found again:
    as written, under RESULTS_DIR, or under one of RESULTS_DIR's parents."""
    if not p or not isinstance(p, str):
        return None
    cand = Path(p)
    tries = [cand] if cand.is_absolute() else [cand, root / cand, *[a / cand for a in root.resolve().parents]]
    parts = cand.parts
    for k in range(1, len(parts)):
        tries.append(root / Path(*parts[k:]))
    for t in tries:
        try:
            if t.exists():
                return t
        except OSError:
            continue
    return None


def _add(found: Found, path: Path, *, named: bool) -> None:
    try:
        real = path.resolve()
    except OSError:
        real = path
    if real in found.seen:
        return
    found.seen.add(real)
    try:
        data = _load_json(path)
    except ValueError as exc:
        found.problems.append((str(path), str(exc)))
        return
    try:
        _, verdict, _, _ = read_header(data, str(path))
    except HeaderError as exc:
        if named:  # a file kraft writes, or one a review names: it must carry the header
            found.problems.append((str(path), f"{exc}"))
        return
    found.docs.append(Doc(path, data, verdict))


def collect(root: Path) -> Found:
    """Every kraft document under ``root`` (and the stage outputs a review names)."""
    found = Found(root)
    files = []
    for i, p in enumerate(sorted(root.rglob("*.json"))):
        if i >= MAX_FILES:
            found.problems.append((str(root), f"more than {MAX_FILES} JSON files: the rest were not read"))
            break
        if p.name in SIDECARS or p.name == "report.json" or ".parquet" in str(p):
            continue
        files.append(p)
    for p in files:
        _add(found, p, named=p.name in ("summary.json", "check.json", "conform.json"))
    for doc in list(found.docs):
        if doc.command == "review" and isinstance(doc.data.get("stages"), list):
            for st in doc.data["stages"]:
                out = st.get("output") if isinstance(st, dict) else None
                rp = resolve(out, root)
                if rp is not None:
                    _add(found, rp, named=True)
    # a per-seed simulator summary is shown by its parent's document
    return found


# --------------------------------------------------------------------------- the page

CSS = """
body{font:15px/1.45 system-ui,-apple-system,sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:1280px;margin:0 auto;padding:0 24px 48px;box-sizing:border-box}
h1{font-size:24px;margin:20px 0 6px}h2{font-size:20px;margin:32px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:16px;margin:18px 0 6px}
.banner{padding:14px 24px;color:#fff;font-size:18px}.banner b{font-size:22px;margin-right:12px;text-transform:uppercase}
.banner.clean{background:#1a7f37}.banner.violation{background:#cf222e}.banner.error{background:#9a6700}
.banner.inconclusive{background:#8250df}
.summary{list-style:none;padding:0;margin:10px 0}.summary li{padding:3px 0}
.summary .k{display:inline-block;min-width:150px;font-weight:600}
table{border-collapse:collapse;margin:6px 0;font-size:14px;display:block;overflow-x:auto;max-width:100%}
td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.nw{white-space:nowrap}.badge{color:#fff;border-radius:10px;padding:1px 8px;font-size:12px;font-weight:600;white-space:nowrap}
details{margin:6px 0}summary{cursor:pointer}
.scroll{overflow:auto;max-width:100%;border:1px solid #eaeef2;border-radius:6px;margin:6px 0}
pre,code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:24em;white-space:pre-wrap;word-break:break-all;margin:4px 0}
.muted{color:#6e7781}.problem{color:#9a6700}
.side{display:grid;grid-template-columns:1fr 1fr 1fr;gap:10px;margin:8px 0}
.side>div{border:1px solid #d0d7de;border-radius:6px;padding:8px;min-width:0}
.side h4{margin:0 0 6px;font-size:13px;text-transform:uppercase;color:#57606a}
.evidence{margin:4px 0 4px 18px}
.zoo td{min-width:110px;max-width:260px;font-size:13px;overflow-wrap:anywhere}.zd{font-size:11px;color:#57606a}
.legend span{display:inline-block;padding:0 6px;margin-right:8px;border-radius:3px;font-size:12px}
"""


def build_page(found: Found) -> str:
    by: dict[str, list[Doc]] = defaultdict(list)
    # the documents a zoo wrote under its own directory (its TLC runs, simulations, conformance
    # and audit) are the zoo's evidence: shown after the zoo's matrix, not as checks of their own
    zoo_dirs = [d.path.parent for d in found.docs if d.command == "zoo"]
    evidence: dict[str, list[Doc]] = defaultdict(list)
    # a multi-seed simulation writes a summary per seed beside the combined one: keep the combined
    sims = {d.path.parent for d in found.docs if d.command == "simulate"}
    for d in found.docs:
        if d.command == "simulate" and d.path.parent.parent in sims:
            continue
        if d.command != "zoo" and any(z in d.path.parents for z in zoo_dirs):
            evidence[d.command].append(d)
        else:
            by[d.command].append(d)
    reviews = by.pop("review", [])
    rows = _summary_rows(by, reviews, found)
    if reviews:
        verdict, sentence = reviews[0].verdict, reviews[0].summary
    else:
        verdict = Verdict.worst((d.verdict for ds in by.values() for d in ds), empty=Verdict.ERROR)
        sentence = "; ".join(f"{k.lower()}: {v}" for k, v in rows[:4]) or "nothing readable"
    if found.problems and verdict is Verdict.CLEAN:
        verdict = Verdict.ERROR
        sentence += f"; {plural(len(found.problems), 'file')} could not be read"
    parts = [f"<div class='banner {verdict.value}'><b>{e(verdict.value)}</b>{e(sentence)}</div><main>",
             f"<h1>kraft report</h1><p class='muted'>{e(found.root)} \u00b7 generated "
             f"{e(time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()))}</p>",
             "<ul class='summary'>" + "".join(f"<li><span class='k'>{e(k)}</span>{e(v)}</li>" for k, v in rows)
             + "</ul>"]
    if found.problems:
        parts.append("<h2 id='unreadable'>Files that could not be read</h2><ul>" + "".join(
            f"<li class='problem'><code>{e(f)}</code>: {e(why)}</li>" for f, why in found.problems) + "</ul>")
    for r in reviews:
        parts.append(_review(r))
    if by.get("zoo"):
        parts.append(_zoo(by.pop("zoo")))
        parts.append(_zoo_evidence(evidence, found.root))
    if by.get("check"):
        parts.append(_checks(by.pop("check"), found.root))
    if by.get("simulate"):
        parts.append(_simulate(by.pop("simulate")))
    if by.get("conform"):
        parts.append(_conform(by.pop("conform"), found.root))
    if by.get("audit"):
        parts.append(_audit(by.pop("audit"), found.root))
    if by.get("audit-metadata"):
        parts.append(_audit_metadata(by.pop("audit-metadata")))
    for cmd, docs in sorted(by.items()):
        parts.append(f"<h2>{e(cmd)}</h2>" + "".join(
            f"<p>{_badge(d.verdict.value)} {e(d.summary)} <span class='muted'>({e(d.path)})</span></p>"
            f"<details><summary>raw JSON</summary><pre>{e(json.dumps(d.data, indent=1, default=str)[:20000])}</pre></details>"
            for d in docs))
    parts.append("</main>")
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>kraft report: {e(verdict.value)}</title><style>{CSS}</style></head><body>"
            + "".join(parts) + "</body></html>")


def _summary_rows(by: dict[str, list[Doc]], reviews: list[Doc], found: Found) -> list[tuple[str, str]]:
    rows = []
    runs = [r for d in by.get("check", []) for r in _seq(d.data.get("runs")) if isinstance(r, dict)]
    plain = [r for r in runs if not r.get("variant")]
    variants = [r for r in runs if r.get("variant")]
    if plain:
        distinct = sum(r.get("distinct") or 0 for r in plain if isinstance(r.get("distinct"), int))
        bad = [r for r in plain if r.get("status") not in ("ok", None) or r.get("violated")]
        rows.append(("Model checking", f"{plural(len(plain), 'model')}, {distinct:,} distinct states, "
                     + ("no violation" if not bad else f"{len(bad)} with a violation or error")))
    if variants:
        caught = sum(1 for r in variants if str(r.get("verdict", "")).startswith("caught"))
        rows.append(("Bug variants", f"{caught} of {plural(len(variants), 'variant')} caught by TLC"
                     + (", all caught" if caught == len(variants) else "")))
    for d in by.get("zoo", []):
        rows.append(("Bug zoo", d.summary))
    for d in by.get("simulate", []):
        rows.append(("Simulation", d.summary))
    for d in by.get("conform", []):
        t = _mapping(d.data.get("totals"))
        if isinstance(t, dict) and isinstance(t.get("traces"), int):
            words = (f"{plural(t['traces'], 'trace')}, {_num(t.get('events'))} events, "
                     + ("all accepted" if t.get("rejected") == 0 and t.get("errors") == 0
                        else f"{t.get('rejected', 0)} rejected, {t.get('errors', 0)} errors"))
        else:
            words = d.summary
        rows.append(("Conformance", words))
    for d in by.get("audit", []):
        h, ops, inv = d.data.get("histories"), d.data.get("ops"), d.data.get("invalid")
        if isinstance(h, int) and isinstance(ops, int):
            words = f"{plural(h, 'history', 'histories')}, {ops:,} ops, " + (
                "no anomaly" if not inv else f"{inv} invalid ({', '.join(sorted(str(k) for k in _mapping(d.data.get('violations'))))})")
        else:
            words = d.summary
        rows.append(("Audit", words))
    for d in by.get("audit-metadata", []):
        rows.append(("Metadata logs", d.summary))
    if reviews and not rows:
        rows.append(("Review", reviews[0].summary))
    if found.problems:
        rows.append(("Unreadable", ", ".join(f for f, _ in found.problems[:5])))
    return rows


def _review(doc: Doc) -> str:
    rows = []
    for st in _seq(doc.data.get("stages")):
        if not isinstance(st, dict):
            continue
        secs = st.get("seconds")
        rows.append(f"<tr><td>{e(st.get('name', '?'))}</td><td>{e(st.get('what', ''))}</td>"
                    f"<td>{_badge(st.get('status', '?'))}</td>"
                    f"<td class='n'>{f'{secs:.1f}s' if isinstance(secs, (int, float)) else '-'}</td>"
                    f"<td>{e(st.get('detail') or '')}</td></tr>")
    return (f"<h2 id='review'>Review stages</h2><p>{_badge(doc.verdict.value)} {e(doc.summary)}</p>"
            "<table><tr><th>stage</th><th>what</th><th>verdict</th><th>time</th><th>what it found</th></tr>"
            + "".join(rows) + "</table>")


def _checks(docs: list[Doc], root: Path, title: str = "Model checking", anchor: str = "model-checking") -> str:
    runs = [(d, r) for d in docs for r in _seq(d.data.get("runs")) if isinstance(r, dict)]
    head = "<tr><th>spec</th><th>size</th><th>variant</th><th>states</th><th>distinct</th><th>depth</th><th>time</th><th>verdict</th><th></th></tr>"
    rows = []
    diagrams = []
    for i, (d, r) in enumerate(runs):
        secs = r.get("seconds")
        raw = {k: r.get(k) for k in ("cfg", "mode", "expected", "outcome", "violated", "status", "note", "errors",
                                     "error_location", "exit_code", "command") if r.get(k) not in (None, "", [])}
        raw["written to"] = str(d.path)
        cex = r.get("counterexample") if isinstance(r.get("counterexample"), list) else []
        link = f"<a href='#{anchor}-cex-{i}'>{len(cex)} steps</a>" if cex else ""
        rows.append(f"<tr><td>{e(r.get('spec', '?'))}</td><td>{e(r.get('size', ''))}</td><td>{e(r.get('variant') or '')}</td>"
                    f"<td class='n'>{_num(r.get('states'))}</td>"
                    f"<td class='n'>{'-' if r.get('mode') == 'simulate' else _num(r.get('distinct'))}</td>"
                    f"<td class='n'>{_num(r.get('depth'))}</td>"
                    f"<td class='n'>{f'{secs:.1f}s' if isinstance(secs, (int, float)) else '-'}</td>"
                    f"<td>{_badge(r.get('verdict', '?'))} {link}</td>"
                    f"<td class='nw'><details><summary>raw</summary><pre>{e(json.dumps(raw, indent=1, default=str)[:8000])}</pre>"
                    "</details></td></tr>")
        steps = cex or (msc.steps_from_machine(r["steps"]) if isinstance(r.get("steps"), list) else [])
        if steps:
            label = f"{r.get('spec', '?')} ({r.get('size', '')})" + (f", variant {r['variant']}" if r.get("variant") else "")
            what = r.get("violated") or r.get("outcome") or "violation"
            try:
                svg = msc.sequence_svg(steps, r.get("violated"), r.get("outcome"), label, spec=r.get("module") or r.get("spec"))
            except Exception as exc:  # noqa: BLE001 - one odd counterexample must not take the page down
                svg = f"<p class='problem'>diagram not drawn: {e(type(exc).__name__)}: {e(exc)}</p>"
            doc_line = msc.invariant_doc(r.get("violated"))
            opened = " open" if len(diagrams) < DIAGRAMS_OPEN else ""
            diagrams.append(
                f"<details class='cex' id='{anchor}-cex-{i}'{opened}><summary><b>{e(label)}</b>: {e(what)} violated after "
                f"{plural(max(0, len(steps) - 1), 'step')}" + (f" \u2014 {e(doc_line)}" if doc_line else "")
                + f"</summary><div class='scroll'>{svg}</div></details>")
    out = [f"<h2 id='{anchor}'>{e(title)}</h2>"]
    lines = [f"<p>{_badge(d.verdict.value)} {e(d.summary)}</p>" for d in docs]
    out += lines if len(lines) <= 3 else [f"<details><summary>{len(lines)} check documents</summary>{''.join(lines)}</details>"]
    out.append(f"<table>{head}{''.join(rows)}</table>")
    if diagrams:
        out.append("<h3>Counterexamples</h3><p class='muted'>One lifeline per node; an arrow per message from the "
                   "step that sent it to the step that received it (dashed: still in flight; a cross: lost); a box "
                   "per node whose variables changed, with only those (hover for old \u2192 new).</p>")
        out += diagrams
    return "".join(out)


ZOO_COLOURS = {"caught": ("#dafbe1", "#1a7f37"), "clean": ("#dafbe1", "#1a7f37"), "missed": ("#ffebe9", "#cf222e"),
               "fired": ("#ffebe9", "#cf222e"), "error": ("#fff8c5", "#9a6700"),
               "inconclusive": ("#fbefff", "#8250df"), "not observable": ("#f6f8fa", "#57606a"),
               "not available": ("#f6f8fa", "#57606a")}


def _zoo(docs: list[Doc]) -> str:
    """The bug zoo (kraft/review/zoo/): a row per variant (and the control), a coloured cell per check."""
    out = ["<h2 id='zoo'>Bug zoo</h2>"]
    for d in docs:
        out.append(f"<p>{_badge(d.verdict.value)} {e(d.summary)}</p>")
        checks = [c for c in _seq(d.data.get("checks")) if isinstance(c, dict) and "id" in c]
        head = "".join(f"<th>{e(c.get('title', c['id']))}</th>" for c in checks)
        rows = []
        for r in _seq(d.data.get("rows")):
            if not isinstance(r, dict):
                continue
            cells = _mapping(r.get("cells"))
            tds = []
            for c in checks:
                cell = _mapping(cells.get(c["id"]))
                status = str(cell.get("status", ""))
                bg, fg = ZOO_COLOURS.get(status, ("#fff", "#1f2328"))
                secs = cell.get("seconds")
                size = cell.get("size")
                bits = [f"{secs:.1f}s" if isinstance(secs, (int, float)) else "",
                        "" if size is None else f"line {size}" if cell.get("unit") == "line"
                        else f"{size} {cell.get('unit', '')}".strip()]
                tds.append(f"<td style='background:{bg}' title='{e(cell.get('detail', ''))}'>"
                           f"<b style='color:{fg}'>{e(status)}</b><br><span class='muted'>{e(' · '.join(b for b in bits if b))}"
                           f"</span><div class='zd'>{e(str(cell.get('detail', ''))[:140])}</div></td>")
            name = "(control)" if r.get("control") else str(r.get("variant"))
            rows.append(f"<tr><td class='nw'><b>{e(r.get('spec', ''))}</b></td><td title='{e(r.get('doc', ''))}'>{e(name)}"
                        f"<div class='zd'>{e(r.get('violates') or '')}</div></td>{''.join(tds)}</tr>")
        out.append(f"<table class='zoo'><tr><th>spec</th><th>variant</th>{head}</tr>{''.join(rows)}</table>")
        errs = [x for x in _seq(d.data.get("errors")) if x]
        if errs:
            out.append("<ul>" + "".join(f"<li class='problem'>{e(x)}</li>" for x in errs) + "</ul>")
    return "".join(out)


def _zoo_evidence(evidence: dict[str, list[Doc]], root: Path) -> str:
    """What the zoo's cells rest on: each variant's TLC counterexample, its traces' rejections and
    its histories' anomalies (the zoo's simulations are summarised by the matrix itself)."""
    out = []
    if evidence.get("check"):
        out.append(_checks(evidence["check"], root, "Bug zoo: TLC on each variant", "zoo-tlc"))
    if evidence.get("conform"):
        out.append(_conform(evidence["conform"], root, "Bug zoo: each variant's traces against the correct spec",
                            "zoo-conform"))
    if evidence.get("audit"):
        out.append(_audit(evidence["audit"], root, "Bug zoo: each variant's client histories", "zoo-audit"))
    return "".join(out)


def _simulate(docs: list[Doc]) -> str:
    out = ["<h2 id='simulation'>Simulation</h2>"]
    for d in docs:
        out.append(f"<p>{_badge(d.verdict.value)} {e(d.summary)} <span class='muted'>({e(d.path)})</span></p>")
        res = d.data.get("results")
        if isinstance(res, list) and res and all(isinstance(x, dict) for x in res):
            keys = [k for k in res[0] if not isinstance(res[0][k], (list, dict))][:8]
            out.append("<table><tr>" + "".join(f"<th>{e(k)}</th>" for k in keys) + "</tr>" + "".join(
                "<tr>" + "".join(f"<td>{_badge(x.get(k)) if k == 'verdict' else _num(x.get(k))}</td>" for k in keys)
                + "</tr>" for x in res[:200]) + "</table>")
    return "".join(out)


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n] + f" \u2026 ({len(s) - n:,} more characters)"


def _trace_line(path: Path | None, line: Any) -> str | None:
    if path is None or not isinstance(line, int) or line < 1:
        return None
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for n, text in enumerate(f, 1):
                if n == line:
                    return text.rstrip("\n")
    except OSError:
        return None
    return None


def _conform(docs: list[Doc], root: Path, title: str = "Conformance", anchor: str = "conformance") -> str:
    out = [f"<h2 id='{anchor}'>{e(title)}</h2>"]
    for d in docs:
        out.append(f"<p>{_badge(d.verdict.value)} {e(d.summary)}</p>")
        res = [r for r in _seq(d.data.get("results")) if isinstance(r, dict)]
        out.append("<table><tr><th>trace</th><th>spec</th><th>variant</th><th>events</th><th>verdict</th><th>where</th></tr>")
        for r in res:
            where = f"line {r['line']}: {r.get('action') or ''}" if r.get("line") else ""
            out.append(f"<tr><td><code>{e(r.get('trace', '?'))}</code></td><td>{e(r.get('spec') or '')}</td>"
                       f"<td>{e(r.get('variant') or '')}</td><td class='n'>{_num(r.get('events'))}</td>"
                       f"<td>{_badge(r.get('verdict', '?'))}</td><td>{e(where)}</td></tr>")
        out.append("</table>")
        for r in res:
            if r.get("verdict") == "accepted":
                continue
            out.append(_rejection(r, root))
    return "".join(out)


def _rejection(r: dict[str, Any], root: Path) -> str:
    path = resolve(r.get("trace"), root)
    raw = _trace_line(path, r.get("line"))
    where = f"{r.get('trace', '?')}:{r.get('line')}" if r.get("line") else str(r.get("trace", "?"))
    trace_col = f"<code>{e(where)}</code>" + (
        f"<pre>{e(_cut(raw, 700))}</pre>" if raw is not None else "<p class='muted'>(trace file not found from here)</p>")
    logged = [f"<p><b>{e(r.get('action') or '(no action)')}</b> at node <b>{e(r.get('node'))}</b></p>"]
    if r.get("args") is not None:
        logged.append(f"<pre>{e(json.dumps(r['args'], indent=1, default=str)[:3000])}</pre>")
    spec = []
    mism = [m for m in _seq(r.get("mismatches")) if isinstance(m, dict)]
    for m in mism:
        logged.append(f"<p>logged <code>{e(m.get('var'))}</code> at {e(m.get('differs_at', ''))}:</p>"
                      f"<pre>{e(str(m.get('trace_at', ''))[:2000])}</pre>")
        spec.append(f"<p>spec's <code>{e(m.get('var'))}</code> at {e(m.get('differs_at', ''))}:</p>"
                    f"<pre>{e(str(m.get('spec_at', ''))[:2000])}</pre>")
    if r.get("successors") is not None:
        spec.append(f"<p class='muted'>{_num(r.get('spec_states'))} spec state(s) before the step; "
                    f"{_num(r.get('successors'))} successor(s) of the logged action</p>")
    guards = r.get("guards") if isinstance(r.get("guards"), dict) else {}
    if guards:
        spec.append("<table><tr><th>guard</th><th>holds</th></tr>" + "".join(
            f"<tr><td>{e(g)}</td><td>{e(v)}</td></tr>" for g, v in guards.items()) + "</table>")
    if not spec:
        spec.append(f"<p>{e(r.get('kind') or r.get('verdict'))}</p>")
    return (f"<h3>{e(r.get('trace', '?'))}: {e(r.get('verdict'))}"
            + (f" at line {e(r.get('line'))}" if r.get("line") else "") + "</h3>"
            f"<p>{e(_cut(str(r.get('message', '')), 400))}</p>"
            "<div class='side'>"
            f"<div><h4>Trace line</h4>{trace_col}</div>"
            f"<div><h4>Logged action</h4>{''.join(logged)}</div>"
            f"<div><h4>The spec expects</h4>{''.join(spec)}</div></div>")


KIND_WORDS = {
    "nonlinearizable": "no order of the operations, consistent with real time, explains what the clients saw",
    "inconsistent-offsets": "one offset of a key holds different values",
    "duplicate": "one value appears at several offsets of a key",
    "G1a": "a poll read a value whose send failed (aborted read)",
    "lost-write": "an acknowledged send below the highest offset read was never read",
    "poll-skip": "a consumer's poll skipped over offsets",
    "nonmonotonic-poll": "a consumer's poll went back in offsets",
    "nonmonotonic-send": "a producer's sends went back in offsets",
    "precommitted-read": "an op read a value it sent itself before commit",
    "unseen": "acknowledged sends that no poll ever read (Jepsen's :unseen; informational only under --allow-unseen)",
    "metadata-divergence": "two nodes hold different metadata records at one offset",
}
_OP_KEYS = ("op", "ops", "writer", "reader", "index", "completion_index")


def _op_ids(ev: Any, out: set[int]) -> set[int]:
    if isinstance(ev, dict):
        for k, v in ev.items():
            if k in _OP_KEYS and isinstance(v, int) and not isinstance(v, bool):
                out.add(v)
            elif k in _OP_KEYS and isinstance(v, list):
                out.update(x for x in v if isinstance(x, int) and not isinstance(x, bool))
            elif isinstance(v, dict):
                _op_ids(v, out)
    return out


def _evidence_words(a: dict[str, Any]) -> str:
    kind, ev = str(a.get("kind")), a.get("evidence")
    key = f" (key {a['key']})" if a.get("key") is not None else ""
    head = f"<b>{e(kind)}</b>{e(key)}: {e(KIND_WORDS.get(kind, ''))}"
    if not isinstance(ev, dict):
        return head
    if kind == "nonlinearizable":
        items = [f"<li>{e(ev.get('explanation', ''))}</li>"]
        prefix = _seq(ev.get("linearized_prefix"))
        if isinstance(prefix, list):
            tail = "; ".join(str(p.get("call", "")) for p in prefix[-5:] if isinstance(p, dict))
            items.append(f"<li>longest linearizable prefix: <b>{_num(ev.get('prefix_length'))} ops</b>"
                         + (f"; the last: <code>{e(tail)}</code>" if tail else "") + "</li>")
        so = ev.get("stuck_op")
        if isinstance(so, dict):
            items.append(f"<li>stuck op: <b>#{e(so.get('index'))}</b> by process {e(so.get('process'))}: "
                         f"<code>{e(so.get('call', ''))}</code></li>")
        cands = [c for c in _seq(ev.get("candidates")) if isinstance(c, dict)]
        if cands:
            items.append("<li>could have come next: " + "; ".join(
                f"<code>{e(c.get('call', ''))}</code> ({'accepted' if c.get('accepted') else 'refused'} by the model)"
                for c in cands[:6]) + ("; \u2026" if len(cands) > 6 else "") + "</li>")
        return head + f"<ul class='evidence'>{''.join(items)}</ul>"
    fields = "; ".join(f"{k} = {json.dumps(v, default=str)[:200]}" for k, v in ev.items())
    return head + f" <span class='muted'>{e(fields[:800])}</span>"


def _audit(docs: list[Doc], root: Path, title: str = "Audit", anchor: str = "audit") -> str:
    out = [f"<h2 id='{anchor}'>{e(title)}</h2>"]
    drawn = 0
    for d in docs:
        out.append(f"<p>{_badge(d.verdict.value)} {e(d.summary)}</p>")
        res_path = d.path.parent / "results.json"
        try:
            results = _load_json(res_path) if res_path.exists() else []
        except ValueError as exc:
            out.append(f"<p class='problem'>{e(exc)}</p>")
            continue
        results = [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []
        if not results:
            out.append("<p class='muted'>(no per-history results.json beside it)</p>")
            continue
        rows = []
        for r in results:
            kinds = sorted({str(a.get("kind")) for a in _seq(r.get("anomalies")) if isinstance(a, dict)})
            v = r.get("valid")
            word = "valid" if v is True else "invalid" if v is False else "unknown"
            rows.append(f"<tr><td><code>{e(r.get('history', '?'))}</code></td><td>{e(r.get('model') or '')}</td>"
                        f"<td class='n'>{_num(r.get('ops'))}</td><td>{_badge(word)}</td><td>{e(', '.join(kinds))}</td></tr>")
        out.append("<details" + (" open" if len(rows) <= 50 else "") + f"><summary>{plural(len(rows), 'history', 'histories')}"
                   "</summary><table><tr><th>history</th><th>model</th><th>ops</th><th>verdict</th><th>anomalies</th></tr>"
                   + "".join(rows) + "</table></details>")
        invalid = [r for r in results if r.get("valid") is False]
        if invalid:
            out.append("<p class='legend'>Timelines: one lane per process, a bar per op from invocation to completion. "
                       "<span style='background:#ffd7d5'>anomaly</span><span style='background:#d1f0d8'>linearized "
                       "prefix</span><span style='background:#fff1d6'>info / never completed</span>"
                       "<span style='background:#eaeef2'>failed</span></p>")
        for r in invalid:
            if drawn >= TIMELINES_MAX:
                out.append(f"<p class='muted'>{len(invalid) - TIMELINES_MAX} more invalid histories are in the table "
                           f"above (timelines are drawn for the first {TIMELINES_MAX}).</p>")
                break
            drawn += 1
            out.append(_history(r, root))
    return "".join(out)


def _audit_metadata(docs: list[Doc]) -> str:
    """One row per metadata log directory: what was replayed, unclean elections, violations."""
    out = ["<h2 id='audit-metadata'>Metadata logs</h2>"]
    for d in docs:
        out.append(f"<p>{_badge(d.verdict.value)} {e(d.summary)}</p>")
        dirs = [r for r in _seq(d.data.get("directories")) if isinstance(r, dict)]
        rows = []
        for r in dirs:
            found = r.get("violations_by_invariant") if isinstance(r.get("violations_by_invariant"), dict) else {}
            err = r.get("error") if isinstance(r.get("error"), dict) else {}
            why = r.get("reason") or err.get("why") or ""
            rows.append(f"<tr><td><code>{e(r.get('directory', '?'))}</code></td><td>{_badge(r.get('verdict'))}</td>"
                        f"<td class='n'>{_num(r.get('records'))}</td><td class='n'>{_num(r.get('unclean_election_count'))}</td>"
                        f"<td>{e(', '.join(f'{k} {v}' for k, v in sorted(found.items())))}</td><td>{e(why)}</td></tr>")
        if rows:
            out.append("<details" + (" open" if len(rows) <= 50 else "") + f"><summary>{plural(len(rows), 'directory', 'directories')}"
                       "</summary><table><tr><th>directory</th><th>verdict</th><th>records</th><th>unclean elections</th>"
                       "<th>violations</th><th>unreadable / nothing checked</th></tr>" + "".join(rows) + "</table></details>")
    return "".join(out)


def _history(r: dict[str, Any], root: Path) -> str:
    anomalies = [a for a in _seq(r.get("anomalies")) if isinstance(a, dict)]
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in anomalies:
        by_kind[str(a.get("kind"))].append(a)
    words = []
    bad: set[int] = set()
    prefix: set[int] = set()
    stuck: set[int] = set()
    for kind, lst in by_kind.items():
        for a in lst[:4]:
            words.append(f"<li>{_evidence_words(a)}</li>")
        if len(lst) > 4:
            words.append(f"<li class='muted'>\u2026 {len(lst) - 4} more {e(kind)} anomalies in results.json</li>")
        for a in lst:
            ev = a.get("evidence")
            if kind == "nonlinearizable" and isinstance(ev, dict):
                for p in _seq(ev.get("linearized_prefix")):
                    _op_ids(p, prefix)
                if isinstance(ev.get("stuck_op"), dict):
                    _op_ids(ev["stuck_op"], stuck)
                for p in _seq(ev.get("impossible_ops")):
                    _op_ids(p, bad)
            elif kind not in ("unseen",):
                _op_ids(ev, bad)
    path = resolve(r.get("history"), root)
    if r.get("model") == "kraft-metadata":
        picture = "<p class='muted'>(a simulator trace checked for metadata agreement: no client timeline)</p>"
    elif path is None:
        picture = "<p class='muted'>(history file not found from here: no timeline)</p>"
    else:
        try:
            ops = ops_from_history(str(path))
            svg, note = timeline_svg(ops, bad, prefix, stuck, str(r.get("history")))
            picture = (f"<p class='muted'>{e(note)}</p>" if note else "") + f"<div class='scroll'>{svg}</div>"
        except Exception as exc:  # noqa: BLE001 - the history's reader names the problem; the page goes on
            picture = f"<p class='problem'>timeline not drawn: {e(exc)}</p>"
    return (f"<h3><code>{e(r.get('history', '?'))}</code> ({e(r.get('model') or '?')}, {_num(r.get('ops'))} ops)</h3>"
            f"<ul>{''.join(words)}</ul>{picture}")


# --------------------------------------------------------------------------- the command

def write_report(out: Path) -> Path:
    """Write ``out/report.html`` from the documents under ``out`` (used by ``kraft review``)."""
    found = collect(out)
    path = out / "report.html"
    write_document(path, build_page(found))
    return path


@click.command()
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False), default="results")
def report(results_dir: str) -> None:
    """Write RESULTS_DIR/report.html: one page of what review, check, conform, audit and simulate
    wrote under RESULTS_DIR. Exit 0 when written; 2 when nothing could be read or a file could not
    be read (the page then names it)."""
    out = Path(results_dir)
    found = collect(out)
    for f, why in found.problems:
        click.echo(f"kraft report: {why}", err=True)
    if not found.docs:
        if not found.problems:
            click.echo(f"kraft report: no kraft results (summary.json, check.json, conform.json with the kraft header) "
                       f"under {out}; run `kraft review --out {out}` first", err=True)
        else:
            click.echo(f"kraft report: nothing readable under {out}: no page written", err=True)
        sys.exit(EXIT_ERROR)
    page = out / "report.html"
    try:
        write_document(page, build_page(found))
    except OSError as exc:
        click.echo(f"kraft report: cannot write {page}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_ERROR)
    counts = ", ".join(f"{n} {c}" for c, n in sorted(_count(d.command for d in found.docs).items()))
    click.echo(f"{page} ({counts})")
    sys.exit(EXIT_ERROR if found.problems else EXIT_OK)


def _count(xs: Iterable[str]) -> dict[str, int]:
    c: dict[str, int] = defaultdict(int)
    for x in xs:
        c[x] += 1
    return c
