"""``kraft audit-metadata``: a KRaft cluster's ``__cluster_metadata`` log, replayed and checked.

Layers: :mod:`.reader` (files -> decoded records, never changing them), :mod:`.image` (Kafka's
replay of a record into the metadata image), :mod:`.invariants` (the rules, named as
spec/PartitionReplication.tla names them), :mod:`.replay` (records -> image + violations),
:mod:`.audit` (one directory; a corpus in process or on Spark), :mod:`.cli` (the command).
docs/audit-metadata.md is the user's page.
"""
