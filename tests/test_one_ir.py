"""One language: ``@kernel`` and ``@cube_kernel`` programs parse with one parser into one
``ir.Program`` (cube and vector stages, one expression IR), are typed by one checker, and
lower through ``dsl.kernel`` to the same ``Kernel`` shape under one naming rule."""

from __future__ import annotations

import pytest
from ascendcraft.dsl import ir
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.kernel import Kernel, prepare
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.builtin import propose

from ascendcraft.soc import load_soc
from ascendcraft.tasks.registry import get_task, list_tasks

EPILOGUE = '''
@cube_kernel(category="matmul")
def mmb(a: In[f16], b: In[f16], bias: In[f16], c: Out[f16]):
    BM = tunable(choice(64, 128), default=128)
    SK = tunable(choice(1, 2), default=2)
    ws = workspace(f32)
    for blk in blocks(a, b, m=BM, n=128, split_k=SK):
        acc = accumulator(blk)
        for kk in k_stages(blk, k=256, depth=2):
            a1 = to_l1(a, kk)
            b1 = to_l1(b, kk)
            for k0 in k_steps(kk, k=64, depth=2):
                acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc)
        store(ws, blk, acc)
    for t in rows(ws, rows=8):
        for cc in chunks(t, 1024):
            store(c, cc, cast(gelu(load(ws, cc) + cast(load_bcast(bias, cc), f32)), f16))
'''

VECTOR = '''
@kernel(category="activation")
def act(x: In[f32], y: Out[f32]):
    T = tunable(pow2(256, 4096), default=1024)
    for t in tiles(x, tile=T):
        v = load(x, t)
        for i in unroll(3):
            v = v * 0.5 + i
        store(y, t, v)
'''


def test_both_decorators_parse_into_one_ir() -> None:
    cube, vec = parse(EPILOGUE), parse(VECTOR)
    assert type(cube) is type(vec) is ir.Program
    assert [type(s).__name__ for s in cube.stages] == ["CubeStage", "Loop"]
    assert cube.decorator == "cube_kernel" and vec.decorator == "kernel"
    assert cube.is_workspace("ws") and cube.dtype_of("ws") == "f32" and cube.vector.tensor == "ws"
    kinds = {type(e) for e in ir.program_exprs(cube)}
    assert {ir.Load, ir.Unary, ir.Binary, ir.Cast} <= kinds  # the vector language's nodes
    assert ir.Binary in {type(e) for e in ir.program_exprs(vec)}
    # unroll(...) (from the cube rows stage) now expands in vector kernels too
    assert sum(isinstance(s, ir.Assign) for s in vec.all_stmts()) == 4


def test_groups_of_per_row_values_are_one_ir() -> None:
    mhc = next(c for t in list_tasks() if t.name.startswith("mhc") for c in propose(t))
    p = parse(mhc.source)
    kinds = {type(e) for e in ir.program_exprs(p)}
    assert ir.Index in kinds, kinds
    tp = check_program(p)
    sizes = {tp.type_of(e).size for e in ir.program_exprs(p) if isinstance(e, ir.Load) and e.mode != "tile"}
    assert max(sizes) > 1


def test_one_checker_types_both_and_names_the_line() -> None:
    bad = EPILOGUE.replace("load(ws, cc) + cast(load_bcast(bias, cc), f32)", "load(ws, cc) + load_bcast(bias, cc)")
    with pytest.raises(DslError, match=r"line 17.*different dtypes \(f32 and f16\): cast one"):
        prepare("mmb", bad)
    with pytest.raises(DslError, match="is a cube stage|carries a cube stage.s result: declare the kernel with @cube_kernel"):
        parse(EPILOGUE.replace("@cube_kernel", "@kernel"))
    with pytest.raises(DslError, match="workspace 'ws' is written by the vector stage"):
        prepare("mmb", EPILOGUE.replace("store(c, cc,", "store(ws, cc,").replace("c: Out[f16]", "c: Out[f16], d: Out[f16]"))


def test_what_each_lowering_lacks_is_a_clear_error() -> None:
    grp = '''
@kernel
def g(x: In[f32], w: In[f32], y: Out[f32]):
    for t in rows(x, rows=4):
        s = load_group(w, t, 2)
        for c in chunks(t, 256):
            store(y, c, load(x, c) * s[0])
'''
    with pytest.raises(DslError, match="rows stage of a @cube_kernel only"):
        prepare("g", grp)
    scan = EPILOGUE.replace("gelu(load(ws, cc) + cast(load_bcast(bias, cc), f32))",
                            "scan_sum(load(ws, cc), row_fill(0.0))")
    with pytest.raises(DslError, match=r"scan_\*\(\) is not available in the rows stage of a @cube_kernel"):
        prepare("mmb", scan)
    cmp_ = EPILOGUE.replace("gelu(load(ws, cc) + cast(load_bcast(bias, cc), f32))",
                            "where(load(ws, cc) > 0.0, load(ws, cc), 0.0)")
    prepare("mmb", cmp_)  # comparisons and where() are in the rows stage's part


def test_one_kernel_api_and_naming_rule() -> None:
    soc = load_soc("Ascend910B2")
    dims = [[256, 512], [512, 256], [256], [256, 256]]
    cube = prepare("mmb", EPILOGUE)
    assert cube.feasible(dims, {}, soc) is None
    k = cube.lower({"SK": 2})
    assert isinstance(k, Kernel) and k.op == "mmb_custom"
    assert [(x.name, x.core) for x in k.launches] == [("mmb_custom_cube", "aic"), ("mmb_custom_vec", "aiv")]
    assert k.launches[0].gm_args == ("a", "b", "bias", "ws", "c")
    assert k.tiling_header_name == "mmb_custom_tiling.h" and "MmbCustomComputeTiling" in k.tiling_header
    t = k.tiling(dims, soc)
    assert t["splits"] == 2 and k.workspaces[0].nbytes(dims, {"SK": 2}, soc) == 2 * 256 * 256 * 4
    assert prepare("mmb", parse(EPILOGUE)).lower({"SK": 2}).launches == k.launches  # a parsed program too
    vec = prepare("act", VECTOR).lower()
    assert vec.op == "act_custom" and [x.core for x in vec.launches] == ["aiv"] and not vec.workspaces
    assert vec.tiling([[1000], [1000]], soc)["blockDim"] >= 1


def test_every_template_parses_with_the_one_parser() -> None:
    n = 0
    for task in list_tasks():
        for cand in propose(task):
            check_program(parse(cand.source))
            n += 1
    assert n > 100
    assert get_task("matmul")
