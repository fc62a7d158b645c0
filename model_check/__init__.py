"""model_check: run TLC 2.15 on the specs in ``spec/`` and parse what it reports.

Public API (docs/contracts.md section 7)::

    from model_check import run_spec, run_tlc, TLCResult, TLCError, load_manifests
"""

from .specs import Manifest, ManifestError, load_manifest, load_manifests, run_spec, spec_dir, variant_cfg
from .tlc import (
    EC,
    Progress,
    TLCError,
    TLCResult,
    ToolMessage,
    TraceState,
    find_jar,
    find_java,
    parse_tool_output,
    run_tlc,
    strip_tool_messages,
    tool_messages,
)
from .values import TLADict, ValueParseError, format_value, parse_value

__all__ = [
    "EC",
    "ToolMessage",
    "strip_tool_messages",
    "tool_messages",
    "Manifest",
    "ManifestError",
    "Progress",
    "TLADict",
    "TLCError",
    "TLCResult",
    "TraceState",
    "ValueParseError",
    "find_jar",
    "find_java",
    "format_value",
    "load_manifest",
    "load_manifests",
    "parse_tool_output",
    "parse_value",
    "run_spec",
    "run_tlc",
    "spec_dir",
    "variant_cfg",
]
