"""kraft/log."""
