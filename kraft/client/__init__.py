"""kraft/client."""
