"""Long traces cut into segments: each segment is checked by TLC from the logged full state at its
cut, a cut trace gets the verdict the whole trace gets, and a spec is cut only when every variable
the trace does not log is a counter that a cut may restart (traces.segment)."""

from __future__ import annotations

import json

import attrs
import pytest

from tests.traces.helpers import lines_of, simulate_trace, without_variable, write
from traces.check import Options, _check_segment, check_paths, plan
from traces.protocols import Glue, complete_constants, get_glue
from traces.segment import counter_problem, cut_counters, segments
from traces.tla import INT

SEG = Options(batch=64, jobs=2, segment=40)


@pytest.mark.tlc
def test_cut_traces_get_the_verdict_of_the_whole_trace(relay, tmp_path):
    good = write(tmp_path / "good.ndjson", lines_of(relay, 1, 300, faults=True))
    bad = lines_of(relay, 5, 300, variant="BuggyMax")
    late = lines_of(relay, 3, 300, faults=True)
    k = max(n for n, x in enumerate(late) if n > 1 and "state" in json.loads(x))  # in the last segment
    rec = json.loads(late[k])
    rec["state"]["saved"] = {n: v + 7 for n, v in rec["state"]["saved"].items()}
    late[k] = json.dumps(rec)
    paths = [good, write(tmp_path / "bad.ndjson", bad), write(tmp_path / "late.ndjson", late)]
    (batch,), _ = plan(paths, SEG)
    assert all(len(segments(p, SEG.segment)) >= 3 for p in batch)
    cut = check_paths(paths, SEG)
    whole = check_paths(paths, attrs.evolve(SEG, segment=0))
    assert [r.verdict for r in cut] == ["accepted", "rejected", "rejected"], [r.message for r in cut]
    assert cut[0].tlc_runs == len(segments(batch[0], SEG.segment)) and cut[0].checked == cut[0].events
    assert cut[2].line == k + 1 and cut[2].disagree == ["saved"]
    for a, b in zip(cut, whole):
        assert (a.verdict, a.kind, a.line, a.action, a.disagree, a.message, a.checked) == \
               (b.verdict, b.kind, b.line, b.action, b.disagree, b.message, b.checked)


@pytest.mark.tlc
def test_each_segment_is_judged_from_its_pinned_state(relay, tmp_path):
    """A segment starts from the logged state at its cut and nothing else: the same steps from a
    pinned state that differs in one logged value are rejected."""
    (batch,), _ = plan([write(tmp_path / "t.ndjson", lines_of(relay, 2, 300, faults=True))], SEG)
    segs = segments(batch[0], SEG.segment)
    assert not segs[0].pinned and all(s.pinned for s in segs[1:])
    assert set(segs[1].init) == {"val", "saved", "net", "sends"}  # every spec variable
    assert all(_check_segment(s, SEG)[0] for s in segs)
    val = segs[1].init["val"]
    wrong = attrs.evolve(segs[1], init={**segs[1].init, "val": val.replace("<<", "<<1000 + ", 1)})
    assert wrong.init["val"] != val
    assert not _check_segment(wrong, SEG)[0]


def test_no_cut_where_the_state_is_not_logged_completely(relay, tmp_path):
    out = without_variable(lines_of(relay, 4, 300), "net")
    (batch,), _ = plan([write(tmp_path / "p.ndjson", out)], SEG)
    assert segments(batch[0], SEG.segment) == []


def test_which_specs_may_be_cut():
    """Groups' and the consumer protocol's unlogged variables are counters under far bounds; KRaft and replication
    leave their ghosts to the glue's derivation, and the rest are counters or write-only ghosts.
    Without the derivation, KRaft's `committed` (read by the guard of a disk loss) and
    replication's `metadataBatchEnds` (read by the replay's targets) forbid a cut."""
    groups = get_glue("groups")
    consts = complete_constants(groups, groups.constants({"constants": {"Clients": ["c1", "c2"]}}))
    assert cut_counters(groups, consts) == ({"faults": "0"}, "")
    proto = get_glue("consumer-protocol")  # its type invariant's subChanges \in 0..Max... is no step's
    consts = complete_constants(proto, proto.constants(
        {"constants": {"Clients": ["c1", "c2"], "NumTopics": 1, "PartitionsPerTopic": 2}}))
    assert cut_counters(proto, consts) == ({"subChanges": "0", "faults": "0"}, "")
    for proto, var in (("kraft", "committed"), ("replication", "metadataBatchEnds")):
        glue = get_glue(proto)
        consts = complete_constants(glue, glue.constants({}))
        counters, why = cut_counters(glue, consts)
        assert counters is not None and var not in counters and set(counters.values()) <= {"0", "{}"}, why
        underived = attrs.evolve(glue, protocol=f"{proto}-underived", ghosts={})
        counters, why = cut_counters(underived, consts)
        assert counters is None and var in why, why


@pytest.mark.tlc
@pytest.mark.parametrize("protocol,seed,steps,size", [
    ("kraft", 1, 1200, 250), ("replication", 1, 1500, 200),
    pytest.param("consumer-protocol", 1, 1500, 200, marks=pytest.mark.slow)])
def test_kraft_and_replication_traces_are_cut(tmp_path, protocol, seed, steps, size):
    """A KRaft, a replication and a consumer-protocol run cut into segments: every segment is
    accepted from its pinned state (derived ghosts included); a derived ghost changed at a cut is
    rejected by the segment that ends there, and changed in a pinned state by the segment that
    starts there."""
    lines = simulate_trace(tmp_path / "run", protocol, seed, steps)
    opts = attrs.evolve(SEG, segment=size)
    (batch,), _ = plan([write(tmp_path / "t.ndjson", lines)], opts)
    segs = segments(batch[0], size)
    assert len(segs) >= 2 and all(s.pinned for s in segs[1:])
    ghosts = set(batch[0].glue.ghosts)
    assert bool(ghosts) == (protocol != "consumer-protocol")
    assert ghosts <= set(segs[1].init) and ghosts <= set(segs[0].micros[-1].check)
    assert all(_check_segment(s, opts)[0] for s in segs)
    last = segs[0].micros[-1]
    wrong = {"nextValue": lambda c: c.replace('<<"set", ', '<<"set", 1 + ', 1),
             "metadataBatchEnds": lambda c: c.replace('<<"set", ', '<<"set", {999} \\cup ', 1),
             "committed": lambda c: '<<"set", <<>>>>'}
    for var in ghosts:
        claim = last.check[var]
        changed = wrong[var](claim)
        assert changed != claim
        bad = attrs.evolve(last, check={**last.check, var: changed})
        assert not _check_segment(attrs.evolve(segs[0], micros=[*segs[0].micros[:-1], bad]), opts)[0], var
    # a pinned ghost changed: the produced value no longer matches, or the next cut's claim fails
    pinned = {"nextValue": lambda c: f"{c} + 1",
              "committed": lambda c: f'<<[epoch |-> 99, value |-> "LeaderChange", voters |-> {{}}]>> \\o {c}'}
    for var in ghosts & set(pinned):
        assert var != "committed" or len(segs) >= 3  # segment 1 ends at a claim
        seg = attrs.evolve(segs[1], init={**segs[1].init, var: pinned[var](segs[1].init[var])})
        assert not _check_segment(seg, opts)[0], var


SPEC = """
VARIABLES x, n
vars == <<x, n>>
Init == x = 0 /\\ n = 0
Step == /\\ n < MaxN
        /\\ x' = x + 1
        /\\ n' = n + 1
Other == /\\ x' = 0 /\\ UNCHANGED n
"""


def test_a_counter_is_only_bounded_and_counted():
    big = {"MaxN": "1000000"}
    assert counter_problem(SPEC, "n", big) is None
    assert "not set far above" in counter_problem(SPEC, "n", {"MaxN": "3"})
    assert "read outside a bound" in counter_problem(SPEC + "Guard == n = 2 /\\ x' = 1\n", "n", big)
    assert "read outside a bound" in counter_problem(SPEC + "Leak == x' = n\n", "n", big)
    assert "is read" in counter_problem(SPEC + "Next == x' = n' /\\ n' = n + 1\n", "n", big)
    assert "not set to 0 in Init" in counter_problem(SPEC.replace("n = 0", "n = 1"), "n", big)


CUT_SPEC = """---- MODULE {name} ----
EXTENDS Naturals
CONSTANT MaxN
VARIABLES x, n, g
Init == x = 0 /\\ n = 0 /\\ g = {{}}
Step == /\\ n < MaxN /\\ x' = x + 1 /\\ n' = n + 1 /\\ g' = g \\cup {{x}}
{extra}Next == Step
TypeOK == n \\in 0..MaxN /\\ g \\subseteq Nat /\\ x >= Cardinality(g)
====
"""


def _cut_glue(tmp_path, name: str, extra: str = "", template: str = "Step") -> Glue:
    d = tmp_path / name
    d.mkdir()
    (d / f"{name}.tla").write_text(CUT_SPEC.format(name=name, extra=extra))
    return Glue(f"cut-{name}", name, d, {"x": INT}, {"Step": template}, lambda ev: [], lambda h: {})


def test_only_what_a_step_evaluates_is_read(tmp_path):
    """The type invariant after Next reads the counter and the write-only ghost, but no trace step
    evaluates it; a ghost read by an action, in the spec or in a glue template, forbids a cut."""
    big = {"MaxN": "1000000"}
    assert cut_counters(_cut_glue(tmp_path, "Plain"), big) == ({"n": "0", "g": "{}"}, "")
    counters, why = cut_counters(_cut_glue(tmp_path, "Guarded", extra="Skip == g = {} /\\ Step\n"), big)
    assert counters is None and "g is read outside a bound" in why, why
    counters, why = cut_counters(_cut_glue(tmp_path, "Templated", template="Step /\\ 3 \\notin g"), big)
    assert counters is None and "g is read outside a bound" in why, why


def test_cut_states_are_rendered_by_their_own_trace(tmp_path):
    """Replication renames client values by each trace's order of produces, so a trace's cut
    states are rendered right after the trace is read: cut later, after another trace was read,
    the same segments would carry the other trace's names."""
    opts = attrs.evolve(SEG, segment=200)
    one = write(tmp_path / "one.ndjson", simulate_trace(tmp_path / "one", "replication", 1, 1500))
    two = write(tmp_path / "two.ndjson", simulate_trace(tmp_path / "two", "replication", 2, 1500))
    (alone,), _ = plan([one], opts)
    (both,), _ = plan([one, two], opts)
    inits = [s.init for s in alone[0].parts]
    assert len(inits) >= 2 and [s.init for s in both[0].parts] == inits
    late = segments(both[0], opts.segment)
    assert [s.init for s in late] != inits
