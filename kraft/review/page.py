"""``kraft report RESULTS_DIR``: one self-contained HTML page of everything ``kraft review`` found.

It reads ``RESULTS_DIR/summary.json`` (the review's document) and each stage's JSON document; every
document starts with the shared header (kraft/outcome.py), whose ``summary`` heads the stage's
section. Exit codes: 0 the page was written, 2 no ``summary.json`` (or an unreadable one).
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path
from typing import Any

import click

from kraft.outcome import EXIT_ERROR, HEADER_FIELDS

COLOURS = {"passed": "#1a7f37", "violation": "#cf222e", "error": "#9a6700", "inconclusive": "#8250df",
           "skipped": "#6e7781"}


def write_report(out: Path) -> Path:
    """Render one self-contained HTML page from summary.json and the stages' JSON files."""
    summary = json.loads((out / "summary.json").read_text())
    rows = []
    sections = []
    for st in summary["stages"]:
        colour = COLOURS.get(st["status"], "#000")
        rows.append(
            f"<tr><td><a href='#{html.escape(st['name'])}'>{html.escape(st['name'])}</a></td>"
            f"<td>{html.escape(st['what'])}</td>"
            f"<td style='color:{colour};font-weight:bold'>{html.escape(st['status'])}</td>"
            f"<td>{st['seconds']:.1f}s</td><td>{html.escape(st['detail'] or '')}</td></tr>")
        body = ""
        if st.get("output"):
            try:
                data = json.loads(Path(st["output"]).read_text())
                body = _document(data)
            except (OSError, ValueError):
                body = "<p>(output unreadable)</p>"
        log = ""
        if st.get("log") and Path(st["log"]).exists():
            text = Path(st["log"]).read_text(errors="replace")
            log = f"<details><summary>log</summary><pre>{html.escape(text[-20000:])}</pre></details>"
        sections.append(f"<h2 id='{html.escape(st['name'])}'>{html.escape(st['name'])}</h2>{body}{log}")
    overall = ""
    if isinstance(summary.get("summary"), str):
        colour = COLOURS.get({"clean": "passed"}.get(summary.get("verdict"), summary.get("verdict", "")), "#000")
        overall = (f"<p style='font-size:120%'><b style='color:{colour}'>{html.escape(str(summary.get('verdict')))}"
                   f"</b>: {html.escape(summary['summary'])}</p>")
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>kraft review</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse}}
td,th{{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top;font-size:14px}}
pre{{background:#f6f8fa;padding:1em;overflow:auto;max-height:30em}}</style></head><body>
<h1>kraft review</h1><p>generated {html.escape(summary['generated'])}</p>{overall}
<table><tr><th>stage</th><th>what</th><th>verdict</th><th>time</th><th>detail</th></tr>{''.join(rows)}</table>
{''.join(sections)}</body></html>"""
    path = out / "report.html"
    path.write_text(page)
    return path


def _document(data: Any) -> str:
    """A stage's document: its header's sentence, then its rows (``runs``/``results``) as a table,
    or the rest of the JSON."""
    head = ""
    if isinstance(data, dict) and all(k in data for k in HEADER_FIELDS):
        head = (f"<p><code>kraft {html.escape(str(data['command']))}</code>: <b>{html.escape(str(data['verdict']))}"
                f"</b> (exit {html.escape(str(data['exit_code']))}): {html.escape(str(data['summary']))}</p>")
        data = {k: v for k, v in data.items() if k not in HEADER_FIELDS}
    return head + _json_table(data)


def _json_table(data: Any, limit: int = 200) -> str:
    rows = data if isinstance(data, list) else (data.get("runs") or data.get("results")) if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        return f"<pre>{html.escape(json.dumps(data, indent=1, default=str)[:20000])}</pre>"
    keys: list[str] = []
    for r in rows[:limit]:
        for k, v in r.items():
            if k not in keys and not isinstance(v, (list, dict)):
                keys.append(k)
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r.get(k, '')))}</td>" for k in keys) + "</tr>" for r in rows[:limit])
    more = f"<p>... {len(rows) - limit} more rows in the JSON</p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


@click.command()
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False), default="results")
def report(results_dir: str) -> None:
    """Write RESULTS_DIR/report.html: one page of everything `kraft review` found."""
    out = Path(results_dir)
    if not (out / "summary.json").exists():
        click.echo(f"kraft report: {out / 'summary.json'} not found (run `kraft review --out {out}` first)", err=True)
        sys.exit(EXIT_ERROR)
    summary = out / "summary.json"
    try:
        doc = json.loads(summary.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        click.echo(f"kraft report: {summary}:{exc.lineno}: not JSON (column {exc.colno}: {exc.msg})", err=True)
        sys.exit(EXIT_ERROR)
    except (OSError, UnicodeDecodeError, RecursionError) as exc:
        click.echo(f"kraft report: {summary}: cannot read it ({exc.__class__.__name__}: {exc})", err=True)
        sys.exit(EXIT_ERROR)
    if not isinstance(doc, dict) or doc.get("command") != "review" or not isinstance(doc.get("stages"), list):
        what = (f"it was written by `kraft {doc['command']}`" if isinstance(doc, dict) and isinstance(
            doc.get("command"), str) and doc.get("command") != "review" else "it has no 'stages' list")
        click.echo(f"kraft report: {summary}:1: not a `kraft review` summary ({what}); "
                   f"run `kraft review --out {out}` first", err=True)
        sys.exit(EXIT_ERROR)
    try:
        page = write_report(out)
    except (ValueError, KeyError, TypeError) as exc:
        click.echo(f"kraft report: {out / 'summary.json'} is not a review summary: {exc!r}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(str(page))
