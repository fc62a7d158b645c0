"""kraft/controller."""
