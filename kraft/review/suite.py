"""``kraft test``: the test suite (pytest), with pytest's exit codes mapped onto kraft's.

pytest exits 0 all passed, 1 some test failed, 2 interrupted, 3 internal error, 4 usage error,
5 no tests collected (``pytest.ExitCode``). kraft's table (kraft/outcome.py) reads: a failed test
is a violation (1); interrupted, internal and usage errors are errors (2); no test collected means
nothing was checked (3).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from kraft import interrupt
from kraft.outcome import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION

PYTEST_TO_KRAFT = {0: EXIT_OK, 1: EXIT_VIOLATION, 2: EXIT_ERROR, 3: EXIT_ERROR, 4: EXIT_ERROR,
                   5: EXIT_INCONCLUSIVE}


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.pass_context
def test(ctx: click.Context) -> None:
    """Run the test suite (arguments go to pytest; `-m slow` runs the exhaustive ones)."""
    root = Path(__file__).resolve().parents[2]
    # its own session, so Ctrl-C reaches it once, through kraft (SIGINT: pytest ends its run and
    # reports it, which can take seconds on a busy machine); pytest's exit 2 of its own
    # interruption stays an error
    code = interrupt.run([sys.executable, "-m", "pytest", *ctx.args], signum=signal.SIGINT, grace=15.0, cwd=root)
    sys.exit(PYTEST_TO_KRAFT.get(code, EXIT_ERROR))
