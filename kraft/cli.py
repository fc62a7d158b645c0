"""The ``kraft`` command.

Each subcommand lives in the package that owns it and is imported only when used, so ``kraft
dump-log`` never pays for Spark and a broken optional area cannot take the whole CLI down.

Exit codes shared by every subcommand (defined once, in kraft/outcome.py):
  0  ran, checked something, and found nothing wrong
  1  ran and found a violation (counterexample, rejected trace, anomaly)
  2  usage error, bad input, or a tool failure (missing java, TLA+ parse error, ...)
  3  inconclusive: an `unknown` verdict, a time or memory budget reached, nothing checkable found
130  interrupted (SIGINT, Ctrl-C); 143 terminated (SIGTERM): "kraft CMD: interrupted" on stderr,
     every child process stopped, no document written (kraft/interrupt.py)
"""

from __future__ import annotations

import importlib
import sys

import click

from kraft.interrupt import guard
from kraft.outcome import EXIT_ERROR

# name -> "module:attribute" of a click.Command
COMMANDS: dict[str, str] = {
    "check": "model_check.cli:check",
    "simulate": "kraft.sim.cli:simulate",
    "conform": "traces.cli:conform",
    "audit": "spark_validation.cli:audit",
    "audit-metadata": "spark_validation.checks.metadata.cli:audit_metadata",
    "dump-log": "kraft.log.cli:dump_log",
    "format": "kraft.quorum.cli:format_cmd",
    "assign": "kraft.groups.assignors.cli:assign",
    "review": "kraft.review.pipeline:review",
    "report": "kraft.review.page:report",
    "test": "kraft.review.suite:test",
    "zoo": "kraft.review.zoo.command:zoo",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        ctx.meta["kraft.command"] = name  # for the interrupt message, before the slow import
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                return _unavailable(name, f"module {module_name} is not part of this build yet")
            raise
        return getattr(module, attr)

    def invoke(self, ctx: click.Context) -> object:
        with guard(lambda: " ".join(("kraft", ctx.meta.get("kraft.command", ""))).strip()):
            return super().invoke(ctx)


def _unavailable(name: str, why: str) -> click.Command:
    @click.command(name=name, help=f"(unavailable: {why})")
    def _cmd() -> None:
        click.echo(f"kraft {name}: {why}", err=True)
        sys.exit(EXIT_ERROR)

    return _cmd


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kraft")
def main() -> None:
    """Model-check, test, conform and audit Kafka's ownership protocols."""


if __name__ == "__main__":  # pragma: no cover
    main()
