"""Text printed through rich is printed as written: a file:line such as ``KRaft.tla:100:15`` does not
turn into an emoji (rich's ``:100:`` shortcode) and brackets in a file name are not markup."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft import cli

HOSTILE = "t:100:[bold]x[red]"


def test_check_prints_an_unknown_spec_name_as_written():
    res = CliRunner().invoke(cli.main, ["check", f"No{HOSTILE}Spec"])
    assert res.exit_code == 2
    assert f"No{HOSTILE}Spec" in res.output
    assert "\N{HUNDRED POINTS SYMBOL}" not in res.output


@pytest.mark.tlc
def test_conform_prints_a_rejected_trace_file_name_and_line_as_written(tmp_path: Path):
    # a real trace header followed by a step without an action: conform rejects it at line 2
    header = {"v": 1, "kind": "trace", "protocol": "kraft", "spec": "KRaft",
              "constants": {"Voters": [1, 2, 3], "PreVote": True, "VoteWithoutLogCheck": False,
                            "HwmFromAnyEpoch": False, "NoTruncateOnDivergence": False,
                            "ForgetVoteOnRestart": False}, "seed": 1, "variant": None}
    trace = tmp_path / f"{HOSTILE}.ndjson"
    trace.write_text(json.dumps(header) + "\n" + json.dumps({"bogus": 1}) + "\n")
    res = CliRunner().invoke(cli.main, ["conform", str(trace), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1, res.output
    assert f"{trace}:2:" in res.output
    assert f"{HOSTILE}.ndjson: rejected" in res.output
    assert "\N{HUNDRED POINTS SYMBOL}" not in res.output
