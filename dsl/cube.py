"""The cube DSL front end: ``@cube_kernel`` programs — IR, parser and type checker.

A cube program has up to two stages, both optional but at least one present:

1. a **cube stage** (``for blk in blocks(a, b, ...)``) that runs on the cube cores (AIC): output
   blocks of C = A·B distributed over the cores in a chosen order, K staged GM → L1 (ND → Nz)
   → L0A / L0B, ``mmad`` accumulating in L0C, ``Fixpipe`` writing the block to GM (optionally
   ReLU and an fp32 → fp16/bf16 conversion on the way);
2. a **vector stage** (``for t in rows(x, ...)``) that runs on the vector cores (AIV) after it:
   elementwise epilogues that read the cube result from a GM ``workspace`` (bias, activation,
   scaling, residual, split-K reduction), and per-row (token) math with small groups of
   per-row values (the mHC coefficient mappings, Sinkhorn-Knopp).

On the split 910B the two stages are two launches that share GM (the cube and vector cores
have no common on-chip memory). The text is parsed with ``ast`` and never executed; anything
outside the language is a :class:`DslError` naming the line and column. See CUBE_REFERENCE.md.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from . import ir, ops
from . import names as N
from .ir import Loc, Param, Tunable
from .parser import (
    CONSTANTS,
    DTYPE_NAMES,
    MAX_INT,
    PARAM_KINDS,
    DslError,
    fold_number,
    int_literal,
    nonzero_divisor,
    number_literal,
    parse_domain,
    parse_tree,
)

Size = str | int  # a tunable name or an integer literal

ORDER_NAMES = {"row_major": 0, "col_major": 1, "swizzled": 2}
"""Output-block orders over the cube cores (values of the ``order=`` tunable)."""

UNARY = tuple(ops.UNARY)
BINARY_FUNCS = ops.spelled("binary")
REDUCE_FUNCS = {k: v for k, v in ops.spelled("reduce", "row_").items() if v != "min"}
BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
CUBE_IN_DTYPES = ("f16", "bf16", "f32")
MAX_UNROLL = 64
MAX_GROUP = 256
MAX_STATEMENTS = 20_000  # vector-stage statements visited while expanding unroll(...) loops


# ============================================================================ IR


@dataclass(frozen=True)
class Operand:
    """A matmul operand: ``x`` or ``matrix(x, split)`` (x viewed as
    [prod(dims[:split]), prod(dims[split:])]); ``transpose``: stored K x M (A) / N x K (B)."""

    tensor: str
    transpose: bool
    split: int | None
    loc: Loc


@dataclass(frozen=True)
class CubeStage:
    """``for blk in blocks(a, b, ...)`` with its fixed staging structure."""

    var: str
    a: Operand
    b: Operand
    m: Size
    n: Size
    order: Size
    group: Size
    split_k: Size
    cores: Size | None
    acc_depth: Size
    k_l1: Size
    stages: Size
    k_l0: Size
    l0_depth: Size
    target: str  # Out tensor or workspace written by Fixpipe
    relu: bool
    out_dtype: str  # dtype of the stored value (f32: no conversion)
    batched: bool
    loc: Loc
    store_loc: Loc


@dataclass(frozen=True)
class Workspace:
    name: str
    dtype: str
    loc: Loc


# ---- vector-stage expressions


@dataclass(frozen=True)
class VExpr:
    loc: Loc


@dataclass(frozen=True)
class VConst(VExpr):
    value: float


@dataclass(frozen=True)
class VScalar(VExpr):
    name: str


@dataclass(frozen=True)
class VWidth(VExpr):
    """``width(t)``: the row width of the rows loop's tensor (a runtime float)."""


@dataclass(frozen=True)
class VVar(VExpr):
    name: str


@dataclass(frozen=True)
class VLoad(VExpr):
    """``load`` (tile of a chunk, optionally one ``part`` of the row), ``load_bcast`` (a
    one-row vector broadcast over rows), ``load_cols`` ([G, N] tensor: G per-row values from
    the columns of this tile's rows), ``load_group`` ([N, G] tensor: G values per row),
    ``load_members`` ([G] tensor: G constants shared by all rows)."""

    tensor: str
    at: str
    mode: str  # tile | bcast | cols | group | members
    part: int | None = None
    size: int = 0  # G for cols / group / members


@dataclass(frozen=True)
class VUnary(VExpr):
    op: str
    arg: VExpr


@dataclass(frozen=True)
class VLeakyRelu(VExpr):
    arg: VExpr
    slope: float


@dataclass(frozen=True)
class VBinary(VExpr):
    op: str  # add sub mul div max min
    lhs: VExpr
    rhs: VExpr


@dataclass(frozen=True)
class VPow(VExpr):
    """``x ** n`` (n = 2..4): x evaluated once and multiplied by itself, so nested powers
    stay linear in size."""

    arg: VExpr
    n: int


@dataclass(frozen=True)
class VCast(VExpr):
    arg: VExpr
    dtype: str


@dataclass(frozen=True)
class VReduce(VExpr):
    op: str  # sum | max
    arg: VExpr


@dataclass(frozen=True)
class VFill(VExpr):
    kind: str  # row | tile
    value: float


@dataclass(frozen=True)
class VIndex(VExpr):
    """``g[i]`` (stop = i + 1) or ``g[a:b]`` on a group of per-row values or members."""

    arg: VExpr
    start: int
    stop: int


@dataclass(frozen=True)
class VSinkhorn(VExpr):
    """``sinkhorn(g, n, iters)``: g holds n x n per-row matrices (member i*n + j); ``iters``
    times normalise rows then columns (the start, e.g. exp(logits), is the caller's)."""

    arg: VExpr
    n: int
    iters: int


# ---- vector-stage statements


@dataclass(frozen=True)
class VAssign:
    target: str
    value: VExpr
    loc: Loc


@dataclass(frozen=True)
class VStore:
    tensor: str
    at: str
    value: VExpr
    part: int | None
    loc: Loc


@dataclass(frozen=True)
class VChunks:
    var: str
    size: Size
    parts: int
    body: tuple
    loc: Loc


@dataclass(frozen=True)
class VectorStage:
    var: str
    tensor: str
    rows: Size
    dims: int
    cores: Size | None
    depth: Size
    body: tuple
    loc: Loc


@dataclass(frozen=True)
class CubeProgram:
    name: str
    category: str
    params: tuple[Param, ...]
    tunables: tuple[Tunable, ...]
    workspaces: tuple[Workspace, ...]
    cube: CubeStage | None
    vector: VectorStage | None
    source: str
    loc: Loc
    doc: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    kind = "cube"

    @property
    def inputs(self) -> list[Param]:
        return [p for p in self.params if p.kind == "in"]

    @property
    def outputs(self) -> list[Param]:
        return [p for p in self.params if p.kind == "out"]

    @property
    def scalars(self) -> list[Param]:
        return [p for p in self.params if p.kind == "scalar"]

    @property
    def tensors(self) -> list[Param]:
        return [p for p in self.params if p.kind != "scalar"]

    def dtype_of(self, name: str) -> str:
        for p in self.params:
            if p.name == name:
                return p.dtype
        for w in self.workspaces:
            if w.name == name:
                return w.dtype
        raise KeyError(name)

    def is_workspace(self, name: str) -> bool:
        return any(w.name == name for w in self.workspaces)

    def tunable(self, name: str) -> Tunable:
        for t in self.tunables:
            if t.name == name:
                return t
        raise KeyError(name)

    def defaults(self) -> dict[str, int]:
        return {t.name: t.default for t in self.tunables}


def is_cube_source(source: str) -> bool:
    """Does this DSL text define a ``@cube_kernel`` (rather than a vector ``@kernel``)?"""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False  # not a valid program of either kind: the vector parser reports why
    for n in tree.body:
        if isinstance(n, ast.FunctionDef):
            for d in n.decorator_list:
                f = d.func if isinstance(d, ast.Call) else d
                if isinstance(f, ast.Name) and f.id == "cube_kernel":
                    return True
    return False


# ============================================================================ parser


def _loc(node: ast.AST) -> Loc:
    return Loc(getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1)


_FORBIDDEN = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.ClassDef,
              ast.AsyncFunctionDef, ast.With, ast.AsyncWith, ast.Try, ast.Raise, ast.Global,
              ast.Nonlocal, ast.Delete, ast.While, ast.Await, ast.Yield, ast.YieldFrom,
              ast.NamedExpr, ast.Starred, ast.JoinedStr, ast.AugAssign, ast.If, ast.Return,
              ast.Import, ast.ImportFrom, ast.Attribute, ast.Dict, ast.Set, ast.List)


def parse_cube(source: str) -> CubeProgram:
    """Parse one ``@cube_kernel`` program; raises DslError naming the line and column."""
    tree = parse_tree(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            raise DslError("import is not allowed in the DSL", _loc(node))
        if isinstance(node, _FORBIDDEN):
            what = f"attribute access '.{node.attr}'" if isinstance(node, ast.Attribute) else \
                f"'{type(node).__name__}'"
            raise DslError(f"{what} is not part of the cube DSL", _loc(node))
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise DslError(f"name '{node.id}' is not allowed (dunder names are forbidden)", _loc(node))
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
                                              and isinstance(n.value.value, str)):
            continue
        raise DslError(f"only one kernel definition is allowed at top level, found {type(n).__name__}", _loc(n))
    if len(funcs) != 1:
        raise DslError(f"a program defines exactly one kernel function, found {len(funcs)}",
                       _loc(funcs[1]) if funcs else Loc(1, 1))
    return _CubeParser(source).kernel(funcs[0])


def _is_call(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


class _CubeParser:
    def __init__(self, source: str):
        self.source = source
        self.params: dict[str, Param] = {}
        self.tunables: dict[str, Tunable] = {}
        self.workspaces: dict[str, Workspace] = {}
        self.unroll: dict[str, int] = {}  # unroll variable -> current value
        self.loop_vars: dict[str, str] = {}
        self.visited = 0  # vector-stage statements visited (unroll expansion budget)

    # ------------------------------------------------------------ kernel
    def kernel(self, fn: ast.FunctionDef) -> CubeProgram:
        category = self._decorator(fn)
        N.check_name(fn.name, "kernel", _loc(fn))
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise DslError("kernel parameters are plain names with In[...]/Out[...]/Scalar[...] annotations",
                           _loc(fn))
        for arg in a.args:
            self._param(arg)
        if not any(p.kind == "out" for p in self.params.values()):
            raise DslError("a kernel needs at least one Out[...] tensor", _loc(fn))
        body = list(fn.body)
        doc = ""
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            doc = body.pop(0).value.value
        cube = vector = None
        for st in body:
            if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)):
                continue
            if isinstance(st, ast.Assign) and _is_call(st.value, "tunable"):
                if cube or vector:
                    raise DslError("declare tunables before the loops", _loc(st))
                self._tunable(st)
            elif isinstance(st, ast.Assign) and _is_call(st.value, "workspace"):
                if cube or vector:
                    raise DslError("declare workspaces before the loops", _loc(st))
                self._workspace(st)
            elif isinstance(st, ast.For) and _is_call(st.iter, "blocks"):
                if cube is not None or vector is not None:
                    raise DslError("the cube stage (blocks loop) comes first and only once", _loc(st))
                cube = self._blocks(st)
            elif isinstance(st, ast.For) and _is_call(st.iter, "rows"):
                if vector is not None:
                    raise DslError("a program has at most one vector stage (rows loop)", _loc(st))
                vector = self._rows(st)
            else:
                raise DslError("a cube kernel body is tunable/workspace declarations, an optional "
                               "`for blk in blocks(...)` cube stage and an optional "
                               "`for t in rows(...)` vector stage", _loc(st))
        if cube is None and vector is None:
            raise DslError("the kernel has neither a blocks(...) nor a rows(...) loop", _loc(fn))
        return CubeProgram(fn.name, category, tuple(self.params.values()), tuple(self.tunables.values()),
                           tuple(self.workspaces.values()), cube, vector, self.source, _loc(fn), doc)

    def _decorator(self, fn: ast.FunctionDef) -> str:
        if len(fn.decorator_list) != 1:
            raise DslError("a cube kernel is a function decorated with @cube_kernel(...)", _loc(fn))
        d = fn.decorator_list[0]
        if isinstance(d, ast.Name) and d.id == "cube_kernel":
            return "matmul"
        if not _is_call(d, "cube_kernel") or d.args:
            raise DslError("the decorator is @cube_kernel(category=\"...\")", _loc(d))
        category = "matmul"
        for kw in d.keywords:
            if kw.arg != "category" or not isinstance(kw.value, ast.Constant) or not isinstance(kw.value.value, str):
                raise DslError("@cube_kernel accepts only category=\"...\"", _loc(kw.value))
            category = kw.value.value
            N.check_category(category, _loc(kw.value))
        return category

    def _param(self, a: ast.arg) -> None:
        loc = _loc(a)
        N.check_public_name(a.arg, "parameter", loc)
        if a.arg in self.params:
            raise DslError(f"duplicate parameter '{a.arg}'", loc)
        ann = a.annotation
        if not (isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name)
                and ann.value.id in PARAM_KINDS and isinstance(ann.slice, ast.Name)):
            raise DslError(f"parameter '{a.arg}' needs an annotation In[dtype], Out[dtype] or Scalar[f32]", loc)
        dtype = DTYPE_NAMES.get(ann.slice.id)
        if dtype is None:
            raise DslError(f"unknown dtype '{ann.slice.id}' (known: {', '.join(ir.DTYPES)})", _loc(ann.slice))
        kind = PARAM_KINDS[ann.value.id]
        if kind == "scalar" and dtype != "f32":
            raise DslError("Scalar parameters are f32", loc)
        if kind != "scalar" and dtype not in ("f16", "bf16", "f32"):
            raise DslError(f"cube kernels take f16, bf16 or f32 tensors, not {dtype}", loc)
        self._fresh(a.arg, loc)
        self.params[a.arg] = Param(a.arg, kind, dtype, loc)

    def _fresh(self, name: str, loc: Loc) -> None:
        N.check_name(name, "declared", loc)
        if name in self.params or name in self.tunables or name in self.workspaces or name in self.loop_vars:
            raise DslError(f"'{name}' is already a parameter, tunable, workspace or loop variable", loc)
        if name in UNARY or name in CONSTANTS or name in ORDER_NAMES:
            raise DslError(f"'{name}' is a built-in name", loc)

    def _tunable(self, st: ast.Assign) -> None:
        loc = _loc(st)
        if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
            raise DslError("a tunable is declared as NAME = tunable(domain, default=v)", loc)
        name = st.targets[0].id
        self._fresh(name, loc)
        call = st.value
        if len(call.args) != 1 or any(k.arg != "default" for k in call.keywords):
            raise DslError("tunable(domain, default=v) takes one domain and an optional default", loc)
        domain = parse_domain(call.args[0], self._tunable_value, lowest=0)
        values = domain.values()
        default = values[len(values) // 2]
        if call.keywords:
            default = self._tunable_value(call.keywords[0].value)
            if default not in values:
                raise DslError(f"default {default} is not in the domain {domain}", _loc(call.keywords[0].value))
        self.tunables[name] = Tunable(name, domain, default, loc)

    def _tunable_value(self, node: ast.AST) -> int:
        if isinstance(node, ast.Name) and node.id in ORDER_NAMES:
            return ORDER_NAMES[node.id]
        return self._int(node)

    @staticmethod
    def _int(node: ast.AST) -> int:
        return int_literal(node, 0, MAX_INT)

    def _workspace(self, st: ast.Assign) -> None:
        loc = _loc(st)
        if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
            raise DslError("a workspace is declared as NAME = workspace(f32)", loc)
        name = st.targets[0].id
        self._fresh(name, loc)
        call = st.value
        if call.keywords or len(call.args) != 1 or not isinstance(call.args[0], ast.Name) \
                or DTYPE_NAMES.get(call.args[0].id) != "f32":
            raise DslError("workspace(f32): the cube stage writes its fp32 accumulators there", loc)
        self.workspaces[name] = Workspace(name, "f32", loc)

    def _size(self, node: ast.AST, what: str) -> Size:
        if isinstance(node, ast.Name):
            if node.id in ORDER_NAMES:
                return ORDER_NAMES[node.id]
            if node.id not in self.tunables:
                raise DslError(f"'{node.id}' is not a declared tunable ({what})", _loc(node))
            return node.id
        v = self._int(node)
        if v < 0:
            raise DslError(f"{what} is non-negative", _loc(node))
        return v

    def _bool(self, node: ast.AST, what: str) -> bool:
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return node.value
        raise DslError(f"{what} takes True or False", _loc(node))

    def _kwargs(self, call: ast.Call, allowed: set[str], what: str) -> dict[str, ast.AST]:
        out = {}
        for k in call.keywords:
            if k.arg not in allowed:
                raise DslError(f"{what}() has no argument '{k.arg}' (it takes {', '.join(sorted(allowed))})",
                               _loc(k.value) if k.arg else _loc(call))
            out[k.arg] = k.value
        return out

    def _tensor(self, node: ast.AST, *, kinds: tuple[str, ...] = ("in", "out", "ws")) -> str:
        if isinstance(node, ast.Name):
            if node.id in self.workspaces and "ws" in kinds:
                return node.id
            p = self.params.get(node.id)
            if p is not None and p.kind in kinds:
                return node.id
        want = {"in": "an In tensor", "out": "an Out tensor", "ws": "a workspace"}
        raise DslError(f"expected {' or '.join(want[k] for k in kinds)}, got {ast.unparse(node)!r}", _loc(node))

    # ------------------------------------------------------------ cube stage
    def _operand(self, node: ast.AST) -> tuple[str, int | None]:
        if _is_call(node, "matrix"):
            if len(node.args) != 2 or node.keywords:
                raise DslError("matrix(x, split) views x as [prod(dims[:split]), prod(dims[split:])]", _loc(node))
            split = self._int(node.args[1])
            if split < 1:
                raise DslError("matrix(x, split) needs split >= 1", _loc(node.args[1]))
            return self._tensor(node.args[0], kinds=("in",)), split
        return self._tensor(node, kinds=("in",)), None

    def _blocks(self, st: ast.For) -> CubeStage:
        loc = _loc(st)
        if st.orelse or not isinstance(st.target, ast.Name):
            raise DslError("the cube stage is `for blk in blocks(a, b, m=..., n=..., ...)`", loc)
        call = st.iter
        if len(call.args) != 2:
            raise DslError("blocks(a, b, ...) takes the two matmul operands first", _loc(call))
        (ta, sa), (tb, sb) = self._operand(call.args[0]), self._operand(call.args[1])
        kw = self._kwargs(call, {"m", "n", "transpose_a", "transpose_b", "order", "group", "split_k",
                                 "cores", "acc_depth", "batched"}, "blocks")
        for need in ("m", "n"):
            if need not in kw:
                raise DslError(f"blocks() needs {need}= (the output block size)", _loc(call))
        opa = Operand(ta, self._bool(kw["transpose_a"], "transpose_a") if "transpose_a" in kw else False, sa,
                      _loc(call.args[0]))
        opb = Operand(tb, self._bool(kw["transpose_b"], "transpose_b") if "transpose_b" in kw else False, sb,
                      _loc(call.args[1]))
        batched = self._bool(kw["batched"], "batched") if "batched" in kw else False
        m, n = self._size(kw["m"], "m"), self._size(kw["n"], "n")
        order = self._size(kw["order"], "order") if "order" in kw else 0
        group = self._size(kw["group"], "group") if "group" in kw else 1
        split_k = self._size(kw["split_k"], "split_k") if "split_k" in kw else 1
        cores = self._size(kw["cores"], "cores") if "cores" in kw else None
        acc_depth = self._size(kw["acc_depth"], "acc_depth") if "acc_depth" in kw else 1
        var = st.target.id
        self._fresh(var, _loc(st.target))
        self.loop_vars[var] = "blocks"
        # body: acc = accumulator(blk); for kk in k_stages(...): ...; store(...)
        body = [s for s in st.body if not isinstance(s, ast.Pass)
                and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        shape_msg = ("the blocks body is: acc = accumulator(blk); for kk in k_stages(blk, k=KL1, depth=S): "
                     "a1 = to_l1(a, kk); b1 = to_l1(b, kk); for k0 in k_steps(kk, k=BK, depth=D): "
                     "acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc); then store(c, blk, acc) "
                     "(see CUBE_REFERENCE.md)")
        if len(body) != 3:
            raise DslError(shape_msg, _loc(body[0]) if body else loc)
        s0, s1, s2 = body
        if not (isinstance(s0, ast.Assign) and len(s0.targets) == 1 and isinstance(s0.targets[0], ast.Name)
                and _is_call(s0.value, "accumulator") and len(s0.value.args) == 1
                and isinstance(s0.value.args[0], ast.Name) and s0.value.args[0].id == var):
            raise DslError(f"first statement of the blocks loop: acc = accumulator({var}) — {shape_msg}", _loc(s0))
        acc = s0.targets[0].id
        self._fresh(acc, _loc(s0))
        if not (isinstance(s1, ast.For) and _is_call(s1.iter, "k_stages")):
            raise DslError(f"second statement: for kk in k_stages({var}, k=KL1, depth=STAGES) — {shape_msg}", _loc(s1))
        k_l1, stages, kk = self._stage_loop(s1, "k_stages", var)
        l1_body = [s for s in s1.body if not isinstance(s, ast.Pass)]
        if len(l1_body) != 3:
            raise DslError(f"the k_stages body is a1 = to_l1({ta}, kk); b1 = to_l1({tb}, kk); "
                           "for k0 in k_steps(...): ...", _loc(s1))
        names = {}
        for s, opnd in zip(l1_body[:2], (ta, tb), strict=True):
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                    and _is_call(s.value, "to_l1") and len(s.value.args) == 2
                    and isinstance(s.value.args[0], ast.Name) and isinstance(s.value.args[1], ast.Name)
                    and s.value.args[1].id == kk):
                raise DslError(f"expected NAME = to_l1({opnd}, {kk})", _loc(s))
            if s.value.args[0].id != opnd:
                raise DslError(f"to_l1 loads the operands in order: expected {opnd}, got {s.value.args[0].id}",
                               _loc(s.value.args[0]))
            self._fresh(s.targets[0].id, _loc(s))
            names[opnd if opnd not in names else "_b"] = s.targets[0].id
        a1, b1 = l1_body[0].targets[0].id, l1_body[1].targets[0].id
        if a1 == b1:
            raise DslError("the two L1 tiles need different names", _loc(l1_body[1]))
        s_in = l1_body[2]
        if not (isinstance(s_in, ast.For) and _is_call(s_in.iter, "k_steps")):
            raise DslError(f"third statement of k_stages: for k0 in k_steps({kk}, k=BK, depth=D)", _loc(s_in))
        k_l0, l0_depth, k0 = self._stage_loop(s_in, "k_steps", kk)
        inner = [s for s in s_in.body if not isinstance(s, ast.Pass)]
        want = f"{acc} = mmad(to_l0a({a1}, {k0}), to_l0b({b1}, {k0}), {acc})"
        if len(inner) != 1 or not isinstance(inner[0], ast.Assign):
            raise DslError(f"the k_steps body is one statement: {want}", _loc(s_in))
        mm = inner[0]
        ok = (len(mm.targets) == 1 and isinstance(mm.targets[0], ast.Name) and mm.targets[0].id == acc
              and _is_call(mm.value, "mmad") and len(mm.value.args) == 3
              and _is_call(mm.value.args[0], "to_l0a") and _is_call(mm.value.args[1], "to_l0b")
              and isinstance(mm.value.args[2], ast.Name) and mm.value.args[2].id == acc)
        if ok:
            for c, t in ((mm.value.args[0], a1), (mm.value.args[1], b1)):
                ok = ok and len(c.args) == 2 and isinstance(c.args[0], ast.Name) and c.args[0].id == t \
                    and isinstance(c.args[1], ast.Name) and c.args[1].id == k0
        if not ok:
            raise DslError(f"expected {want} (A goes to L0A, B to L0B, accumulating into {acc})", _loc(mm))
        target, relu, out_dtype, sloc = self._cube_store(s2, var, acc)
        del self.loop_vars[var]
        return CubeStage(var, opa, opb, m, n, order, group, split_k, cores, acc_depth, k_l1, stages, k_l0,
                         l0_depth, target, relu, out_dtype, batched, loc, sloc)

    def _stage_loop(self, st: ast.For, fname: str, parent: str) -> tuple[Size, Size, str]:
        call = st.iter
        if st.orelse or not isinstance(st.target, ast.Name):
            raise DslError(f"for x in {fname}(...) with a plain loop variable", _loc(st))
        if len(call.args) != 1 or not isinstance(call.args[0], ast.Name) or call.args[0].id != parent:
            raise DslError(f"{fname}() takes the enclosing loop variable '{parent}' first", _loc(call))
        kw = self._kwargs(call, {"k", "depth"}, fname)
        if "k" not in kw:
            raise DslError(f"{fname}() needs k= (the K depth of one {'L1 stage' if fname == 'k_stages' else 'mmad'})",
                           _loc(call))
        depth = self._size(kw["depth"], "depth") if "depth" in kw else 2
        self._depth_ok(depth, kw.get("depth", call))
        var = st.target.id
        self._fresh(var, _loc(st.target))
        self.loop_vars[var] = fname
        return self._size(kw["k"], "k"), depth, var

    def _depth_ok(self, depth: Size, node: ast.AST) -> None:
        vals = self.tunables[depth].domain.values() if isinstance(depth, str) else [depth]
        if not set(vals) <= {1, 2}:
            raise DslError("depth is 1 (single buffer) or 2 (ping-pong)", _loc(node))

    def _cube_store(self, st: ast.stmt, var: str, acc: str) -> tuple[str, bool, str, Loc]:
        want = f"store(c, {var}, acc | relu(acc) | cast(acc, f16|bf16) | cast(relu(acc), f16|bf16))"
        if not (isinstance(st, ast.Expr) and _is_call(st.value, "store")):
            raise DslError(f"the last statement of the blocks loop is {want}", _loc(st))
        call = st.value
        if call.keywords or len(call.args) != 3:
            raise DslError(want, _loc(call))
        target = self._tensor(call.args[0], kinds=("out", "ws"))
        if not (isinstance(call.args[1], ast.Name) and call.args[1].id == var):
            raise DslError(f"the cube stage stores at the block variable '{var}'", _loc(call.args[1]))
        v = call.args[2]
        out_dtype = "f32"
        if _is_call(v, "cast"):
            if len(v.args) != 2 or not isinstance(v.args[1], ast.Name) or v.args[1].id not in DTYPE_NAMES:
                raise DslError("cast(x, dtype)", _loc(v))
            out_dtype = DTYPE_NAMES[v.args[1].id]
            if out_dtype not in ("f16", "bf16", "f32"):
                raise DslError("Fixpipe converts fp32 accumulators to f16 or bf16 only", _loc(v))
            v = v.args[0]
        relu = False
        if _is_call(v, "relu") and len(v.args) == 1:
            relu = True
            v = v.args[0]
        if not (isinstance(v, ast.Name) and v.id == acc):
            raise DslError(f"Fixpipe applies only ReLU and a dtype conversion to the accumulator: {want}; "
                           "for other epilogues store to a workspace(f32) and add a rows(...) vector stage",
                           _loc(call.args[2]))
        return target, relu, out_dtype, _loc(call)

    # ------------------------------------------------------------ vector stage
    def _rows(self, st: ast.For) -> VectorStage:
        loc = _loc(st)
        if st.orelse or not isinstance(st.target, ast.Name):
            raise DslError("the vector stage is `for t in rows(x, rows=R, ...)`", loc)
        call = st.iter
        if len(call.args) != 1:
            raise DslError("rows(x, ...) takes the tensor that defines the rows first", _loc(call))
        tensor = self._tensor(call.args[0])
        kw = self._kwargs(call, {"rows", "dims", "cores", "depth"}, "rows")
        if "rows" not in kw:
            raise DslError("rows() needs rows= (rows per tile)", _loc(call))
        dims = self._int(kw["dims"]) if "dims" in kw else 1
        if dims < 1:
            raise DslError("dims= is the number of trailing dims forming a row (>= 1)", _loc(kw["dims"]))
        depth = self._size(kw["depth"], "depth") if "depth" in kw else 2
        self._depth_ok(depth, kw.get("depth", call))
        var = st.target.id
        self._fresh(var, _loc(st.target))
        self.loop_vars[var] = "rows"
        self.row_var = var
        body = tuple(self._vblock(st.body, in_chunk=None))
        return VectorStage(var, tensor, self._size(kw["rows"], "rows"), dims,
                           self._size(kw["cores"], "cores") if "cores" in kw else None, depth, body, loc)

    def _vblock(self, stmts: list[ast.stmt], in_chunk: str | None) -> list:
        out: list = []
        for st in stmts:
            loc = _loc(st)
            self.visited += 1
            if self.visited > MAX_STATEMENTS:
                raise DslError(f"the vector stage expands to more than {MAX_STATEMENTS} statements "
                               "(nested unroll(...) loops multiply): unroll less", loc)
            if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)
                                            and isinstance(st.value.value, str)):
                continue
            if isinstance(st, ast.Assign):
                if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
                    raise DslError("assign to one plain name", loc)
                name = st.targets[0].id
                N.check_name(name, "value", loc)
                if name in self.params or name in self.tunables or name in self.workspaces \
                        or name in self.loop_vars or name in self.unroll or name in UNARY or name in CONSTANTS:
                    raise DslError(f"'{name}' cannot be assigned (it is a parameter, tunable, workspace, loop "
                                   "variable or built-in name)", loc)
                out.append(VAssign(name, self._vexpr(st.value), loc))
            elif isinstance(st, ast.Expr) and _is_call(st.value, "store"):
                out.append(self._vstore(st.value))
            elif isinstance(st, ast.For) and _is_call(st.iter, "unroll"):
                out.extend(self._unroll(st, in_chunk))
            elif isinstance(st, ast.For) and _is_call(st.iter, "chunks"):
                if in_chunk is not None:
                    raise DslError("chunks loops do not nest", loc)
                out.append(self._chunks(st))
            else:
                raise DslError(f"'{ast.unparse(st).splitlines()[0]}' is not a vector-stage statement "
                               "(assignments, store(...), for c in chunks(...), for i in unroll(n))", loc)
        return out

    def _unroll(self, st: ast.For, in_chunk: str | None) -> list:
        call = st.iter
        if st.orelse or not isinstance(st.target, ast.Name) or call.keywords or len(call.args) != 1:
            raise DslError("for i in unroll(N): a loop expanded at compile time (N an integer literal)", _loc(st))
        n = self._static_int(call.args[0])
        if not 1 <= n <= MAX_UNROLL:
            raise DslError(f"unroll(N) takes 1 <= N <= {MAX_UNROLL}", _loc(call))
        var = st.target.id
        if var in self.unroll:
            raise DslError(f"'{var}' is already an unroll variable", _loc(st.target))
        self._fresh(var, _loc(st.target))
        out = []
        for i in range(n):
            self.unroll[var] = i
            out.extend(self._vblock(st.body, in_chunk))
        del self.unroll[var]
        return out

    def _chunks(self, st: ast.For) -> VChunks:
        call = st.iter
        if st.orelse or not isinstance(st.target, ast.Name):
            raise DslError("for c in chunks(t, SIZE[, parts=P])", _loc(st))
        if len(call.args) != 2 or not isinstance(call.args[0], ast.Name) or call.args[0].id != self.row_var:
            raise DslError(f"chunks({self.row_var}, SIZE[, parts=P]) takes the rows variable and a chunk width",
                           _loc(call))
        kw = self._kwargs(call, {"parts"}, "chunks")
        parts = self._static_int(kw["parts"]) if "parts" in kw else 1
        if parts < 1:
            raise DslError("parts= is >= 1", _loc(call))
        var = st.target.id
        self._fresh(var, _loc(st.target))
        self.loop_vars[var] = "chunks"
        body = tuple(self._vblock(st.body, in_chunk=var))
        del self.loop_vars[var]
        return VChunks(var, self._size(call.args[1], "chunk size"), parts, body, _loc(st))

    def _vstore(self, call: ast.Call) -> VStore:
        loc = _loc(call)
        if call.keywords or len(call.args) not in (3, 4):
            raise DslError("store(y, at, value[, part])", loc)
        tensor = self._tensor(call.args[0], kinds=("out", "ws"))
        at = self._loopvar(call.args[1])
        part = self._static_int(call.args[3]) if len(call.args) == 4 else None
        return VStore(tensor, at, self._vexpr(call.args[2]), part, loc)

    def _loopvar(self, node: ast.AST) -> str:
        if not isinstance(node, ast.Name) or self.loop_vars.get(node.id) not in ("rows", "chunks"):
            raise DslError(f"expected the rows or chunks loop variable, got {ast.unparse(node)!r}", _loc(node))
        return node.id

    def _static_int(self, node: ast.AST) -> int:
        """An integer known at compile time: literals, unroll variables, + - * // %."""
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return int_literal(node)
        if isinstance(node, ast.Name) and node.id in self.unroll:
            return self.unroll[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod):
            a, b = self._static_int(node.left), self._static_int(node.right)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0:
                raise DslError("division by zero", _loc(node))
            v = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.FloorDiv: a // b,
                 ast.Mod: a % b}[type(node.op)]
            if abs(v) > MAX_INT:
                raise DslError(f"compile-time integer out of range (|v| <= {MAX_INT})", _loc(node))
            return v
        raise DslError(f"expected a compile-time integer (literal or unroll variable), got {ast.unparse(node)!r}",
                       _loc(node))

    def _vexpr(self, node: ast.AST, depth: int = 0) -> VExpr:
        if depth > 64:
            raise DslError("expression nests too deeply", _loc(node))
        e = self._vexpr_raw(node, depth + 1)
        return _fold(e)

    def _vexpr_raw(self, node: ast.AST, depth: int) -> VExpr:
        loc = _loc(node)
        if isinstance(node, ast.Constant):
            return VConst(loc, number_literal(node))
        if isinstance(node, ast.Name):
            n = node.id
            if n in CONSTANTS:
                return VConst(loc, CONSTANTS[n])
            if n in self.unroll:
                return VConst(loc, float(self.unroll[n]))
            p = self.params.get(n)
            if p is not None:
                if p.kind == "scalar":
                    return VScalar(loc, n)
                raise DslError(f"'{n}' is a GM tensor: bring it into UB with load({n}, c)", loc)
            if n in self.workspaces:
                raise DslError(f"'{n}' is a GM workspace: load it with load({n}, c)", loc)
            if n in self.tunables:
                raise DslError(f"tunable '{n}' can only size loops", loc)
            return VVar(loc, n)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return VUnary(loc, "neg", self._vexpr(node.operand, depth))
            if isinstance(node.op, ast.UAdd):
                return self._vexpr(node.operand, depth)
            raise DslError(f"operator {type(node.op).__name__} is not supported", loc)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                if not (isinstance(node.right, ast.Constant) and type(node.right.value) is int
                        and 1 <= node.right.value <= 4):
                    raise DslError("x ** n takes an integer literal n in 1..4", loc)
                base = self._vexpr(node.left, depth)
                if isinstance(base, VConst):
                    return VConst(loc, fold_number("pow", (base.value, float(node.right.value)), loc))
                return base if node.right.value == 1 else VPow(loc, base, node.right.value)
            op = BINOPS.get(type(node.op))
            if op is None:
                raise DslError(f"operator {type(node.op).__name__} is not supported (+ - * / ** only)", loc)
            return VBinary(loc, op, self._vexpr(node.left, depth), nonzero_divisor(op, self._vexpr(node.right, depth)))
        if isinstance(node, ast.Subscript):
            arg = self._vexpr(node.value, depth)
            s = node.slice
            if isinstance(s, ast.Slice):
                if s.step is not None or s.lower is None or s.upper is None:
                    raise DslError("group slices are g[a:b] with compile-time a < b", loc)
                a, b = self._static_int(s.lower), self._static_int(s.upper)
            else:
                a = self._static_int(s)
                b = a + 1
            if not 0 <= a < b:
                raise DslError(f"bad group index [{a}:{b}]", loc)
            return VIndex(loc, arg, a, b)
        if isinstance(node, ast.Call):
            return self._vcall(node, depth)
        if isinstance(node, ast.Compare):
            raise DslError("comparisons are not part of the cube DSL's vector stage", loc)
        raise DslError(f"'{type(node).__name__}' is not a DSL expression", loc)

    def _vcall(self, node: ast.Call, depth: int) -> VExpr:
        loc = _loc(node)
        if not isinstance(node.func, ast.Name):
            raise DslError("only calls of DSL functions are allowed", loc)
        f, args = node.func.id, node.args
        if node.keywords:
            raise DslError(f"{f}() takes positional arguments only", loc)

        def want(*ns: int) -> None:
            if len(args) not in ns:
                raise DslError(f"{f}() takes {' or '.join(map(str, ns))} arguments, got {len(args)}", loc)

        if f == "load":
            want(2, 3)
            t = self._tensor(args[0], kinds=("in", "ws"))
            at = self._loopvar(args[1])
            part = self._static_int(args[2]) if len(args) == 3 else None
            return VLoad(loc, t, at, "tile", part)
        if f == "load_bcast":
            want(2)
            return VLoad(loc, self._tensor(args[0], kinds=("in",)), self._loopvar(args[1]), "bcast")
        if f in ("load_cols", "load_group"):
            want(3)
            g = self._static_int(args[2])
            if not 1 <= g <= MAX_GROUP:
                raise DslError(f"group size 1..{MAX_GROUP}", loc)
            return VLoad(loc, self._tensor(args[0], kinds=("in", "ws")), self._loopvar(args[1]),
                         "cols" if f == "load_cols" else "group", None, g)
        if f == "load_members":
            want(2)
            g = self._static_int(args[1])
            if not 1 <= g <= MAX_GROUP:
                raise DslError(f"group size 1..{MAX_GROUP}", loc)
            return VLoad(loc, self._tensor(args[0], kinds=("in",)), "", "members", None, g)
        if f in UNARY and f != "neg":
            want(1)
            return VUnary(loc, f, self._vexpr(args[0], depth))
        if f == "leaky_relu":
            want(2)
            slope = self._vexpr(args[1], depth)
            if not isinstance(slope, VConst):
                raise DslError("leaky_relu(x, slope) takes a constant slope", loc)
            return VLeakyRelu(loc, self._vexpr(args[0], depth), slope.value)
        if f in BINARY_FUNCS:
            want(2)
            return VBinary(loc, BINARY_FUNCS[f], self._vexpr(args[0], depth), self._vexpr(args[1], depth))
        if f == "cast":
            want(2)
            if not isinstance(args[1], ast.Name) or args[1].id not in DTYPE_NAMES:
                raise DslError("cast(x, dtype) takes a dtype name such as f32", loc)
            dt = DTYPE_NAMES[args[1].id]
            if dt not in ("f32", "f16", "bf16"):
                raise DslError("the vector stage casts between f32, f16 and bf16", loc)
            return VCast(loc, self._vexpr(args[0], depth), dt)
        if f in REDUCE_FUNCS:
            want(1)
            return VReduce(loc, REDUCE_FUNCS[f], self._vexpr(args[0], depth))
        if f in ("row_fill", "tile_fill"):
            want(1)
            v = self._vexpr(args[0], depth)
            if not isinstance(v, VConst):
                raise DslError(f"{f}() takes a constant", loc)
            return VFill(loc, f.split("_")[0], v.value)
        if f == "width":
            want(1)
            if self._loopvar(args[0]) != self.row_var:
                raise DslError("width(t) takes the rows loop variable", loc)
            return VWidth(loc)
        if f == "sinkhorn":
            want(3)
            n, iters = self._static_int(args[1]), self._static_int(args[2])
            if not 1 <= n <= 16 or not 0 <= iters <= 1000:
                raise DslError("sinkhorn(g, n, iters) takes 1 <= n <= 16 and 0 <= iters <= 1000", loc)
            return VSinkhorn(loc, self._vexpr(args[0], depth), n, iters)
        raise DslError(f"unknown function '{f}'", loc)


def _fold(e: VExpr) -> VExpr:
    """Fold arithmetic on constants (``1.0 / sqrt(2.0)`` is one number)."""
    if isinstance(e, VBinary) and isinstance(e.lhs, VConst) and isinstance(e.rhs, VConst):
        return VConst(e.loc, fold_number(e.op, (e.lhs.value, e.rhs.value), e.loc))
    if isinstance(e, VUnary) and isinstance(e.arg, VConst):
        return VConst(e.loc, fold_number(e.op, (e.arg.value,), e.loc))
    return e


# ============================================================================ checker


@dataclass(frozen=True)
class VType:
    """Form of a vector-stage value: ``tile`` (chunk rows x chunk width), ``col`` (one
    chunk-wide row broadcast over rows), ``group`` (``size`` values per row; a plain
    per-row value is a group of 1), ``members`` (``size`` constants shared by all rows),
    ``scalar``."""

    form: str
    dtype: str
    size: int = 1


@dataclass
class CheckedCube:
    """A parsed program with its vector-stage types (keyed by id of the node)."""

    program: CubeProgram
    types: dict[int, VType]

    def type_of(self, e: VExpr) -> VType:
        return self.types[id(e)]


def check_cube(program: CubeProgram) -> CheckedCube:
    """Static checks that need no shapes: operand dtypes, what each stage may read and
    write, vector-stage forms and dtypes. Raises DslError with the line."""
    p = program
    types: dict[int, VType] = {}
    written: set[str] = set()
    c = p.cube
    if c is not None:
        da, db = p.dtype_of(c.a.tensor), p.dtype_of(c.b.tensor)
        if da != db:
            raise DslError(f"mmad operands need one dtype: {c.a.tensor} is {da}, {c.b.tensor} is {db}", c.loc)
        if da not in CUBE_IN_DTYPES:
            raise DslError(f"the cube takes f16, bf16 or f32 operands, not {da}", c.loc)
        if da == "f32" and c.a.transpose:
            raise DslError("fp32 operands: the lowering loads fp32 A stored M x K only (B may be stored "
                           "K x N or N x K)", c.loc)
        tgt = p.dtype_of(c.target)
        if tgt != c.out_dtype:
            raise DslError(f"storing a {c.out_dtype} value into {tgt} '{c.target}': cast(acc, {tgt})", c.store_loc)
        if c.out_dtype == "bf16" and da == "f16" or c.out_dtype == "f16" and da == "bf16":
            pass  # Fixpipe converts fp32 to either
        if p.is_workspace(c.target) and c.relu:
            pass
        if isinstance(c.split_k, str) or c.split_k != 1:
            if not p.is_workspace(c.target):
                raise DslError("split_k > 1 writes one partial result per K split: store to a workspace(f32) "
                               "and reduce it in the vector stage (load(ws, c) sums the splits)", c.store_loc)
            if c.relu:
                raise DslError("relu of a split-K partial sum is wrong: apply it in the vector stage", c.store_loc)
        if c.batched and (c.a.split is not None or c.b.split is not None):
            raise DslError("batched=True takes 3-D operands as they are (no matrix(...) views)", c.loc)
        written.add(c.target)
    v = p.vector
    if v is not None:
        _VChecker(p, types).run(v)
        written |= {s.tensor for s in _walk_stores(v.body)}
        for w in p.workspaces:
            if c is None or w.name != c.target:
                if w.name in {s.tensor for s in _walk_stores(v.body)}:
                    raise DslError(f"workspace '{w.name}' is written by the vector stage; workspaces carry the "
                                   "cube result to the vector stage", w.loc)
        if c is not None and p.is_workspace(c.target) and not _reads(v.body, c.target) and v.tensor != c.target:
            raise DslError(f"the vector stage never reads the workspace '{c.target}'", v.loc)
    elif c is not None and p.is_workspace(c.target):
        raise DslError(f"the cube stage writes workspace '{c.target}' but there is no rows(...) stage to read it",
                       c.store_loc)
    for o in p.outputs:
        if o.name not in written:
            raise DslError(f"output '{o.name}' is never stored", o.loc)
    for w in p.workspaces:
        if c is None or w.name != c.target:
            raise DslError(f"workspace '{w.name}' is not written by the cube stage", w.loc)
    return CheckedCube(p, types)


def _walk_stores(body) -> list[VStore]:
    out = []
    for s in body:
        if isinstance(s, VStore):
            out.append(s)
        elif isinstance(s, VChunks):
            out.extend(_walk_stores(s.body))
    return out


def walk_vexpr(e: VExpr):
    """``e`` and its sub-expressions, operands first."""
    if isinstance(e, (VUnary, VLeakyRelu, VCast, VReduce, VIndex, VSinkhorn, VPow)):
        yield from walk_vexpr(e.arg)
    elif isinstance(e, VBinary):
        yield from walk_vexpr(e.lhs)
        yield from walk_vexpr(e.rhs)
    yield e


def stage_exprs(body):
    """Every expression node of a vector-stage body."""
    for s in body:
        if isinstance(s, (VAssign, VStore)):
            yield from walk_vexpr(s.value)
        elif isinstance(s, VChunks):
            yield from stage_exprs(s.body)


def _reads(body, tensor: str) -> bool:
    return any(isinstance(e, VLoad) and e.tensor == tensor for e in stage_exprs(body))


class _VChecker:
    def __init__(self, p: CubeProgram, types: dict[int, VType]):
        self.p = p
        self.types = types

    def run(self, v: VectorStage) -> None:
        self.stage = v
        self._block(v.body, {}, chunk=None)

    def _block(self, body, scope: dict[str, VType], chunk: VChunks | None) -> None:
        outer = set(scope)
        for s in body:
            if isinstance(s, VAssign):
                t = self._expr(s.value, scope, chunk)
                if t.form == "scalar":
                    raise DslError(f"'{s.target}' would be a plain scalar: use the expression where it is needed",
                                   s.loc)
                if chunk is not None and s.target in outer:
                    prev = scope[s.target]
                    if prev != t:
                        raise DslError(f"accumulator '{s.target}' changes from {prev.form}/{prev.dtype} to "
                                       f"{t.form}/{t.dtype} inside the chunks loop", s.loc)
                    if t.form in ("tile", "col"):
                        raise DslError("a value carried across chunks must be per-row (row_sum/row_fill...), "
                                       "not a tile: each chunk covers other columns", s.loc)
                scope[s.target] = t
            elif isinstance(s, VStore):
                self._store(s, scope, chunk)
            elif isinstance(s, VChunks):
                child = dict(scope)
                self._block(s.body, child, s)
                for name in scope:
                    scope[name] = child[name]

    def _store(self, s: VStore, scope, chunk) -> None:
        t = self._expr(s.value, scope, chunk)
        dt = self.p.dtype_of(s.tensor)
        if t.dtype != dt:
            raise DslError(f"storing a {t.dtype} value into {dt} '{s.tensor}': cast(v, {dt}) first", s.loc)
        if t.form == "tile":
            if chunk is None or s.at != chunk.var:
                raise DslError("a tile is stored at the chunks variable", s.loc)
            if s.part is not None and not 0 <= s.part:
                raise DslError("part index is >= 0", s.loc)
        elif t.form == "group":
            if s.at != self.stage.var or chunk is not None:
                raise DslError("per-row values (groups) are stored at the rows variable, outside chunks loops",
                               s.loc)
            if s.part is not None:
                raise DslError("part= is for tiles", s.loc)
        else:
            raise DslError(f"store() takes a tile or per-row values, not a {t.form}", s.loc)

    def _expr(self, e: VExpr, scope, chunk) -> VType:
        t = self._infer(e, scope, chunk)
        self.types[id(e)] = t
        return t

    def _infer(self, e: VExpr, scope, chunk) -> VType:
        p = self.p
        if isinstance(e, VConst):
            return VType("scalar", "f32")
        if isinstance(e, (VScalar, VWidth)):
            return VType("scalar", "f32")
        if isinstance(e, VVar):
            if e.name not in scope:
                raise DslError(f"'{e.name}' is not defined here (values defined inside a chunks loop are not "
                               "visible after it)", e.loc)
            return scope[e.name]
        if isinstance(e, VLoad):
            dt = p.dtype_of(e.tensor)
            if e.mode in ("tile", "bcast"):
                if chunk is None or e.at != chunk.var:
                    raise DslError(f"{'load' if e.mode == 'tile' else 'load_bcast'}() reads a chunk: use it inside "
                                   "`for c in chunks(t, ...)` at the chunks variable", e.loc)
                if e.part is not None and e.part < 0:
                    raise DslError("part index is >= 0", e.loc)
                return VType("tile" if e.mode == "tile" else "col", dt)
            if e.mode == "members":
                return VType("members", dt, e.size)
            if e.at != self.stage.var:
                raise DslError(f"load_{e.mode}() reads per-row values at the rows variable", e.loc)
            return VType("group", dt, e.size)
        if isinstance(e, VFill):
            if e.kind == "tile":
                if chunk is None:
                    raise DslError("tile_fill() is a chunk tile: use it inside a chunks loop", e.loc)
                return VType("tile", "f32")
            return VType("group", "f32", 1)
        if isinstance(e, VCast):
            a = self._expr(e.arg, scope, chunk)
            if a.form == "scalar":
                raise DslError("cast() takes a tile or per-row values", e.loc)
            return VType(a.form, e.dtype, a.size)
        if isinstance(e, VIndex):
            a = self._expr(e.arg, scope, chunk)
            if a.form not in ("group", "members"):
                raise DslError(f"indexing takes a group of per-row values or members, not a {a.form}", e.loc)
            if e.stop > a.size:
                raise DslError(f"index [{e.start}:{e.stop}] is outside a group of {a.size}", e.loc)
            return VType(a.form, a.dtype, e.stop - e.start)
        if isinstance(e, VReduce):
            a = self._expr(e.arg, scope, chunk)
            if a.form != "tile":
                raise DslError(f"row_{e.op}() reduces a tile", e.loc)
            self._arith(a, e, f"row_{e.op}")
            return VType("group", a.dtype, 1)
        if isinstance(e, VSinkhorn):
            a = self._expr(e.arg, scope, chunk)
            if a.form != "group" or a.size != e.n * e.n:
                raise DslError(f"sinkhorn(g, {e.n}, ...) takes a group of {e.n * e.n} per-row values, got "
                               f"{a.form}/{a.size}", e.loc)
            self._arith(a, e, "sinkhorn")
            return a
        if isinstance(e, (VUnary, VLeakyRelu, VPow)):
            a = self._expr(e.arg, scope, chunk)
            self._arith(a, e, getattr(e, "op", "leaky_relu" if isinstance(e, VLeakyRelu) else "**"))
            return a
        if isinstance(e, VBinary):
            a = self._expr(e.lhs, scope, chunk)
            b = self._expr(e.rhs, scope, chunk)
            for x in (a, b):
                self._arith(x, e, e.op)
            if a.form == "scalar" and b.form == "scalar":
                raise DslError("an operation on two runtime scalars has no tile to live in", e.loc)
            if a.form != "scalar" and b.form != "scalar" and a.dtype != b.dtype:
                raise DslError(f"operands have different dtypes ({a.dtype} and {b.dtype}): cast one", e.loc)
            forms = {a.form, b.form} - {"scalar"}
            ref = a if a.form != "scalar" else b
            if forms <= {"tile", "col"}:
                if forms == {"col"}:
                    raise DslError("two broadcast rows make no tile: combine them with a tile", e.loc)
                return VType("tile", ref.dtype)
            if forms == {"tile", "group"}:
                g = a if a.form == "group" else b
                if g.size != 1:
                    raise DslError(f"a tile combines with one value per row, not a group of {g.size}: index it",
                                   e.loc)
                if e.op in ("max", "min") and False:
                    pass
                return VType("tile", ref.dtype)
            if forms <= {"group"}:
                sa = a.size if a.form == "group" else b.size
                sb = b.size if b.form == "group" else a.size
                if sa != sb and 1 not in (sa, sb):
                    raise DslError(f"groups of {sa} and {sb} per-row values do not combine", e.loc)
                return VType("group", ref.dtype, max(sa, sb))
            if forms == {"group", "members"}:
                g = a if a.form == "group" else b
                m = b if a.form == "group" else a
                if m.size != g.size and g.size != 1:
                    raise DslError(f"a group of {g.size} combines with {m.size} members", e.loc)
                return VType("group", ref.dtype, m.size)
            if forms == {"members"}:
                if a.form == "members" and b.form == "members" and a.size != b.size:
                    raise DslError("members of different sizes", e.loc)
                return VType("members", ref.dtype, ref.size)
            raise DslError(f"{a.form} and {b.form} values do not combine", e.loc)
        raise DslError(f"unsupported expression {type(e).__name__}", e.loc)

    def _arith(self, t: VType, e: VExpr, what: str) -> None:
        if t.form == "scalar":
            return
        if t.dtype != "f32":
            raise DslError(f"{what}: vector math in the cube DSL is f32; cast({t.dtype} value, f32) first", e.loc)
