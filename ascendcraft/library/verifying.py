"""``ascendcraft library verify``: every entry of a version is intact, rebuilds, and is correct.

For each entry: the hash of ``entry.json`` matches the manifest, every file it lists is
present with its sha256 and no file is there that it does not list (a corrupted or
hand-edited file is found here); the DSL, lowered again with the entry's tunables, renders
exactly the stored forms (with the same ascendcraft version; with another one a difference
is reported as a note, since lowering may have changed); the kernel is built again in the
emulator and re-checked against PyTorch. The build files are checked against the manifest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascendcraft.version import package_version

from .entry import DSL_FILE, ENTRY_JSON, recheck, render_files
from .store import Library, LibraryError, sha256_bytes, sha256_file


@dataclass
class EntryCheck:
    id: str
    ok: bool
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    max_abs_err: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ok": self.ok, "problems": self.problems, "notes": self.notes,
                "max_abs_err": self.max_abs_err}


@dataclass
class VerifyReport:
    library: Path
    version: str
    entries: list[EntryCheck]
    problems: list[str] = field(default_factory=list)  # of the version as a whole

    @property
    def ok(self) -> bool:
        return not self.problems and all(e.ok for e in self.entries)

    def to_dict(self) -> dict[str, Any]:
        return {"library": str(self.library), "version": self.version, "ok": self.ok,
                "problems": self.problems, "entries": [e.to_dict() for e in self.entries]}


def verify(lib: Library, version: str | None = None, *, rebuild: bool = True) -> VerifyReport:
    """Check ``version`` (default: the latest) of ``lib``; ``rebuild=False`` checks the hashes
    only (no emulator)."""
    manifest = lib.manifest(version)
    version = manifest["version"]
    base = lib.path(version)
    report = VerifyReport(lib.root, version, [])
    for name, digest in (manifest.get("build_files") or {}).items():
        path = base / name
        if not path.is_file():
            report.problems.append(f"build file {name} is missing")
        elif sha256_file(path) != digest:
            report.problems.append(f"build file {name} differs from the manifest's hash (edited or corrupted)")
    listed = {base / e["path"] for e in manifest["entries"].values()}
    for folder in sorted({p.parent for p in (base / "entries").rglob(ENTRY_JSON)} - listed):
        report.problems.append(f"{folder.relative_to(base)} is an entry the manifest does not list")
    same_version = manifest.get("ascendcraft_version") == package_version()
    for eid, summary in sorted(manifest["entries"].items()):
        report.entries.append(_check_entry(base, eid, summary, same_version, rebuild))
    return report


def _check_entry(base: Path, eid: str, summary: dict, same_version: bool, rebuild: bool) -> EntryCheck:
    c = EntryCheck(eid, True)
    folder = base / summary["path"]
    ej = folder / ENTRY_JSON
    if not ej.is_file():
        return _fail(c, f"{ENTRY_JSON} is missing")
    if sha256_file(ej) != summary.get("sha256"):
        return _fail(c, f"{ENTRY_JSON} differs from the manifest's hash (edited or corrupted)")
    try:
        data = json.loads(ej.read_text())
    except ValueError as e:
        return _fail(c, f"{ENTRY_JSON} is not JSON: {e}")
    files: dict[str, str] = data.get("files", {})
    for rel, digest in sorted(files.items()):
        path = folder / rel
        if not path.is_file():
            c.problems.append(f"{rel} is missing")
        elif sha256_file(path) != digest:
            c.problems.append(f"{rel} differs from its sha256 in {ENTRY_JSON} (edited or corrupted)")
    extra = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                   if p.is_file() and p.name != ENTRY_JSON and str(p.relative_to(folder)) not in files)
    c.problems += [f"{rel} is not one of the entry's files" for rel in extra]
    if c.problems or not rebuild:
        c.ok = not c.problems
        return c
    try:
        source = (folder / DSL_FILE).read_text()
        fresh = render_files(source, data["candidate"], data["params"], data["soc"])
    except (LibraryError, OSError, KeyError) as e:
        return _fail(c, f"does not lower again: {e}")
    differ = sorted(rel for rel in set(fresh) | set(files)
                    if rel not in files or rel not in fresh or
                    sha256_file(folder / rel) != _sha(fresh[rel]))
    if differ:
        text = f"lowering the DSL again gives other sources: {', '.join(differ[:5])}"
        (c.problems if same_version else c.notes).append(
            text if same_version else text + " (exported by another ascendcraft version)")
    try:
        check = recheck(data["op"], [tuple(s) for s in data["shapes"]], data["dtype"], data["soc"],
                        source, data["candidate"], data["params"])
    except LibraryError as e:
        return _fail(c, str(e))
    c.max_abs_err = check["max_abs_err"]
    if not check["correct"]:
        c.problems.append(f"rebuilt kernel is not correct: {check['status']}: {check['message']}")
    c.ok = not c.problems
    return c


def _sha(text: str) -> str:
    return sha256_bytes(text.encode())


def _fail(c: EntryCheck, problem: str) -> EntryCheck:
    c.problems.append(problem)
    c.ok = False
    return c
