"""The compiled parts of kraft: spark_validation/_linkernel.c (the linearizability search for
register histories) and spark_validation/_rowkernel.c (two per-op loops of the audit's Kafka
checks). Optional: where they cannot be built (no C compiler or Python headers), the install goes
on and the same code runs in Python, with the same results (KRAFT_COMPILED=off does the same)."""

from setuptools import Extension, setup

FLAGS = ["-O2", "-std=c99", "-Wall", "-Wno-missing-braces"]

setup(
    ext_modules=[
        Extension(f"spark_validation.{name}", [f"spark_validation/{name}.c"], extra_compile_args=FLAGS, optional=True)
        for name in ("_linkernel", "_rowkernel")
    ]
)
