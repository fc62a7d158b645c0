"""kraft/sim."""
