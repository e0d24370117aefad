"""``ascendcraft export``: tuning runs -> a new version of a kernel library.

A new version holds the entries of the previous version (unless ``fresh``) with the runs'
winners added or replacing the entry of the same op × SoC × shape key. It is written whole
into a temporary folder, fsynced and renamed into place, and only then listed in the index
(:mod:`.store`), so a crash at any point leaves the library as it was. A version that
exists is never overwritten, and a version must be newer than every one before it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascendcraft.version import MODEL_VERSION, package_version

from .buildfiles import custom_ops_script, library_cmake
from .entry import ENTRY_JSON, FORMS, entry_dir, make_entry, toolchain
from .runs import read_run
from .store import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    TMP_PREFIX,
    VERSIONS,
    LibraryError,
    dumps,
    index_text,
    open_library,
    parse_version,
    replace_synced,
    sha256_bytes,
    sha256_file,
    sync_tree,
    write_synced,
)

BUILD_FILES = ("CMakeLists.txt", "build_custom_ops.sh")


@dataclass
class Exported:
    """What an export wrote: the version folder and the change against the previous one."""

    library: Path
    version: str
    path: Path
    entries: list[str]
    added: list[str]
    replaced: list[str]
    carried: list[str]


def _summary(data: dict[str, Any], files: dict[str, str] | None = None) -> dict[str, Any]:
    """The manifest's line for an entry (what list/diff show without opening the entry)."""
    op_json = next((Path(rel).name for rel in (files or data["files"])
                    if rel.startswith(f"{FORMS}/cann/") and rel.endswith(".json")), None)
    return {"id": data["id"], "op": data["op"], "soc": data["soc"], "dtype": data["dtype"],
            "shapes": data["shapes"], "shape_key": data["shape_key"], "candidate": data["candidate"],
            "params": data["params"], "time_us": data["timing"]["us"], "timing_kind": data["timing"]["kind"],
            "model_version": data["timing"].get("model_version"), "op_json": op_json,
            "path": entry_dir(data["id"])}


def export(run_dirs: Sequence[str | Path], library: str | Path, version: str, *,
           message: str = "", fresh: bool = False,
           after_entry: Callable[[str], None] | None = None) -> Exported:
    """Export the winners of ``run_dirs`` as ``version`` of ``library`` (created if new).
    LibraryError (nothing written) for a version that exists or is not newer, a run without
    a correct re-validated winner, or two runs of the same entry. ``after_entry`` is called
    with each entry id once its files are written (progress, and the crash tests)."""
    parse_version(version)
    root = Path(library)
    lib = open_library(root, create=True)
    if version in lib.versions:
        raise LibraryError(f"version {version} of {root} exists; a version is never overwritten — "
                           f"export as a new version")
    if lib.latest is not None and parse_version(version) <= parse_version(lib.latest):
        raise LibraryError(f"version {version} is not newer than the library's latest {lib.latest}")
    if not run_dirs:
        raise LibraryError("give at least one run directory to export")
    tuned = [read_run(d) for d in run_dirs]
    seen: dict[str, Path] = {}
    for tk in tuned:
        if tk.entry_id in seen:
            raise LibraryError(f"runs {seen[tk.entry_id]} and {tk.run_dir} both tuned {tk.entry_id}; "
                               f"export one of them")
        seen[tk.entry_id] = tk.run_dir

    previous = lib.manifest() if lib.latest and not fresh else None
    old_entries: dict[str, dict] = dict(previous["entries"]) if previous else {}

    root.mkdir(parents=True, exist_ok=True)
    with _locked(root):
        lib = open_library(root, create=True)  # again, under the lock
        if version in lib.versions or (lib.latest and parse_version(version) <= parse_version(lib.latest)):
            raise LibraryError(f"another export wrote {lib.latest} of {root} meanwhile; export again")
        _remove_stale(root)
        return _write(root, lib, version, message, tuned, seen, previous, old_entries, after_entry)


def _write(root: Path, lib, version: str, message: str, tuned: list, seen: dict[str, Path],
           previous: dict | None, old_entries: dict[str, dict],
           after_entry: Callable[[str], None] | None) -> Exported:
    """Write the version into a temporary folder and rename it into place (under the lock)."""
    tmp = root / f"{TMP_PREFIX}{version}-{os.getpid()}"
    try:
        entries: dict[str, dict] = {}
        for tk in tuned:
            files, data = make_entry(tk)
            base = tmp / entry_dir(tk.entry_id)
            for rel, text in files.items():
                write_synced(base / rel, text)
            write_synced(base / ENTRY_JSON, dumps(data))
            entries[tk.entry_id] = {**_summary(data, files), "sha256": sha256_file(base / ENTRY_JSON)}
            if after_entry is not None:
                after_entry(tk.entry_id)
        carried = sorted(set(old_entries) - set(entries))
        for eid in carried:  # unchanged entries: copied with their hashes (verify re-checks them)
            src = lib.path(lib.latest) / entry_dir(eid)
            shutil.copytree(src, tmp / entry_dir(eid))
            for path in (tmp / entry_dir(eid)).rglob("*"):
                if path.is_file():
                    with open(path, "rb+") as f:
                        os.fsync(f.fileno())
            entries[eid] = old_entries[eid]
        added = sorted(set(entries) - set(old_entries))
        replaced = sorted(set(seen) & set(old_entries))
        listed = sorted(entries.values(), key=lambda e: e["id"])
        build = {"CMakeLists.txt": library_cmake(version, listed),
                 "build_custom_ops.sh": custom_ops_script(version, listed)}
        for name, text in build.items():
            write_synced(tmp / name, text)
        os.chmod(tmp / "build_custom_ops.sh", 0o755)
        change = {"version": version, "date": time.strftime("%Y-%m-%d", time.gmtime()),
                  "message": message, "added": added, "replaced": replaced,
                  "removed": sorted(set(old_entries) - set(entries))}
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "version": version,
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "message": message, "previous": lib.latest,
            "changelog": [change, *(previous or {}).get("changelog", [])] if previous else [change],
            "ascendcraft_version": package_version(), "model_version": MODEL_VERSION,
            "toolchain": toolchain(), "entries": {e["id"]: e for e in listed},
            "build_files": {name: sha256_bytes(text.encode()) for name, text in build.items()},
        }
        write_synced(tmp / MANIFEST, dumps(manifest))
        write_synced(tmp / "CHANGELOG.md", changelog_markdown(manifest["changelog"]))
        sync_tree(tmp)
        (root / VERSIONS).mkdir(exist_ok=True)
        final = lib.path(version)
        if final.exists():  # renamed by an export that died before listing it: never published
            shutil.rmtree(final)
        os.rename(tmp, final)  # atomic: the version appears whole or not at all
        sync_tree(root / VERSIONS)
        replace_synced(root / "library.json", index_text([*lib.versions, version]))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Exported(root, version, final, sorted(entries), added, replaced, carried)


def changelog_markdown(changelog: list[dict]) -> str:
    lines = ["# Changelog", ""]
    for c in changelog:
        lines.append(f"## {c['version']} ({c['date']})")
        if c.get("message"):
            lines += ["", c["message"]]
        lines.append("")
        for word in ("added", "replaced", "removed"):
            for eid in c.get(word, []):
                lines.append(f"- {word}: `{eid}`")
        lines.append("")
    return "\n".join(lines)


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One export at a time per library (an advisory lock on ``.lock``)."""
    with open(root / ".lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _remove_stale(root: Path) -> None:
    """What exports that died left behind. Every export writes only while it holds the lock,
    so under the lock any temporary folder or file is a dead export's."""
    for p in root.glob(f"{TMP_PREFIX}*"):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
