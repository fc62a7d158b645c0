"""bench/zoo_cluster.py's comparison of two zoo runs' decided cells (the runs themselves are the
zoo's own tests)."""

from __future__ import annotations

from tests.bench import load_bench


def _doc(**cells: tuple[str, bool]) -> dict:
    return {"rows": [{"protocol": "groups", "variant": None,
                      "cells": {c: {"status": s, "size": None, "budget": b} for c, (s, b) in cells.items()}}]}


def test_decided_cells_skip_budget_cells_and_agreement_names_a_difference(tmp_path):
    bench = load_bench("zoo_cluster")
    local = bench.decided(_doc(tlc=("clean", False), audit=("inconclusive", True)))
    assert list(local) == [(("groups", None), "tlc")]
    assert bench.agreement(local, bench.decided(_doc(tlc=("clean", False)))) == "1 shared, all agree"
    assert bench.agreement(local, bench.decided(_doc(tlc=("fired", False)))).startswith("1 of 1 differ")
    argv = bench.zoo_argv(["groups"], 30, tmp_path, ["--master", "local[2]"])
    assert argv[-2:] == ["--master", "local[2]"] and "--protocol" in argv and "--no-spark" in argv
