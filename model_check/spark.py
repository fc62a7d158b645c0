"""``kraft check --simulate --master URL``: the seeds of a parallel simulation as Spark tasks.

Each wave of :func:`model_check.parallel.simulate` becomes one Spark job,
``parallelize(tasks, len(tasks)).mapPartitions(...)``: one partition per seed, each running its
round's TLC as a subprocess on the executor with the same runner as a local run
(``model_check.tlc.run_tlc``). The spec's ``.tla`` files and the run's cfg travel inside the tasks,
so executors need no shared file system; they need this package (kraft installed in the Python the
executors run, as for the audit), java and ``tla2tools.jar``. Imported only when ``--master`` is
given (pyspark is optional for ``kraft check``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from spark_validation.session import SparkUnavailable, get_context

from .parallel import Parallel, Task, run_task, simulate
from .specs import Manifest

__all__ = ["SparkUnavailable", "default_seeds", "simulate_on_spark"]


def _run_partition(tasks: Iterable[Task]) -> Iterator[dict[str, Any]]:
    for task in tasks:
        yield run_task(task)


def default_seeds(master: str) -> int:
    """The executors' cores: Spark's default parallelism for ``master``."""
    return max(1, get_context(master, app_name="kraft-check", light_jvm=True).defaultParallelism)


def simulate_on_spark(m: Manifest, size: str, variant: str | None, *, master: str, seeds: int | None,
                      budget: float, depth: int | None = None, base_seed: int | None = None,
                      on_wave: Callable[[int, list[dict[str, Any]]], None] | None = None) -> Parallel:
    """Run the parallel simulation with one Spark task per seed and wave (see ``parallel.simulate``)."""
    sc = get_context(master, app_name="kraft-check", light_jvm=True)  # TLC runs beside the Python workers
    n = seeds or max(1, sc.defaultParallelism)

    def map_wave(tasks: list[Task]) -> list[dict[str, Any]]:
        return sc.parallelize(tasks, len(tasks)).mapPartitions(_run_partition).collect()

    return simulate(m, size, variant, seeds=n, budget=budget, map_wave=map_wave, depth=depth,
                    base_seed=base_seed, on_wave=on_wave)
