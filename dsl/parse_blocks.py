"""The cube stage of the DSL (text → ``ir.CubeStage``): ``for blk in blocks(a, b, ...)``.

Its body has a fixed shape — accumulator, ``k_stages`` (GM → L1), ``k_steps`` (L1 → L0A/L0B),
``mmad``, and a ``store`` that Fixpipe performs (optionally ReLU and an fp32 → fp16/bf16
conversion) — so it is matched statement by statement, each mismatch naming what was
expected. Mixed into ``parser._Parser``.
"""

from __future__ import annotations

import ast

from . import ir
from .ir import Loc, Size
from .parse_expr import DTYPE_NAMES, MAX_INT, DslError, int_literal, is_call, loc_of

ORDER_NAMES = {"row_major": 0, "col_major": 1, "swizzled": 2}
"""Output-block orders over the cube cores (values of the ``order=`` tunable)."""

BLOCKS_ARGS = {"m", "n", "transpose_a", "transpose_b", "order", "group", "split_k", "cores", "acc_depth",
               "batched", "tail", "a_whole", "b_whole", "b_ahead", "b_hold", "fix_defer", "fix_split", "run", "ordered_split",
               "tile_m", "tile_n"}


class BlocksParser:
    """Parses one ``blocks(...)`` loop; the host parser provides ``tunables``, ``loop_vars``,
    ``_fresh_name`` and ``_tensor_name``."""

    tunables: dict
    loop_vars: dict
    workspaces: dict

    def _csize(self, node: ast.AST, what: str) -> Size:
        """A cube-stage size: a tunable, an order name or a non-negative integer literal."""
        if isinstance(node, ast.Name):
            if node.id in ORDER_NAMES:
                return ORDER_NAMES[node.id]
            if node.id not in self.tunables:
                raise DslError(f"'{node.id}' is not a declared tunable ({what})", loc_of(node))
            return node.id
        return int_literal(node, 0, MAX_INT)

    def _depth_ok(self, depth: Size, node: ast.AST) -> None:
        vals = self.tunables[depth].domain.values() if isinstance(depth, str) else [depth]
        if not set(vals) <= {1, 2}:
            raise DslError("depth is 1 (single buffer) or 2 (ping-pong)", loc_of(node))

    @staticmethod
    def _bool(node: ast.AST, what: str) -> bool:
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return node.value
        raise DslError(f"{what} takes True or False", loc_of(node))

    @staticmethod
    def _kwargs(call: ast.Call, allowed: set[str], what: str) -> dict[str, ast.AST]:
        out = {}
        for k in call.keywords:
            if k.arg not in allowed:
                raise DslError(f"{what}() has no argument '{k.arg}' (it takes {', '.join(sorted(allowed))})",
                               loc_of(k.value) if k.arg else loc_of(call))
            out[k.arg] = k.value
        return out

    def _operand(self, node: ast.AST) -> tuple[str, int | None]:
        if is_call(node, "matrix"):
            if len(node.args) != 2 or node.keywords:
                raise DslError("matrix(x, split) views x as [prod(dims[:split]), prod(dims[split:])]", loc_of(node))
            split = int_literal(node.args[1], 0, MAX_INT)
            if split < 1:
                raise DslError("matrix(x, split) needs split >= 1", loc_of(node.args[1]))
            return self._tensor_name(node.args[0], "in"), split
        return self._tensor_name(node, "in"), None

    def _blocks(self, st: ast.For) -> ir.CubeStage:
        loc = loc_of(st)
        if st.orelse or not isinstance(st.target, ast.Name):
            raise DslError("the cube stage is `for blk in blocks(a, b, m=..., n=..., ...)`", loc)
        call = st.iter
        if len(call.args) != 2:
            raise DslError("blocks(a, b, ...) takes the two matmul operands first", loc_of(call))
        (ta, sa), (tb, sb) = self._operand(call.args[0]), self._operand(call.args[1])
        kw = self._kwargs(call, BLOCKS_ARGS, "blocks")
        for need in ("m", "n"):
            if need not in kw:
                raise DslError(f"blocks() needs {need}= (the output block size)", loc_of(call))

        def flag(name: str) -> bool:
            return self._bool(kw[name], name) if name in kw else False

        def size(name: str, default: Size | None) -> Size | None:
            return self._csize(kw[name], name) if name in kw else default

        opa = ir.Operand(ta, flag("transpose_a"), sa, loc_of(call.args[0]))
        opb = ir.Operand(tb, flag("transpose_b"), sb, loc_of(call.args[1]))
        var = st.target.id
        self._fresh_name(var, loc_of(st.target))
        self.loop_vars[var] = "blocks"
        body = [s for s in st.body if not isinstance(s, ast.Pass)
                and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        shape_msg = ("the blocks body is: acc = accumulator(blk); for kk in k_stages(blk, k=KL1, depth=S): "
                     "a1 = to_l1(a, kk); b1 = to_l1(b, kk); for k0 in k_steps(kk, k=BK, depth=D): "
                     "acc = mmad(to_l0a(a1, k0), to_l0b(b1, k0), acc); then store(c, blk, acc) "
                     "(see REFERENCE.md, cube stages)")
        if len(body) != 3:
            raise DslError(shape_msg, loc_of(body[0]) if body else loc)
        s0, s1, s2 = body
        if not (isinstance(s0, ast.Assign) and len(s0.targets) == 1 and isinstance(s0.targets[0], ast.Name)
                and is_call(s0.value, "accumulator") and len(s0.value.args) == 1
                and isinstance(s0.value.args[0], ast.Name) and s0.value.args[0].id == var):
            raise DslError(f"first statement of the blocks loop: acc = accumulator({var}) — {shape_msg}", loc_of(s0))
        acc = s0.targets[0].id
        self._fresh_name(acc, loc_of(s0))
        bias = self._accumulator_bias(s0.value)
        if not (isinstance(s1, ast.For) and is_call(s1.iter, "k_stages")):
            raise DslError(f"second statement: for kk in k_stages({var}, k=KL1, depth=STAGES) — {shape_msg}",
                           loc_of(s1))
        k_l1, stages, kk = self._stage_loop(s1, "k_stages", var)
        a1, b1, s_in = self._l1_loads(s1, ta, tb, kk)
        if not (isinstance(s_in, ast.For) and is_call(s_in.iter, "k_steps")):
            raise DslError(f"third statement of k_stages: for k0 in k_steps({kk}, k=BK, depth=D)", loc_of(s_in))
        k_l0, l0_depth, k0 = self._stage_loop(s_in, "k_steps", kk)
        self._mmad(s_in, acc, a1, b1, k0)
        target, relu, out_dtype, sloc = self._cube_store(s2, var, acc)
        for v in (var, kk, k0):
            self.loop_vars.pop(v, None)
        return ir.CubeStage(var, opa, opb, size("m", None), size("n", None), size("order", 0),
                            size("group", 1), size("split_k", 1), size("cores", None), size("acc_depth", 1),
                            k_l1, stages, k_l0, l0_depth, target, relu, out_dtype, flag("batched"), loc, sloc,
                            tail=size("tail", 0), a_whole=size("a_whole", 0),
                            b_whole=size("b_whole", 0), b_ahead=size("b_ahead", 0), b_hold=size("b_hold", 0), fix_defer=size("fix_defer", 0), bias=bias, fix_split=size("fix_split", 0),
                            run=size("run", 1), ordered_split=self._ordered_ws(kw),
                            tile_m=size("tile_m", 0), tile_n=size("tile_n", 0))

    def _ordered_ws(self, kw: dict[str, ast.AST]) -> str | None:
        """``ordered_split=ws``: the fp32 workspace the K splits of a block are added into, in split
        order, inside the cube launch (then converted to the output by the block's cores)."""
        if "ordered_split" not in kw:
            return None
        node = kw["ordered_split"]
        if not (isinstance(node, ast.Name) and node.id in self.workspaces):
            raise DslError("ordered_split= takes a declared workspace: ws = workspace(f32); "
                           "blocks(..., ordered_split=ws)", loc_of(node))
        return node.id

    def _accumulator_bias(self, call: ast.Call) -> str | None:
        """``accumulator(blk, bias=b)``: the block's accumulator starts from b's N values (one per
        output column, every row), staged GM -> L1 -> bias table and added by the first mmad."""
        kw = self._kwargs(call, {"bias"}, "accumulator")
        if "bias" not in kw:
            return None
        return self._tensor_name(kw["bias"], "in")

    def _l1_loads(self, s1: ast.For, ta: str, tb: str, kk: str) -> tuple[str, str, ast.stmt]:
        l1_body = [s for s in s1.body if not isinstance(s, ast.Pass)]
        if len(l1_body) != 3:
            raise DslError(f"the k_stages body is a1 = to_l1({ta}, kk); b1 = to_l1({tb}, kk); "
                           "for k0 in k_steps(...): ...", loc_of(s1))
        for s, opnd in zip(l1_body[:2], (ta, tb), strict=True):
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                    and is_call(s.value, "to_l1") and len(s.value.args) == 2
                    and isinstance(s.value.args[0], ast.Name) and isinstance(s.value.args[1], ast.Name)
                    and s.value.args[1].id == kk):
                raise DslError(f"expected NAME = to_l1({opnd}, {kk})", loc_of(s))
            if s.value.args[0].id != opnd:
                raise DslError(f"to_l1 loads the operands in order: expected {opnd}, got {s.value.args[0].id}",
                               loc_of(s.value.args[0]))
            self._fresh_name(s.targets[0].id, loc_of(s))
        a1, b1 = l1_body[0].targets[0].id, l1_body[1].targets[0].id
        if a1 == b1:
            raise DslError("the two L1 tiles need different names", loc_of(l1_body[1]))
        return a1, b1, l1_body[2]

    def _mmad(self, s_in: ast.For, acc: str, a1: str, b1: str, k0: str) -> None:
        inner = [s for s in s_in.body if not isinstance(s, ast.Pass)]
        want = f"{acc} = mmad(to_l0a({a1}, {k0}), to_l0b({b1}, {k0}), {acc})"
        if len(inner) != 1 or not isinstance(inner[0], ast.Assign):
            raise DslError(f"the k_steps body is one statement: {want}", loc_of(s_in))
        mm = inner[0]
        ok = (len(mm.targets) == 1 and isinstance(mm.targets[0], ast.Name) and mm.targets[0].id == acc
              and is_call(mm.value, "mmad") and len(mm.value.args) == 3
              and is_call(mm.value.args[0], "to_l0a") and is_call(mm.value.args[1], "to_l0b")
              and isinstance(mm.value.args[2], ast.Name) and mm.value.args[2].id == acc)
        if ok:
            for c, t in ((mm.value.args[0], a1), (mm.value.args[1], b1)):
                ok = ok and len(c.args) == 2 and isinstance(c.args[0], ast.Name) and c.args[0].id == t \
                    and isinstance(c.args[1], ast.Name) and c.args[1].id == k0
        if not ok:
            raise DslError(f"expected {want} (A goes to L0A, B to L0B, accumulating into {acc})", loc_of(mm))

    def _stage_loop(self, st: ast.For, fname: str, parent: str) -> tuple[Size, Size, str]:
        call = st.iter
        if st.orelse or not isinstance(st.target, ast.Name):
            raise DslError(f"for x in {fname}(...) with a plain loop variable", loc_of(st))
        if len(call.args) != 1 or not isinstance(call.args[0], ast.Name) or call.args[0].id != parent:
            raise DslError(f"{fname}() takes the enclosing loop variable '{parent}' first", loc_of(call))
        kw = self._kwargs(call, {"k", "depth"}, fname)
        if "k" not in kw:
            raise DslError(f"{fname}() needs k= (the K depth of one {'L1 stage' if fname == 'k_stages' else 'mmad'})",
                           loc_of(call))
        depth = self._csize(kw["depth"], "depth") if "depth" in kw else 2
        self._depth_ok(depth, kw.get("depth", call))
        var = st.target.id
        self._fresh_name(var, loc_of(st.target))
        self.loop_vars[var] = fname
        return self._csize(kw["k"], "k"), depth, var

    def _cube_store(self, st: ast.stmt, var: str, acc: str) -> tuple[str, bool, str, Loc]:
        want = f"store(c, {var}, acc | relu(acc) | cast(acc, f16|bf16) | cast(relu(acc), f16|bf16))"
        if not (isinstance(st, ast.Expr) and is_call(st.value, "store")):
            raise DslError(f"the last statement of the blocks loop is {want}", loc_of(st))
        call = st.value
        if call.keywords or len(call.args) != 3:
            raise DslError(want, loc_of(call))
        target = self._tensor_name(call.args[0], "out", workspace=True)
        if not (isinstance(call.args[1], ast.Name) and call.args[1].id == var):
            raise DslError(f"the cube stage stores at the block variable '{var}'", loc_of(call.args[1]))
        v = call.args[2]
        out_dtype = "f32"
        if is_call(v, "cast"):
            if len(v.args) != 2 or not isinstance(v.args[1], ast.Name) or v.args[1].id not in DTYPE_NAMES:
                raise DslError("cast(x, dtype)", loc_of(v))
            out_dtype = DTYPE_NAMES[v.args[1].id]
            if out_dtype not in ("f16", "bf16", "f32"):
                raise DslError("Fixpipe converts fp32 accumulators to f16 or bf16 only", loc_of(v))
            v = v.args[0]
        relu = False
        if is_call(v, "relu") and len(v.args) == 1:
            relu = True
            v = v.args[0]
        if not (isinstance(v, ast.Name) and v.id == acc):
            raise DslError(f"Fixpipe applies only ReLU and a dtype conversion to the accumulator: {want}; "
                           "for other epilogues store to a workspace(f32) and add a rows(...) vector stage",
                           loc_of(call.args[2]))
        return target, relu, out_dtype, loc_of(call)

