"""The import graph of the package follows the layers of ARCHITECTURE.md.

The graph is built from the source of the installed package: every ``.py`` file of every
package that ``pyproject.toml`` lists, found through its ``package-dir`` mapping
(``ascendcraft.dsl`` lives in ``dsl/``, ``ascendcraft.search`` in ``search/``...), parsed
with ``ast`` (nothing is imported). An import counts wherever it is written: at the top of
a module or inside a function (it runs when the function does). Imports under ``if
TYPE_CHECKING:`` never run, so they are left out of the cycle check, but they still must
not point up the layers (a type annotation that reaches back up is a dependency too).

Each test reports every violation at once, with ``file:line``, so one run shows all that
is left to fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "ascendcraft"

#: Bottom to top: a module may import modules of its own layer or of a layer below it.
#: A module is in the layer of the longest prefix listed here.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("facts", ("ascendcraft.status", "ascendcraft.soc", "ascendcraft.version")),
    ("tasks", ("ascendcraft.tasks",)),
    ("dsl", ("ascendcraft.dsl",)),
    ("machine", ("ascendcraft.emulator", "ascendcraft.model")),
    ("backends", ("ascendcraft.backends",)),
    ("evaluate", ("ascendcraft.evaluate", "ascendcraft.evaluate_cube")),
    ("search", ("ascendcraft.search",)),
    ("cluster", ("ascendcraft.cluster",)),
    ("export", ("ascendcraft.library",)),
    ("app", ("ascendcraft.app", "ascendcraft.doctor", "ascendcraft.campaign", "ascendcraft.bench")),
    ("cli", ("ascendcraft.cli", "ascendcraft.__main__")),
)

#: Imports the layer order would allow but the design forbids (importer prefix, imported
#: prefix, why).
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("ascendcraft.model", "ascendcraft.dsl", "the model reads traces, not programs"),
    ("ascendcraft.emulator", "ascendcraft.model", "the emulator runs kernels; the model times them"),
)

#: Third-party packages only some modules may import (package, allowed importer prefixes).
RESTRICTED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ray", ("ascendcraft.cluster.ray_executor", "ascendcraft.cluster.factory")),
    # command lines are parsed by the CLI, and by the emulator's child-process entry points
    ("argparse", ("ascendcraft.cli", "ascendcraft.emulator._server", "ascendcraft.emulator._confine")),
)



@dataclass(frozen=True)
class Import:
    """One import statement's target, where it is written and how it runs."""

    importer: str
    target: str
    path: Path
    line: int
    kind: str  # "module" (top level) | "function" | "type" (under TYPE_CHECKING)

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def package_dirs() -> dict[str, Path]:
    """Every package of the distribution and the folder it is installed from."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = dict(config.get("package-dir") or {})
    out = {}
    for pkg in config["packages"]:
        # the longest mapped prefix decides where a package lives (setuptools' rule)
        parts = pkg.split(".")
        for n in range(len(parts), 0, -1):
            prefix = ".".join(parts[:n])
            if prefix in mapping:
                out[pkg] = ROOT / mapping[prefix] / Path(*parts[n:])
                break
        else:
            out[pkg] = ROOT / mapping.get("", ".") / Path(*parts)
    return out


def modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of every package."""
    out = {}
    for pkg, folder in package_dirs().items():
        assert folder.is_dir(), f"pyproject lists package {pkg} but {folder} does not exist"
        for f in sorted(folder.glob("*.py")):
            out[pkg if f.stem == "__init__" else f"{pkg}.{f.stem}"] = f
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, kind: str) -> Iterator[tuple[ast.AST, str]]:
    """Every import node under ``node`` with how it runs."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, kind
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for sub in child.body:
                yield from _walk_one(sub, "type")
            for sub in child.orelse:
                yield from _walk_one(sub, kind)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _walk(child, "type" if kind == "type" else "function")
        else:
            yield from _walk(child, kind)


def _walk_one(node: ast.AST, kind: str) -> Iterator[tuple[ast.AST, str]]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node, kind
    else:
        yield from _walk(node, kind)


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    """The package modules ``name`` imports (third-party ones as their top-level name)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.stem == "__init__"
    out = []
    for node, kind in _walk(tree, "module"):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                targets.append(sub if sub in known else mod)
        for t in targets:
            if t.split(".")[0] == PACKAGE:
                # ``import ascendcraft.x.y`` of a name that is not a module: its package
                while t not in known and "." in t:
                    t = t.rsplit(".", 1)[0]
            out.append(Import(name, t, path, node.lineno, kind))
    return out


def graph() -> list[Import]:
    """Every import of the package, once per (statement, target)."""
    mods = modules()
    known = set(mods)
    edges = [imp for name, path in mods.items() for imp in imports_of(name, path, known)]
    return list(dict.fromkeys(edges))


def layer_of(module: str) -> int | None:
    if module == PACKAGE:  # the root package's __init__ (empty): below everything
        return 0
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    return found


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_violations(edges: list[Import]) -> list[tuple[Import, str]]:
    """Each import against the layer order, FORBIDDEN or RESTRICTED, with the reason."""
    out = []
    for e in edges:
        if not _under(e.target, PACKAGE):
            for pkg, allowed in RESTRICTED:
                if _under(e.target, pkg) and not any(_under(e.importer, a) for a in allowed):
                    out.append((e, f"{e.where}: {e.importer} imports {pkg} (only "
                                   f"{', '.join(allowed)} may)"))
            continue
        src, dst = layer_of(e.importer), layer_of(e.target)
        if dst is not None and src is not None and dst > src:
            how = {"type": " [TYPE_CHECKING]", "function": " [inside a function]"}.get(e.kind, "")
            out.append((e, f"{e.where}: {e.importer} ({LAYERS[src][0]}) imports {e.target} "
                           f"({LAYERS[dst][0]}), a layer above it{how}"))
        for a, b, why in FORBIDDEN:
            if _under(e.importer, a) and _under(e.target, b):
                out.append((e, f"{e.where}: {e.importer} imports {e.target}: {why}"))
    return out


def cycles(edges: list[Import]) -> list[tuple[list[str], str]]:
    """Every strongly connected component of the run-time graph, with the edges inside it."""
    runtime = [e for e in edges if e.kind != "type" and _under(e.target, PACKAGE)
               and e.target != e.importer]
    succ: dict[str, set[str]] = {}
    for e in runtime:
        succ.setdefault(e.importer, set()).add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = 0

    def strong(v: str) -> None:  # Tarjan, iterative enough for a package this size
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on.add(v)
        for w in sorted(succ.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(succ):
        if v not in index:
            strong(v)
    out = []
    for comp in comps:
        inside = set(comp)
        detail = "; ".join(f"{e.where} {e.importer} -> {e.target}" + (" (in a function)" if e.kind == "function" else "")
                           for e in runtime if e.importer in inside and e.target in inside)
        out.append((comp, f"cycle {' <-> '.join(comp)}: {detail}"))
    return out


def _report(title: str, found: list[str]) -> str:
    return f"{len(found)} {title}:\n  " + "\n  ".join(found)


# ---------------------------------------------------------------------------- the graph itself


def test_every_package_folder_is_in_pyproject():
    """A folder with an ``__init__.py`` under a package that pyproject does not list would be
    left out of a wheel (and of this graph)."""
    listed = package_dirs()
    folders = {f.resolve() for f in listed.values()}
    missing = []
    for folder in listed.values():
        for init in folder.glob("*/__init__.py"):
            if init.parent.resolve() not in folders:
                missing.append(str(init.parent.relative_to(ROOT)))
    assert not missing, _report("package folders missing from pyproject's packages", missing)


def test_every_module_has_a_layer():
    missing = sorted(m for m in modules() if layer_of(m) is None)
    assert not missing, _report("modules in no layer (add them to LAYERS and ARCHITECTURE.md)",
                                missing)


def test_the_graph_sees_imports_inside_functions_and_type_checking_blocks(tmp_path):
    """The parser behind the other tests: relative imports, submodules named by ``from``,
    imports inside functions and under TYPE_CHECKING are all found, each with its kind."""
    src = tmp_path / "mod.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "from ..tasks.task import Task\n"
        "if TYPE_CHECKING:\n"
        "    from ascendcraft.cli import main\n"
        "def f():\n"
        "    import ray\n"
        "    from ascendcraft.search import driver\n")
    known = {"ascendcraft.search.sibling", "ascendcraft.search.driver", "ascendcraft.tasks.task",
             "ascendcraft.cli", "ascendcraft.search", "ascendcraft"}
    got = {(i.target, i.kind, i.line) for i in imports_of("ascendcraft.search.mod", src, known)}
    assert got == {
        ("typing", "module", 1),
        ("ascendcraft.search.sibling", "module", 2),
        ("ascendcraft.tasks.task", "module", 3),
        ("ascendcraft.cli", "type", 5),
        ("ray", "function", 7),
        ("ascendcraft.search.driver", "function", 8),
    }
    edges = [Import("ascendcraft.search.mod", t, src, line, kind) for t, kind, line in got]
    found = [text for _, text in layer_violations(edges)]
    assert any("ascendcraft.cli (cli), a layer above it [TYPE_CHECKING]" in v for v in found)
    assert any("imports ray" in v for v in found)
    loop = [Import("ascendcraft.a", "ascendcraft.b", src, 1, "module"),
            Import("ascendcraft.b", "ascendcraft.a", src, 2, "function"),
            Import("ascendcraft.b", "ascendcraft.c", src, 3, "type"),
            Import("ascendcraft.c", "ascendcraft.b", src, 4, "module")]
    ((members, cycle),) = cycles(loop)
    assert members == ["ascendcraft.a", "ascendcraft.b"]
    assert cycle.startswith("cycle ascendcraft.a <-> ascendcraft.b:") and "(in a function)" in cycle


def test_no_import_cycles():
    found = [text for _, text in cycles(graph())]
    assert not found, _report("import cycles", found)


def test_imports_follow_the_layers():
    found = [text for _, text in layer_violations(graph())]
    assert not found, _report("imports against the layer order", found)
