"""What the zoo tells its pytest plug-in (``pytest_plugin.py``) for one protocol's Hypothesis run:
written as a JSON file next to the run's records and passed as ``pytest --zoo-config FILE``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
from attrs.validators import deep_iterable, instance_of, optional


def _names(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


_NAMES = deep_iterable(member_validator=instance_of(str), iterable_validator=instance_of(tuple))


@attrs.frozen
class PluginConfig:
    # where to append one JSON line per finished test
    records: str = attrs.field(validator=instance_of(str))
    # the protocol's variant names: a test whose id names none of them is a control test
    variants: tuple[str, ...] = attrs.field(converter=_names, validator=_NAMES)
    # the variants whose test to run (the others' cells are decided without Hypothesis)
    selected: tuple[str, ...] = attrs.field(converter=_names, validator=_NAMES)
    # also run the control tests (those naming no variant and not marked slow)
    control: bool = attrs.field(default=True, validator=instance_of(bool))
    # cap every Hypothesis run at this many examples (None: the tests' own settings)
    max_examples: int | None = attrs.field(default=None, validator=optional(instance_of(int)))
    # False: report the first falsifying example unshrunk (shrinking often takes longer than finding)
    shrink: bool = attrs.field(default=True, validator=instance_of(bool))

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(attrs.asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> "PluginConfig":
        """The config in ``path``; ValueError names the file (and the line of a JSON error)."""
        try:
            doc = json.loads(path.read_text())
        except OSError as exc:
            raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ValueError(f"{path}: line {getattr(exc, 'lineno', '?')}: not JSON: {getattr(exc, 'msg', exc)}") \
                from None
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: a zoo config is a JSON object, not {type(doc).__name__}")
        unknown = sorted(set(doc) - {f.name for f in attrs.fields(cls)})
        if unknown:
            raise ValueError(f"{path}: unknown field(s) {', '.join(unknown)}")
        try:
            return cls(**doc)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from None
