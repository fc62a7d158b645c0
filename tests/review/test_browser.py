"""The report in a real browser: Debian's chromium, headless.

The page has no script of its own. The test loads a copy of it with two probes added: one first in
<head> that records every error (console.error, uncaught errors, resources that fail to load) and
one last in <body> that, once the page has loaded, measures the sequence diagram and the timeline
and the time the page took to load.
Chromium prints the probe's result into the DOM it dumps (``--dump-dom``); every other console line
it logs (``--enable-logging=stderr``) is an error too, since the page itself must log nothing.
A screenshot of each page is written under pytest's temporary directory (its path is printed).

Chromium is installed when missing, as kraft.sh installs Java (``apt-get install chromium`` as
root or through password-less sudo); without either the tests are skipped and say why.
"""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft import cli
from kraft.review import page

from .test_page import hostile_results

HEAD_PROBE = """<script>window.__errors=[];(function(){var ce=console.error;console.error=function(){
window.__errors.push('console.error: '+Array.prototype.join.call(arguments,' '));ce.apply(console,arguments)};
window.addEventListener('error',function(ev){window.__errors.push(ev.message?('error: '+ev.message):
('resource failed: '+((ev.target&&(ev.target.src||ev.target.href))||'?')))},true);})();</script>"""

TAIL_PROBE = """<script>window.addEventListener('load',function(){function vis(sel){var els=document.querySelectorAll(sel);if(!els.length)return null;
var el=els[0],b=el.getBoundingClientRect(),cs=getComputedStyle(el);return {n:els.length,w:b.width,h:b.height,
display:cs.display,visibility:cs.visibility,top:b.top,
shown:el.checkVisibility({contentVisibilityAuto:true,opacityProperty:true,visibilityProperty:true})}}
var r={msc:vis('svg.msc'),timeline:vis('svg.timeline'),errors:window.__errors,pwned:window.__pwned||0,
ms:performance.now(),title:document.title,pageW:document.documentElement.scrollWidth,
viewW:document.documentElement.clientWidth};var pre=document.createElement('pre');pre.id='kraft-probe';
pre.textContent=JSON.stringify(r);document.body.appendChild(pre);});</script>"""


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _as_root() -> list[str] | None:
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    found = _chromium()
    if found:
        return found
    prefix = _as_root()
    if prefix is None or not shutil.which("apt-get"):
        pytest.skip("chromium is not installed and cannot be installed here (needs apt-get as root or "
                    "password-less sudo): `apt-get install chromium` to run the report's browser tests")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([*prefix, "apt-get", "update", "-qq"], env=env, capture_output=True, timeout=600)
    res = subprocess.run([*prefix, "apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
                         env=env, capture_output=True, text=True, timeout=1200)
    found = _chromium()
    if not found:
        pytest.skip(f"installing chromium with apt-get failed (exit {res.returncode}): {res.stderr[-500:]}")
    return found


def _flags() -> list[str]:
    flags = ["--headless", "--disable-gpu", "--no-first-run", "--disable-extensions", "--hide-scrollbars"]
    if os.geteuid() == 0:
        flags.append("--no-sandbox")  # chromium refuses to run as root with its sandbox
    return flags


def open_page(chromium: str, html_path: Path, shots: Path, name: str) -> dict:
    """Load the page with the probes; return the probe's result plus unexpected console lines, and
    write a screenshot of the page as it is (no probe) to ``shots/name.png``."""
    html = html_path.read_text()
    probed = html_path.with_name(html_path.stem + ".probe.html")
    probed.write_text(html.replace("<head>", "<head>" + HEAD_PROBE, 1).replace("</body>", TAIL_PROBE + "</body>", 1))
    started = time.monotonic()
    res = subprocess.run([chromium, *_flags(), "--enable-logging=stderr", "--v=0", "--window-size=1280,1800",
                          "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=180)
    wall = time.monotonic() - started
    m = re.search(r"<pre id=\"kraft-probe\">(.*?)</pre>", res.stdout, re.S)
    assert m, f"chromium did not run the probe (exit {res.returncode}): {res.stderr[-2000:]}"
    import html as htmllib

    probe = json.loads(htmllib.unescape(m.group(1)))
    probe["console"] = [line for line in res.stderr.splitlines() if ":CONSOLE" in line]
    probe["wall"] = wall
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / f"{name}.png"
    subprocess.run([chromium, *_flags(), "--window-size=1280,2400", f"--screenshot={shot}", html_path.as_uri()],
                   capture_output=True, timeout=180)
    assert shot.exists() and shot.stat().st_size > 10_000, f"no screenshot written to {shot}"
    print(f"screenshot: {shot}")
    # wide tables and diagrams scroll inside their own box; the page itself never scrolls sideways
    assert probe["pageW"] <= probe["viewW"], f"{name}: the page scrolls sideways ({probe['pageW']} > {probe['viewW']} px)"
    return probe


def _visible(box: dict | None) -> bool:
    return bool(box) and box["w"] > 100 and box["h"] > 50 and box["display"] != "none" and box["visibility"] == "visible" \
        and box["shown"]


def _report(d: Path) -> Path:
    res = CliRunner().invoke(page.report, [str(d)])
    assert res.exit_code == 0, res.output
    return d / "report.html"


def test_report_of_real_results_in_chromium(chromium, real_results, tmp_path):
    d = tmp_path / "r"
    shutil.copytree(real_results, d)
    probe = open_page(chromium, _report(d), tmp_path / "screenshots", "report")
    assert probe["errors"] == [] and probe["console"] == [], probe
    assert _visible(probe["msc"]), probe["msc"]
    assert _visible(probe["timeline"]), probe["timeline"]
    assert probe["title"] == "kraft report: violation"


def test_hostile_text_does_not_execute_in_chromium(chromium, tmp_path):
    root = hostile_results(tmp_path / "r")
    probe = open_page(chromium, _report(root), tmp_path / "screenshots", "hostile")
    assert probe["pwned"] == 0, "a payload from the results ran in the page"
    assert probe["errors"] == [] and probe["console"] == [], probe
    assert _visible(probe["msc"]) and _visible(probe["timeline"])


def _thousand_histories(root: Path) -> Path:
    """1,000 register histories of 12 ops; every fourth ends with a stale read (nonlinearizable)."""
    hist = root / "histories"
    hist.mkdir(parents=True)
    for h in range(1000):
        lines = [{"v": 1, "kind": "history", "model": "register"}]
        val = 0
        for step in range(6):
            p, i = step % 3, 2 * step
            if step % 2 == 0:
                val += 1
                lines += [{"index": i, "process": p, "type": "invoke", "f": "write", "value": val},
                          {"index": i + 1, "process": p, "type": "ok", "f": "write", "value": val}]
            else:
                seen = val - 1 if (h % 4 == 0 and step == 5) else val
                lines += [{"index": i, "process": p, "type": "invoke", "f": "read", "value": None},
                          {"index": i + 1, "process": p, "type": "ok", "f": "read", "value": seen}]
        (hist / f"h{h:04d}.ndjson").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = CliRunner().invoke(cli.main, ["audit", "--no-spark", str(hist), "--out", str(root / "audit")])
    assert res.exit_code == 1, res.output
    return root / "audit"


def test_a_page_of_1000_histories_loads_in_seconds(chromium, tmp_path):
    d = _thousand_histories(tmp_path)
    started = time.monotonic()
    html = _report(d)
    build = time.monotonic() - started
    probe = open_page(chromium, html, tmp_path / "screenshots", "thousand")
    text = html.read_text()
    assert "1000 histories, 12,000 ops, 250 invalid" in text
    assert probe["errors"] == [] and probe["console"] == []
    assert _visible(probe["timeline"]) and probe["timeline"]["n"] == page.TIMELINES_MAX
    print(f"1,000 histories: page built in {build:.2f}s, {len(text):,} bytes, parsed and laid out in "
          f"{probe['ms']:.0f} ms (chromium run {probe['wall']:.1f}s)")
    assert probe["ms"] < 5000, f"the page took {probe['ms']:.0f} ms to load"
    assert build < 30


def test_the_probe_sees_scripts_errors_and_hidden_diagrams(chromium, tmp_path):
    """The checks above can fail: a page that runs a payload, logs an error, loads a missing image
    and hides its diagram is caught on every count."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!doctype html><html><head><title>t</title></head><body>"
                   "<script>window.__pwned=1;console.error('boom')</script><img src='missing.png'>"
                   "<details><summary>s</summary><svg class='msc' width='300' height='200'></svg></details>"
                   "</body></html>")
    probe = open_page(chromium, bad, tmp_path / "screenshots", "bad")
    assert probe["pwned"] == 1
    assert any("boom" in x for x in probe["errors"]) and any("missing.png" in x for x in probe["errors"])
    assert probe["console"]  # chromium logged the console line too
    assert not _visible(probe["msc"]) and probe["timeline"] is None
