"""The consumer-protocol glue (traces/protocols/consumer_protocol.py) without TLC: how trace
values become TLA+ values, the templates against the spec's operators, the CONSTANTS from the
simulator's header, and a bad value in a recorded trace named by its line."""

from __future__ import annotations

import json
import re

import pytest

from kraft.groups.consumer_protocol.protocol import PROTOCOL
from kraft.groups.consumer_protocol.sim import STATIC_RESTART, ConsumerProtocolPlugin
from kraft.sim.core import Faults, Simulator
from tests.traces.helpers import simulator, write
from traces.check import Prepared, TraceResult, prepare
from traces.protocols import complete_constants, declared_constants, get_glue
from traces.protocols.consumer_protocol import GLUE, MESSAGE, PART, VARIABLES
from traces.schema import read_trace
from traces.tla import RenderError

simulate = simulator("consumer-protocol")


def test_the_registry_finds_the_glue():
    assert get_glue("consumer-protocol") is GLUE
    assert GLUE.module == "ConsumerGroupProtocol" and GLUE.variants == PROTOCOL.variant_names


def test_partitions_are_tuples_and_partition_epochs_a_function():
    assert PART.render([2, 1], "x") == "<<2, 1>>"
    assert VARIABLES["owned"].render({"c1": [[2, 1], [1, 0]], "c2": []}, "x") == \
        '("c1" :> {<<1, 0>>, <<2, 1>>} @@ "c2" :> {})'
    assert VARIABLES["partitionEpoch"].render([[1, 0, -1], [1, 1, 4]], "x") == "(<<1, 0>> :> (-1) @@ <<1, 1>> :> 4)"
    assert VARIABLES["ctarget"].render({"c1": None}, "x") == '("c1" :> Nil)'


def test_member_and_reconciliation_records():
    m = {"epoch": 5, "prev": 4, "state": "UNREVOKED_PARTITIONS", "assigned": [[1, 0]], "pending": [[2, 1]],
         "tepoch": 6, "sub": [1, 2]}
    assert VARIABLES["member"].render({"c1": m, "c2": None}, "x") == \
        ('("c1" :> [epoch |-> 5, prev |-> 4, state |-> "UNREVOKED_PARTITIONS", assigned |-> {<<1, 0>>}, '
         'pending |-> {<<2, 1>>}, tepoch |-> 6, sub |-> {1, 2}] @@ "c2" :> Nil)')
    assert VARIABLES["recon"].render({"c1": {"target": [], "step": "revoke", "stale": True}}, "x") == \
        '("c1" :> [target |-> {}, step |-> "revoke", stale |-> TRUE])'


def test_messages_have_exactly_the_spec_fields():
    hb = {"type": "Heartbeat", "src": "c1", "inc": 1, "conn": 2, "epoch": 0, "owned": None, "sub": [2]}
    assert MESSAGE.render(hb, "m") == \
        '[conn |-> 2, epoch |-> 0, inc |-> 1, owned |-> Nil, src |-> "c1", sub |-> {2}, type |-> "Heartbeat"]'
    commit = {"type": "OffsetCommit", "src": "c2", "inc": 0, "epoch": 3, "parts": [[1, 1]]}
    assert MESSAGE.render(commit, "m") == \
        '[epoch |-> 3, inc |-> 0, parts |-> {<<1, 1>>}, src |-> "c2", type |-> "OffsetCommit"]'
    with pytest.raises(RenderError, match=r"m: a Heartbeat has fields .*'inc'.*got"):
        MESSAGE.render({k: v for k, v in hb.items() if k != "inc"}, "m")
    with pytest.raises(RenderError, match=r"m: a Heartbeat has fields .*got .*'mconn'"):
        MESSAGE.render({**hb, "mconn": 1}, "m")
    with pytest.raises(RenderError, match="'type' is one of Heartbeat, HeartbeatResponse, OffsetCommit"):
        MESSAGE.render({"type": "JoinGroup"}, "m")
    with pytest.raises(RenderError, match=r"m.owned\[0\]: a partition must be a \[topic, partition\] pair"):
        MESSAGE.render({**hb, "owned": [[1]]}, "m")


def _spec_operators() -> dict[str, int]:
    """Every operator the spec defines, with its arity."""
    text = (GLUE.spec_dir / f"{GLUE.module}.tla").read_text()
    return {m.group(1): len(m.group(2).split(",")) if m.group(2) else 0
            for m in re.finditer(r"^(\w+)(?:\(([^)]*)\))?\s*==", text, flags=re.M)}


def test_every_action_calls_a_spec_operator_of_its_arity():
    ops = _spec_operators()
    assert set(GLUE.templates) == {a.spec for a in PROTOCOL.actions}
    for name, template in GLUE.templates.items():
        call = re.search(r"(\w+)\(([^)]*)\)$", template)
        assert call is not None, template
        assert ops.get(call.group(1)) == len(call.group(2).split(", ")), (name, template)
    assert GLUE.templates["HandleHeartbeatResponse"] == "p[2] \\in msgs /\\ HandleHeartbeatResponseMsg(p[1], p[2])"
    assert GLUE.templates["HandleHeartbeat"] == "p[1] \\in msgs /\\ HandleHeartbeatMsg(p[1])"
    assert GLUE.templates["DropMessage"] == "p[1] \\in msgs /\\ DropMessageMsg(p[1])"
    assert GLUE.templates["SessionTimeout"] == "SessionTimeout(p[1])"


def test_static_clients_from_the_simulators_header():
    """With the static-restart nemesis c1 is static, and the header says so (written after the
    world is built)."""
    plugin = ConsumerProtocolPlugin(3)
    Simulator(plugin, 1, Faults.parse(f"all,{STATIC_RESTART}:300", plugin.nemeses()))
    assert GLUE.constants({"constants": plugin.constants()})["StaticClients"] == '{"c1"}'


def test_constants_from_the_simulators_header():
    header = {"constants": ConsumerProtocolPlugin(3).constants()}
    consts = GLUE.constants(header)
    assert consts["Clients"] == '{"c1", "c2", "c3"}'
    assert (consts["NumTopics"], consts["PartitionsPerTopic"]) == ("2", "2")
    assert consts["StaticClients"] == "{}"
    assert consts["FaultKinds"] == '{"loss", "zombie", "session", "leave", "expire", "restart"}'
    assert consts["SendNoOpHeartbeats"] == consts["AnyAssignment"] == "TRUE"
    assert all(consts[v] == "FALSE" for v in PROTOCOL.variant_names)
    assert complete_constants(GLUE, consts) == consts  # every declared CONSTANT is set
    assert set(declared_constants(GLUE)) == set(consts)


@pytest.mark.parametrize("constants,message", [
    ({"NumTopics": 2, "PartitionsPerTopic": 2}, "constants.Clients must be a non-empty list of strings"),
    ({"Clients": ["c1"], "NumTopics": "2", "PartitionsPerTopic": 2}, "constants.NumTopics must be a positive"),
    ({"Clients": ["c1"], "NumTopics": 2, "PartitionsPerTopic": 0}, "constants.PartitionsPerTopic must be"),
    ({"Clients": ["c1"], "StaticClients": ["c2"], "NumTopics": 2, "PartitionsPerTopic": 1},
     "constants.StaticClients must be a list of some of the Clients"),
])
def test_bad_constants_are_named(constants, message):
    with pytest.raises(Exception, match=message):
        GLUE.constants({"constants": constants})


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> list[str]:
    out = tmp_path_factory.mktemp("cp")
    return simulate(out / "run", 3, 300)


def _first(lines: list[str], action: str) -> int:
    return next(k for k, x in enumerate(lines) if k and json.loads(x)["action"] == action)


def _prepared(tmp_path, lines: list[str]) -> Prepared | TraceResult:
    path = write(tmp_path / "t.ndjson", lines)
    return prepare(read_trace(path))


def test_a_recorded_trace_translates_completely(tmp_path, recorded):
    p = _prepared(tmp_path, recorded)
    assert isinstance(p, Prepared) and p.stop is None
    assert len(p.events) == sum(json.loads(x)["spec"] for x in recorded[1:]) > 100


@pytest.mark.parametrize("edit,where,what", [
    (lambda d: d["args"]["m"].update(epoch="five"), "args.m.epoch", "expected an integer"),
    (lambda d: d["state"]["owned"].update(c1=[[1, 0, 7]]), "state.owned[c1][0]", "a partition must be"),
    (lambda d: d["state"]["member"].update(c1={"epoch": 1}), "state.member[c1]", "field 'prev' missing"),
])
def test_a_bad_value_is_named_with_its_line(tmp_path, recorded, edit, where, what):
    k = _first(recorded, "HandleHeartbeat")
    d = json.loads(recorded[k])
    edit(d)
    p = _prepared(tmp_path, [*recorded[:k], json.dumps(d), *recorded[k + 1:]])
    stop = p.stop if isinstance(p, Prepared) else p
    assert stop is not None and stop.kind == "bad_step" and stop.line == k + 1
    assert re.match(rf"{re.escape(str(tmp_path / 't.ndjson'))}:{k + 1}\b", stop.message), stop.message
    assert where in stop.message and what in stop.message, stop.message
