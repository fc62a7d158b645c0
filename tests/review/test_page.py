"""`kraft report`: the page built from what check, audit, conform and review wrote; the sequence
diagram and the timeline; escaping of every text taken from the results; unreadable input named."""

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft.outcome import Verdict, header
from kraft.review import msc, page
from kraft.review.timeline import TimelineOp, timeline_svg
from tests import examples

# tags the page itself uses; anything else in a page means text got through unescaped
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "main", "div", "h1", "h2", "h3", "h4", "p", "b", "br",
                "ul", "li", "span", "table", "tr", "th", "td", "details", "summary", "pre", "code", "a", "svg",
                "line", "rect", "text", "g", "defs", "marker", "path", "pattern"}


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.handlers: list[tuple[str, str]] = []
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        for k, v in attrs:
            if k.startswith("on"):
                self.handlers.append((tag, k))
            if k in ("href", "src") and not (v or "").startswith("#"):
                self.hrefs.append(v or "")


def parse(html: str) -> Tags:
    t = Tags()
    t.feed(html)
    return t


def report(d: Path):
    return CliRunner().invoke(page.report, [str(d)])


def test_page_from_real_check_audit_conform_outputs(real_results: Path, tmp_path: Path):
    d = tmp_path / "r"
    shutil.copytree(real_results, d)
    res = report(d)
    assert res.exit_code == 0, res.output
    html = (d / "report.html").read_text()
    tags = parse(html)
    assert tags.tags <= ALLOWED_TAGS and not tags.handlers and not tags.hrefs
    # verdict banner and the summary in words
    assert "class='banner violation'" in html
    assert "1 of 1 variant caught by TLC, all caught" in html
    assert "3 histories, " in html and "2 invalid" in html
    # model checking: reviewer columns, raw details folded, the counterexample as a diagram
    assert "<th>states</th><th>distinct</th><th>depth</th><th>time</th><th>verdict</th>" in html
    assert "EagerNoRevokeBeforeJoin" in html and "<summary>raw</summary>" in html
    assert html.count("class='msc'") == 1
    for lane in ("c1", "c2", "coordinator"):  # the coordinator's lane is named by its actions' actor
        assert f"class='headt'><title>{lane}</title>{lane}</text>" in html
    assert "(system)" not in html and "(server)" not in html
    assert "In the last state the invariant NoDoubleOwnership is false." in html
    assert "NoDoubleOwnership means: " in html
    # conformance: trace line, logged action, expectation side by side
    assert "<h4>Trace line</h4>" in html and "<h4>Logged action</h4>" in html and "<h4>The spec expects</h4>" in html
    assert "bad.ndjson:2" in html and "{&quot;bogus&quot;: 1}" in html
    # audit: the stale read's timeline with the linearized prefix and the stuck op
    assert html.count("class='timeline'") == 2
    assert "longest linearizable prefix" in html and "stuck op: <b>#" in html
    assert "class='op ok stuck'" in html and "class='op ok prefix'" in html


@pytest.mark.parametrize("sub", ["check", "audit", "conform"])
def test_report_on_each_command_output_alone(real_results: Path, tmp_path: Path, sub: str):
    d = tmp_path / sub
    shutil.copytree(real_results / sub, d)
    res = report(d)
    assert res.exit_code == 0, res.output
    assert f"(1 {sub})" in res.output


def test_sequence_diagram_arrows_boxes_and_drop():
    states = [
        {"index": 1, "action": None, "node": None, "variables": {"role": {"a": "F", "b": "F"}, "term": {"a": 0, "b": 0},
                                                                 "faults": 0, "messages": []}},
        {"index": 2, "action": "Send", "node": "a", "variables": {"role": {"a": "C", "b": "F"}, "term": {"a": 1, "b": 0},
         "faults": 0, "messages": [{"mtype": "Req", "msource": "a", "mdest": "b", "mepoch": 1},
                                   {"mtype": "Other", "msource": "a", "mdest": "b", "mepoch": 1}]}},
        {"index": 3, "action": "Recv", "node": None, "variables": {"role": {"a": "C", "b": "F"}, "term": {"a": 1, "b": 1},
         "faults": 0, "messages": [{"mtype": "Other", "msource": "a", "mdest": "b", "mepoch": 1}]}},
        {"index": 4, "action": "DropMessage", "node": None, "variables": {"role": {"a": "C", "b": "F"},
         "term": {"a": 1, "b": 1}, "faults": 1, "messages": []}},
    ]
    svg = msc.sequence_svg(states, "ElectionSafety", "invariant")
    assert svg.count("<g class='msg'>") == 1 and svg.count("<g class='msg dropped'>") == 1
    assert "class='headt'><title>a</title>a</text>" in svg and "class='headt'><title>b</title>b</text>" in svg
    assert ">role = C</text>" in svg and ">term = 1</text>" in svg
    assert ">role = F" not in svg  # unchanged values are not repeated
    assert ">faults = 1</text>" in svg  # a global change goes to the acting lane
    assert "Req (epoch=1)" in svg and "Other (epoch=1)" in svg
    assert "ElectionSafety means: at most one leader per epoch." in svg
    # the receive step is placed on the receiver's lane
    assert "at b</text>" in svg


def test_timeline_window_and_highlights():
    ops = [TimelineOp(i % 3, 2 * i, 2 * i + 1, "write", f"write {i}", "ok", [2 * i, 2 * i + 1]) for i in range(400)]
    svg, note = timeline_svg(ops, bad={701}, prefix={10}, stuck=set())
    assert "of 800 drawn" in note
    assert svg.count("class='op ok bad'") == 1
    assert "class='op ok prefix'" not in svg  # op 10 is outside the window around the anomaly
    assert svg.count("process ") >= 3


PAYLOAD = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">'&\"x:100:y"
FILE_PAYLOAD = "<img src=x onerror=window.__pwned=3>'&x:100:y"  # no '/' in a file name


def hostile_results(root: Path) -> Path:
    """Documents in the shape each command writes, with PAYLOAD in every text a user controls."""
    P = PAYLOAD
    cex = [{"index": 1, "action": None, "node": None, "back_to": None,
            "variables": {"st": {P: P, "n2": 0}, "msgs": []}},
           {"index": 2, "action": P, "node": P, "back_to": None,
            "variables": {"st": {P: P + "2", "n2": 0}, "msgs": [{"mtype": P, "msource": P, "mdest": "n2", P: P}]}},
           {"index": 3, "action": P, "node": "n2", "back_to": 1,
            "variables": {"st": {P: P + "2", "n2": P}, "msgs": []}}]
    (root / "check").mkdir(parents=True)
    (root / "check" / "check.json").write_text(json.dumps(header("check", Verdict.VIOLATION, P, {"runs": [
        {"spec": P, "size": P, "variant": P, "verdict": P, "status": P, "violated": P, "outcome": P, "states": 3,
         "distinct": 3, "depth": 3, "seconds": 1.0, "cfg": P, "command": [P], "counterexample": cex}]})))
    hist_dir = root / "sim"
    hist_dir.mkdir()
    hist = hist_dir / f"{FILE_PAYLOAD}.ndjson"
    hist.write_text("\n".join(json.dumps(o) for o in [
        {"v": 1, "kind": "history", "model": "register"},
        {"index": 0, "process": P, "type": "invoke", "f": "write", "value": P},
        {"index": 1, "process": P, "type": "ok", "f": "write", "value": P},
        {"index": 2, "process": 7, "type": "invoke", "f": "read", "value": None},
        {"index": 3, "process": 7, "type": "ok", "f": "read", "value": P + "?"}]) + "\n")
    (root / "audit").mkdir()
    (root / "audit" / "summary.json").write_text(json.dumps(header("audit", Verdict.VIOLATION, P, {
        "histories": 1, "ops": 2, "valid": 0, "invalid": 1, "violations": {P: 1}})))
    (root / "audit" / "results.json").write_text(json.dumps([
        {"history": str(hist), "model": P, "valid": False, "ops": 2, "anomalies": [
            {"kind": "nonlinearizable", "key": P, "evidence": {
                "prefix_length": 1, "linearized_prefix": [{"index": 0, "process": P, "call": P}],
                "stuck_op": {"index": 2, "process": 7, "call": P}, "explanation": P,
                "candidates": [{"call": P, "accepted": False}]}},
            {"kind": P, "key": P, "evidence": {P: P, "ops": [0]}}]}]))
    trace = hist_dir / f"{FILE_PAYLOAD}.trace.ndjson"
    trace.write_text(json.dumps({"v": 1, "kind": "trace", P: P}) + "\n" + json.dumps({"action": P}) + "\n")
    (root / "conform").mkdir()
    (root / "conform" / "conform.json").write_text(json.dumps(header("conform", Verdict.VIOLATION, P, {
        "totals": {"traces": 1, "rejected": 1, "errors": 0, "events": 1}, "results": [
            {"trace": str(trace), "spec": P, "variant": P, "events": 1, "verdict": "rejected", "kind": P, "line": 2,
             "action": P, "node": P, "args": {P: P}, "message": P, "successors": 1, "spec_states": 1,
             "guards": {P: P}, "mismatches": [{"var": P, "differs_at": P, "spec_at": P, "trace_at": P}]}]})))
    (root / "audit-metadata").mkdir()
    (root / "audit-metadata" / "audit-metadata.json").write_text(json.dumps(header("audit-metadata", Verdict.VIOLATION, P, {
        "directories": [{"directory": P, "verdict": P, "records": 3, "unclean_election_count": P,
                         "violations_by_invariant": {P: 1}, "error": {"why": P}, "reason": None}]})))
    (root / "zoo").mkdir()
    (root / "zoo" / "zoo.json").write_text(json.dumps(header("zoo", Verdict.VIOLATION, P, {
        "checks": [{"id": P, "title": P}], "errors": [P],
        "rows": [{"spec": P, "variant": P, "doc": P, "violates": P, "control": False,
                  "cells": {P: {"status": P, "seconds": 1.0, "size": P, "unit": P, "detail": P}}}]})))
    (root / "summary.json").write_text(json.dumps(header("review", Verdict.VIOLATION, P, {
        "generated": P, "stages": [{"name": P, "what": P, "status": P, "seconds": 1.0, "detail": P,
                                    "output": str(root / "check" / "check.json"), "log": P}]})))
    return root


def test_every_user_text_is_escaped(tmp_path: Path):
    root = hostile_results(tmp_path / "r")
    res = report(root)
    assert res.exit_code == 0, res.output
    html = (root / "report.html").read_text()
    tags = parse(html)
    assert tags.tags <= ALLOWED_TAGS, tags.tags - ALLOWED_TAGS
    assert not tags.handlers and not tags.hrefs
    assert "<script" not in html and "<img" not in html
    escaped = "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;"
    # the payload is shown as text in each part of the page
    assert html.count(escaped) >= 15
    assert "&lt;img src=x onerror=window.__pwned=3&gt;" in html  # the file names
    assert "class='msc'" in html and "class='timeline'" in html


def test_nothing_readable_is_exit_2_and_names_the_file(tmp_path: Path):
    res = report(tmp_path)
    assert res.exit_code == 2 and "no kraft results" in res.output
    (tmp_path / "check.json").write_text('{"command": "check",\n "verdict": ')
    res = report(tmp_path)
    assert res.exit_code == 2 and f"{tmp_path / 'check.json'}:2: not JSON" in res.output
    assert not (tmp_path / "report.html").exists()


def test_an_unreadable_file_beside_readable_ones_is_named_on_the_page(real_results: Path, tmp_path: Path):
    d = tmp_path / "r"
    shutil.copytree(real_results / "check", d / "check")
    (d / "conform").mkdir()
    (d / "conform" / "conform.json").write_bytes(b"\xff\xfe not text")
    res = report(d)
    assert res.exit_code == 2
    assert f"{d / 'conform' / 'conform.json'}: not UTF-8 text" in res.output
    html = (d / "report.html").read_text()
    assert "Files that could not be read" in html and "not UTF-8 text" in html
    assert "Traceback" not in res.output


def test_review_summary_with_paths_relative_to_another_directory(real_results: Path, tmp_path: Path):
    """`kraft review --out results` writes stage outputs as results/...; the page finds them from
    wherever it runs."""
    d = tmp_path / "results"
    shutil.copytree(real_results / "check", d / "check")
    (d / "summary.json").write_text(json.dumps(header("review", Verdict.CLEAN, "all 1 stages passed", {
        "generated": "now", "stages": [{"name": "variants", "what": "TLC", "status": "passed", "seconds": 1.0,
                                        "detail": "1 of 1 bug variants caught", "output": "results/check/check.json",
                                        "log": "results/logs/x.log"}]})))
    res = report(d)
    assert res.exit_code == 0, res.output
    html = (d / "report.html").read_text()
    assert "class='banner clean'" in html and "Review stages" in html and "class='msc'" in html


from hypothesis import given, strategies as st  # noqa: E402

_json = st.recursive(st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                     max_leaves=20)
_fields = {
    "check": ["runs"], "conform": ["results", "totals"], "audit": ["histories", "ops", "invalid", "violations"],
    "review": ["stages"], "simulate": ["results"], "zoo": ["rows", "checks", "errors"],
}


@examples.HEAVY(deadline=None)
@given(command=st.sampled_from(sorted(_fields)), values=st.lists(_json, min_size=5, max_size=5),
       results=_json, row=st.dictionaries(st.sampled_from(
           ["spec", "verdict", "counterexample", "steps", "trace", "line", "mismatches", "guards", "history",
            "anomalies", "valid", "stages", "output", "seconds", "distinct", "cells", "id", "status"]), _json,
           max_size=8))
def test_any_document_shape_renders_without_a_traceback(tmp_path_factory, command, values, results, row):
    """A document with the right header and anything in its fields gives a page, never a traceback."""
    d = tmp_path_factory.mktemp("any")
    fields = {k: v for k, v in zip(_fields[command], values)}
    first = _fields[command][0]
    fields[first] = [row, values[-1]] if command != "audit" else fields[first]
    name = {"check": "check.json", "conform": "conform.json"}.get(command, "summary.json")
    (d / name).write_text(json.dumps(header(command, Verdict.VIOLATION, "s", fields)))
    if command == "audit":
        (d / "results.json").write_text(json.dumps([row, results]))
    found = page.collect(d)
    assert found.docs
    html = page.build_page(found)
    assert html.startswith("<!doctype html>") and "<script" not in html


def test_metadata_logs_get_a_row_per_directory(tmp_path: Path):
    d = tmp_path / "audit-metadata"
    d.mkdir()
    (d / "audit-metadata.json").write_text(json.dumps(header("audit-metadata", Verdict.VIOLATION, "2 metadata logs: 1 violation", {
        "directories": [{"directory": "a/__cluster_metadata-0", "verdict": "violation", "records": 12,
                         "unclean_election_count": 1, "violations_by_invariant": {"UncleanElectionAllowed": 1},
                         "error": None, "reason": None},
                        {"directory": "b/__cluster_metadata-0", "verdict": "inconclusive", "records": 0,
                         "unclean_election_count": 0, "violations_by_invariant": {}, "error": None,
                         "reason": "no segment (.log) or snapshot (.checkpoint) file"}]})))
    html = page.build_page(page.collect(tmp_path))
    assert "id='audit-metadata'" in html and "Metadata logs</span>2 metadata logs: 1 violation" in html
    assert "<code>a/__cluster_metadata-0</code>" in html and "UncleanElectionAllowed 1" in html
    assert "no segment (.log) or snapshot (.checkpoint) file" in html


def test_zoo_matrix_is_coloured_per_cell(tmp_path: Path):
    rows = [{"spec": "KRaft", "variant": None, "control": True, "cells": {
                "tlc": {"status": "clean", "seconds": 3.0, "size": None, "unit": "", "detail": "no violation"},
                "audit": {"status": "fired", "seconds": 2.0, "size": 5, "unit": "ops", "detail": "lost-write"}}},
            {"spec": "KRaft", "variant": "VoteWithoutLogCheck", "control": False, "violates": "LeaderCompleteness",
             "cells": {"tlc": {"status": "caught", "seconds": 13.5, "size": 29, "unit": "steps", "detail": "x"},
                       "audit": {"status": "not observable", "detail": "a client history cannot see a vote"}}}]
    (tmp_path / "zoo.json").write_text(json.dumps(header("zoo", Verdict.VIOLATION, "1 variant, all caught; control fired", {
        "checks": [{"id": "tlc", "title": "TLC (spec variant)"}, {"id": "audit", "title": "Audit (client histories)"}],
        "rows": rows, "errors": []})))
    res = report(tmp_path)
    assert res.exit_code == 0, res.output
    html = (tmp_path / "report.html").read_text()
    assert "<th>TLC (spec variant)</th><th>Audit (client histories)</th>" in html
    assert html.count("background:#dafbe1") == 2 and html.count("background:#ffebe9") == 1
    assert "29 steps" in html and "a client history cannot see a vote" in html and "(control)" in html
    assert "Bug zoo</span>1 variant, all caught; control fired" in html


def test_a_zoos_own_runs_are_its_evidence_not_checks_of_their_own(real_results: Path, tmp_path: Path):
    """A review's zoo writes TLC runs, simulations, conformance and audit documents under its own
    directory: the summary and the check sections show the review's stages only, and the zoo's
    documents follow its matrix as the evidence of its cells (counterexample, rejections, timelines)."""
    d = tmp_path / "r"
    zoo = d / "zoo"
    shutil.copytree(real_results, zoo)
    sim = zoo / "sim" / "groups" / "EagerNoRevokeBeforeJoin"
    sim.mkdir(parents=True)
    (sim / "summary.json").write_text(json.dumps(header(
        "simulate", Verdict.VIOLATION, "1 of 1 run of groups (800 steps each) violated an invariant", {})))
    (zoo / "zoo.json").write_text(json.dumps(header("zoo", Verdict.CLEAN, "1 variant, all caught", {
        "checks": [{"id": "tlc", "title": "TLC"}], "rows": []})))
    res = report(d)
    assert res.exit_code == 0, res.output
    html = (d / "report.html").read_text()
    summary = html[html.index("<ul class='summary'>"):html.index("</ul>")]
    assert "Bug zoo" in summary and "Simulation" not in summary and "Audit" not in summary
    assert "violated an invariant" not in html  # the zoo's simulations are its matrix
    assert html.index("id='zoo'") < html.index("id='zoo-tlc'") < html.index("id='zoo-conform'") \
        < html.index("id='zoo-audit'")
    assert "id='model-checking'" not in html and "id='audit'" not in html
    assert html.count("class='msc'") == 1 and html.count("class='timeline'") == 2
    assert "href='#zoo-tlc-cex-0'" in html and "id='zoo-tlc-cex-0'" in html
