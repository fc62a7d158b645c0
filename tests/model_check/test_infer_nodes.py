"""infer_nodes: TLC 2.15 prints no action parameters, so the node of a step is read off the change."""

from __future__ import annotations

from model_check.tlc import TraceState, infer_nodes
from model_check.values import TLADict, parse_value


def st(i: int, action: str | None, **variables: str) -> TraceState:
    return TraceState(index=i, action=action, node=None, variables={k: parse_value(v) for k, v in variables.items()})


INIT = dict(role='[n1 |-> "U", n2 |-> "U", n3 |-> "U"]', epoch='[n1 |-> 0, n2 |-> 0, n3 |-> 0]',
            messages="{}", cfg='[a |-> 1, b |-> 2]')


def test_per_node_change_names_the_node() -> None:
    trace = [st(1, None, **INIT),
             st(2, "Timeout", **{**INIT, "role": '[n1 |-> "U", n2 |-> "C", n3 |-> "U"]'})]
    out = infer_nodes(trace)
    assert out[0].node is None and not out[0].node_inferred
    assert out[1].node == "n2" and out[1].node_inferred


def test_message_consumed_counts_for_its_destination_and_sent_for_its_source() -> None:
    req = '[mtype |-> "Req", msource |-> "n1", mdest |-> "n3"]'
    resp = '[mtype |-> "Resp", msource |-> "n3", mdest |-> "n1"]'
    trace = [st(1, None, **{**INIT, "messages": "{" + req + "}"}),
             st(2, "Handle", **{**INIT, "messages": "{" + resp + "}"})]
    assert infer_nodes(trace)[1].node == "n3"


def test_two_nodes_touched_or_nothing_touched_leaves_node_unset() -> None:
    both = {**INIT, "epoch": '[n1 |-> 1, n2 |-> 1, n3 |-> 0]'}
    trace = [st(1, None, **INIT), st(2, "Both", **both), st(3, "Noop", **both)]
    out = infer_nodes(trace)
    assert out[1].node is None and out[2].node is None


def test_records_are_not_mistaken_for_the_node_set() -> None:
    # only one variable has keys {a, b}: it is a record, so a change in it names no node
    trace = [st(1, None, **INIT), st(2, "Cfg", **{**INIT, "cfg": '[a |-> 5, b |-> 2]'})]
    assert infer_nodes(trace)[1].node is None


def test_a_node_from_tlcs_label_is_kept() -> None:
    trace = [st(1, None, **INIT),
             TraceState(index=2, action="Timeout", node="n3",
                        variables={**{k: parse_value(v) for k, v in INIT.items()},
                                   "role": TLADict(n1="C", n2="U", n3="U")})]
    out = infer_nodes(trace)
    assert out[1].node == "n3" and not out[1].node_inferred
