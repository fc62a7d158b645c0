"""kraft/quorum."""
