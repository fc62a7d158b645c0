"""kraft/replication."""
