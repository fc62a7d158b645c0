"""The trace recorder writes a non-spec step that changed nothing projected with ``"state": null``
(contract 5), and the trace reader gives that step the previous line's state back: every step
read equals the step recorded."""

from __future__ import annotations

import json
from pathlib import Path

from kraft.protocols import PROTOCOLS
from kraft.sim.core import Faults, Simulator
from kraft.sim.recorder import Recorder, _jsonable
from traces.schema import read_trace


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()[1:]]


def test_unchanged_non_spec_steps_are_written_without_state(tmp_path: Path) -> None:
    rec = Recorder({"protocol": "p", "spec": "P"}, {})
    rec.step("A", 1, {}, True, {"x": [1]})
    rec.step("a", 1, {}, False, {"x": [1]})  # equal, not the same object: unchanged
    rec.step("B", 1, {}, True, {"x": [1]})  # a spec step always carries its state
    rec.step("b", 1, {}, False, {"x": [1, 2]})  # changed: written
    rec.step("c", 1, {}, False, {"x": [1, 2]})
    assert all("state" in s for s in rec.steps)  # in memory every step has its state
    tpath, _ = rec.write(tmp_path)
    assert [s["state"] is not None for s in _lines(tpath)] == [True, False, True, True, False]
    assert [e.state for e in read_trace(tpath).events] == [{"x": [1]}] * 3 + [{"x": [1, 2]}] * 2


def test_a_replication_run_reads_back_as_recorded(tmp_path: Path) -> None:
    plugin = PROTOCOLS["replication"].plugin(3, None)
    rec = Recorder({"protocol": "replication", "spec": plugin.declaration.spec_module,
                    "constants": plugin.constants()}, {"model": "append-log"})
    sim = Simulator(plugin, 3, Faults.parse("all", plugin.nemeses()), recorder=rec)
    sim.run(600)
    sim.finish()
    tpath, _ = rec.write(tmp_path)
    written = _lines(tpath)
    omitted = sum(1 for s in written if s["state"] is None)
    assert omitted > len(written) // 10  # the run has many non-spec steps that change nothing
    events = read_trace(tpath).events
    assert len(events) == len(rec.steps)
    for ev, step in zip(events, rec.steps):
        assert (ev.action, ev.spec, ev.args, ev.state) == \
            (step["action"], step["spec"], _jsonable(step["args"]), _jsonable(step["state"])), ev.line
