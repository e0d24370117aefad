"""Text → IR. The DSL is Python syntax read with ``ast`` and never executed.

Only the constructs listed in REFERENCE.md are accepted; anything else (imports, attribute
access, dunder names, comprehensions, lambdas, unknown functions, ...) is rejected with
a ``DslError`` that names the line and column. Untrusted text (an LLM's answer) goes
through here and nothing else.
"""

from __future__ import annotations

import ast
import threading

from . import ir
from . import names as N
from .ir import Loc
from .parse_blocks import ORDER_NAMES, BlocksParser
from .parse_expr import (  # noqa: F401 - re-exported: the DSL's literal rules live in parse_expr
    BINARY_FUNCS,
    CONSTANTS,
    DTYPE_NAMES,
    GRID_FUNCS,
    MAX_DOMAIN,
    MAX_INT,
    REDUCE_FUNCS,
    REV_SCAN_FUNCS,
    SCAN_FUNCS,
    UNARY_FUNCS,
    DslError,
    ExprParser,
    fold_number,
    int_literal,
    is_call,
    nonzero_divisor,
    number_literal,
    parse_domain,
)

PARAM_KINDS = {"In": "in", "Out": "out", "Scalar": "scalar"}
DECORATORS = {"kernel": "", "cube_kernel": "matmul"}  # decorator -> default category
MAX_SOURCE_BYTES = 64 * 1024
MAX_SYNTAX_DEPTH = 128  # nesting of the whole syntax tree (statements and expressions)
MAX_UNROLL = 64
MAX_STATEMENTS = 20_000  # statements visited while expanding unroll(...) loops
FORBIDDEN = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.ClassDef,
             ast.AsyncFunctionDef, ast.With, ast.AsyncWith, ast.Try, ast.Raise, ast.Global, ast.Nonlocal,
             ast.Delete, ast.While, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Starred,
             ast.JoinedStr, ast.AugAssign, ast.If, ast.Return, ast.Dict, ast.Set, ast.List)


def _loc(node: ast.AST) -> Loc:
    return Loc(getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1)


_AST_LOCK = threading.Lock()


def parse_python(source: str) -> ast.Module:
    """``ast.parse`` one thread at a time: CPython 3.11's AST conversion keeps its recursion depth
    in state the threads share, so parses on two threads at once can fail with a spurious
    "AST constructor recursion depth mismatch" SystemError (python/cpython#106905)."""
    with _AST_LOCK:
        return ast.parse(source, mode="exec")


def parse_tree(source: str) -> ast.Module:
    """``ast.parse`` within the DSL's limits: source size and nesting depth are checked, and
    whatever the Python parser raises on hostile text (too deep, too long a literal) is a
    DslError."""
    if not isinstance(source, str):
        raise DslError("a program is text (UTF-8)")
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        raise DslError(f"program is {size} bytes; the limit is {MAX_SOURCE_BYTES}")
    try:
        tree = parse_python(source)
    except SyntaxError as e:
        raise DslError(f"syntax error: {e.msg}", Loc(e.lineno or 0, e.offset or 0)) from None
    except (RecursionError, MemoryError):
        raise DslError(f"the program nests too deeply (the limit is {MAX_SYNTAX_DEPTH} levels)") from None
    except ValueError as e:  # e.g. an integer literal beyond Python's digit limit, NUL bytes
        raise DslError(f"syntax error: {e}") from None
    _check_depth(tree)
    for node in ast.walk(tree):  # every identifier, used or declared: messages quote them
        name = getattr(node, "id", None) or getattr(node, "arg", None) or getattr(node, "name", None)
        if isinstance(name, str) and (not name.isascii() or len(name) > N.MAX_NAME):
            N.check_name(name, "identifier", _loc(node))
    return tree


def _check_depth(tree: ast.AST) -> None:
    """Reject syntax trees deeper than MAX_SYNTAX_DEPTH (iteratively: no recursion on hostile
    input), so every later recursive pass, ``ast.unparse`` included, stays far from the
    interpreter's recursion limit."""
    stack = [(tree, 1)]
    while stack:
        node, d = stack.pop()
        if d > MAX_SYNTAX_DEPTH:
            raise DslError(f"the program nests too deeply (more than {MAX_SYNTAX_DEPTH} levels)", _loc(node))
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(node))


def statement_text(node: ast.stmt) -> str:
    """A statement as re-printed from its syntax tree (first line only), for the generated
    ``// DSL line N:`` comments: validated names, numbers and operators, never raw source."""
    return N.comment_text(ast.unparse(node).splitlines()[0]) if isinstance(node, ast.stmt) else ""


def parse(source: str) -> ir.Program:
    """Parse one DSL kernel. Raises DslError for anything outside the language."""
    tree = parse_tree(source)
    _reject_forbidden(tree)
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    for n in tree.body:
        if isinstance(n, ast.FunctionDef):
            continue
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
            continue  # module docstring
        raise DslError(f"only one kernel definition is allowed at top level, found {type(n).__name__}", _loc(n))
    if len(funcs) != 1:
        raise DslError(f"a program defines exactly one kernel function, found {len(funcs)}",
                       _loc(funcs[1]) if funcs else Loc(1, 1))
    return _Parser(source).kernel(funcs[0])


def _reject_forbidden(tree: ast.AST) -> None:
    """Reject constructs that have no meaning in the DSL before looking at anything else."""
    for node in ast.walk(tree):
        loc = _loc(node)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            raise DslError("import is not allowed in the DSL", loc)
        if isinstance(node, ast.Attribute):
            raise DslError(f"attribute access '.{node.attr}' is not allowed in the DSL", loc)
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise DslError(f"name '{node.id}' is not allowed (dunder names are forbidden)", loc)
        if isinstance(node, FORBIDDEN):
            raise DslError(f"'{type(node).__name__}' is not part of the DSL", loc)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "eval", "exec", "open", "compile", "getattr", "setattr", "globals", "locals",
            "vars", "__import__", "input", "breakpoint", "help", "dir", "type", "object",
        ):
            raise DslError(f"'{node.func.id}' is not allowed in the DSL", loc)


class _Parser(ExprParser, BlocksParser):
    def __init__(self, source: str):
        self.source = source
        self.params: dict[str, ir.Param] = {}
        self.tunables: dict[str, ir.Tunable] = {}
        self.workspaces: dict[str, ir.Workspace] = {}
        self.loop_vars: dict[str, str] = {}  # var -> kind (tiles/rows/slabs/chunks/steps/blocks/...)
        self.values: set[str] = set()
        self.unroll: dict[str, int] = {}  # unroll variable -> its value in the copy being read
        self.visited = 0  # statements read (unroll expansion budget)
        self.cube = False  # @cube_kernel: its stages run on the cube and the vector cores
        self.lines: dict[int, str] = {}  # line -> statement text for generated comments

    def _line(self, st: ast.stmt) -> None:
        self.lines.setdefault(st.lineno, statement_text(st))

    # ------------------------------------------------------------ kernel
    def kernel(self, fn: ast.FunctionDef) -> ir.Program:
        category = self._decorator(fn)
        N.check_name(fn.name, "kernel", _loc(fn))
        if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or fn.args.posonlyargs:
            raise DslError("kernel parameters are plain names with In[...]/Out[...]/Scalar[...] annotations", _loc(fn))
        if fn.args.defaults:
            raise DslError("kernel parameters take no default values", _loc(fn.args.defaults[0]))
        for a in fn.args.args:
            self._param(a)
        if not self.cube and not any(p.kind == "in" for p in self.params.values()):
            raise DslError("a kernel needs at least one In[...] tensor", _loc(fn))
        if not any(p.kind == "out" for p in self.params.values()):
            raise DslError("a kernel needs at least one Out[...] tensor", _loc(fn))
        body = list(fn.body)
        doc = ""
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            doc = body.pop(0).value.value
        top: list = []
        for st in body:
            if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)
                                            and isinstance(st.value.value, str)):
                continue
            if isinstance(st, ast.Assign) and (is_call(st.value, "tunable") or is_call(st.value, "workspace")):
                if top:
                    raise DslError(f"declare {st.value.func.id}s before the loops", _loc(st))
                (self._tunable if is_call(st.value, "tunable") else self._workspace)(st)
            elif isinstance(st, ast.For) and is_call(st.iter, "blocks"):
                if not self.cube:
                    raise DslError("blocks(...) is a cube stage: declare the kernel with @cube_kernel", _loc(st))
                if top:
                    raise DslError("the cube stage (blocks loop) comes first and only once", _loc(st))
                top.append(self._blocks(st))
            elif isinstance(st, ast.For):
                if self.cube and not is_call(st.iter, "rows"):
                    raise DslError("a cube kernel body is tunable/workspace declarations, an optional "
                                   "`for blk in blocks(...)` cube stage and an optional "
                                   "`for t in rows(...)` vector stage", _loc(st))
                if self.cube and any(isinstance(x, ir.Loop) for x in top):
                    raise DslError("a program has at most one vector stage (rows loop)", _loc(st))
                top.append(self._loop(st))
            elif self.cube:
                raise DslError("a cube kernel body is tunable/workspace declarations, an optional "
                               "`for blk in blocks(...)` cube stage and an optional "
                               "`for t in rows(...)` vector stage", _loc(st))
            elif isinstance(st, ast.Assign):
                top += self._block([st], "", "top")
            elif isinstance(st, ast.Expr) and is_call(st.value, "store"):
                self._line(st)
                top.append(self._store(st.value, top_level=True))
            else:
                raise DslError(
                    f"unexpected {type(st).__name__}: a kernel body is tunable declarations, then "
                    "distribution loops (tiles/rows/slabs), scalar assignments and scalar stores",
                    _loc(st))
        loops = [x for x in top if isinstance(x, ir.Loop)]
        if not loops and not self.cube:
            raise DslError("the kernel has no distribution loop (for t in tiles/rows/slabs(...))", _loc(fn))
        if not any(isinstance(x, (ir.Loop, ir.CubeStage)) for x in top):
            raise DslError("the kernel has neither a blocks(...) nor a rows(...) loop", _loc(fn))
        return ir.Program(
            name=fn.name, category=category, params=tuple(self.params.values()),
            tunables=tuple(self.tunables.values()), loop=loops[0] if loops else None, source=self.source,
            loc=_loc(fn), doc=doc, top=tuple(top), lines=self.lines,
            workspaces=tuple(self.workspaces.values()), decorator="cube_kernel" if self.cube else "kernel",
        )

    def _decorator(self, fn: ast.FunctionDef) -> str:
        if len(fn.decorator_list) != 1:
            raise DslError("a kernel is a function decorated with @kernel(...) or @cube_kernel(...)", _loc(fn))
        d = fn.decorator_list[0]
        name = d.func.id if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) else getattr(d, "id", "")
        if name not in DECORATORS:
            raise DslError("the only decorators are @kernel(category=...) and @cube_kernel(category=...)", _loc(d))
        self.cube = name == "cube_kernel"
        category = DECORATORS[name]
        if isinstance(d, ast.Name):
            return category
        if d.args:
            raise DslError(f"@{name} takes keyword arguments only", _loc(d))
        for kw in d.keywords:
            if kw.arg != "category" or not isinstance(kw.value, ast.Constant) or not isinstance(kw.value.value, str):
                raise DslError(f"@{name} accepts only category=\"...\"", _loc(kw.value))
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
            raise DslError(f"parameter '{a.arg}' needs an annotation In[dtype], Out[dtype] or Scalar[dtype]", loc)
        dtype = DTYPE_NAMES.get(ann.slice.id)
        if dtype is None:
            raise DslError(f"unknown dtype '{ann.slice.id}' (known: {', '.join(ir.DTYPES)})", _loc(ann.slice))
        kind = PARAM_KINDS[ann.value.id]
        if kind == "scalar" and dtype not in ("f32", "i32"):
            raise DslError("Scalar parameters are f32 or i32", loc)
        if kind == "out" and dtype in ("i8", "u8"):
            raise DslError(f"{dtype} is accepted for inputs only", loc)
        self._builtin_clash(a.arg, loc)
        self.params[a.arg] = ir.Param(a.arg, kind, dtype, loc)

    def _tunable(self, st: ast.Assign) -> None:
        loc = _loc(st)
        if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
            raise DslError("a tunable is declared as NAME = tunable(domain, default=v)", loc)
        name = st.targets[0].id
        N.check_name(name, "tunable", loc)
        if name in self.tunables or name in self.params or name in self.workspaces:
            raise DslError(f"'{name}' is declared twice", loc)
        self._builtin_clash(name, loc)
        call = st.value
        if len(call.args) != 1 or any(k.arg != "default" for k in call.keywords):
            raise DslError("tunable(domain, default=v) takes one domain and an optional default", loc)
        # cube-stage sizes may be 0 (no split) and orders are named
        domain = parse_domain(call.args[0], self._tunable_value, lowest=0 if self.cube else 1)
        values = domain.values()
        default = values[len(values) // 2]
        if call.keywords:
            default = self._tunable_value(call.keywords[0].value)
            if default not in values:
                raise DslError(f"default {default} is not in the domain {domain}", _loc(call.keywords[0].value))
        self.tunables[name] = ir.Tunable(name, domain, default, loc)

    def _tunable_value(self, node: ast.AST) -> int:
        if self.cube and isinstance(node, ast.Name) and node.id in ORDER_NAMES:
            return ORDER_NAMES[node.id]
        return int_literal(node, 0, MAX_INT)

    def _workspace(self, st: ast.Assign) -> None:
        loc = _loc(st)
        if not self.cube:
            raise DslError("workspace(...) carries a cube stage's result: declare the kernel with @cube_kernel", loc)
        if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
            raise DslError("a workspace is declared as NAME = workspace(f32)", loc)
        name = st.targets[0].id
        self._fresh_name(name, loc)
        call = st.value
        ring: ir.Size = 0
        for kw in call.keywords:  # ring=R: the stages in one mixed launch through a ring of R blocks
            if kw.arg != "ring":
                raise DslError("workspace(...) takes one keyword, ring= (a tunable or 1..15)", loc)
            ring = self._size(kw.value)
            if isinstance(ring, int) and ring > 15:
                raise DslError("workspace(ring=...): at most 15 blocks (pending cross-core sets per flag)", loc)
        if len(call.args) != 1 or not isinstance(call.args[0], ast.Name) \
                or DTYPE_NAMES.get(call.args[0].id) not in ("f32", "f16", "bf16"):
            raise DslError("workspace(f32): the cube stage writes its fp32 accumulators there "
                           "(workspace(f16) / workspace(bf16): the result rounded by Fixpipe)", loc)
        self.workspaces[name] = ir.Workspace(name, DTYPE_NAMES[call.args[0].id], loc, ring)

    # ------------------------------------------------------------ loops
    def _loop(self, st: ast.For) -> ir.Loop:
        loc = _loc(st)
        if st.orelse:
            raise DslError("for ... else is not part of the DSL", loc)
        if not isinstance(st.target, ast.Name):
            raise DslError("the loop variable is a plain name", _loc(st.target))
        call = st.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ir.LOOP_KINDS):
            raise DslError("the distribution loop iterates tiles(...), rows(...) or slabs(...)", _loc(call))
        kind = call.func.id
        if len(call.args) != 1 or not isinstance(call.args[0], ast.Name):
            raise DslError(f"{kind}(x, ...) takes the tensor that defines the iteration space first", _loc(call))
        tensor = self._tensor_name(call.args[0], workspace=self.cube)
        allowed = {"tiles": {"tile", "cores", "depth"},
                   "rows": {"rows", "cores", "depth", "dims", "groups", "axis", "flat", "inplace"},
                   "slabs": {"dim", "tile", "cores", "depth", "rows", "flat", "block_max", "split", "hold"},
                   "windows": {"dims", "kernel", "stride", "padding", "rows", "chunk", "cores", "depth",
                               "fill", "combine", "reuse", "carry", "ceil", "dilation"}}[kind]
        kw = {}
        for k in call.keywords:
            if k.arg not in allowed:
                raise DslError(f"{kind}() has no argument '{k.arg}' (it takes {', '.join(sorted(allowed))})", _loc(k.value))
            kw[k.arg] = k.value
        size_key = "rows" if kind in ("rows", "windows") else "tile"
        if size_key not in kw:
            raise DslError(f"{kind}() needs {size_key}=...", _loc(call))
        tile = self._size(kw[size_key])
        cores = self._size(kw["cores"]) if "cores" in kw else None
        depth = self._size(kw["depth"]) if "depth" in kw else 2
        if isinstance(depth, int) and depth not in (1, 2, 3):
            raise DslError("depth is 1 (single buffer), 2 (double buffering) or 3 (a held tile beside two in flight)", _loc(kw["depth"]))
        if isinstance(depth, str) and not set(self.tunables[depth].domain.values()) <= {1, 2, 3}:
            raise DslError(f"tunable {depth} used as depth must take only the values 1, 2 and 3", _loc(kw["depth"]))
        if kind == "slabs":
            if "dim" not in kw:
                raise DslError("slabs() needs dim=<axis>", _loc(call))
            dim = int_literal_pos(kw["dim"])
        elif kind == "rows":
            dim = int_literal_pos(kw["dims"]) if "dims" in kw else 1
            if dim < 1:
                raise DslError("dims= is the number of trailing dims forming a row (>= 1)", _loc(kw["dims"]))
        elif kind == "windows":
            for need in ("dims", "kernel", "stride", "chunk"):
                if need not in kw:
                    raise DslError(f"windows() needs {need}=...", _loc(call))
            dim = int_literal_pos(kw["dims"])
            if dim not in (1, 2, 3):
                raise DslError("windows(dims=...) pools over 1, 2 or 3 trailing dims", _loc(kw["dims"]))
        else:
            dim = 0
        groups = 1
        if "groups" in kw:
            groups = int_literal_pos(kw["groups"])
            if groups < 1:
                raise DslError("groups= splits each row into that many rows (>= 1)", _loc(kw["groups"]))
        axis = -1
        if "axis" in kw:
            axis = int_literal_pos(kw["axis"])
            if tile != 1 or "dims" in kw or "groups" in kw:
                raise DslError("rows(axis=a) takes rows=1 and no dims/groups: a row is the strided "
                               "set x[..., k, ...] of one index k on axis a", _loc(kw["axis"]))
        window, chunk, fill = (0, 0, 0), None, 0.0
        if kind == "windows":
            k, s_ = _per_dim(kw["kernel"], dim), _per_dim(kw["stride"], dim)
            pad = _per_dim(kw["padding"], dim) if "padding" in kw else (0,) * dim
            for kj, sj, pj in zip(k, s_, pad, strict=True):
                if kj < 1 or sj < 1 or pj < 0 or 2 * pj > kj:
                    raise DslError("windows(): kernel >= 1, stride >= 1, 0 <= padding <= kernel / 2", loc)
            window = _window_of(k, s_, pad)
            chunk = self._size(kw["chunk"])
            if "fill" in kw:
                f = self._expr(kw["fill"])
                if not isinstance(f, ir.Const):
                    raise DslError("windows(fill=...) is a constant (the value outside the input)",
                                   _loc(kw["fill"]))
                fill = f.value
        combine = ""
        if kind == "windows" and "combine" in kw:
            c = kw["combine"]
            if not (isinstance(c, ast.Name) and c.id in ("sum", "max")):
                raise DslError("windows(combine=...) is sum or max: the op the taps fold with",
                               _loc(c))
            combine = c.id
        reuse = kind == "windows" and "reuse" in kw and self._flag(kw["reuse"], "windows(reuse=...)")
        flat = "flat" in kw and self._flag(kw["flat"], f"{kind}(flat=...)")
        carry = kind == "windows" and "carry" in kw and self._flag(kw["carry"], "windows(carry=...)")
        if carry:
            v = kw["carry"]
            if not (dim == 1 or (combine and reuse and dim in (2, 3))):
                raise DslError("windows(carry=True) keeps what the next tile shares with this one in UB "
                               "(1-D: the halo columns, 2-D: ring rows, 3-D: kh-folded planes): in 2-D "
                               "and 3-D it needs combine= and reuse=True", _loc(v))
        inplace = kind == "rows" and "inplace" in kw and self._flag(kw["inplace"], "rows(inplace=...)")
        ceil = kind == "windows" and "ceil" in kw and self._flag(kw["ceil"], "windows(ceil=...)")
        dilation: int | tuple = 1
        if kind == "windows" and "dilation" in kw:
            dil = _per_dim(kw["dilation"], dim)
            if min(dil) < 1:
                raise DslError("windows(dilation=...) is >= 1", _loc(kw["dilation"]))
            if max(dil) > 1 and (reuse or carry):
                raise DslError("windows(dilation=...) stages each (kd, kh) row on its own: no reuse= "
                               "or carry=", _loc(kw["dilation"]))
            dilation = dil[0] if len(set(dil)) == 1 else dil
        block_max = kind == "slabs" and "block_max" in kw and self._flag(kw["block_max"], "slabs(block_max=...)")
        var = st.target.id
        self._fresh_name(var, _loc(st.target))
        self._line(st)
        self.loop_vars[var] = kind
        body = self._block(st.body, var, kind)
        del self.loop_vars[var]  # sequential distribution loops may reuse the name
        step_rows = self._size(kw["rows"]) if kind == "slabs" and "rows" in kw else None
        split = self._size(kw["split"]) if kind == "slabs" and "split" in kw else None
        hold = kind == "slabs" and "hold" in kw and self._flag(kw["hold"], "slabs(hold=...)")
        if hold:
            if {"rows", "flat", "block_max", "split"} & set(kw):
                raise DslError("slabs(hold=True) copies all K steps of a tile as one block and keeps it for "
                               "every steps loop: no rows=, flat=, block_max= or split=", _loc(kw["hold"]))
            step_rows = tile  # one block of every step; tile= is the block's elements (K x positions)
        return ir.Loop(kind, var, tensor, tile, cores, dim, depth, tuple(body), loc, groups, axis,
                       window, chunk, fill, combine, reuse, step_rows, flat=flat, carry=carry, inplace=inplace,
                       block_max=block_max, ceil=ceil, dilation=dilation, split=split, hold=hold)

    @staticmethod
    def _flag(v: ast.AST, what: str) -> bool:
        if isinstance(v, ast.Constant) and type(v.value) is bool:
            return v.value
        raise DslError(f"{what} is True or False", _loc(v))

    def _size(self, node: ast.AST) -> str | int:
        if isinstance(node, ast.Name):
            if node.id not in self.tunables:
                raise DslError(f"'{node.id}' is not a declared tunable", _loc(node))
            return node.id
        v = int_literal_pos(node)
        if v < 1:
            raise DslError("sizes are positive", _loc(node))
        return v

    def _tensor_name(self, node: ast.AST, kind: str | None = None, workspace: bool = False) -> str:
        """A tensor parameter (of ``kind`` "in"/"out" if given), or with ``workspace`` also a
        declared workspace."""
        if workspace and isinstance(node, ast.Name) and node.id in self.workspaces:
            return node.id
        if not isinstance(node, ast.Name) or node.id not in self.params or self.params[node.id].kind == "scalar":
            raise DslError(f"expected a tensor parameter, got {ast.unparse(node)!r}", _loc(node))
        if kind and self.params[node.id].kind != kind:
            raise DslError(f"'{node.id}' is an {'input' if kind == 'out' else 'output'}; "
                           f"{'store to an Out' if kind == 'out' else 'load from an In'} tensor", _loc(node))
        return node.id

    def _builtin_clash(self, name: str, loc: Loc) -> None:
        if name in UNARY_FUNCS or name in CONSTANTS or name in BINARY_FUNCS or name in REDUCE_FUNCS \
                or name in GRID_FUNCS or name in SCAN_FUNCS or name in REV_SCAN_FUNCS or (self.cube and name in ORDER_NAMES):
            raise DslError(f"'{name}' is a built-in name", loc)

    def _fresh_name(self, name: str, loc: Loc) -> None:
        N.check_name(name, "value", loc)
        if name in self.params or name in self.tunables or name in self.loop_vars or name in self.workspaces \
                or name in self.unroll:
            raise DslError(f"'{name}' is already a parameter, tunable, workspace or loop variable", loc)
        self._builtin_clash(name, loc)

    def _count(self, st: ast.stmt) -> None:
        self.visited += 1
        if self.visited > MAX_STATEMENTS:
            raise DslError(f"the kernel expands to more than {MAX_STATEMENTS} statements "
                           "(nested unroll(...) loops multiply): unroll less", _loc(st))

    def _block(self, stmts: list[ast.stmt], loop_var: str, loop_kind: str) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for st in stmts:
            loc = _loc(st)
            self._count(st)
            if isinstance(st, ast.Pass):
                continue
            if isinstance(st, (ast.Assign, ast.For)) or (isinstance(st, ast.Expr) and is_call(st.value, "store")):
                self._line(st)
            if isinstance(st, ast.Assign):
                if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
                    raise DslError("assign to one plain name", loc)
                name = st.targets[0].id
                self._fresh_name(name, _loc(st.targets[0]))
                value = self._expr(st.value)
                self.values.add(name)
                out.append(ir.Assign(loc, name, value))
            elif isinstance(st, ast.Expr) and is_call(st.value, "store"):
                out.append(self._store(st.value))
            elif isinstance(st, ast.For) and is_call(st.iter, "unroll") and loop_kind != "top":
                out += self._unroll(st, loop_var, loop_kind)
            elif isinstance(st, ast.For):
                out.append(self._inner_loop(st, loop_var, loop_kind))
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                continue  # a comment string
            else:
                raise DslError(f"'{ast.unparse(st).splitlines()[0]}' is not a DSL statement "
                               "(assignments, store(...), and inner for-loops only)", loc)
        return out

    def _unroll(self, st: ast.For, loop_var: str, loop_kind: str) -> list[ir.Stmt]:
        """``for i in unroll(N)``: the body read N times, ``i`` a compile-time integer."""
        call = st.iter
        if st.orelse or not isinstance(st.target, ast.Name) or call.keywords or len(call.args) != 1:
            raise DslError("for i in unroll(N): a loop expanded at compile time (N an integer literal)", _loc(st))
        n = self._static_int(call.args[0])
        if not 1 <= n <= MAX_UNROLL:
            raise DslError(f"unroll(N) takes 1 <= N <= {MAX_UNROLL}", _loc(call))
        var = st.target.id
        if var in self.unroll:
            raise DslError(f"'{var}' is already an unroll variable", _loc(st.target))
        self._fresh_name(var, _loc(st.target))
        out: list[ir.Stmt] = []
        for i in range(n):
            self.unroll[var] = i
            out += self._block(st.body, loop_var, loop_kind)
        del self.unroll[var]
        return out

    def _inner_loop(self, st: ast.For, parent: str, parent_kind: str) -> ir.InnerLoop:
        loc = _loc(st)
        if st.orelse or not isinstance(st.target, ast.Name):
            raise DslError("inner loops are 'for c in chunks(t, SIZE)' or 'for k in steps(t)'", loc)
        call = st.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ir.INNER_LOOP_KINDS):
            raise DslError("inner loops iterate chunks(t, SIZE), steps(t), taps(t) or unroll(N)", _loc(call))
        kind = call.func.id
        if not call.args or not isinstance(call.args[0], ast.Name) or call.args[0].id != parent:
            raise DslError(f"{kind}() takes the enclosing loop variable '{parent}' first", _loc(call))
        parts, reverse, hold = 1, False, None
        for k in call.keywords:
            if kind == "chunks" and k.arg == "hold":
                hold = self._hold(k.value)
                continue
            if kind in ("chunks", "steps") and k.arg == "reverse":
                if not (isinstance(k.value, ast.Constant) and type(k.value.value) is bool):
                    raise DslError("reverse= is True or False", _loc(k.value))
                reverse = k.value.value
                continue
            if kind != "chunks" or k.arg != "parts":
                raise DslError(f"{kind}() takes no argument '{k.arg}'", _loc(k.value))
            parts = self._static_int(k.value)
            if parts < 1:
                raise DslError("parts= is >= 1", _loc(call))
        if kind == "chunks":
            if parent_kind != "rows":
                raise DslError("chunks() splits the rows of a rows(...) loop", _loc(call))
            if len(call.args) != 2:
                raise DslError("chunks(t, SIZE) needs a chunk size", _loc(call))
            size = self._size(call.args[1])
        elif kind == "taps":
            if parent_kind != "windows":
                raise DslError("taps() walks the window offsets of a windows(...) loop", _loc(call))
            if len(call.args) != 1:
                raise DslError("taps(t) takes only the windows variable", _loc(call))
            size = None
        else:
            if parent_kind != "slabs":
                raise DslError("steps() walks the reduced axis of a slabs(...) loop", _loc(call))
            if len(call.args) != 1:
                raise DslError("steps(t) takes only the slab variable", _loc(call))
            size = None
        if parent_kind in ("chunks", "steps", "taps"):
            raise DslError("inner loops do not nest", loc)
        var = st.target.id
        self._fresh_name(var, _loc(st.target))
        self.loop_vars[var] = kind
        body = self._block(st.body, var, kind)
        del self.loop_vars[var]  # sequential inner loops may reuse the name
        if reverse and parts > 1:
            raise DslError("chunks(t, SIZE, reverse=True) walks whole rows: no parts=", _loc(call))
        if hold is not None and (reverse or parts > 1):
            raise DslError("chunks(t, SIZE, hold=H) walks whole rows forwards: no reverse= or parts=", _loc(call))
        return ir.InnerLoop(loc, kind, var, parent, size, tuple(body), parts, reverse, hold)

    def _hold(self, node: ast.AST) -> str | int:
        """hold=: a tunable name or a literal count of chunks (0: none)."""
        if isinstance(node, ast.Constant) and node.value == 0:
            return 0
        return self._size(node)

    def _store(self, call: ast.Call, top_level: bool = False) -> ir.Store:
        loc = _loc(call)
        if top_level:
            if call.keywords or len(call.args) != 2:
                raise DslError("outside a loop, store(y, value) writes a scalar to a one-element Out",
                               loc)
            return ir.Store(loc, self._tensor_name(call.args[0], "out"), "", self._expr(call.args[1]))
        if call.keywords or len(call.args) not in (3, 4):
            raise DslError("store(y, at, value[, part]) takes an Out tensor, a loop variable, a value and "
                           "optionally the part of the row (chunks(..., parts=P))", loc)
        tensor = self._tensor_name(call.args[0], "out", workspace=self.cube)
        at = self._loop_var(call.args[1])
        part = self._static_int(call.args[3]) if len(call.args) == 4 else None
        return ir.Store(loc, tensor, at, self._expr(call.args[2]), part)

    def _loop_var(self, node: ast.AST) -> str:
        if not isinstance(node, ast.Name) or node.id not in self.loop_vars or self.loop_vars[node.id] == "blocks":
            raise DslError(f"expected a loop variable, got {ast.unparse(node)!r}", _loc(node))
        return node.id


def _per_dim(node: ast.AST, dim: int) -> tuple[int, ...]:
    """windows(kernel=/stride=/padding=): one integer literal for every pooled dim, or a tuple
    of ``dim`` of them (outermost pooled dim first, as PyTorch's tuples)."""
    if isinstance(node, ast.Tuple):
        if len(node.elts) != dim:
            raise DslError(f"windows(dims={dim}): a tuple of {dim} integers, one per pooled dim", _loc(node))
        return tuple(int_literal_pos(e) for e in node.elts)
    return (int_literal_pos(node),) * dim


def _window_of(k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...]) -> tuple:
    """ir.Loop.window: (kernel, stride, padding) as integers when every pooled dim shares them,
    else as tuples per pooled dim."""
    if len(set(k)) == len(set(s)) == len(set(p)) == 1:
        return (k[0], s[0], p[0])
    return (k, s, p)


def int_literal_pos(node: ast.AST) -> int:
    """A non-negative integer literal (loop arguments)."""
    return int_literal(node, 0, MAX_INT)

