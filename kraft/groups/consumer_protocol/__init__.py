"""kraft.groups.consumer_protocol: Kafka's consumer group protocol (KIP-848), beside the classic
protocol of :mod:`kraft.groups` (docs/consumer-protocol.md).

Its declaration (``protocol``), the coordinator's heartbeat path and reconciliation
(``coordinator``, ``reconcile``), the consumer's membership manager (``consumer``), messages,
config, invariants and projections, the world that steps them (``world``), the simulator plug-in
(``sim``) and the story commands (``story``)."""
