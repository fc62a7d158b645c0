"""model_check."""
