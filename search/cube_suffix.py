"""A matrix product followed by any vector computation: the product on the cube into a
workspace, the rest of the reference by the graph frontend on the vector cores.

The cube proposer's own forms end at an elementwise epilogue (``graph/matmul_form.py``). A
reference that goes on with a row softmax, a log-sum-exp, a norm or a reduction of the
product (attention scores, KernelBench's Gemm + LogSumExp) is served here in two steps, both
read from the traced graph, never from names:

1. the *suffix task*: the task with one more input, ``mm_out`` (the product's result as the
   ATen product call returns it: fp32, or fp16 / bf16 where eager rounds the bare product),
   whose reference is the task's own with that call
   answered by ``mm_out`` (a dispatch mode; the call's alpha and addend are applied to it, and
   it is rounded to the call's dtype exactly where eager rounds). The graph frontend builds
   its vector programs at the task's full and reduced shapes, ``mm_out`` at the product's
   shape in each;
2. each such program, spliced after the cube stage of ``templates/cube_matmul.dsl`` storing
   the product into a workspace of that name and dtype (Fixpipe rounds a 16-bit one), is one ``@cube_kernel`` (two launches: cube,
   then vector). Only programs that parse, check and fit the rows stage a ``@cube_kernel``
   lowers (``dsl/lowering/support.py``: column chunks, f32 math, comparisons and ``where``, no
   scans or whole-tensor totals) are offered; a tunable or variable of the vector program that the
   cube stage also uses is renamed;
3. for an unbatched product, each such program's one-launch twin (``ring_then_*``, :func:`ring_twin`):
   the workspace a ring of blocks per AI Core, the program run by that AI Core's vector cores on
   each block while the cube computes the next. A program that combines a row's columns is right
   there only when a block spans the row, so its twin exists only for N up to the widest block.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..dsl.checker import check_program
from ..dsl.errors import DslError
from ..dsl.kernel import prepare
from ..dsl.lowering.cube_mixed import row_wise
from ..dsl.lowering.support import check_cube_supported
from ..dsl.parser import parse
from ..tasks.aten import Ref
from ..tasks.module_ref import ModuleReference
from ..tasks.task import InputSpec, Shape, Task
from .cube_builtin import DTYPE_DSL, MatmulSpec, _template, spec_dims, template_fields
from .graph import GraphProposer, shape_sets
from .graph.matmul_form import ProductCall, product_call
from .graph.names import words_of
from .graph.trace import Unsupported, trace_task
from .proposer import Candidate, Declined

#: the pseudo-input carrying the product into the suffix task (and the workspace's name)
WS_INPUT = "mm_out"
#: ATen product calls whose result the suffix task's input stands for (with their addend slot)
_ANSWERED = {"mm": "", "bmm": "", "matmul": "", "addmm": "self", "baddbmm": "self"}


class _ProductAnswer(TorchDispatchMode):
    """Answers the first product call with ``value`` (the call's alpha and addend applied in
    fp32, rounded once to the call's dtype, as eager's one product call rounds)."""

    def __init__(self, value: torch.Tensor) -> None:
        super().__init__()
        self.value = value
        self.done = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if self.done or name not in _ANSWERED:
            return func(*args, **kwargs)
        self.done = True
        operands = [a for a in args if isinstance(a, torch.Tensor)]
        dtype = operands[-1].dtype
        v = self.value
        alpha, beta = kwargs.get("alpha", 1), kwargs.get("beta", 1)
        if alpha != 1:
            v = v * alpha
        if _ANSWERED[name]:
            addend = args[0]
            v = v + (addend.float() * beta if beta != 1 else addend.float())
        return v.to(dtype)


class _AnsweredModule(ModuleReference):
    """A task file's module reference whose product call is answered by its last input."""

    def __init__(self, inner: ModuleReference) -> None:
        super().__init__(inner.model_cls, inner.init_args, inner.positional, inner.seed, inner.state_names)

    def call(self, module: torch.nn.Module, inputs: Any) -> Any:  # noqa: D102
        *rest, value = list(inputs)
        with _ProductAnswer(value):
            return super().call(module, rest)


def _answered(reference: Any) -> Any:
    if isinstance(reference, ModuleReference):
        return _AnsweredModule(reference)

    def suffix(*inputs: Any) -> Any:
        *rest, value = inputs
        with _ProductAnswer(value):
            return reference(*rest)

    suffix.__name__ = getattr(reference, "__name__", "reference")
    return suffix


def _product(task: Task, shapes: list[Shape]) -> tuple[ProductCall, str, Shape, torch.dtype]:
    """The product call of ``task`` traced at ``shapes``: the call, its ATen op, its result's
    shape and dtype (raises :class:`Unsupported`)."""
    ag = trace_task(task, shapes)
    pc = product_call(ag)
    if isinstance(pc, str):
        raise Unsupported(pc)
    op = ag.op(pc.node)
    if op not in _ANSWERED:
        raise Unsupported(f"aten.{op} is not one of {', '.join(sorted(_ANSWERED))}")
    shape, dtype = ag.meta(Ref(pc.node))
    return pc, op, tuple(shape), dtype


def suffix_task(task: Task) -> tuple[Task, list[list[Shape]], ProductCall]:
    """The task whose reference is ``task``'s after its product (see the module docstring), the
    shape sets to analyse it at, and the product call (raises :class:`Unsupported`).

    ``mm_out`` is fp32, or the product's own 16-bit dtype when eager rounds the bare product
    there (``mm`` / ``bmm`` / ``matmul`` of fp16 or bf16: Fixpipe then rounds it into a half
    workspace, half the bytes of the round trip; an addend or alpha is added before eager's one
    rounding, so those products keep the fp32 workspace)."""
    sets = shape_sets(task)
    pc, op, full, dtype = _product(task, sets[0])
    bare = not _ANSWERED[op]  # mm / bmm / matmul: no addend, no alpha
    ws_dtype = dtype if bare and dtype in (torch.float16, torch.bfloat16) else torch.float32
    psets = [[*sets[0], full]]
    for s in sets[1:]:
        psets.append([*s, _product(task, s)[2]])
    st = dataclasses.replace(task, reference=_answered(task.reference),
                             inputs=[*task.inputs, InputSpec(WS_INPUT, full, ws_dtype)])
    return st, psets, pc


_HEADER = re.compile(r"^def (\w+)\((.*)\):$")
_TUNABLE = re.compile(r"^\s+(\w+) = tunable\(")


def _fresh(name: str, lines: list[str]) -> str:
    taken = words_of("\n".join(lines))
    while name in taken:
        name += "_"
    return name


def _rename(lines: list[str], old: str, new: str) -> list[str]:
    pat = re.compile(rf"\b{re.escape(old)}\b")
    return [pat.sub(new, ln) for ln in lines]


def _doc_end(lines: list[str], at: int) -> int:
    """The line that closes the docstring of the ``def`` at line ``at`` (one line or several)."""
    end = at + 1
    while not lines[end].rstrip().endswith('"""'):
        end += 1
    return end


def _ring_stage(fields: dict, store: str, ws: str, ws_dt: str, operand_dt: str) -> str:
    """The cube stage of ``templates/cube_matmul_mix.dsl`` (its vector part cut off) storing the
    product into ring workspace ``ws``: the mixed launch's cube side. fp32 operands start at half
    the K depths (BK 32, KL1 128), so that a block of full 256-column rows fits L0B and L1."""
    mix = _template("cube_matmul_mix")
    mix = mix[:mix.index("    for t in rows(")].format(ws_dtype=ws_dt, ws_store=store, ws_note=ws_dt, acc_args="",
                                                       **fields)
    if operand_dt == "f32":
        mix = mix.replace("BK = tunable(choice(32, 64, 128), default=64)", "BK = tunable(choice(32, 64, 128), default=32)")
        mix = mix.replace("KL1 = tunable(choice(128, 256, 512, 1024), default=256)",
                          "KL1 = tunable(choice(128, 256, 512, 1024), default=128)")
    lines = [ln for ln in re.sub(r"\bmm_ws\b", ws, mix).splitlines()
             if not re.match(r"^\s+(VROWS|VCHUNK|VDEPTH) = tunable\(", ln)]
    return "\n".join(lines)


def splice(vector_prog: str, task: Task, pc: ProductCall, dims: tuple[int, int, int, int],
           ring: bool = False) -> str:
    """The cube stage of the product into the workspace, then ``vector_prog`` (a graph-frontend
    program of the suffix task) reading it: one ``@cube_kernel`` (raises ``ValueError``). With
    ``ring``: one mixed launch, the workspace a ring of blocks per AI Core that the AI Core's own
    vector cores read (``dsl/lowering/cube_mixed.py``), so the rows loop takes no ``cores=``."""
    lines = vector_prog.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("def "))
    m = _HEADER.match(lines[at])
    if m is None or not lines[at - 1].startswith("@kernel("):
        raise ValueError("not a graph-frontend program header")
    kname, params = m.group(1), [p.strip() for p in m.group(2).split(",")]
    body = lines[_doc_end(lines, at) + 1:]
    # a parameter named like a word of the cube stage (a task input called `acc`, `blk`, `BM`)
    reserved = words_of(_template("cube_matmul")) | words_of(_template("cube_matmul_mix"))
    for name in [p.split(":")[0] for p in params]:
        if name in reserved:
            new = _fresh(f"{name}_in", body + params)
            params, body = _rename(params, name, new), _rename(body, name, new)
    names = [p.split(":")[0] for p in params]
    ws = names[len(task.inputs)]
    T = DTYPE_DSL[task.dtype]
    a, b = names[pc.a.index], names[pc.b.index]
    spec = MatmulSpec(a, b, T, "f32", transpose_a=pc.a.transpose, transpose_b=pc.b.transpose, batched=pc.batched)
    ws_dt = params[len(task.inputs)].split("[")[1].rstrip("]")  # the suffix task's mm_out dtype
    store = "acc" if ws_dt == "f32" else f"cast(acc, {ws_dt})"
    fields = {**template_fields(kname, spec, dims), "out": ws}
    if ring:
        cube = _ring_stage(fields, store, ws, ws_dt, T)
    else:
        cube = _template("cube_matmul").format(store=store, store_note=f"{ws_dt}, into the workspace", **fields)
    cube_lines = cube.splitlines()
    cdef = next(i for i, ln in enumerate(cube_lines) if ln.startswith("def "))
    cube_body = [ln for ln in cube_lines[_doc_end(cube_lines, cdef) + 1:] if ln.strip() and " = workspace(" not in ln]
    if ring:  # the AI Core's two vector cores take its blocks' rows: no cores= of the rows loop
        header = next(i for i, ln in enumerate(body) if ln.lstrip().startswith("for ") and " in rows(" in ln)
        m = re.search(r", cores=(\w+)", body[header])
        if m:
            body[header] = body[header].replace(m.group(0), "")
            if not re.search(rf"\b{m.group(1)}\b", "\n".join(x for x in body if not _TUNABLE.match(x))):
                body = [x for x in body if not re.match(rf"^\s+{m.group(1)} = tunable\(", x)]
    # a tunable or variable of the vector program that the cube stage also has (CORES, DEPTH)
    for word in sorted(words_of("\n".join(body)) & (words_of("\n".join(cube_body)) - set(names))):
        if any(re.match(rf"^\s+{word} = tunable\(", ln) for ln in body):
            new = _fresh(f"V{word}", body + cube_body)
        elif any(re.match(rf"^\s+({word} =|for {word} in) ", ln) for ln in body):
            new = _fresh(f"{word}_v", body + cube_body)
        else:
            continue  # a DSL function or keyword both stages call
        body = _rename(body, word, new)
    ins = [p for i, p in enumerate(params) if i != len(task.inputs)]
    doc = (f"Cube stage: the product {a} x {b} ({ws_dt}) into the workspace {ws}; vector stage: the rest "
           f"of the reference (graph frontend). {lines[at + 1].strip().strip(chr(34))}")
    if ring:
        doc = (f"One mixed launch: the cube writes the product {a} x {b} ({ws_dt}) block by block into the "
               f"ring {ws}; each AI Core's vector cores apply the rest of the reference (graph frontend) to a "
               f"block while the cube computes the next. {lines[at + 1].strip().strip(chr(34))}")
    tun_c = [ln for ln in cube_body if _TUNABLE.match(ln)]
    tun_v = [ln for ln in body if _TUNABLE.match(ln)]
    rest_c = [ln for ln in cube_body if not _TUNABLE.match(ln)]
    rest_v = [ln for ln in body if not _TUNABLE.match(ln)]
    ring_arg = ", ring=RING" if ring else ""
    out = [f'@cube_kernel(category="{task.category}")', f"def {kname}({', '.join(ins)}):",
           f'    """{doc}"""', *tun_c, *tun_v, f"    {ws} = workspace({ws_dt}{ring_arg})", *rest_c, *rest_v]
    return "\n".join(out) + "\n"


def _rows_stage(vector_prog: str) -> bool:
    """Does a vector program run one ``rows`` loop (what a ``@cube_kernel``'s vector stage is)?"""
    return re.search(r"^    for \w+ in rows\(", vector_prog, re.M) is not None


def ring_twin(vector_prog: str, task: Task, pc: ProductCall, dims: tuple[int, int, int, int]) -> str:
    """The one-launch twin of a cube-then-vector candidate (``splice(..., ring=True)``). A rows
    stage that combines a row's columns (a softmax, a norm, a log-sum-exp) is right in the ring
    only when every block spans whole rows: its block width takes the values of at least N and
    its tail split never cuts along N (raises ``ValueError`` when N is wider than a block)."""
    src = splice(vector_prog, task, pc, dims, ring=True)
    if not row_wise(parse(src)):
        return src
    bn = re.search(r"(?m)^    BN = tunable\(choice\(([^)]*)\), default=\d+\)", src)
    tail = re.search(r"(?m)^    TAIL = tunable\(choice\(0, 1, 2\), default=(\d)\)", src)
    if bn is None or tail is None:
        raise ValueError("the ring stage's BN / TAIL tunables were not found")
    n, blocks = dims[2], [int(x) for x in bn.group(1).split(",")]
    widths = [w for w in blocks if w >= n]
    if not widths:
        raise ValueError(f"rows of {n} columns are wider than a block ({max(blocks)}): the ring form needs "
                         "blocks spanning whole rows")
    src = src.replace(bn.group(0), f"    BN = tunable(choice({', '.join(map(str, widths))}), default={widths[-1]})")
    src = src.replace(tail.group(0), f"    TAIL = tunable(choice(0, 2), default={2 if tail.group(1) == '1' else tail.group(1)})")
    return src


class CubeVectorProposer:
    """Task files whose reference is one matrix product followed by a computation the cube's
    epilogue forms do not cover (after the graph frontend, which serves thin products)."""

    name = "cube+vector"

    def propose(self, task: Task) -> list[Candidate]:
        """Cube + vector candidates (see the module docstring); :class:`Declined` with the reason
        when the product or the rest cannot be served."""
        if task.dtype not in DTYPE_DSL:
            raise Declined(f"dtype {task.dtype} has no cube DSL type")
        try:
            st, psets, pc = suffix_task(task)
        except Unsupported as e:
            raise Declined(" ".join(str(e).split())) from None
        try:
            vec = GraphProposer().propose(st, psets)
        except Declined as e:
            raise Declined(f"the rest of the reference after its product: {e.reason}") from None
        if not any(_rows_stage(c.source) for c in vec):
            # an elementwise rest comes as flat tiles, which the cube's vector stage does not
            # take: the same graph as rows of the product
            try:
                vec = vec + GraphProposer().propose(st, psets, kinds=("rows",))
            except Declined:
                pass
        names = [x.name for x in task.inputs]
        spec = MatmulSpec(names[pc.a.index], names[pc.b.index], DTYPE_DSL[task.dtype], "f32",
                          transpose_a=pc.a.transpose, transpose_b=pc.b.transpose, batched=pc.batched,
                          order=tuple((n, "") for n in names))
        dims = spec_dims(task, spec)
        if dims is None:
            raise Declined("the product's operand shapes could not be read")
        out, why = [], {}
        for c in vec:
            name = c.name.replace("/graph-", "/cube_then_")
            try:
                src = splice(c.source, task, pc, dims)
                check_cube_supported(check_program(parse(src)))  # the rows stage a @cube_kernel lowers
            except (ValueError, DslError) as e:
                why.setdefault(" ".join(str(e).split()), name.split("/")[-1])
                continue
            out.append(Candidate(name, src, origin=self.name))
            if pc.batched:  # the ring form covers unbatched products
                continue
            try:
                src = ring_twin(c.source, task, pc, dims)
                ring = prepare(name, src)
                check_cube_supported(ring.typed)
                ring.lower(ring.defaults())  # the ring rewrite maps only some GM addressing: refused here
            except (ValueError, DslError) as e:
                why.setdefault(" ".join(str(e).split()), name.split("/")[-1] + " (ring)")
                continue
            out.append(Candidate(name.replace("/cube_then_", "/ring_then_"), src, origin=self.name))
        if not out:
            reasons = "; ".join(f"{s}: {r}" for r, s in why.items())
            raise Declined(f"no vector program of the rest of the reference fits the vector stage after the "
                           f"cube stage ({reasons})")
        return out
