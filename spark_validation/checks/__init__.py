"""The audit's checks that are not client-history checks (DESIGN.md: checks, beside the others)."""
