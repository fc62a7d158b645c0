"""spark_validation."""
