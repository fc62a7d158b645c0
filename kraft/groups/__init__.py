"""kraft/groups."""
