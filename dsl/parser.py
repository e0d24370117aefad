"""Text → IR. The DSL is Python syntax read with ``ast`` and never executed.

Only the constructs listed in REFERENCE.md are accepted; anything else (imports, attribute
access, dunder names, comprehensions, lambdas, unknown functions, ...) is rejected with
a ``DslError`` that names the line and column. Untrusted text (an LLM's answer) goes
through here and nothing else.
"""

from __future__ import annotations

import ast
import math

from . import ir, ops
from . import names as N
from .ir import Loc

DTYPE_NAMES = {"f32": "f32", "f16": "f16", "bf16": "bf16", "i32": "i32", "i64": "i64", "i8": "i8",
               "u8": "u8", "bool": "bool", "fp32": "f32", "fp16": "f16"}
PARAM_KINDS = {"In": "in", "Out": "out", "Scalar": "scalar"}
UNARY_FUNCS = ops.spelled("unary")
BINARY_FUNCS = ops.spelled("binary")
REDUCE_FUNCS = ops.spelled("reduce", "row_")
LOAD_FUNCS = {"load": "tile", "load_bcast": "bcast", "load_per_row": "per_row"}
GRID_FUNCS = ops.spelled("reduce", "total_")
SCAN_FUNCS = ops.spelled("scan")
CONSTANTS = {"inf": math.inf, "pi": math.pi}
BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
CMPOPS = {ast.Lt: "lt", ast.Gt: "gt", ast.LtE: "le", ast.GtE: "ge", ast.Eq: "eq",
          ast.NotEq: "ne"}
MAX_SOURCE_BYTES = 64 * 1024
MAX_DEPTH = 64
MAX_SYNTAX_DEPTH = 128  # nesting of the whole syntax tree (statements and expressions)
MAX_INT = 2**31 - 1  # integer literals: sizes, tunable values, dims
MAX_DOMAIN = 4096  # values of one tunable
MAX_RANK = 16  # size(x, d): |d| bound


class DslError(ValueError):
    """A program the DSL does not accept; the message names the line and column."""

    def __init__(self, message: str, loc: Loc | None = None):
        self.loc = loc
        self.raw = message
        super().__init__(f"{loc}: {message}" if loc else message)


def _loc(node: ast.AST) -> Loc:
    return Loc(getattr(node, "lineno", 0), getattr(node, "col_offset", 0) + 1)


def parse_tree(source: str) -> ast.Module:
    """``ast.parse`` within the DSL's limits: source size and nesting depth are checked, and
    whatever the Python parser raises on hostile text (too deep, too long a literal) is a
    DslError. Shared by the vector and the cube front ends."""
    if not isinstance(source, str):
        raise DslError("a program is text (UTF-8)")
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        raise DslError(f"program is {size} bytes; the limit is {MAX_SOURCE_BYTES}")
    try:
        tree = ast.parse(source, mode="exec")
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
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp, ast.ClassDef, ast.AsyncFunctionDef, ast.With,
                             ast.AsyncWith, ast.Try, ast.Raise, ast.Global, ast.Nonlocal,
                             ast.Delete, ast.While, ast.Await, ast.Yield, ast.YieldFrom,
                             ast.NamedExpr, ast.Starred, ast.Slice,
                             ast.JoinedStr, ast.AugAssign)):
            raise DslError(f"'{type(node).__name__}' is not part of the DSL", loc)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "eval", "exec", "open", "compile", "getattr", "setattr", "globals", "locals",
            "vars", "__import__", "input", "breakpoint", "help", "dir", "type", "object",
        ):
            raise DslError(f"'{node.func.id}' is not allowed in the DSL", loc)


class _Parser:
    def __init__(self, source: str):
        self.source = source
        self.params: dict[str, ir.Param] = {}
        self.tunables: dict[str, ir.Tunable] = {}
        self.loop_vars: dict[str, str] = {}  # var -> kind (tiles/rows/slabs/chunks/steps)
        self.values: set[str] = set()
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
        if not any(p.kind == "in" for p in self.params.values()):
            raise DslError("a kernel needs at least one In[...] tensor", _loc(fn))
        if not any(p.kind == "out" for p in self.params.values()):
            raise DslError("a kernel needs at least one Out[...] tensor", _loc(fn))
        body = list(fn.body)
        doc = ""
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            doc = body.pop(0).value.value
        loops: list[ir.Loop] = []
        top: list = []
        for st in body:
            if isinstance(st, ast.Assign) and not top and self._is_call(st.value, "tunable"):
                self._tunable(st)
            elif isinstance(st, ast.For):
                loop = self._loop(st)
                loops.append(loop)
                top.append(loop)
            elif isinstance(st, ast.Assign):
                top += self._block([st], "", "top")
            elif isinstance(st, ast.Expr) and self._is_call(st.value, "store"):
                self._line(st)
                top.append(self._store(st.value, top_level=True))
            elif isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)
                                              and isinstance(st.value.value, str)):
                continue
            else:
                raise DslError(
                    f"unexpected {type(st).__name__}: a kernel body is tunable declarations, then "
                    "distribution loops (tiles/rows/slabs), scalar assignments and scalar stores",
                    _loc(st))
        if not loops:
            raise DslError("the kernel has no distribution loop (for t in tiles/rows/slabs(...))", _loc(fn))
        return ir.Program(
            name=fn.name, category=category, params=tuple(self.params.values()),
            tunables=tuple(self.tunables.values()), loop=loops[0], source=self.source,
            loc=_loc(fn), doc=doc, top=tuple(top), lines=self.lines,
        )

    def _decorator(self, fn: ast.FunctionDef) -> str:
        if len(fn.decorator_list) != 1:
            raise DslError("a kernel is a function decorated with @kernel(...)", _loc(fn))
        d = fn.decorator_list[0]
        if isinstance(d, ast.Name) and d.id == "kernel":
            return ""
        if not self._is_call(d, "kernel"):
            raise DslError("the only decorator is @kernel(category=...)", _loc(d))
        if d.args:
            raise DslError("@kernel takes keyword arguments only", _loc(d))
        category = ""
        for kw in d.keywords:
            if kw.arg != "category" or not isinstance(kw.value, ast.Constant) or not isinstance(kw.value.value, str):
                raise DslError("@kernel accepts only category=\"...\"", _loc(kw.value))
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
        if kind == "out" and dtype in ("bool", "i8", "u8"):
            raise DslError(f"{dtype} is accepted for inputs only", loc)
        self.params[a.arg] = ir.Param(a.arg, kind, dtype, loc)

    def _tunable(self, st: ast.Assign) -> None:
        loc = _loc(st)
        if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
            raise DslError("a tunable is declared as NAME = tunable(domain, default=v)", loc)
        name = st.targets[0].id
        N.check_name(name, "tunable", loc)
        if name in self.tunables or name in self.params:
            raise DslError(f"'{name}' is declared twice", loc)
        call = st.value
        if len(call.args) != 1 or any(k.arg != "default" for k in call.keywords):
            raise DslError("tunable(domain, default=v) takes one domain and an optional default", loc)
        domain = parse_domain(call.args[0], self._int_literal, lowest=1)
        values = domain.values()
        default = values[len(values) // 2]
        if call.keywords:
            default = self._int_literal(call.keywords[0].value)
            if default not in values:
                raise DslError(f"default {default} is not in the domain {domain}", _loc(call.keywords[0].value))
        self.tunables[name] = ir.Tunable(name, domain, default, loc)

    def _int_literal(self, node: ast.AST) -> int:
        return int_literal(node, 0, MAX_INT)

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
        tensor = self._tensor_name(call.args[0])
        allowed = {"tiles": {"tile", "cores", "depth"},
                   "rows": {"rows", "cores", "depth", "dims", "groups", "axis"},
                   "slabs": {"dim", "tile", "cores", "depth"},
                   "windows": {"dims", "kernel", "stride", "padding", "rows", "chunk", "cores", "depth",
                               "fill"}}[kind]
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
        if isinstance(depth, int) and depth not in (1, 2):
            raise DslError("depth is 1 (single buffer) or 2 (double buffering)", _loc(kw["depth"]))
        if isinstance(depth, str) and not set(self.tunables[depth].domain.values()) <= {1, 2}:
            raise DslError(f"tunable {depth} used as depth must take only the values 1 and 2", _loc(kw["depth"]))
        if kind == "slabs":
            if "dim" not in kw:
                raise DslError("slabs() needs dim=<axis>", _loc(call))
            dim = self._int_literal(kw["dim"])
        elif kind == "rows":
            dim = self._int_literal(kw["dims"]) if "dims" in kw else 1
            if dim < 1:
                raise DslError("dims= is the number of trailing dims forming a row (>= 1)", _loc(kw["dims"]))
        elif kind == "windows":
            for need in ("dims", "kernel", "stride", "chunk"):
                if need not in kw:
                    raise DslError(f"windows() needs {need}=...", _loc(call))
            dim = self._int_literal(kw["dims"])
            if dim not in (1, 2, 3):
                raise DslError("windows(dims=...) pools over 1, 2 or 3 trailing dims", _loc(kw["dims"]))
        else:
            dim = 0
        groups = 1
        if "groups" in kw:
            groups = self._int_literal(kw["groups"])
            if groups < 1:
                raise DslError("groups= splits each row into that many rows (>= 1)", _loc(kw["groups"]))
        axis = -1
        if "axis" in kw:
            axis = self._int_literal(kw["axis"])
            if tile != 1 or "dims" in kw or "groups" in kw:
                raise DslError("rows(axis=a) takes rows=1 and no dims/groups: a row is the strided "
                               "set x[..., k, ...] of one index k on axis a", _loc(kw["axis"]))
        window, chunk, fill = (0, 0, 0), None, 0.0
        if kind == "windows":
            k, s_ = self._int_literal(kw["kernel"]), self._int_literal(kw["stride"])
            pad = self._int_literal(kw["padding"]) if "padding" in kw else 0
            if k < 1 or s_ < 1 or pad < 0 or 2 * pad > k:
                raise DslError("windows(): kernel >= 1, stride >= 1, 0 <= padding <= kernel / 2", loc)
            window = (k, s_, pad)
            chunk = self._size(kw["chunk"])
            if "fill" in kw:
                f = self._expr(kw["fill"])
                if not isinstance(f, ir.Const):
                    raise DslError("windows(fill=...) is a constant (the value outside the input)",
                                   _loc(kw["fill"]))
                fill = f.value
        var = st.target.id
        self._fresh_name(var, _loc(st.target))
        self._line(st)
        self.loop_vars[var] = kind
        body = self._block(st.body, var, kind)
        del self.loop_vars[var]  # sequential distribution loops may reuse the name
        return ir.Loop(kind, var, tensor, tile, cores, dim, depth, tuple(body), loc, groups, axis,
                       window, chunk, fill)

    def _size(self, node: ast.AST) -> str | int:
        if isinstance(node, ast.Name):
            if node.id not in self.tunables:
                raise DslError(f"'{node.id}' is not a declared tunable", _loc(node))
            return node.id
        v = self._int_literal(node)
        if v < 1:
            raise DslError("sizes are positive", _loc(node))
        return v

    def _tensor_name(self, node: ast.AST, kind: str | None = None) -> str:
        if not isinstance(node, ast.Name) or node.id not in self.params or self.params[node.id].kind == "scalar":
            raise DslError(f"expected a tensor parameter, got {ast.unparse(node)!r}", _loc(node))
        if kind and self.params[node.id].kind != kind:
            raise DslError(f"'{node.id}' is an {'input' if kind == 'out' else 'output'}; "
                           f"{'store to an Out' if kind == 'out' else 'load from an In'} tensor", _loc(node))
        return node.id

    def _fresh_name(self, name: str, loc: Loc) -> None:
        N.check_name(name, "value", loc)
        if name in self.params or name in self.tunables or name in self.loop_vars:
            raise DslError(f"'{name}' is already a parameter, tunable or loop variable", loc)
        if name in UNARY_FUNCS or name in CONSTANTS or name in BINARY_FUNCS or name in REDUCE_FUNCS \
                or name in GRID_FUNCS or name in SCAN_FUNCS:
            raise DslError(f"'{name}' is a built-in name", loc)

    def _block(self, stmts: list[ast.stmt], loop_var: str, loop_kind: str) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for st in stmts:
            loc = _loc(st)
            if isinstance(st, ast.Pass):
                continue
            if isinstance(st, (ast.Assign, ast.For)) or (isinstance(st, ast.Expr) and self._is_call(st.value, "store")):
                self._line(st)
            if isinstance(st, ast.Assign):
                if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
                    raise DslError("assign to one plain name", loc)
                name = st.targets[0].id
                self._fresh_name(name, _loc(st.targets[0]))
                value = self._expr(st.value)
                self.values.add(name)
                out.append(ir.Assign(loc, name, value))
            elif isinstance(st, ast.Expr) and self._is_call(st.value, "store"):
                out.append(self._store(st.value))
            elif isinstance(st, ast.For):
                out.append(self._inner_loop(st, loop_var, loop_kind))
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                continue  # a comment string
            else:
                raise DslError(f"'{ast.unparse(st).splitlines()[0]}' is not a DSL statement "
                               "(assignments, store(...), and inner for-loops only)", loc)
        return out

    def _inner_loop(self, st: ast.For, parent: str, parent_kind: str) -> ir.InnerLoop:
        loc = _loc(st)
        if st.orelse or not isinstance(st.target, ast.Name):
            raise DslError("inner loops are 'for c in chunks(t, SIZE)' or 'for k in steps(t)'", loc)
        call = st.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in ir.INNER_LOOP_KINDS):
            raise DslError("inner loops iterate chunks(t, SIZE) or steps(t)", _loc(call))
        kind = call.func.id
        if call.keywords or not call.args or not isinstance(call.args[0], ast.Name) or call.args[0].id != parent:
            raise DslError(f"{kind}() takes the enclosing loop variable '{parent}' first", _loc(call))
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
        return ir.InnerLoop(loc, kind, var, parent, size, tuple(body))

    def _store(self, call: ast.Call, top_level: bool = False) -> ir.Store:
        loc = _loc(call)
        if top_level:
            if call.keywords or len(call.args) != 2:
                raise DslError("outside a loop, store(y, value) writes a scalar to a one-element Out",
                               loc)
            return ir.Store(loc, self._tensor_name(call.args[0], "out"), "", self._expr(call.args[1]))
        if call.keywords or len(call.args) != 3:
            raise DslError("store(y, at, value) takes an Out tensor, a loop variable and a value", loc)
        tensor = self._tensor_name(call.args[0], "out")
        at = self._loop_var(call.args[1])
        return ir.Store(loc, tensor, at, self._expr(call.args[2]))

    def _loop_var(self, node: ast.AST) -> str:
        if not isinstance(node, ast.Name) or node.id not in self.loop_vars:
            raise DslError(f"expected a loop variable, got {ast.unparse(node)!r}", _loc(node))
        return node.id

    @staticmethod
    def _is_call(node: ast.AST, name: str) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name

    # ------------------------------------------------------------ expressions
    def _expr(self, node: ast.AST, depth: int = 0) -> ir.Expr:
        if depth > MAX_DEPTH:
            raise DslError("expression nests too deeply", _loc(node))
        e = self._expr_raw(node, depth + 1)
        return _fold(e)

    def _expr_raw(self, node: ast.AST, depth: int) -> ir.Expr:
        loc = _loc(node)
        if isinstance(node, ast.Constant):
            return ir.Const(loc, number_literal(node))
        if isinstance(node, ast.Name):
            n = node.id
            if n in CONSTANTS:
                return ir.Const(loc, CONSTANTS[n])
            if n in self.values:
                return ir.Var(loc, n)
            if n in self.params:
                if self.params[n].kind == "scalar":
                    return ir.ScalarRef(loc, n)
                raise DslError(f"'{n}' is a GM tensor: bring it into UB with load({n}, t)", loc)
            if n in self.tunables:
                raise DslError(f"tunable '{n}' can only size loops", loc)
            raise DslError(f"unknown name '{n}'", loc)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return ir.Unary(loc, "neg", self._expr(node.operand, depth))
            if isinstance(node.op, ast.UAdd):
                return self._expr(node.operand, depth)
            raise DslError(f"operator {type(node.op).__name__} is not supported", loc)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                return self._power(node, depth)
            op = BINOPS.get(type(node.op))
            if op is None:
                raise DslError(f"operator {type(node.op).__name__} is not supported (+ - * / ** only)", loc)
            return ir.Binary(loc, op, self._expr(node.left, depth), nonzero_divisor(op, self._expr(node.right, depth)))
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise DslError("chained comparisons are not supported", loc)
            return ir.Compare(loc, CMPOPS[type(node.ops[0])], self._expr(node.left, depth),
                              self._expr(node.comparators[0], depth))
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        raise DslError(f"'{type(node).__name__}' is not a DSL expression", loc)

    def _power(self, node: ast.BinOp, depth: int) -> ir.Expr:
        loc = _loc(node)
        base = self._expr(node.left, depth)
        if isinstance(node.right, ast.Constant) and type(node.right.value) is int \
                and 1 <= node.right.value <= 4:
            if isinstance(base, ir.Const):
                return ir.Const(loc, fold_number("pow", (base.value, float(node.right.value)), loc))
            return base if node.right.value == 1 else ir.Power(loc, base, node.right.value)
        exp_ = self._expr(node.right, depth)
        if isinstance(base, ir.Const) and isinstance(exp_, ir.Const):
            return ir.Const(loc, fold_number("pow", (base.value, exp_.value), loc))
        return ir.Binary(loc, "pow", base, exp_)  # the checker allows it on host scalars only

    def _call(self, node: ast.Call, depth: int) -> ir.Expr:
        loc = _loc(node)
        if not isinstance(node.func, ast.Name):
            raise DslError("only calls of DSL functions are allowed", loc)
        f = node.func.id
        args = node.args
        if node.keywords:
            raise DslError(f"{f}() takes positional arguments only", loc)

        def want(n: int) -> None:
            if len(args) != n:
                raise DslError(f"{f}() takes {n} argument{'s' if n != 1 else ''}, got {len(args)}", loc)

        if f in LOAD_FUNCS:
            want(2)
            if not isinstance(args[0], ast.Name):
                raise DslError(f"{f}(x, at) takes an In tensor", loc)
            return ir.Load(loc, self._tensor_name(args[0], "in"), self._loop_var(args[1]), LOAD_FUNCS[f])
        if f in UNARY_FUNCS:
            want(1)
            return ir.Unary(loc, UNARY_FUNCS[f], self._expr(args[0], depth))
        if f == "leaky_relu":
            want(2)
            slope = self._expr(args[1], depth)
            if not isinstance(slope, ir.Const):
                raise DslError("leaky_relu(x, slope) takes a constant slope", loc)
            return ir.LeakyRelu(loc, self._expr(args[0], depth), slope.value)
        if f in BINARY_FUNCS:
            want(2)
            return ir.Binary(loc, BINARY_FUNCS[f], self._expr(args[0], depth), self._expr(args[1], depth))
        if f == "where":
            want(3)
            cond = self._expr(args[0], depth)
            if not isinstance(cond, ir.Compare):
                raise DslError("where(cond, a, b) needs a comparison as its condition, e.g. x > 0", loc)
            return ir.Select(loc, cond, self._expr(args[1], depth), self._expr(args[2], depth))
        if f == "cast":
            want(2)
            if not isinstance(args[1], ast.Name) or args[1].id not in DTYPE_NAMES:
                raise DslError("cast(x, dtype) takes a dtype name such as f32", loc)
            return ir.Cast(loc, self._expr(args[0], depth), DTYPE_NAMES[args[1].id])
        if f in REDUCE_FUNCS:
            want(1)
            return ir.RowReduce(loc, REDUCE_FUNCS[f], self._expr(args[0], depth))
        if f in ("row_fill", "tile_fill"):
            if len(args) not in (1, 2):
                raise DslError(f"{f}(value[, dtype]) takes a constant and an optional dtype", loc)
            v = self._expr(args[0], depth)
            if not isinstance(v, ir.Const):
                raise DslError(f"{f}() takes a constant value", loc)
            dtype = "f32"
            if len(args) == 2:
                if not isinstance(args[1], ast.Name) or args[1].id not in DTYPE_NAMES:
                    raise DslError(f"{f}(value, dtype) takes a dtype name", loc)
                dtype = DTYPE_NAMES[args[1].id]
            return ir.Fill(loc, f.split("_")[0], v.value, dtype)
        if f == "width":
            want(1)
            return ir.Extent(loc, self._loop_var(args[0]))
        if f in GRID_FUNCS:
            want(1)
            return ir.GridReduce(loc, GRID_FUNCS[f], self._expr(args[0], depth))
        if f == "numel":
            want(1)
            return ir.Numel(loc, self._tensor_name(args[0]))
        if f == "size":
            want(2)
            d = args[1]
            neg = isinstance(d, ast.UnaryOp) and isinstance(d.op, ast.USub)
            lit = d.operand if neg else d
            if not (isinstance(lit, ast.Constant) and type(lit.value) is int):
                raise DslError("size(x, d) takes an integer literal dim", loc)
            dim = -lit.value if neg else lit.value
            if not -MAX_RANK <= dim < MAX_RANK:
                raise DslError(f"size(x, {dim}): a dim is in {-MAX_RANK}..{MAX_RANK - 1}", loc)
            return ir.Numel(loc, self._tensor_name(args[0]), dim)
        if f in SCAN_FUNCS:
            want(2)
            return ir.Scan(loc, SCAN_FUNCS[f], self._expr(args[0], depth), self._expr(args[1], depth))
        if f == "row_last":
            want(1)
            return ir.RowLast(loc, self._expr(args[0], depth))
        if f == "pick":
            want(3)
            return ir.Pick(loc, self._tensor_name(args[0], "in"), self._loop_var(args[1]),
                           self._tensor_name(args[2], "in"))
        if f in ("tunable", "pow2", "choice", "span", "tiles", "rows", "slabs", "chunks", "steps", "store"):
            raise DslError(f"{f}() cannot be used here", loc)
        raise DslError(f"unknown function '{f}'", loc)


def int_literal(node: ast.AST, lo: int = -MAX_INT, hi: int = MAX_INT) -> int:
    """An integer literal (``-n`` included) within [lo, hi]; DslError otherwise."""
    neg = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    lit = node.operand if neg else node
    if not (isinstance(lit, ast.Constant) and type(lit.value) is int):
        raise DslError("expected an integer literal", _loc(node))
    v = -lit.value if neg else lit.value
    if not lo <= v <= hi:
        raise DslError(f"integer {v if abs(v) < 10**12 else 'literal'} is out of range ({lo}..{hi})", _loc(node))
    return v


def number_literal(node: ast.Constant) -> float:
    """A numeric constant as a finite float; DslError for strings, bools, complex, overflow."""
    v = node.value
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        shown = repr(v) if not isinstance(v, (str, bytes)) else f"a {type(v).__name__} literal"
        raise DslError(f"only numeric constants are allowed, got {shown}", _loc(node))
    try:
        f = float(v)
    except OverflowError:
        raise DslError("numeric constant is out of the float range", _loc(node)) from None
    if not math.isfinite(f):
        raise DslError("numeric constant is out of the float range", _loc(node))
    return f


def parse_domain(node: ast.AST, int_of, lowest: int) -> ir.Domain:
    """``pow2(lo, hi)``, ``choice(...)`` or ``span(lo, hi, step)``, sized arithmetically
    (never enumerated) before it is accepted: at most MAX_DOMAIN values."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("pow2", "choice", "span")) or node.keywords:
        raise DslError("a tunable's domain is pow2(lo, hi), choice(a, b, ...) or span(lo, hi, step)", _loc(node))
    if len(node.args) > MAX_DOMAIN:
        raise DslError(f"choice() has {len(node.args)} values; the limit is {MAX_DOMAIN}", _loc(node))
    args = tuple(int_of(x) for x in node.args)
    kind = node.func.id
    if kind == "pow2" and (len(args) != 2 or args[0] < 1 or args[0] > args[1]):
        raise DslError("pow2(lo, hi) needs 1 <= lo <= hi", _loc(node))
    if kind == "span" and (len(args) != 3 or args[2] < 1 or args[0] > args[1]):
        raise DslError("span(lo, hi, step) needs lo <= hi and step >= 1", _loc(node))
    if kind == "choice" and (not args or len(set(args)) != len(args)):
        raise DslError("choice(...) needs distinct values", _loc(node))
    if any(v < lowest or v > MAX_INT for v in args):
        raise DslError(f"tunable values are integers in {lowest}..{MAX_INT}", _loc(node))
    domain = ir.Domain(kind, args)
    n = domain.size()
    if n < 1 or n > MAX_DOMAIN:
        raise DslError(f"domain {domain} has {n} values; it needs 1 to {MAX_DOMAIN}", _loc(node))
    return domain


def fold_number(op: str, args: tuple[float, ...], loc: Loc) -> float:
    """Constant folding of one DSL operation. A result that is not a real number (``0.0 /
    0.0``, ``(-8.0) ** 0.5``, ``log(-1.0)``) or that overflows from finite operands
    (``10.0 ** 400``) is a DslError, never a silent inf or NaN."""
    shown = f"{op}({', '.join(f'{a:g}' for a in args)})"
    if op == "div" and args[1] == 0:
        raise DslError(f"{shown}: division by the constant 0", loc)
    try:
        v = ops.fold(op, args)
    except (ValueError, ZeroDivisionError, OverflowError):
        v = math.nan
    if not isinstance(v, (int, float)) or math.isnan(v) or (math.isinf(v) and all(map(math.isfinite, args))):
        raise DslError(f"{shown} is not a finite real number", loc)
    return float(v)


def nonzero_divisor(op: str, rhs, loc: Loc | None = None):
    """``x / 0.0`` is a mistake in a kernel (inf or NaN everywhere): refuse a constant 0 divisor."""
    if op == "div" and getattr(rhs, "value", None) == 0 and type(rhs).__name__ in ("Const", "VConst"):
        raise DslError("division by the constant 0", loc or rhs.loc)
    return rhs


def _fold(e: ir.Expr) -> ir.Expr:
    """Constant-fold arithmetic on constants, so ``sqrt(2.0 / pi)`` is one number."""
    if isinstance(e, ir.Binary) and isinstance(e.lhs, ir.Const) and isinstance(e.rhs, ir.Const):
        return ir.Const(e.loc, fold_number(e.op, (e.lhs.value, e.rhs.value), e.loc))
    if isinstance(e, ir.Unary) and isinstance(e.arg, ir.Const):
        return ir.Const(e.loc, fold_number(e.op, (e.arg.value,), e.loc))
    return e
