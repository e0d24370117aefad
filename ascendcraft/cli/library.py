"""``export`` and ``library``: versioned kernel libraries, written and inspected."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def cmd_export(args: argparse.Namespace) -> int:
    from ..library import export

    done = export(args.run_dirs, args.library, args.version, message=args.message or "", fresh=args.fresh)
    if args.json:
        print(json.dumps({"library": str(done.library), "version": done.version, "path": str(done.path),
                          "entries": done.entries, "added": done.added, "replaced": done.replaced,
                          "carried": done.carried}))
        return 0
    print(f"exported {done.library} {done.version}: {len(done.entries)} entries "
          f"({len(done.added)} added, {len(done.replaced)} replaced, {len(done.carried)} carried over)")
    for eid in done.entries:
        how = "added" if eid in done.added else "replaced" if eid in done.replaced else "carried"
        print(f"  {how:<8} {eid}")
    return 0


def cmd_library(args: argparse.Namespace) -> int:
    from ..library.store import resolve_ref

    lib, version = resolve_ref(args.dir)
    if args.action == "list":
        return _library_list(lib, version, args.json)
    if args.action == "show":
        return _library_show(lib, version, args.entry, args.json)
    if args.action == "verify":
        return _library_verify(lib, version, args.json, not args.hashes_only)
    if args.action == "diff":
        return _library_diff(lib, version, args.other, args.json)
    return _library_build(lib, version, args.build_soc, args.dry_run)


def _library_list(lib: Any, version: str | None, as_json: bool) -> int:
    m = lib.manifest(version)
    if as_json:
        print(json.dumps({"versions": list(lib.versions), "version": m["version"], "entries": m["entries"]}))
        return 0
    print(f"{lib.root}: versions {', '.join(lib.versions)}; {m['version']} has {len(m['entries'])} entries")
    for e in m["entries"].values():
        print(f"  {e['id']:<56} {e['timing_kind']} {e['time_us']:.1f} us  {e['candidate']} {json.dumps(e['params'])}")
    return 0


def _library_show(lib: Any, version: str | None, entry: str | None, as_json: bool) -> int:
    from ..app.errors import UserError

    m = lib.manifest(version)
    if entry is None:
        out = {k: v for k, v in m.items() if k != "entries"}
        print(json.dumps(out, indent=2) if not as_json else json.dumps(out))
        return 0
    if entry not in m["entries"]:
        raise UserError(f"{m['version']} has no entry {entry!r}; `ascendcraft library list` shows them")
    data = json.loads((lib.path(m["version"]) / m["entries"][entry]["path"] / "entry.json").read_text())
    print(json.dumps(data) if as_json else json.dumps({k: v for k, v in data.items() if k != "files"}, indent=2))
    return 0


def _library_verify(lib: Any, version: str | None, as_json: bool, rebuild: bool) -> int:
    from ..library import verify

    report = verify(lib, version, rebuild=rebuild)
    if as_json:
        print(json.dumps(report.to_dict()))
        return 0 if report.ok else 1
    for p in report.problems:
        print(f"  FAIL {p}")
    for e in report.entries:
        err = "" if e.max_abs_err is None else f"  max abs err {e.max_abs_err:.3g}"
        print(f"  {'PASS' if e.ok else 'FAIL'} {e.id}{err}")
        for p in e.problems:
            print(f"       {p}")
        for n in e.notes:
            print(f"       note: {n}")
    print(f"{report.library} {report.version}: " + ("verified" if report.ok else "VERIFY FAILED"))
    return 0 if report.ok else 1


def _library_diff(lib: Any, version: str | None, other: str | None, as_json: bool) -> int:
    from ..app.errors import UserError
    from ..library import diff
    from ..library.store import resolve_ref

    if other is None:
        newer = version or lib.latest
        at = lib.versions.index(newer) if newer in lib.versions else -1
        if at < 1:
            raise UserError(f"{lib.root} has no version before {newer} to compare with; give OTHER")
        old_m, new_m = lib.manifest(lib.versions[at - 1]), lib.manifest(newer)
        names = (lib.versions[at - 1], newer)
    else:
        lib2, version2 = resolve_ref(other)
        old_m, new_m = lib.manifest(version), lib2.manifest(version2)
        names = (f"{lib.root}@{old_m['version']}", f"{lib2.root}@{new_m['version']}")
    d = diff(old_m, new_m, *names)
    if as_json:
        print(json.dumps(d.to_dict()))
        return 0
    print(f"{d.old} -> {d.new}")
    for eid in d.added:
        print(f"  added    {eid}")
    for eid in d.removed:
        print(f"  removed  {eid}")
    for c in d.changed:
        what = (f"{c.old_kind} {c.old_us:.1f} us -> {c.new_us:.1f} us ({c.ratio:.2f}x)" if c.comparable
                else f"{c.old_us:.1f} us -> {c.new_us:.1f} us ({c.note})")
        print(f"  changed  {c.id}: {what}" + ("; new kernel" if c.kernel_changed else ""))
    print(f"  {len(d.added)} added, {len(d.removed)} removed, {len(d.changed)} changed, "
          f"{len(d.unchanged)} unchanged")
    return 0


def _library_build(lib: Any, version: str | None, soc: str | None, dry_run: bool) -> int:
    from ..app.errors import UserError
    from ..library.build import build_library

    steps, missing = build_library(lib, version, soc=soc, run=not dry_run)
    if dry_run:
        for s in steps:
            print(s)
        if missing:
            print(f"# on this machine these would fail: missing {'; '.join(missing)}", file=sys.stderr)
        return 0
    if missing:
        raise UserError("cannot build the library with CANN here; missing: " + "; ".join(missing)
                        + " (--dry-run prints the commands)")
    print(f"built {len(steps)} steps")
    return 0
