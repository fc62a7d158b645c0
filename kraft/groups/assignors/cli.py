"""``kraft assign GROUP.json``: run one of Kafka's assignors on a group described in JSON.

The file::

    {"partitions": {"orders": 6, "payments": 3},
     "members": {
        "consumer-1": {"topics": ["orders", "payments"], "owned": ["orders-0", "orders-1"],
                       "generation": 4, "group_instance_id": "host-a", "rack": "r1"},
        "consumer-2": {"topics": ["orders"]}},
     "partition_racks": {"orders-0": ["r1", "r2"]}}        # optional (KIP-881)

Members are visited in the order Kafka's ``HashMap`` would visit them (that is part of the
result); the file's order stands for the order of the JoinGroup members. ``--settle`` repeats
the rebalance with each member owning what it got (the cooperative protocol's follow-up
rebalances) until nothing is revoked. ``--check`` verifies validity and balance and exits 1 on
a violation. Exit codes (kraft/outcome.py): 0 assigned (and, with ``--check``, valid and
balanced), 1 ``--check`` found a violation, 2 bad input. ``--json FILE`` writes the shared header
(``command, verdict, summary, exit_code``) then ``assignor, rounds, problems``.

``--protocol consumer`` (implied by ``--assignor uniform``) runs the coordinator's assignors of
the consumer protocol (KIP-848), ``uniform`` or the server-side ``range``, on a consumer-protocol
group file: see :mod:`.server.groupfile` and :mod:`.server.command`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from kraft.outcome import EXIT_ERROR, Verdict, clear_documents, header, plural, write_document

from . import ASSIGNORS
from .groupfile import MAX_PARTITIONS, GroupFileError, key_line, read_json
from .server import ASSIGNORS as SERVER_ASSIGNORS
from .server.command import assign_consumer
from .types import Subscription, TopicPartition


def _tp(text: Any, where: str) -> TopicPartition:
    if not isinstance(text, str) or "-" not in text:
        raise GroupFileError(f"{where}: expected \"topic-partition\", got {text!r}")
    topic, _, num = text.rpartition("-")
    try:
        return TopicPartition(topic, int(num))
    except ValueError:
        raise GroupFileError(f"{where}: partition number in {text!r} is not an integer") from None


def load_group(path: str) -> tuple[dict[str, int], dict[str, Subscription], dict[TopicPartition, set[str]]]:
    """Parse a group file; errors name the file and the line/column or the JSON path."""
    text, doc = read_json(path)
    unknown_top = set(doc) - {"partitions", "members", "partition_racks"}
    if unknown_top:
        k = sorted(unknown_top)[0]
        hint = "; a consumer-protocol group file takes --protocol consumer" if "topics" in unknown_top else ""
        raise GroupFileError(f"{path}:{key_line(text, k, 1)}: unknown field(s) {sorted(unknown_top)} "
                             f"(known: members, partition_racks, partitions; the assignor is --assignor{hint})")
    parts = doc.get("partitions")
    if not isinstance(parts, dict):
        raise GroupFileError(f"{path}: \"partitions\" must be an object of topic -> count")
    for t, n in parts.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise GroupFileError(f"{path}: partitions.{t}: count must be an integer >= 0, got {n!r}")
    total = sum(parts.values())
    if total > MAX_PARTITIONS:  # a typo like 10**12 would otherwise run the assignor out of memory
        raise GroupFileError(f"{path}:{key_line(text, 'partitions', 1)}: partitions: {total:,} in total, more than "
                             f"this command assigns ({MAX_PARTITIONS:,})")
    members = doc.get("members")
    if not isinstance(members, dict) or not members:
        raise GroupFileError(f"{path}: \"members\" must be a non-empty object of member id -> subscription")
    subs: dict[str, Subscription] = {}
    for m, spec in members.items():
        where = f"{path}: members.{m}"
        if not isinstance(spec, dict):
            raise GroupFileError(f"{where}: must be an object")
        unknown = set(spec) - {"topics", "owned", "generation", "group_instance_id", "rack"}
        if unknown:
            k = sorted(unknown)[0]
            raise GroupFileError(f"{path}:{key_line(text, k, 1)}: members.{m}: unknown field(s) {sorted(unknown)}")
        topics = spec.get("topics", [])
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise GroupFileError(f"{where}.topics: must be a list of topic names")
        owned = spec.get("owned", [])
        if not isinstance(owned, list):
            raise GroupFileError(f"{where}.owned: must be a list of \"topic-partition\"")
        gen = spec.get("generation", -1)
        if not isinstance(gen, int) or isinstance(gen, bool):
            raise GroupFileError(f"{where}.generation: must be an integer")
        for key in ("group_instance_id", "rack"):
            if spec.get(key) is not None and not isinstance(spec[key], str):
                raise GroupFileError(f"{where}.{key}: must be a string or null")
        subs[m] = Subscription(topics, [_tp(x, f"{where}.owned[{i}]") for i, x in enumerate(owned)], gen,
                               spec.get("group_instance_id"), spec.get("rack"))
    racks: dict[TopicPartition, set[str]] = {}
    pr = doc.get("partition_racks") or {}
    if not isinstance(pr, dict):
        raise GroupFileError(f"{path}:{key_line(text, 'partition_racks', 1)}: \"partition_racks\" must be an "
                             f"object of \"topic-partition\" -> list of rack ids, got {type(pr).__name__}")
    for key, value in pr.items():
        if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
            raise GroupFileError(f"{path}: partition_racks.{key}: must be a list of rack ids")
        racks[_tp(key, f"{path}: partition_racks")] = set(value)
    return parts, subs, racks


@click.command(name="assign")
@click.argument("group_file", type=click.Path(dir_okay=False))
@click.option("--assignor", "assignor_name", type=click.Choice(sorted(set(ASSIGNORS) | set(SERVER_ASSIGNORS))),
              help="Kafka assignor (protocol name); default cooperative-sticky (classic), uniform (consumer)")
@click.option("--protocol", type=click.Choice(["classic", "consumer"]),
              help="classic: a client assignor (the default); consumer: the coordinator's assignor of KIP-848 "
                   "(the default with --assignor uniform)")
@click.option("--settle", is_flag=True, help="repeat follow-up rebalances until nothing is revoked (max 10)")
@click.option("--check", is_flag=True, help="verify validity and balance; exit 1 on a violation")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="write the assignment as JSON here")
@click.option("--variant", type=click.Choice(["EmptySubscriptionCountsAsEqual"]),
              help="switch on a known Kafka bug (sticky assignors only)")
def assign(group_file: str, assignor_name: str | None, protocol: str | None, settle: bool, check: bool,
           json_out: str | None, variant: str | None) -> None:
    """Assign partitions to the members described in GROUP_FILE exactly as Kafka would."""
    protocol = protocol or ("consumer" if assignor_name == "uniform" else "classic")
    if protocol == "consumer":
        sys.exit(_consumer(group_file, assignor_name or "uniform", settle, check, json_out, variant))
    assignor_name = assignor_name or "cooperative-sticky"
    if assignor_name not in ASSIGNORS:
        click.echo(f"kraft assign: --assignor {assignor_name} is an assignor of the consumer protocol "
                   f"(--protocol consumer)", err=True)
        sys.exit(EXIT_ERROR)
    try:
        ppt, subs, racks = load_group(group_file)
    except GroupFileError as e:
        click.echo(f"kraft assign: {e}", err=True)
        sys.exit(EXIT_ERROR)
    if variant and assignor_name not in ("sticky", "cooperative-sticky"):
        click.echo(f"kraft assign: --variant {variant} applies to the sticky assignors only", err=True)
        sys.exit(EXIT_ERROR)
    assignor = ASSIGNORS[assignor_name](**({variant: True} if variant else {}))
    if json_out:
        clear_documents(json_out)  # written again once the assignment is checked
    rounds = []
    generation = max([s.generation for s in subs.values()] + [0])
    while True:
        if assignor_name == "roundrobin":
            result = assignor.assign(ppt, subs)
        else:
            result = assignor.assign(ppt, subs, racks or None)
        revoked = sorted(str(p) for m, s in subs.items() for p in set(s.owned_partitions) - set(result[m]))
        rounds.append({"assignment": {m: [str(p) for p in ps] for m, ps in result.items()}, "revoked": revoked})
        if not (settle and revoked) or len(rounds) > 10:
            break
        generation += 1
        subs = {m: Subscription(s.topics, result[m], generation, s.group_instance_id, s.rack) for m, s in subs.items()}
    for i, r in enumerate(rounds):
        title = f"rebalance {i + 1}" if len(rounds) > 1 else "assignment"
        click.echo(f"{title} ({assignor_name}):")
        for m, ps in r["assignment"].items():
            click.echo(f"  {m}: {', '.join(ps) if ps else '-'}")
        if r["revoked"]:
            click.echo(f"  revoked first: {', '.join(r['revoked'])}")
    found: list[str] = []
    if check:
        found = _problems(assignor_name, subs, result, ppt)
        click.echo("check: ok" if not found else "check: " + "; ".join(found))
    final = rounds[-1]["assignment"]
    size = f"{plural(sum(len(ps) for ps in final.values()), 'partition')} to {plural(len(final), 'member')}"
    rebalances = f" in {len(rounds)} rebalances" if len(rounds) > 1 else ""
    if found:
        verdict, sentence = Verdict.VIOLATION, f"{assignor_name} assigned {size}{rebalances}: " + "; ".join(found)
    elif check:
        verdict, sentence = Verdict.CLEAN, f"{assignor_name} assigned {size}{rebalances}: valid and balanced"
    else:  # nothing was asked to be checked: the assignment itself is the result
        verdict, sentence = Verdict.CLEAN, f"{assignor_name} assigned {size}{rebalances} (not checked; --check verifies)"
    if json_out:
        doc = header("assign", verdict, sentence, {"assignor": assignor_name, "rounds": rounds, "problems": found})
        try:
            write_document(json_out, json.dumps(doc, indent=1))
        except OSError as e:
            click.echo(f"kraft assign: cannot write {json_out}: {e.strerror or e}", err=True)
            sys.exit(EXIT_ERROR)
    sys.exit(verdict.exit_code)


def _consumer(group_file: str, assignor_name: str, settle: bool, check: bool, json_out: str | None,
              variant: str | None) -> int:
    """``--protocol consumer``: the coordinator computes one target assignment."""
    if assignor_name not in SERVER_ASSIGNORS:
        click.echo(f"kraft assign: --protocol consumer takes --assignor {' or '.join(SERVER_ASSIGNORS)}, "
                   f"not {assignor_name}", err=True)
        return EXIT_ERROR
    if settle or variant:
        click.echo(f"kraft assign: {'--settle' if settle else '--variant'} applies to the classic protocol only",
                   err=True)
        return EXIT_ERROR
    return assign_consumer(group_file, assignor_name, check, json_out)


def _problems(assignor_name: str, subs: dict[str, Subscription], result: dict[str, list[TopicPartition]],
              ppt: dict[str, int]) -> list[str]:
    """Violations of validity, and of the balance the assignor promises: range balances each
    topic; round robin balances overall when all subscriptions are equal; the sticky assignors
    leave no member 2+ partitions behind another that holds a partition it could take."""
    out = []
    owner: dict[TopicPartition, str] = {}
    for m, ps in result.items():
        for p in ps:
            if p.topic not in subs[m].topics:
                out.append(f"{p} given to {m}, not subscribed")
            if not 0 <= p.partition < ppt.get(p.topic, 0):
                out.append(f"{p} given to {m} does not exist")
            if p in owner:
                out.append(f"{p} given to {owner[p]} and {m}")
            owner[p] = m
    if assignor_name == "range":
        for t in ppt:
            counts = {m: sum(p.topic == t for p in ps) for m, ps in result.items() if t in subs[m].topics}
            if counts and max(counts.values()) - min(counts.values()) > 1:
                out.append(f"unbalanced topic {t}: {counts}")
    elif assignor_name == "roundrobin":
        if len({frozenset(s.topics) for s in subs.values()}) == 1:
            sizes = {m: len(ps) for m, ps in result.items()}
            if max(sizes.values()) - min(sizes.values()) > 1:
                out.append(f"unbalanced: {sizes}")
    else:
        for m in result:
            for o in result:
                if len(result[m]) - len(result[o]) > 1 and {p.topic for p in result[m]} & set(subs[o].topics):
                    out.append(f"unbalanced: {m} has {len(result[m])}, {o} has {len(result[o])}")
    return out
