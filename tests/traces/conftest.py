"""Fixtures for the trace-conformance tests: the toy Relay protocol (spec, glue, reference)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
if str(FIXTURES) not in sys.path:
    sys.path.insert(0, str(FIXTURES))

import relay_glue  # noqa: E402
import relay_ref  # noqa: E402

from traces.protocols import register  # noqa: E402

register(relay_glue.GLUE)


@pytest.fixture
def relay():
    return relay_ref


@pytest.fixture
def glue():
    return relay_glue.GLUE
