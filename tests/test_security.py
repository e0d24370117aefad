"""DSL text never escapes into generated code (issue 10).

Attacks tried here: C++ and Python injected through the ``category``, the docstring and the
raw source lines (Python comments, line continuations, a trailing backslash), and names
that are C++ keywords or the lowering's own identifiers. Each gives either a correct kernel
(built and run in the emulator, compared with PyTorch) or a clean ``DslError``, and a canary
command in the payload never runs. A scanner lowers the builtin templates, hostile programs
and renamed copies of them, and checks every generated file: no DSL string, docstring,
comment or category text, and DSL names only in their mangled ``<role>_<name>`` form.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from ascendcraft.dsl import names as N
from ascendcraft.dsl.lowering.cube import lower_cube, render_cube_outputs
from ascendcraft.dsl.lowering.kernel import lower
from ascendcraft.dsl.lowering.outputs import render_outputs
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.builtin import Candidate, propose
from ascendcraft.search.graph import propose_from_graph
from checking import check_task

from ascendcraft.tasks.registry import get_task, list_tasks
from ascendcraft.tasks.taskfile import load_task_file

# ---------------------------------------------------------------- helpers


def render(source: str) -> dict[str, str]:
    """Every output form of one program (vector or cube)."""
    if parse(source).decorator == "cube_kernel":
        return render_cube_outputs(lower_cube(source))
    return render_outputs(lower(source))


def declared_names(source: str) -> list[str]:
    """Names the program declares: kernel, parameters, and every assigned or loop name."""
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef))
    out = [fn.name] + [a.arg for a in fn.args.args]
    for node in ast.walk(fn):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.For) else []
        out += [t.id for t in targets if isinstance(t, ast.Name) and t.id not in out]
    return out


def rename(source: str, mapping: dict[str, str], strings: str | None = None) -> str:
    """The program with declared names renamed through the syntax tree (``#`` comments
    dropped); with ``strings``, every string literal (category, docstrings) replaced too."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if strings is not None and isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = strings
        elif isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
        elif isinstance(node, ast.arg) and node.arg in mapping:
            node.arg = mapping[node.arg]
        elif isinstance(node, ast.FunctionDef) and node.name in mapping:
            node.name = mapping[node.name]
    return ast.unparse(tree) + "\n"


def dsl_text(source: str) -> list[str]:
    """Free text of a program: string literals (category, docstrings, comment strings) and
    ``#`` comments, line by line — none of it may appear in a generated file. A line that is
    one identifier or number is skipped: identifiers and numbers may appear (validated)."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out.append(tok.string.lstrip("#").strip())
        elif tok.type == tokenize.STRING:
            v = ast.literal_eval(tok.string)
            if not N._CATEGORY.match(v):
                out.append(v.strip())
    pieces = []
    for t in out:  # every line of it that is more than one identifier or number
        for line in t.splitlines():
            line = line.strip()
            if len(line) >= 6 and re.search(r"[^A-Za-z0-9_.]", line):
                pieces.append(line[:60])
    return pieces


_CPP_STRIP = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def cpp_identifiers(files: dict[str, str]) -> set[str]:
    """Identifiers of every C++ file, comments and string literals removed."""
    out: set[str] = set()
    for path, text in files.items():
        if path.endswith((".cpp", ".h")):
            out |= set(_IDENT.findall(_CPP_STRIP.sub(" ", text)))
    return out


_PLAIN = "|".join(r for r in N.ROLES if r not in N.COUNTED_ROLES)
_COUNTED = "|".join(r + r"\d+" for r in N.COUNTED_ROLES)
_ROLE = re.compile(rf"^(?:{_PLAIN}|{_COUNTED})_(.+)$")


def assert_clean(source: str, files: dict[str, str] | None = None) -> dict[str, str]:
    """The scanner: no DSL free text anywhere; in C++, DSL names only as ``<role>_<name>``."""
    files = files if files is not None else render(source)
    names = declared_names(source)
    kernel = names[0]
    # the same program with every declared name and string replaced by a placeholder (and no
    # comments): what remains in its outputs is the lowering's own text and vocabulary
    holders = {n: f"zq{i}q" for i, n in enumerate(names)}
    own_files = render(rename(source, holders, strings="zqdoc"))
    own_text = "\n".join(own_files.values())
    for piece in dsl_text(source):
        for path, text in files.items():
            assert piece not in text or piece in own_text, f"DSL text {piece!r} reached {path}"
    # the lowering's own identifiers never have the form <role>_...
    own = {t for t in cpp_identifiers(own_files) if "zq" not in t.lower()}
    assert not {t for t in own if _ROLE.match(t)}, "the lowering uses a <role>_ identifier of its own"
    camel = "".join(p[:1].upper() + p[1:] for p in kernel.split("_"))
    for tok in cpp_identifiers(files) - own:
        m = _ROLE.match(tok.removeprefix("set_"))  # set_<field>: CANN's tiling-class setters
        derived = m is not None and (m.group(1) in names or m.group(1).removesuffix("Bytes") in names)
        assert derived or kernel in tok or camel in tok or kernel.upper() in tok, f"identifier {tok!r} is neither the lowering's own nor a mangled DSL name"
    for path, text in files.items():
        if path.endswith(".py"):
            ast.parse(text)  # the torch wrapper and setup.py stay valid Python
    return files


def template_sources() -> list[str]:
    """One proposal of every builtin template (vector and cube) that the registry reaches."""
    seen: dict[str, str] = {}
    for task in list_tasks():
        try:
            cands = propose(task)
        except Exception:  # noqa: BLE001 - tasks without a proposal are not this test's concern
            continue
        for c in cands:  # one per (category, structure): every template, filled differently
            seen.setdefault(f"{task.category}/{c.name.split('/')[-1]}", c.source)
    return list(seen.values())


def canary_payloads(canary: Path) -> dict[str, str]:
    return {
        "cpp": f'\n#include <cstdlib>\nstatic int acx_pwn = std::system("touch {canary}");\n//',
        "python": f'""" + __import__("os").system("touch {canary}") + """',
    }


# ---------------------------------------------------------------- vector programs

SWISH = """@kernel(category="activation")
def swish(x: In[f32], y: Out[f32]):
    '''{doc}'''
    TILE = tunable(pow2(256, 8192), default=2048)
    for t in tiles(x, tile=TILE):
        a = load(x, t)  # {comment} */ ??/ \\
        '{comment}'
        b = a * \\
            sigmoid(a)  # trailing backslash in a comment: \\
        store(y, t, b)
"""


def test_category_injection_is_refused(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    payload = "activation" + canary_payloads(canary)["cpp"]
    src = SWISH.replace('category="activation"', f"category={payload!r}").format(doc="d", comment="c")
    with pytest.raises(DslError, match="category") as e:
        parse(src)
    assert "\n" not in str(e.value)
    task = get_task("swish")
    report = check_task(task, soc="Ascend910B2", full=False, timing=False, explicit_shape=False,
                        candidates=[Candidate("hostile/category", src, origin="file")])
    assert report["candidates"][0]["status"] == "dsl_error"
    assert not canary.exists()


def test_cube_category_injection_is_refused(tmp_path: Path) -> None:
    src = propose(get_task("matmul"))[0].source
    bad = src.replace('category="matmul"', f"category={('matmul' + canary_payloads(tmp_path / 'c')['cpp'])!r}")
    assert bad != src
    with pytest.raises(DslError, match="category"):
        parse(bad)


def test_docstring_comments_and_source_lines_never_reach_code(tmp_path: Path) -> None:
    """A valid program whose docstring, comment strings and # comments carry C++ and Python
    payloads (and a trailing backslash) builds, runs correctly, and runs no payload."""
    canary = tmp_path / "canary"
    pl = canary_payloads(canary)
    src = SWISH.format(doc=pl["python"], comment=pl["cpp"].replace("\n", " "))
    files = assert_clean(src)
    wrapper = files["torch/swish_custom.py"]
    assert "__import__" not in wrapper and "touch" not in wrapper
    for path, text in files.items():
        if path.endswith((".cpp", ".h")):
            assert not re.search(r"\\\s*$", text, re.M) or path.endswith("main.cpp"), path
    report = check_task(get_task("swish"), soc="Ascend910B2", full=False, timing=False, explicit_shape=False,
                        candidates=[Candidate("hostile/text", src, origin="file")])
    assert report["correct"], report["candidates"][0]
    assert not canary.exists()


HOSTILE_NAMES = {  # valid DSL names that are C++ keywords or the lowering's own identifiers
    "tunable": ["max", "K", "U", "DEPTH", "coreNum", "blockDim", "n", "int"],
    "value": ["int", "new", "auto", "tiling", "pipe", "xGm", "td_", "s", "v1", "template", "GM_ADDR", "delete"],
    "param": ["tiling", "pipe", "xGm", "td", "src", "dst", "op", "i", "grid", "half", "DataCopy", "aGm"],
}


def hostile_rename(source: str) -> str:
    """Rename every declared name of a program to one of HOSTILE_NAMES."""
    p = parse(source)
    params = {x.name for x in p.params}
    tunables = {t.name for t in p.tunables}
    pools = {k: list(v) for k, v in HOSTILE_NAMES.items()}
    mapping: dict[str, str] = {}
    for name in declared_names(source)[1:]:
        pool = pools["param" if name in params else "tunable" if name in tunables else "value"]
        used = set(mapping.values()) | set(declared_names(source))
        choice = next((c for c in pool if c not in used), None)
        if choice is not None:
            mapping[name] = choice
    return rename(source, mapping)


@pytest.mark.parametrize("cand", ["softmax/chunked", "mse_loss/tiles"])
def test_hostile_names_compile_and_run(cand: str) -> None:
    """Keywords, tiling-function names and the lowering's own identifiers as tunables,
    values and parameters: the kernel compiles and matches PyTorch."""
    task = get_task(cand.split("/")[0])
    src = hostile_rename(next(c.source for c in propose(task) if c.name == cand))
    assert "pipe" in src and ("max" in src or "K" in src)
    assert_clean(src)
    report = check_task(task, soc="Ascend910B2", full=False, timing=False, explicit_shape=False,
                        candidates=[Candidate("hostile/names", src, origin="file")])
    assert report["correct"], report["candidates"][0]


def test_hostile_names_cube_compile_and_run(tmp_path: Path) -> None:
    task = get_task("matmul_bias_relu")
    src = hostile_rename(propose(task)[0].source)
    pl = canary_payloads(tmp_path / "canary")
    fn = src.index("):\n") + 3
    src = src[:fn] + f"    {pl['python']!r}\n" + src[fn:]  # a hostile docstring as well
    assert_clean(src)
    report = check_task(task, soc="Ascend910B2", full=False, timing=False, explicit_shape=False,
                        candidates=[Candidate("hostile/cube", src, origin="file")])
    assert report["correct"], report["candidates"][0]
    assert not (tmp_path / "canary").exists()


@pytest.mark.parametrize("name", ["int", "new", "auto", "class_", "GM_ADDR", "workspace", "torch", "float",
                                  "INT64_MAX", "NULL", "café", "a__b", "_x", "x" * 65])
@pytest.mark.parametrize("kind", ["vector", "cube"])
def test_unusable_parameter_names_are_one_line_errors(name: str, kind: str) -> None:
    if name == "class_":
        name = "class"  # a Python keyword: a syntax error before any name rule
    if kind == "vector":
        src = SWISH.format(doc="d", comment="c").replace("(x: In", f"({name}: In").replace("load(x", f"load({name}")
        src = src.replace("tiles(x", f"tiles({name}")
    else:
        src = propose(get_task("matmul"))[0].source
        first = ast.parse(src).body[0].args.args[0].arg
        src = re.sub(rf"\b{first}\b", name, src)
    with pytest.raises(DslError) as e:
        parse(src)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300


def test_scanner_over_every_template_and_renamed_copies() -> None:
    """Every builtin template (vector and cube), as proposed and with hostile names."""
    sources = template_sources()
    assert len(sources) >= 20
    assert any(parse(s).decorator == "cube_kernel" for s in sources)
    for src in sources:
        assert_clean(src)
        assert_clean(hostile_rename(src))


def test_scanner_over_graph_frontend_structures() -> None:
    """The graph frontend's structures whose lowering names buffers of its own (held slabs, step
    values by block, K-split tiles, held row chunks, broadcast rows), as proposed and renamed."""
    corpus = Path(__file__).parent / "taskfiles" / "corpus"
    stems = ("timm_layernorm2d_permute", "einsum_vector_times_matrix", "logprob_minus_lse_wide",
             "convnext_ln_channels_first", "bcast_axis0_3d")
    kinds = set()
    for stem in stems:
        for c in propose_from_graph(load_task_file(corpus / f"{stem}.py")):
            kinds.add(c.name.split("/graph-")[1])
            assert_clean(c.source)
            assert_clean(hostile_rename(c.source))
    assert {"slabs_hold", "slabs_rows_split", "chunked-online_hold"} <= kinds, kinds


def test_comment_text_cannot_end_or_continue_a_comment() -> None:
    for raw in ["a */ b", "x \\", "y ??/", 'q "s" \'c\'', "l1\nl2\r\n", "/* open", "\u2028z"]:
        out = N.comment_text(raw)
        assert "*/" not in out and "/*" not in out and "\\" not in out and "?" not in out
        assert "\n" not in out and "\r" not in out and '"' not in out and out.isascii()
