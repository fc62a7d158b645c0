"""``kraft zoo --master URL``: the zoo's tasks (plan.py's ``cluster_tasks``: one chain per row, one
Hypothesis run per protocol, one TLC run per variant and control) as Spark tasks, one partition
each, so the zoo takes about as long as its slowest task. Executors run remote.py's
``run_payload``: the same kraft CLI and pytest subprocesses as a local zoo, from the Python the
executors run, in the current working directory's checkout (they need kraft installed, the
repository's spec/ and tests/, java and ``tla2tools.jar``, and write the runs' outputs under the
same ``--out`` path). Imported only when ``--master`` is given (pyspark is optional)."""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from spark_validation.session import SparkUnavailable, get_context

from kraft.review.zoo.plan import cluster_tasks
from kraft.review.zoo.remote import merge, payload, run_payload
from kraft.review.zoo.run import fill_unreached
from kraft.review.zoo.state import Zoo

__all__ = ["SparkUnavailable", "run_on_spark"]


def _run_partition(tasks: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for task in tasks:
        yield run_payload(task)


def run_on_spark(zoo: Zoo, master: str) -> None:
    """Every cluster task of the zoo on ``master``, then every cell no task filled in."""
    # the tasks run subprocesses: the JVM only schedules them and carries their results
    sc = get_context(master, app_name="kraft-zoo", light_jvm=True)
    names = [p.name for p in zoo.protocols]
    todo = [payload(names, i, zoo.out, zoo.plan, zoo.budget) for i in range(len(cluster_tasks(zoo.protocols)))]
    for result in sc.parallelize(todo, len(todo)).mapPartitions(_run_partition).collect():
        merge(zoo, result)
    fill_unreached(zoo)
