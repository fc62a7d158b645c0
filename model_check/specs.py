"""Spec manifests (``spec/<Module>.toml``, docs/contracts.md section 1) and running them.

A manifest names the module, its model sizes (each a cfg plus a mode) and its bug variants (each a
boolean CONSTANT that every cfg sets to ``FALSE``). Running a variant rewrites ``Name = FALSE`` to
``Name = TRUE`` in a private copy of the cfg; the repository is never touched.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Callable

import attrs

from .tlc import Progress, TLCResult, run_tlc

__all__ = ["ManifestError", "Manifest", "Size", "Variant", "spec_dir", "load_manifests", "load_manifest", "variant_cfg", "run_spec"]


class ManifestError(ValueError):
    """A manifest is malformed, or a size/variant asked for does not exist."""


@attrs.frozen
class Size:
    name: str
    cfg: str
    mode: str = "exhaustive"  # or "simulate"
    depth: int | None = None
    seconds: float | None = None
    workers: int | None = None
    traces: int | None = None
    seed: int | None = None
    check_deadlock: bool = True
    lncheck: str | None = None  # TLC -lncheck: "final" checks liveness once, on the whole graph


@attrs.frozen
class Variant:
    name: str
    doc: str
    violates: str
    size: str = "small"


@attrs.frozen
class Manifest:
    name: str  # the manifest's file stem (usually = module)
    module: str
    description: str
    path: Path
    sizes: dict[str, Size]
    variants: dict[str, Variant]

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def tla(self) -> Path:
        return self.directory / f"{self.module}.tla"


def spec_dir() -> Path:
    """``$KRAFT_SPEC_DIR``, else the repository's ``spec/`` beside the ``model_check`` package."""
    env = os.environ.get("KRAFT_SPEC_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "spec"


_SIZE_KEYS = {"cfg", "mode", "depth", "seconds", "workers", "traces", "seed", "check_deadlock", "deadlock", "lncheck"}


def load_manifest(path: str | os.PathLike) -> Manifest:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # hostile input: tomllib recurses per nested array/inline table
        raise ManifestError(f"{path}: not valid TOML: values nested too deeply") from None
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read: {exc}") from None
    except UnicodeDecodeError as exc:  # hostile input: TOML is UTF-8
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ManifestError(f"{path}:{line}: not UTF-8 (byte offset {exc.start})") from None

    def need(table: dict[str, Any], key: str, where: str, typ: type | tuple[type, ...] = str) -> Any:
        if key not in table:
            raise ManifestError(f"{path}: {where}: missing required key {key!r}")
        if not isinstance(table[key], typ):
            raise ManifestError(f"{path}: {where}: {key!r} must be {getattr(typ, '__name__', typ)}")
        return table[key]

    module = need(data, "module", "top level")
    sizes: dict[str, Size] = {}
    raw_sizes = data.get("sizes", {})
    if not isinstance(raw_sizes, dict) or not raw_sizes:
        raise ManifestError(f"{path}: needs at least one [sizes.NAME] table")
    for name, t in raw_sizes.items():
        where = f"[sizes.{name}]"
        if not isinstance(t, dict):
            raise ManifestError(f"{path}: {where} must be a table")
        unknown = set(t) - _SIZE_KEYS
        if unknown:
            raise ManifestError(f"{path}: {where}: unknown keys {sorted(unknown)}")
        mode = t.get("mode", "exhaustive")
        if mode not in ("exhaustive", "simulate"):
            raise ManifestError(f"{path}: {where}: mode must be 'exhaustive' or 'simulate', not {mode!r}")
        deadlock = t.get("check_deadlock", t.get("deadlock", True))
        lncheck = t.get("lncheck")
        if lncheck not in (None, "final"):
            raise ManifestError(f"{path}: {where}: lncheck must be 'final' (or absent), not {lncheck!r}")
        sizes[name] = Size(
            name=name,
            cfg=need(t, "cfg", where),
            mode=mode,
            depth=t.get("depth"),
            seconds=t.get("seconds"),
            workers=t.get("workers"),
            traces=t.get("traces"),
            seed=t.get("seed"),
            check_deadlock=bool(deadlock),
            lncheck=lncheck,
        )
    variants: dict[str, Variant] = {}
    for name, t in data.get("variants", {}).items():
        where = f"[variants.{name}]"
        if not isinstance(t, dict):
            raise ManifestError(f"{path}: {where} must be a table")
        size = t.get("size", "small")
        if size not in sizes:
            raise ManifestError(f"{path}: {where}: size {size!r} is not one of {sorted(sizes)}")
        variants[name] = Variant(name=name, doc=t.get("doc", ""), violates=need(t, "violates", where), size=size)
    return Manifest(
        name=path.stem,
        module=module,
        description=data.get("description", ""),
        path=path,
        sizes=sizes,
        variants=variants,
    )


def load_manifests(directory: str | os.PathLike | None = None) -> dict[str, Manifest]:
    """All ``*.toml`` manifests of the spec directory, by name (the file stem)."""
    d = Path(directory) if directory is not None else spec_dir()
    if not d.is_dir():
        raise ManifestError(f"spec directory {d} does not exist (set KRAFT_SPEC_DIR?)")
    return {p.stem: load_manifest(p) for p in sorted(d.glob("*.toml"))}


def _find(spec: str | Manifest) -> Manifest:
    if isinstance(spec, Manifest):
        return spec
    manifests = load_manifests()
    if spec in manifests:
        return manifests[spec]
    by_module = [m for m in manifests.values() if m.module == spec]
    if len(by_module) == 1:
        return by_module[0]
    raise ManifestError(f"no spec manifest named {spec!r} in {spec_dir()} (have: {', '.join(sorted(manifests)) or 'none'})")


def variant_cfg(cfg_text: str, variant: str, cfg_name: str = "cfg") -> str:
    """Rewrite the single ``variant = FALSE`` assignment of a cfg to ``TRUE``."""
    pat = re.compile(rf"(^|[\s]){re.escape(variant)}(\s*=\s*)FALSE\b", re.MULTILINE)
    new, n = pat.subn(lambda m: f"{m.group(1)}{variant}{m.group(2)}TRUE", cfg_text)
    if n == 0:
        raise ManifestError(f"{cfg_name}: has no line `{variant} = FALSE` to switch the variant on")
    if n > 1:
        raise ManifestError(f"{cfg_name}: sets `{variant} = FALSE` {n} times")
    return new


def only_expected_property(cfg_text: str, expected: str) -> str:
    """A variant expected to break a temporal property is checked against that property alone:
    TLC does not name the temporal property it found violated, so with several listed the
    violation could be another's."""
    lines = cfg_text.splitlines()
    if "PROPERTIES" not in lines:
        return cfg_text
    start = lines.index("PROPERTIES") + 1
    end = start
    while end < len(lines) and (not lines[end].strip() or lines[end][0].isspace()):
        end += 1
    if expected not in {line.strip() for line in lines[start:end]}:
        return cfg_text
    return "\n".join(lines[:start] + [f"    {expected}"] + lines[end:]) + "\n"


def run_spec(
    spec: str | Manifest,
    size: str = "small",
    variant: str | None = None,
    *,
    simulate: bool | None = None,
    depth: int | None = None,
    workers: int | None = None,
    timeout: float | None = None,
    seed: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> TLCResult:
    """Run one size (optionally one variant) of a spec manifest.

    ``simulate``/``depth``/``workers``/``timeout`` override the manifest; ``timeout`` defaults to
    the size's ``seconds``."""
    m = _find(spec)
    if size not in m.sizes:
        raise ManifestError(f"{m.path}: no size {size!r} (have: {', '.join(m.sizes)})")
    sz = m.sizes[size]
    cfg = m.directory / sz.cfg
    if not cfg.is_file():
        raise ManifestError(f"{m.path}: [sizes.{size}] cfg {sz.cfg!r} does not exist in {m.directory}")
    if not m.tla.is_file():
        raise ManifestError(f"{m.path}: module file {m.tla.name} does not exist in {m.directory}")
    cfg_text = cfg.read_text()
    if variant is not None:
        if variant not in m.variants:
            raise ManifestError(f"{m.path}: no variant {variant!r} (have: {', '.join(m.variants) or 'none'})")
        cfg_text = only_expected_property(variant_cfg(cfg_text, variant, str(cfg)), m.variants[variant].violates)
    sim = (sz.mode == "simulate") if simulate is None else simulate
    return run_tlc(
        m.tla,
        cfg,
        workers=workers or sz.workers or 1,
        timeout=timeout if timeout is not None else sz.seconds,
        simulate=sim,
        depth=depth if depth is not None else sz.depth,
        check_deadlock=sz.check_deadlock,
        seed=seed if seed is not None else sz.seed,
        traces=sz.traces,
        on_progress=on_progress,
        cfg_text=cfg_text,
        extra_args=["-lncheck", sz.lncheck] if sz.lncheck else (),
    )
