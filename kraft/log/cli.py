"""``kraft dump-log``: Kafka's ``kafka-dump-log.sh`` (``DumpLogSegments``) with its options and
its output (kraft/log/dump.py says what is printed and where it comes from).

Files come from ``--files a,b,c`` (Kafka's way) and/or as arguments. ``.log`` segments and
``.checkpoint`` snapshots print their batches (``--deep-iteration`` adds a line per record,
``--print-data-log`` keys and values, a decoder option implies both); ``.index`` and
``.timeindex`` files print their entries, checked against the segment beside them
(``--verify-index-only`` checks without printing, ``--index-sanity-check`` runs only Kafka's
start-up sanity check). ``--max-bytes`` reads only that many bytes of each segment.

Exit codes (kraft/outcome.py): 0 every file read cleanly; 1 an index does not match its segment
(the mismatches are listed on stderr, as Kafka lists them); 2 a file is missing, unknown or holds
corrupt, torn or unsupported data (everything before the problem is printed, and the file and
byte position are named on stderr). It writes no JSON.
"""

from __future__ import annotations

import sys

import click

from kraft.outcome import EXIT_ERROR, EXIT_OK, EXIT_VIOLATION

from .decoders import cluster_metadata_parser, offsets_parser
from .dump import INT32_MAX, Dumper, DumpOptions


def _files(files_opt: str | None, files: tuple[str, ...]) -> list[str]:
    out = [f for f in (files_opt or "").split(",") if f] + list(files)
    if not out:
        raise click.UsageError("name the files to dump: --files a.log,b.index or as arguments")
    return out


@click.command(name="dump-log")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--files", "files_opt", metavar="FILE1,FILE2,...", help="comma-separated data, index and snapshot files to dump")
@click.option("--deep-iteration", "deep", is_flag=True, help="one line per record (implied by --print-data-log)")
@click.option("--print-data-log", "print_data", is_flag=True, help="print keys and values (implied by a decoder option)")
@click.option("--cluster-metadata-decoder", is_flag=True, help="decode values as __cluster_metadata records")
@click.option("--offsets-decoder", is_flag=True, help="decode keys and values as __consumer_offsets records")
@click.option("--skip-record-metadata", is_flag=True, help="leave out offset, timestamp, sizes and headers of each record")
@click.option("--verify-index-only", is_flag=True, help="check .index/.timeindex files against their segment without printing entries")
@click.option("--index-sanity-check", is_flag=True, help="only run the sanity check a broker runs on its indexes at start-up")
@click.option("--max-bytes", type=click.IntRange(min=0), default=INT32_MAX, show_default=True, help="read at most this many bytes of each .log file")
@click.option("--max-message-size", type=click.IntRange(min=1), default=5 * 1024 * 1024, show_default=True, help="bytes read at an index entry's position")
@click.option("--deep", "deep", is_flag=True, hidden=True)
@click.option("--print-data", "print_data", is_flag=True, hidden=True)
def dump_log(
    files: tuple[str, ...],
    files_opt: str | None,
    deep: bool,
    print_data: bool,
    cluster_metadata_decoder: bool,
    offsets_decoder: bool,
    skip_record_metadata: bool,
    verify_index_only: bool,
    index_sanity_check: bool,
    max_bytes: int,
    max_message_size: int,
) -> None:
    """Print segment, snapshot and index FILES like Kafka's kafka-dump-log.sh."""
    if cluster_metadata_decoder and offsets_decoder:
        raise click.UsageError("choose one of --cluster-metadata-decoder and --offsets-decoder")
    parser = cluster_metadata_parser if cluster_metadata_decoder else offsets_parser if offsets_decoder else None
    print_data = print_data or parser is not None
    opts = DumpOptions(
        deep=deep or print_data,
        print_data=print_data,
        skip_record_metadata=skip_record_metadata,
        verify_only=verify_index_only,
        index_sanity_only=index_sanity_check,
        max_bytes=max_bytes,
        max_message_size=max_message_size,
        parser=parser,
    )
    dumper = Dumper(opts, click.echo, lambda line: click.echo(line, err=True))
    for file in _files(files_opt, files):
        dumper.dump(file)
    dumper.finish()
    sys.exit(EXIT_ERROR if dumper.problems else EXIT_VIOLATION if dumper.found_mismatches else EXIT_OK)
