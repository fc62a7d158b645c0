"""``kraft assign --protocol consumer``: run a server-side assignor on a group file and report.

Prints each member's target assignment (members in file order, partitions by topic name then
number), the partitions members must revoke first (held now, assigned elsewhere), and with
``check`` the problems :mod:`.check` finds. Returns the exit code (kraft/outcome.py).
"""

from __future__ import annotations

import json

import click

from kraft.client.java import java_str_key
from kraft.outcome import EXIT_ERROR, Verdict, clear_documents, header, plural, write_document

from ..groupfile import GroupFileError
from . import ASSIGNORS
from .check import problems
from .groupfile import ConsumerGroupFile, load_consumer_group
from .spec import GroupAssignment, PartitionAssignorError, Uuid


def _listing(group: ConsumerGroupFile, assignment: dict[Uuid, set[int]] | dict[Uuid, list[int]]) -> list[str]:
    named = [(group.name(t), p) for t, ps in assignment.items() for p in ps]
    return [f"{n}-{p}" for n, p in sorted(named, key=lambda x: (java_str_key(x[0]), x[1]))]


def _round(group: ConsumerGroupFile, result: GroupAssignment) -> dict:
    assignment = {m: _listing(group, result.get(m, {})) for m in group.members}
    revoked = []
    for m, fm in group.members.items():
        now = set(assignment[m])
        revoked += [p for p in _listing(group, fm.assignment) if p not in now]
    return {"assignment": assignment, "revoked": sorted(revoked)}


def assign_consumer(group_file: str, assignor_name: str, check: bool, json_out: str | None) -> int:
    """Load, assign, print, optionally check and write JSON; the exit code."""
    try:
        group = load_consumer_group(group_file)
    except GroupFileError as e:
        click.echo(f"kraft assign: {e}", err=True)
        return EXIT_ERROR
    if json_out:
        clear_documents(json_out)  # written again once the assignment is checked
    spec = group.group_spec()
    try:
        result = ASSIGNORS[assignor_name]().assign(spec, group.describer)
    except PartitionAssignorError as e:
        click.echo(f"kraft assign: {group_file}: {assignor_name} cannot assign: {e}", err=True)
        return EXIT_ERROR
    kind = spec.subscription_type.value.lower()
    r = _round(group, result)
    click.echo(f"assignment ({assignor_name}, {kind}):")
    for m, ps in r["assignment"].items():
        click.echo(f"  {m}: {', '.join(ps) if ps else '-'}")
    if r["revoked"]:
        click.echo(f"  revoked first: {', '.join(r['revoked'])}")
    found = problems(assignor_name, spec, group.describer, result, group.name) if check else []
    if check:
        click.echo("check: ok" if not found else "check: " + "; ".join(found))
    size = f"{plural(sum(len(ps) for ps in r['assignment'].values()), 'partition')} to " \
           f"{plural(len(group.members), 'member')}"
    if found:
        verdict, sentence = Verdict.VIOLATION, f"{assignor_name} assigned {size}: " + "; ".join(found)
    elif check:
        verdict, sentence = Verdict.CLEAN, f"{assignor_name} assigned {size}: valid and balanced"
    else:
        verdict, sentence = Verdict.CLEAN, f"{assignor_name} assigned {size} (not checked; --check verifies)"
    if json_out:
        doc = header("assign", verdict, sentence, {
            "assignor": assignor_name, "protocol": "consumer", "subscription_type": kind,
            "topic_ids": {n: str(t) for n, t in group.ids.items()}, "rounds": [r], "problems": found})
        try:
            write_document(json_out, json.dumps(doc, indent=1))
        except OSError as e:
            click.echo(f"kraft assign: cannot write {json_out}: {e.strerror or e}", err=True)
            return EXIT_ERROR
    return verdict.exit_code
