"""Running TLC 2.15 on the fixture specs and parsing what it reports."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from model_check import ManifestError, TLCError, TraceState, load_manifests, parse_tool_output, run_spec, run_tlc, variant_cfg
from model_check.tlc import find_jar, find_java

FIX = Path(__file__).parent / "fixtures"


def fx(name: str) -> tuple[Path, Path]:
    return FIX / f"{name}.tla", FIX / f"{name}.cfg"


# ------------------------------------------------------------------ without TLC


def test_missing_java_is_a_clear_tlc_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(TLCError, match=r"JAVA_HOME .* is not an executable java.*Java 17.*\./kraft\.sh"):
        find_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TLCError, match=r"java was not found.*Java 17.*\./kraft\.sh.*JAVA_HOME"):
        run_tlc(*fx("Counter"))


def test_missing_jar_is_a_clear_tlc_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KRAFT_TLA2TOOLS", str(tmp_path / "nope.jar"))
    with pytest.raises(TLCError, match="KRAFT_TLA2TOOLS .*nope.jar.* not a file"):
        run_tlc(*fx("Counter"))
    monkeypatch.delenv("KRAFT_TLA2TOOLS")
    assert find_jar().endswith("tla2tools.jar")


def test_tla2tools_jar_is_a_deprecated_alias(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The old conformance runner read TLA2TOOLS_JAR; it still works, with a warning, and
    KRAFT_TLA2TOOLS wins when both are set."""
    jar = tmp_path / "tla2tools.jar"
    jar.write_bytes(b"PK")
    monkeypatch.delenv("KRAFT_TLA2TOOLS", raising=False)
    monkeypatch.setenv("TLA2TOOLS_JAR", str(jar))
    with pytest.warns(FutureWarning, match="TLA2TOOLS_JAR is deprecated"):
        assert find_jar() == str(jar)
    monkeypatch.setenv("TLA2TOOLS_JAR", str(tmp_path / "gone.jar"))
    with pytest.warns(FutureWarning), pytest.raises(TLCError, match="TLA2TOOLS_JAR .*gone.jar.* not a file"):
        find_jar()
    monkeypatch.setenv("KRAFT_TLA2TOOLS", str(jar))
    assert find_jar() == str(jar)


def test_tool_messages_have_named_codes_and_strip_leaves_printed_text() -> None:
    from model_check import EC, strip_tool_messages, tool_messages

    text = ("@!@!@STARTMSG 2194:0 @!@!@\nThe depth of the complete state graph search is 7.\n@!@!@ENDMSG 2194 @!@!@\n"
            '<<"TRACCEPT", 1>>\n'
            "@!@!@STARTMSG 1000:1 @!@!@\nouter\n@!@!@STARTMSG 4242:1 @!@!@\ninner\n@!@!@ENDMSG 4242 @!@!@\n"
            "@!@!@ENDMSG 1000 @!@!@\n")
    msgs = tool_messages(text)
    assert [(m.code, m.severity) for m in msgs] == [(EC.SEARCH_DEPTH, 0), (4242, 1), (EC.GENERAL, 1)]
    assert msgs[0].code.name == "SEARCH_DEPTH" and "is 7" in msgs[0].text
    assert strip_tool_messages(text).strip() == '<<"TRACCEPT", 1>>'


def test_variant_cfg_rewrite() -> None:
    cfg = "CONSTANTS\n  BuggyStep = FALSE\n  OtherBuggyStep = FALSE\n"
    assert variant_cfg(cfg, "BuggyStep") == "CONSTANTS\n  BuggyStep = TRUE\n  OtherBuggyStep = FALSE\n"
    with pytest.raises(ManifestError, match="no line `Missing = FALSE`"):
        variant_cfg(cfg, "Missing")


def test_manifests_load(spec_dir: Path) -> None:
    ms = load_manifests()
    m = ms["Counter"]
    assert m.module == "Counter" and m.sizes["small"].mode == "exhaustive"
    assert m.sizes["sim"].mode == "simulate" and m.sizes["sim"].traces == 200
    assert m.variants["BuggyStep"].violates == "Bounded"
    (spec_dir / "Bad.toml").write_text('module = "X"\n[sizes.small]\nmode = "fast"\ncfg = "X.cfg"\n')
    with pytest.raises(ManifestError, match="Bad.toml.*mode must be"):
        load_manifests()
    (spec_dir / "Bad.toml").write_text('module = "X"\n[sizes.small]\ncfg = "X.cfg"\nlncheck = "sometimes"\n')
    with pytest.raises(ManifestError, match="Bad.toml.*lncheck must be 'final'"):
        load_manifests()
    (spec_dir / "Bad.toml").unlink()
    with pytest.raises(ManifestError, match="no variant 'Nope'"):
        run_spec("Counter", variant="Nope")
    with pytest.raises(ManifestError, match="no size 'huge'"):
        run_spec("Counter", size="huge")


def test_parse_nested_error_messages() -> None:
    out = (
        "@!@!@STARTMSG 1000:1 @!@!@\nTLC threw an unexpected exception.\nThe exception was a tlc2.tool.EvalException\n"
        ": @!@!@STARTMSG 2184:0 @!@!@\nAttempted to apply Head to the empty sequence.\n@!@!@ENDMSG 2184 @!@!@\n"
        "@!@!@ENDMSG 1000 @!@!@\n@!@!@STARTMSG 2186:0 @!@!@\nFinished in 1ms\n@!@!@ENDMSG 2186 @!@!@\n"
    )
    r = parse_tool_output(out, exit_code=75)
    assert r.outcome == "error"
    assert any("Head to the empty sequence" in e for e in r.errors)


def test_parse_out_of_memory_and_crash() -> None:
    oom = "@!@!@STARTMSG 1001:1 @!@!@\nJava ran out of memory.\n@!@!@ENDMSG 1001 @!@!@\n"
    r = parse_tool_output(oom, exit_code=1)
    assert r.outcome == "error" and any("out of memory" in e for e in r.errors)
    crash = "@!@!@STARTMSG 2185:0 @!@!@\nStarting...\n@!@!@ENDMSG 2185 @!@!@\n"
    r = parse_tool_output(crash, exit_code=134, stderr="# A fatal error has been detected by the Java Runtime Environment\n")
    assert r.outcome == "error" and any("without finishing" in e and "fatal error" in e for e in r.errors)


def test_parse_labels_with_parameters() -> None:
    """Newer TLCs print the action's arguments; the first one is the node."""
    out = (
        "@!@!@STARTMSG 2110:1 @!@!@\nInvariant Safe is violated.\n@!@!@ENDMSG 2110 @!@!@\n"
        "@!@!@STARTMSG 2217:4 @!@!@\n1: <Initial predicate>\nx = 0\n\n@!@!@ENDMSG 2217 @!@!@\n"
        "@!@!@STARTMSG 2217:4 @!@!@\n2: <HandleFetchRequest(n2, [mtype |-> \"F\"]) line 3, col 1 to line 4, col 2 of module M>\nx = 1\n\n@!@!@ENDMSG 2217 @!@!@\n"
        "@!@!@STARTMSG 2186:0 @!@!@\nFinished\n@!@!@ENDMSG 2186 @!@!@\n"
    )
    r = parse_tool_output(out, exit_code=12)
    assert r.outcome == "invariant" and r.violated == "Safe"
    assert r.counterexample[1] == TraceState(2, "HandleFetchRequest", "n2", {"x": 1}, location="line 3, col 1 to line 4, col 2 of module M")


# ------------------------------------------------------------------ with TLC


@pytest.mark.tlc
def test_passing_spec_and_variant_counterexample(spec_dir: Path) -> None:
    ok = run_spec("Counter")
    assert ok.outcome == "ok" and ok.violated is None and ok.errors == []
    assert (ok.states, ok.distinct, ok.depth) == (25, 16, 5)
    bad = run_spec("Counter", variant="BuggyStep")
    assert bad.outcome == "invariant" and bad.violated == "Bounded"
    trace = bad.counterexample
    assert [s.index for s in trace] == [1, 2, 3, 4]
    assert [s.action for s in trace] == [None, "Inc", "Inc", "Jump"]
    assert all(s.node is None for s in trace)  # TLC 2.15 prints no action parameters
    assert [s.variables["x"] for s in trace] == [0, 1, 2, 4]
    assert trace[0].variables == {"x": 0, "hist": (), "info": {"last": "none", "owners": frozenset(), "f": (0, 0)}}
    assert trace[3].variables["info"] == {"last": 'jump "2"', "owners": frozenset({1}), "f": (1, 0)}
    assert trace[3].variables["hist"] == (1, 1, 1)
    assert "BuggyStep = FALSE" in (spec_dir / "Counter.cfg").read_text()  # the repo cfg untouched


@pytest.mark.tlc
def test_deadlock_and_disabling_it() -> None:
    r = run_tlc(*fx("Deadlock"))
    assert r.outcome == "deadlock"
    assert [(s.action, s.variables["x"]) for s in r.counterexample] == [(None, 0), ("Step", 1), ("Step", 2)]
    r = run_tlc(*fx("Deadlock"), check_deadlock=False)
    assert r.outcome == "ok" and r.distinct == 3


@pytest.mark.tlc
def test_liveness_lasso_and_stuttering() -> None:
    tla, _ = fx("Live")
    lasso = run_tlc(tla, FIX / "Live.cfg")
    assert lasso.outcome == "property" and lasso.violated == "EventuallyBlue"
    assert [s.variables["light"] for s in lasso.counterexample] == ["Red", "Green", "Yellow", "Red"]
    assert lasso.counterexample[-1].back_to == 1 and lasso.counterexample[-1].index == 4
    # one temporal check at the end (manifest `lncheck = "final"`) reports the same lasso
    final = run_tlc(tla, FIX / "Live.cfg", extra_args=["-lncheck", "final"])
    assert final.outcome == "property" and final.violated == "EventuallyBlue"
    assert [s.variables["light"] for s in final.counterexample] == ["Red", "Green", "Yellow", "Red"]
    stutter = run_tlc(tla, FIX / "LiveStutter.cfg")
    assert stutter.outcome == "property" and stutter.violated == "EventuallyGreen"
    assert [s.action for s in stutter.counterexample] == [None, "Stuttering"]
    assert stutter.counterexample[1].variables == {"light": "Red", "n": 0}


@pytest.mark.tlc
def test_parse_and_semantic_errors_name_file_and_line() -> None:
    r = run_tlc(*fx("Broken"))
    assert r.outcome == "parse_error"
    assert r.error_location == (str(FIX / "Broken.tla"), 5, 20)
    assert r.errors[0].startswith(f"{FIX / 'Broken.tla'}:5:20: TLA+ parse error")
    r = run_tlc(*fx("Sem"))
    assert r.outcome == "parse_error"
    assert r.error_location == (str(FIX / "Sem.tla"), 5, 14)
    assert "Unknown operator: `y'" in r.errors[0]


@pytest.mark.tlc
def test_initial_state_values_parsed() -> None:
    r = run_tlc(*fx("Values"))
    assert r.outcome == "invariant" and r.violated == "Never"
    (s,) = r.counterexample
    assert s.variables["v"] == {
        "ints": (-3, 0, 7),
        "str": 'a "q" \\ b',
        "flags": frozenset({True, False}),
        "mv": "m1",
        "fn": {"m1": frozenset(), "m2": frozenset({(1, "x")})},
        "recs": frozenset({parse({"x": 1, "y": ()}), parse({"x": 2, "y": ("m2",)})}),
        "nested": ({"k": (2,)}, frozenset({frozenset()})),
        "range": frozenset({2, 3, 4}),
    }


def parse(d: dict) -> object:
    from model_check import TLADict

    return TLADict(d)


@pytest.mark.tlc
def test_simulation_mode(spec_dir: Path) -> None:
    r = run_spec("Counter", size="sim")
    assert r.outcome == "ok" and r.states > 200
    r = run_spec("Counter", size="sim", variant="BuggyStep")
    assert r.outcome == "invariant" and r.violated == "Bounded"
    assert r.counterexample[-1].action == "Jump" and r.counterexample[-1].variables["x"] == 4


@pytest.mark.tlc
def test_parallel_runs_do_not_collide(spec_dir: Path) -> None:
    before = sorted(p.name for p in spec_dir.iterdir())
    jobs = [None, "BuggyStep", None, "BuggyStep"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda v: run_spec("Counter", variant=v), jobs))
    for v, r in zip(jobs, results):
        assert r.outcome == ("invariant" if v else "ok"), r.errors
    assert sorted(p.name for p in spec_dir.iterdir()) == before  # no states/, no cfg copies


@pytest.mark.tlc
def test_timeout_kills_tlc() -> None:
    t0 = time.monotonic()
    r = run_tlc(*fx("Slow"), timeout=4)
    assert r.outcome == "timeout" and any("killed after 4s" in e for e in r.errors)
    assert time.monotonic() - t0 < 20
    # the JVM is gone: its command line named the private run directory, which is deleted
    run_dir = next(a for a in r.command if a.startswith("-Djava.io.tmpdir=")).split("=", 1)[1]
    assert not os.path.exists(run_dir)
    ps = os.popen("ps -eo args").read()
    assert run_dir not in ps


@pytest.mark.tlc
def test_actions_under_exists_are_named_from_the_source() -> None:
    """TLC 2.15 labels `\\E m \\in msgs : Handle(m.dest, m)` steps "Next"; the wrapper reads the
    labelled source span and names them after the applied operator."""
    r = run_tlc(*fx("Msgs"), check_deadlock=False)
    assert r.outcome == "invariant" and r.violated == "NotBoth"
    assert [s.action for s in r.counterexample] == [None, "Handle", "Handle"]
    assert r.counterexample[2].location == "line 13, col 12 to line 13, col 44 of module Msgs"
    assert r.counterexample[2].variables["got"] == (10, 20)


@pytest.mark.tlc
def test_cfg_error_is_an_error_naming_the_problem() -> None:
    r = run_tlc(FIX / "Counter.tla", FIX / "CounterBadCfg.cfg")
    assert r.outcome == "error" and r.exit_code == 151
    assert any("NoSuchInvariant" in e and "not defined" in e for e in r.errors)
    assert r.errors[0] == "TLC rejected the model configuration (cfg)"


@pytest.mark.tlc
def test_sigterm_kills_tlc_and_cleans_up(tmp_path: Path) -> None:
    """`timeout`/CI cancellation sends SIGTERM to Python: TLC must die and the run directory go."""
    import signal
    import subprocess
    import sys

    code = f"from model_check import run_tlc; run_tlc({str(FIX / 'Slow.tla')!r}, {str(FIX / 'Slow.cfg')!r})"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("kraft-tlc-*/meta")) and time.monotonic() < deadline:
        time.sleep(0.2)  # wait until TLC is running (it creates its metadir)
    assert list(tmp_path.glob("kraft-tlc-*")), "TLC did not start"
    run_dir = str(next(tmp_path.glob("kraft-tlc-*")))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert not list(tmp_path.glob("kraft-tlc-*"))
    time.sleep(0.5)
    assert run_dir not in os.popen("ps -eo args").read()
