"""Spec values of the controller's vocabulary that share their spelling with spec actions
(``spec/PartitionReplication.tla``): the metadata record types and the broker states.  Kept with the
declarations (``kraft/replication/protocol.py`` declares the actions) so that no other module spells
an action name."""

# metadata record types of the spec's metadataLog
REGISTER_BROKER = "RegisterBroker"
FENCE_BROKER = "FenceBroker"
UNFENCE_BROKER = "UnfenceBroker"
CONTROLLED_SHUTDOWN_RECORD = "ControlledShutdown"
PARTITION_CHANGE = "PartitionChange"

# brokerState values
UNFENCED = "Unfenced"
FENCED = "Fenced"
CONTROLLED_SHUTDOWN = "ControlledShutdown"
# fenced with the registration still in controlled shutdown (ClusterControlManager keeps the two
# flags apart until the broker registers again): never unfenced, never acceptable
FENCED_IN_SHUTDOWN = "FencedInShutdown"
FENCED_STATES = (FENCED, FENCED_IN_SHUTDOWN)
