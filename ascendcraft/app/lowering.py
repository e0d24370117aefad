"""``lower``: one candidate at one assignment of its tunables, written out in every form
(CANN custom-op project, direct launch, torch binding, emulator build)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..dsl import ir
from ..dsl.kernel import prepare
from ..dsl.parser import DslError
from .errors import UserError


@dataclass(frozen=True)
class LowerConfig:
    """``out``: the directory to write into; ``soc``: the SoC the sources are for;
    ``params``: tunable values (the program's defaults for the rest)."""

    out: Path
    soc: str
    params: dict[str, int] = field(default_factory=dict)


@dataclass
class Lowered:
    """What was written: the candidate's name, the directory and every file in it."""

    name: str
    out: Path
    paths: list[Path]


def lower(name: str, source: str, config: LowerConfig) -> Lowered:
    """Lower the program ``source`` (named ``name``) and write its sources under
    ``config.out``. A parameter outside the program's tunables or their domains, an output
    directory that is a file, or a program that does not lower is a :class:`UserError`."""
    try:
        prep = prepare(name, source)
    except DslError as e:
        raise UserError(f"{name}: {e}") from None
    check_params(name, prep.tunables, config.params)
    out = Path(config.out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} exists and is not a directory")
    try:
        paths = _write_tree(out, prep.lower(config.params).render(config.soc))
    except DslError as e:
        raise UserError(f"{name}: {e}") from None
    except OSError as e:
        raise UserError(f"cannot write the lowered sources to --out {out}: {e.strerror or e}"
                        f"{f' ({e.filename})' if e.filename else ''}") from None
    return Lowered(name, out, paths)


def _write_tree(out: Path, files: Mapping[str, str]) -> list[Path]:
    """Write ``files`` (relative path -> text) under ``out``. File names carry the program's
    name, so every path is checked to stay inside ``out`` before anything is written."""
    root = out.resolve()
    targets = [out / rel for rel in files]
    for rel in files:
        if not (root / rel).resolve().is_relative_to(root):
            raise UserError(f"refusing to write {rel!r} outside --out {out}")
    for path, text in zip(targets, files.values(), strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return targets


def check_params(name: str, tunables: Sequence[ir.Tunable], params: dict[str, int]) -> None:
    """Every parameter must be a tunable of the program, every value in its domain."""
    known = {t.name: t for t in tunables}
    unknown = sorted(set(params) - set(known))
    if unknown:
        have = ", ".join(f"{t.name} {t.domain}" for t in tunables) or "none"
        raise UserError(f"{name} has no tunable {', '.join(unknown)}; its tunables: {have}")
    for k, v in params.items():
        d = known[k].domain
        if not _in_domain(d.kind, d.args, v):
            raise UserError(f"--params {k}={v} is outside the domain of {k} in {name}: {d}")


def _in_domain(kind: str, args: tuple[int, ...], v: int) -> bool:
    """Membership computed arithmetically (a domain may be far too large to list)."""
    if kind == "pow2":
        lo, hi = args
        return lo <= v <= hi and v > 0 and v & (v - 1) == 0
    if kind == "span":
        lo, hi, step = args
        return lo <= v <= hi and (v - lo) % step == 0
    return v in args
