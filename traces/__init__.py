"""traces."""
