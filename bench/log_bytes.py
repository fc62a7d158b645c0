"""Kafka's bytes in tables: record-batch compression per codec, the metadata-record codec, the
offset index against a scan, and ``kraft audit-metadata`` over a large metadata log.

    python bench/log_bytes.py [--records N] [--partitions P] [--changes C]

- compression: one batch of N records (JSON-like values, 60-90 bytes each), encoded and decoded
  with each codec of ``kraft.log.compression``: MB/s of uncompressed records and the ratio;
- metadata codec: ``encode_metadata`` / ``decode_metadata`` of PartitionChangeRecords carrying
  the ELR tagged fields and of RegisterBrokerRecords, records/s;
- index: ``Log.read_from_disk`` of the last offset of a 64 MiB segment through the ``.index``
  (``LogSegment.translateOffset``) against reading the whole segment and decoding every batch;
- audit-metadata: a log of P partitions and C partition changes written with ``kraft.log``,
  audited in process (``audit_directory``), records/s.

The tables go to bench/results/log_bytes.md (its header gives the machine and its load).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import results  # noqa: E402  (bench/results.py)
from kraft.log import Log, MemoryFS, OsFS, Record, RecordBatch  # noqa: E402
from kraft.log.compression import CODEC_IDS  # noqa: E402
from kraft.log.records import iter_batches  # noqa: E402
from kraft.log.metadata import MetadataRecord, decode_metadata, encode_metadata  # noqa: E402
from spark_validation.checks.metadata.audit import audit_directory  # noqa: E402

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def _seconds(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _records(n: int) -> tuple[Record, ...]:
    rnd = random.Random(1)
    return tuple(Record(i, i, f"key-{i % 97}".encode(),
                        f'{{"user":{rnd.randrange(10**6)},"op":"{rnd.choice("abcd")}","n":{i}}}'.encode())
                 for i in range(n))


def compression_table(n: int) -> None:
    records = _records(n)
    raw = sum(len(r.key) + len(r.value) for r in records)
    print(f"## Record-batch compression: one batch of {n:,} records ({raw / 1e6:.2f} MB of keys and values)\n")
    print("| codec | batch bytes | ratio | encode MB/s | decode MB/s |")
    print("|---|---:|---:|---:|---:|")
    for codec in CODEC_IDS:
        batch = RecordBatch(0, 1, records, compression=codec)
        data = batch.encode()
        enc = _seconds(batch.encode)
        dec = _seconds(lambda: RecordBatch.decode(data))
        print(f"| {codec} | {len(data):,} | {raw / len(data):.2f} | {raw / enc / 1e6:.1f} | {raw / dec / 1e6:.1f} |")
    print()


def _metadata_samples(n: int) -> dict[str, list[MetadataRecord]]:
    change = [MetadataRecord("PartitionChangeRecord", 2, {
        "partitionId": i % 1000, "topicId": TOPIC_ID, "leader": i % 5, "isr": [i % 5, (i + 1) % 5],
        "eligibleLeaderReplicas": [(i + 2) % 5], "lastKnownElr": []}) for i in range(n)]
    register = [MetadataRecord("RegisterBrokerRecord", 3, {
        "brokerId": i, "incarnationId": TOPIC_ID, "brokerEpoch": i, "fenced": True,
        "endPoints": [{"name": "PLAINTEXT", "host": f"broker-{i}", "port": 9092, "securityProtocol": 0}],
        "rack": None}) for i in range(n)]
    return {"PartitionChangeRecord v2 (ELR tagged)": change, "RegisterBrokerRecord v3": register}


def metadata_table(n: int) -> None:
    print(f"## Metadata-record codec: {n:,} records of each kind\n")
    print("| record | bytes each | encode records/s | decode records/s |")
    print("|---|---:|---:|---:|")
    for name, recs in _metadata_samples(n).items():
        blobs = [encode_metadata(r) for r in recs]
        enc = _seconds(lambda: [encode_metadata(r) for r in recs])
        dec = _seconds(lambda: [decode_metadata(b) for b in blobs])
        print(f"| {name} | {sum(map(len, blobs)) / n:.1f} | {n / enc:,.0f} | {n / dec:,.0f} |")
    print()


def index_table() -> None:
    fs = MemoryFS()
    log = Log(fs, "p-0", segment_bytes=1 << 30)
    records = _records(50)
    offset = 0
    size = 0
    while size < 64 << 20:
        log.append(RecordBatch(offset, 1, records))
        offset += len(records)
        size = fs.size(log.segments[-1])
    last = offset - 1
    seg = log.segments[-1]

    def scan() -> None:
        for _, batch in iter_batches(fs.read_bytes(seg)):
            if batch.last_offset >= last:
                return

    indexed = _seconds(lambda: log.read_from_disk(last))
    scanned = _seconds(scan, repeat=1)
    print(f"## Offset lookup in one {fs.size(seg) / 2**20:.0f} MiB segment ({offset:,} records)\n")
    print("| read of the last offset | ms |")
    print("|---|---:|")
    print(f"| through the .index (`Log.read_from_disk`) | {indexed * 1e3:.2f} |")
    print(f"| scanning and decoding every batch | {scanned * 1e3:.0f} |")
    print()


def _metadata_log(directory: str, partitions: int, changes: int) -> int:
    log = Log(OsFS(), directory)
    recs = [MetadataRecord("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 21}),
            MetadataRecord("TopicRecord", 0, {"name": "t", "topicId": TOPIC_ID})]
    for b in range(3):
        recs.append(MetadataRecord("RegisterBrokerRecord", 3, {"brokerId": b, "brokerEpoch": 2 + b, "fenced": False,
                                                              "incarnationId": TOPIC_ID}))
    for p in range(partitions):
        recs.append(MetadataRecord("PartitionRecord", 1, {"partitionId": p, "topicId": TOPIC_ID, "replicas": [0, 1, 2],
                                                          "isr": [0, 1, 2], "leader": p % 3}))
    rnd = random.Random(2)
    state = {p: (p % 3, [0, 1, 2]) for p in range(partitions)}
    for _ in range(changes):
        p = rnd.randrange(partitions)
        leader, isr = state[p]
        leader = rnd.choice(isr)  # a clean election (or none): a member of the current ISR
        isr = sorted({leader} | {b for b in range(3) if rnd.random() < 0.6})
        state[p] = (leader, isr)
        recs.append(MetadataRecord("PartitionChangeRecord", 0, {"partitionId": p, "topicId": TOPIC_ID,
                                                                "leader": leader, "isr": isr}))
    offset = 0
    for i in range(0, len(recs), 100):
        chunk = recs[i:i + 100]
        log.append(RecordBatch(offset, 1, tuple(Record(k, 0, None, encode_metadata(r)) for k, r in enumerate(chunk))))
        offset += len(chunk)
    log.flush()
    return offset


def audit_table(partitions: int, changes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = str(Path(tmp) / "__cluster_metadata-0")
        n = _metadata_log(directory, partitions, changes)
        t = time.perf_counter()
        result = audit_directory(directory)
        seconds = time.perf_counter() - t
    print(f"## audit-metadata in process: {n:,} records ({partitions:,} partitions, {changes:,} changes)\n")
    print("| verdict | seconds | records/s |")
    print("|---|---:|---:|")
    print(f"| {result.verdict.value} | {seconds:.2f} | {n / seconds:,.0f} |")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000, help="records per compressed batch and per codec row")
    ap.add_argument("--partitions", type=int, default=1_000)
    ap.add_argument("--changes", type=int, default=200_000)
    args = ap.parse_args()
    compression_table(args.records)
    metadata_table(args.records)
    index_table()
    audit_table(args.partitions, args.changes)
    return 0


if __name__ == "__main__":
    sys.exit(results.run("log_bytes", main))
