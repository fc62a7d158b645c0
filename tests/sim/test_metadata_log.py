"""``kraft simulate --metadata-log``: the controllers' ``__cluster_metadata-0`` directories on disk."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kraft.controller import codec
from kraft.controller.records import RegisterBrokerRecord
from kraft.log import Log, OsFS
from kraft.log.cli import dump_log
from kraft.sim.cli import simulate
from spark_validation.checks.metadata.cli import audit_metadata

RUN = ["--protocol", "replication", "--seed", "9", "--steps", "1500", "--faults", "all"]


def test_the_run_writes_every_controllers_metadata_log(tmp_path: Path) -> None:
    result = CliRunner().invoke(simulate, [*RUN, "--out", str(tmp_path), "--metadata-log"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    dirs = [Path(d) for d in summary["metadata_log"]]
    assert [d.relative_to(tmp_path).as_posix() for d in dirs] == [
        f"metadata-log/controller-{i}/__cluster_metadata-0" for i in (3000, 3001, 3002)]
    committed = summary["metadata_quorum"]["metadata_records"]
    longest = 0
    for d in dirs:
        assert (d / "quorum-state").exists()
        log, _ = Log.open(OsFS(), str(d))
        records = [(b.base_offset + r.offset_delta, codec.decode(r.value))
                   for b in log.read(0) if not b.is_control for r in b.records]
        for off, rec in records:   # Kafka's rule, on the offsets of the file
            assert not isinstance(rec, RegisterBrokerRecord) or rec.brokerEpoch == off
        longest = max(longest, len(records))
    assert longest >= committed   # the active controller's log holds every committed record


def test_dump_log_shows_one_record_per_metadata_record(tmp_path: Path) -> None:
    CliRunner().invoke(simulate, [*RUN, "--steps", "400", "--out", str(tmp_path), "--metadata-log"])
    segment = tmp_path / "metadata-log/controller-3000/__cluster_metadata-0/00000000000000000000.log"
    out = CliRunner().invoke(dump_log, ["--cluster-metadata-decoder", str(segment)]).output.splitlines()
    batches = [line for line in out if line.startswith("baseOffset: 0 ")]
    assert batches and " count: 5 " in batches[0]    # the bootstrap: topic, 3 brokers, partition
    payloads = [line for line in out if line.startswith("| offset: ") and "payload: {" in line]
    assert [line.split()[2] for line in payloads[:5]] == ["0", "1", "2", "3", "4"]
    assert '"type":"REGISTER_BROKER_RECORD","version":3' in payloads[1]
    log, _ = Log.open(OsFS(), str(segment.parent))
    assert len(payloads) == sum(len(b.records) for b in log.read(0) if not b.is_control)


def test_the_written_log_audits_clean(tmp_path: Path) -> None:
    CliRunner().invoke(simulate, [*RUN, "--out", str(tmp_path / "run"), "--metadata-log"])
    dirs = sorted((tmp_path / "run/metadata-log").glob("controller-*/__cluster_metadata-0"))
    result = CliRunner().invoke(audit_metadata, ["--min-isr", "2", "--out", str(tmp_path / "audit"), *map(str, dirs)])
    assert result.exit_code == 0, result.output
    assert "3 clean" in result.output


def test_a_controlled_shutdown_fenced_and_heartbeating_late_audits_clean(tmp_path: Path) -> None:
    """Seed 1: a broker in controlled shutdown is fenced, then a heartbeat from before its shutdown
    request arrives; the controller leaves it fenced (Kafka's registration keeps the shutdown
    flag), so no record makes it leader or ISR member while Kafka would call it inactive."""
    run = ["--protocol", "replication", "--seed", "1", "--steps", "2000", "--faults", "all"]
    CliRunner().invoke(simulate, [*run, "--out", str(tmp_path / "run"), "--metadata-log"])
    result = CliRunner().invoke(audit_metadata, ["--min-isr", "2", "--out", str(tmp_path / "audit"),
                                                 str(tmp_path / "run")])
    assert result.exit_code == 0 and "3 metadata logs: 3 clean" in result.output, result.output


def test_the_unclean_election_variant_is_flagged_on_its_log(tmp_path: Path) -> None:
    """UncleanElection: the simulated cluster's config (Kafka's default) forbids the unclean
    election its controller makes; the audit names the rule, and says it was allowed with
    --unclean-allowed."""
    run = ["--protocol", "replication", "--variant", "UncleanElection", "--seed", "3", "--steps", "2000",
           "--faults", "all"]
    CliRunner().invoke(simulate, [*run, "--out", str(tmp_path / "run"), "--metadata-log"])
    audit = ["--min-isr", "2", "--out", str(tmp_path / "audit"), "--json", str(tmp_path / "run")]
    result = CliRunner().invoke(audit_metadata, audit)
    assert result.exit_code == 1, result.output
    doc = json.loads(result.output)
    found = {k for d in doc["directories"] for k in d["violations_by_invariant"]}
    assert found == {"UncleanElectionAllowed"}
    assert CliRunner().invoke(audit_metadata, [*audit, "--unclean-allowed"]).exit_code == 0


def test_off_by_default_and_refused_where_there_is_no_metadata_log(tmp_path: Path) -> None:
    CliRunner().invoke(simulate, [*RUN, "--steps", "200", "--out", str(tmp_path)])
    assert not (tmp_path / "metadata-log").exists()
    assert "metadata_log" not in json.loads((tmp_path / "summary.json").read_text())
    result = CliRunner().invoke(simulate, ["--protocol", "kraft", "--steps", "10", "--out", str(tmp_path / "k"),
                                           "--metadata-log"])
    assert result.exit_code == 2 and "keeps no metadata log" in result.output
