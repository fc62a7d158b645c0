"""The error raised when Spark cannot start. It lives apart from :mod:`.session`, which imports
pyspark, so that a command catching it (``kraft audit --no-spark`` included) loads no Spark."""


class SparkUnavailable(RuntimeError):
    """Java is missing or Spark could not start; the message says which and what to do."""
