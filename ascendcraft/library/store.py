"""The library on disk: where each version lives, semantic versions, content hashes, and
writes that a crash cannot half-do.

A library folder holds ``library.json`` (the index: format, versions in order) and one
folder per version under ``versions/``. A version is written whole into a hidden temporary
folder beside it, every file and folder fsynced, then renamed into place; only then is the
index replaced (written to a temporary file, fsynced, ``os.replace``d). A crash at any
point leaves the previous versions and the index as they were; a stale temporary folder is
ignored by readers and removed by the next export.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = "ascendcraft-kernel-library"
FORMAT_VERSION = 1
INDEX = "library.json"
VERSIONS = "versions"
MANIFEST = "manifest.json"
TMP_PREFIX = ".tmp-"

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


class LibraryError(Exception):
    """A library operation that cannot be done (one paragraph, for the user)."""


def parse_version(text: str) -> tuple[int, int, int]:
    """``X.Y.Z`` as a tuple; LibraryError for anything else (no pre-release tags)."""
    m = _SEMVER.match(str(text).strip())
    if not m:
        raise LibraryError(f"version {text!r} is not a semantic version X.Y.Z (e.g. 0.1.0)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def dumps(obj: Any) -> str:
    """The one JSON spelling of every library file (sorted keys: stable hashes)."""
    return json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"


def write_synced(path: Path, text: str | bytes) -> None:
    """Write a file and fsync it (its folder is fsynced by :func:`sync_tree`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_tree(root: Path) -> None:
    """fsync every folder under ``root`` (files were synced as they were written)."""
    for folder, _, _ in os.walk(root):
        fsync_dir(Path(folder))


def replace_synced(path: Path, text: str) -> None:
    """Replace ``path`` atomically: temporary file, fsync, rename, fsync the folder."""
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}")
    write_synced(tmp, text)
    os.replace(tmp, path)
    fsync_dir(path.parent)


@dataclass(frozen=True)
class Library:
    """A library folder as its index describes it."""

    root: Path
    versions: tuple[str, ...]  # oldest first

    @property
    def latest(self) -> str | None:
        return self.versions[-1] if self.versions else None

    def path(self, version: str) -> Path:
        return self.root / VERSIONS / version

    def manifest(self, version: str | None = None) -> dict[str, Any]:
        """The manifest of ``version`` (default: the latest)."""
        version = version or self.latest
        if version is None:
            raise LibraryError(f"library {self.root} has no version yet")
        if version not in self.versions:
            raise LibraryError(f"library {self.root} has no version {version} "
                               f"(it has {', '.join(self.versions) or 'none'})")
        path = self.path(version) / MANIFEST
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise LibraryError(f"manifest of {version} in {self.root} cannot be read: {e}") from None


def open_library(root: str | Path, *, create: bool = False) -> Library:
    """The library in ``root``; LibraryError when it is not one (unless ``create``: then an
    empty folder or a missing one is an empty library)."""
    root = Path(root)
    index = root / INDEX
    if not index.exists():
        if create and (not root.exists() or (root.is_dir() and not _visible(root))):
            return Library(root, ())
        what = "does not exist" if not root.exists() else f"has no {INDEX}"
        raise LibraryError(f"{root} is not a kernel library: it {what}"
                           + ("; export into a new or empty folder" if create else ""))
    try:
        data = json.loads(index.read_text())
    except (OSError, ValueError) as e:
        raise LibraryError(f"{index} cannot be read: {e}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise LibraryError(f"{index} is not a kernel library index (format is not {FORMAT!r})")
    if int(data.get("format_version", 0)) > FORMAT_VERSION:
        raise LibraryError(f"{root} has library format {data.get('format_version')}; this ascendcraft "
                           f"reads format {FORMAT_VERSION} and older")
    versions = [str(v) for v in data.get("versions", [])]
    for v in versions:
        parse_version(v)
    return Library(root, tuple(versions))


def _visible(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if not p.name.startswith(".")]


def resolve_ref(text: str) -> tuple[Library, str | None]:
    """``DIR`` or ``DIR@X.Y.Z``: the library and the version named (None: the latest)."""
    path, at, version = str(text).rpartition("@")
    if at and _SEMVER.match(version):
        lib = open_library(path)
        lib.manifest(version)  # refuses a version the library lacks
        return lib, version
    return open_library(text), None


def index_text(versions: list[str]) -> str:
    return dumps({"format": FORMAT, "format_version": FORMAT_VERSION, "versions": versions})
