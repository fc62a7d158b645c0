"""``kraft format``: ``kafka-storage format`` for a dynamic quorum (kraft/quorum/bootstrap.py says
what is written and where it comes from).

Exit codes (kraft/outcome.py): 0 the directory was formatted; 2 bad input (a malformed
``--initial-controllers``, a bad directory id, a directory formatted already) or an I/O error,
with the reason on stderr. It writes no JSON.
"""

from __future__ import annotations

import sys
import time

import click

from kraft.log import OsFS
from kraft.outcome import EXIT_ERROR, EXIT_OK

from .bootstrap import FormatError, format_directory, parse_dynamic_voter, parse_dynamic_voters, random_uuid


def _voters(node_id: int, standalone: bool, initial_controllers: str | None, address: str, directory_id: str | None):
    if standalone == (initial_controllers is not None):
        raise click.UsageError("give one of --standalone and --initial-controllers")
    if initial_controllers is not None:
        if directory_id is not None:
            raise click.UsageError("--directory-id goes with --standalone; --initial-controllers names every directory id")
        return parse_dynamic_voters(initial_controllers)
    try:
        return [parse_dynamic_voter(f"{node_id}@{address}:{directory_id or random_uuid()}")]
    except FormatError as exc:
        raise FormatError(f"--standalone with --controller-address {address!r}: {exc}") from None


@click.command(name="format")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--cluster-id", "-t", required=True, help="the cluster id written to meta.properties")
@click.option("--node-id", required=True, type=click.IntRange(min=0), help="this node's id (node.id)")
@click.option("--standalone", "-s", is_flag=True, help="a single-node dynamic quorum of this node")
@click.option("--initial-controllers", "-I", metavar="ID@HOST:PORT:DIR,...", help="the initial voters")
@click.option("--controller-address", default="localhost:9093", show_default=True, metavar="HOST:PORT",
              help="this controller's advertised address (--standalone)")
@click.option("--directory-id", metavar="UUID", help="this node's directory id with --standalone (default: random)")
@click.option("--controller-listener-name", default="CONTROLLER", show_default=True, help="the voters' endpoint name")
@click.option("--timestamp-ms", type=click.IntRange(min=0), help="the format time in ms since the epoch (default: now)")
def format_cmd(directory: str, cluster_id: str, node_id: int, standalone: bool, initial_controllers: str | None,
               controller_address: str, directory_id: str | None, controller_listener_name: str,
               timestamp_ms: int | None) -> None:
    """Format the metadata DIRECTORY for a dynamic quorum, as kafka-storage format does."""
    now_ms = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    try:
        voters = _voters(node_id, standalone, initial_controllers, controller_address, directory_id)
        line, _ = format_directory(OsFS(), directory, cluster_id=cluster_id, node_id=node_id, voters=voters,
                                   listener_name=controller_listener_name, now_ms=now_ms)
    except (FormatError, OSError) as exc:
        reason = f"{directory}: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
        click.echo(f"kraft format: {reason}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(line)
    sys.exit(EXIT_OK)
