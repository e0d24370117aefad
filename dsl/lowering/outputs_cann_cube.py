"""Output forms of a ``@cube_kernel`` that CANN builds: the custom-op project (msopgen JSON,
op_host tiling class + TilingFunc + InferShape + InferDataType + OpDef, one op_kernel entry)
and the direct-launch CMake project of its kernels.

A CANN op is one kernel launch, while the direct form launches the cube (AIC) and the vector
(AIV) kernel one after the other. The op_kernel entry therefore runs both stages in one
mixed launch (``KERNEL_TYPE_MIX_AIC_1_2``: blockDim AI cores, each one AIC and two AIVs): the
cube kernel on the AIC cores, a full cross-core barrier (``SyncAll<false>()``, which
synchronises the vector cores, the cube cores and then the two sides), then the vector kernel
on the AIV cores. ``GetBlockIdx()`` counts AICs in [0, blockDim) and AIVs in [0, 2 blockDim)
(asc-devkit ``GetBlockIdx``), so each stage keeps to its own core count from the tiling.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..names import mangle
from .cube import CubeLowered, render_cube_outputs
from .outputs_cann import CannProjectForm, family_configs, shape_gather
from .outputs_direct import kernel_library_cmake
from .tiling import camel

#: bytes of one GM workspace in the tiling's terms (``t.`` or ``td.`` prefixed): the split-K
#: partial results, fp32 — the size the cube lowering carves each workspace out with
WORKSPACE_BYTES = "{t}splits * {t}Bt * {t}M * {t}N * 4"


def workspace_bytes(p: ir.Program) -> str:
    """The byte size of one GM workspace of ``p``: ordered_split's slices are its tiling's
    ``wsFloats`` (the blocks' images pad N to 16), the split-K partials otherwise."""
    return "{t}wsFloats * 4" if p.cube is not None and p.cube.ordered_split else WORKSPACE_BYTES


MEMORIES = (("L1", "L1"), ("L0A", "L0_A"), ("L0B", "L0_B"), ("L0C", "L0_C"), ("UB", "UB"))


@dataclass(frozen=True)
class CubeOutputShape:
    """How a cube program's output shape follows from its inputs: ``matmul`` (the product of
    the cube stage, ``a @ b`` as torch.matmul shapes it for the layouts the stage reads),
    ``like`` (the shape of input ``source``), or ``unknown`` (the DSL does not fix it, e.g. a
    group of per-row values: the caller allocates the output, as aclnn calls do)."""

    output: str
    rule: str
    source: str = ""

    def apply(self, p: ir.Program, shapes: dict[str, list[int]]) -> list[int] | None:
        """Python mirror of the InferShape rule; None when the rule is ``unknown``."""
        if self.rule == "like":
            return list(shapes[self.source])
        if self.rule != "matmul":
            return None
        c = p.cube
        a, b = shapes[c.a.tensor], shapes[c.b.tensor]
        if c.batched:
            m = a[2] if c.a.transpose else a[1]
            n = b[1] if c.b.transpose else b[2]
            return [a[0], m, n]
        n = _rows(b, c.b.split) if c.b.transpose else _cols(b, c.b.split)
        if not c.a.transpose and c.a.split is None:
            return list(a[:-1]) + [n]
        return [_cols(a, c.a.split) if c.a.transpose else _rows(a, c.a.split), n]


def _rows(shape: list[int], split: int | None) -> int:
    s = len(shape) - 1 if split is None else split
    out = 1
    for d in shape[:s]:
        out *= d
    return out


def _cols(shape: list[int], split: int | None) -> int:
    s = len(shape) - 1 if split is None else split
    out = 1
    for d in shape[s:]:
        out *= d
    return out


def cube_output_shapes(p: ir.Program) -> list[CubeOutputShape]:
    """One shape rule per output: the cube stage's target, or a store of a column chunk of
    the rows stage's tile (the loop tensor's shape); anything else is ``unknown``."""
    c, v = p.cube, p.vector
    chunked: set[str] = set()
    if v is not None:
        for loop in ir.walk_stmts(v.body):
            if (isinstance(loop, ir.InnerLoop) and loop.kind == "chunks" and loop.parent == v.var
                    and loop.parts == 1):
                chunked |= {s.tensor for s in ir.walk_stmts(loop.body)
                            if isinstance(s, ir.Store) and s.at == loop.var}
    out = []
    for o in p.outputs:
        if c is not None and c.target == o.name:
            out.append(CubeOutputShape(o.name, "matmul"))
        elif v is not None and o.name in chunked:
            if p.is_workspace(v.tensor):
                out.append(CubeOutputShape(o.name, "matmul"))
            elif v.tensor in {t.name for t in p.inputs}:
                out.append(CubeOutputShape(o.name, "like", v.tensor))
            else:
                out.append(CubeOutputShape(o.name, "unknown"))
        else:
            out.append(CubeOutputShape(o.name, "unknown"))
    return out


class CubeCannForm(CannProjectForm):
    """Renders the CANN project and the direct CMake project of one cube lowering."""

    def __init__(self, lk: CubeLowered, soc: str, values: dict[str, int]) -> None:
        self._init_form(lk, soc, values)
        self.stages = lk.stages()
        self.shapes = cube_output_shapes(self.p)
        text = (lk.cube_class or "") + (lk.vector_class or "")
        self.configs = family_configs(lk.op, self.p, text, soc, split_cores=True)

    # ---- the tiling fields ----------------------------------------------------------------
    def _fields(self) -> list[tuple[str, str]]:
        return ([("int64_t", f) for f in self.lk.tiling.fields()]
                + [("float", mangle("sc", s.name)) for s in self.p.scalars])

    def _field_notes(self) -> dict[str, str]:
        notes = {"Bt": "matmul batch", "M": "rows of C", "N": "columns of C", "K": "reduced extent",
                 "vN": "rows of the rows stage", "vW": "row width of the rows stage",
                 "coreNumCube": "cube cores available", "coreNumVec": "vector cores available"}
        for mem, _ in MEMORIES:
            notes[f"bytes{mem}"] = f"{mem} bytes used by all buffers"
        notes.update(dict(self.lk.tiling.all_formulas()))
        for s in self.p.scalars:
            notes[mangle("sc", s.name)] = f"runtime scalar {s.name}"
        return notes

    def _block_dim(self, t: str) -> str:
        """The launch's blockDim: AI cores for a mixed kernel (two AIVs each)."""
        if self.stages == ["cube", "vec"]:
            return f"std::max<int64_t>({t}cubeDim, ({t}vDim + 1) / 2)"
        return f"{t}cubeDim" if self.stages in (["cube"], ["mix"]) else f"{t}vDim"

    # ---- cann/op_host/<op>.cpp --------------------------------------------------------------
    def op_host_cpp(self) -> str:
        p = self.p
        ub_reserve = (self.spec.ub_kib - self.spec.ub_budget_kib) * 1024
        n_ws = len(p.workspaces)
        L = [f"// CANN host side of '{self.op}' (op type {self.op_type}), generated by ascendcraft from a",
             f"// @cube_kernel program (stages: {', '.join(self.stages)}). TilingFunc gathers the shapes, the",
             f"// cube and vector core counts and the attributes, calls {self.compute} from",
             f"// {self.op}_tiling_plain.h (the function every form calls), checks every on-chip buffer",
             "// against this SoC and copies the result field by field into the registered class."]
        L += self._host_includes(("algorithm", "cstdint", "cstdio", "vector"))
        L += self._host_plain_and_tunables(ub_reserve, kernels="kernels")
        L += ["static ge::graphStatus TilingFunc(gert::TilingContext* context) {",
              "    // 1. Shapes of the op's tensors, inputs then outputs (workspaces are not op tensors).",
              *shape_gather(p.tensors, p.inputs, p.outputs),
              "",
              "    // 2. Core counts and on-chip memory sizes of the SoC this op runs on.",
              "    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());",
              "    const int64_t coreNumCube = static_cast<int64_t>(platform.GetCoreNumAic());",
              "    const int64_t coreNumVec = static_cast<int64_t>(platform.GetCoreNumAiv());"]
        for mem, enum in MEMORIES:
            L += [f"    uint64_t mem{mem} = 0;",
                  f"    platform.GetCoreMemSize(platform_ascendc::CoreMemType::{enum}, mem{mem});"]
        L.append("    memUB = memUB > kUbReserveBytes ? memUB - kUbReserveBytes : 0;")
        L.append("")
        reads, scalars = self._attr_reads(3)
        L += reads
        L += self._host_call_plain("coreNumCube, coreNumVec", scalars)
        for mem, _ in MEMORIES:
            L += [f"    if (static_cast<uint64_t>(plain.bytes{mem}) > mem{mem}) {{",
                  f"        std::fprintf(stderr, \"{self.op_type} tiling: needs %lld B of {mem}, %llu B available\\n\",",
                  f"                     static_cast<long long>(plain.bytes{mem}), static_cast<unsigned long long>(mem{mem}));",
                  "        return ge::GRAPH_FAILED;",
                  "    }"]
        L += ["",
              "    // Copy every field into the registered class (same names as the plain struct).",
              f"    {self.struct} tiling;"]
        L += self._copy_fields("tiling", "plain")
        kind = {("cube", "vec"): "one AI core per block: its AIC runs the cube stage, its two AIVs the rows stage",
                ("cube",): "cube cores only", ("vec",): "vector cores only",
                ("mix",): "one AI core per block: its AIC writes blocks into a GM ring, its two AIVs finish them "
                          "(cross-core flags)"}[tuple(self.stages)]
        L += [f"    // blockDim: {kind}.",
              f"    context->SetBlockDim(static_cast<uint32_t>({self._block_dim('plain.')}));",
              "    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());",
              "    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());",
              ""]
        L += self._host_tail(
            ["    // Workspace: the system workspace AscendC reserves, then the program's GM workspaces",
             f"    // ({n_ws}: {', '.join(w.name for w in p.workspaces) or 'none'}), each the fp32 split-K partial results."],
            (f"static_cast<size_t>({n_ws}) * static_cast<size_t>({workspace_bytes(p).format(t='plain.')})"
             if self.stages != ["mix"] else  # a mixed kernel's ring of blocks may be the larger
             f"std::max<size_t>({WORKSPACE_BYTES.format(t='plain.')}, "
             "plain.cubeDim * plain.ring * plain.bm * plain.bn * 4)") if n_ws else "")
        return "\n".join(L)

    def _infer_shape(self) -> list[str]:
        p = self.p
        in_idx = {t.name: i for i, t in enumerate(p.inputs)}
        out_idx = {t.name: i for i, t in enumerate(p.outputs)}
        L = ["namespace ge {",
             "// Output shapes the DSL fixes: the matmul product, or the shape of the rows stage's input.",
             "// InferShape serves graph mode; aclnn calls pass their outputs already shaped.",
             "static ge::graphStatus InferShape(gert::InferShapeContext* context) {"]
        needed = set()
        for o in self.shapes:
            if o.rule == "matmul":
                needed |= {p.cube.a.tensor, p.cube.b.tensor}
            elif o.rule == "like":
                needed.add(o.source)
        for name in sorted(needed, key=lambda n: in_idx[n]):
            var = mangle("shape", name)
            L += [f"    const gert::Shape* {var} = context->GetInputShape({in_idx[name]});",
                  f"    if ({var} == nullptr) return ge::GRAPH_FAILED;"]
        if any(o.rule == "matmul" for o in self.shapes):
            L += self._matmul_dims()
        for o in self.shapes:
            dst = mangle("shape", o.output)
            L += [f"    gert::Shape* {dst} = context->GetOutputShape({out_idx[o.output]});",
                  f"    if ({dst} == nullptr) return ge::GRAPH_FAILED;"]
            if o.rule == "like":
                L.append(f"    *{dst} = *{mangle('shape', o.source)};  // {o.output}: shape of {o.source}")
            elif o.rule == "matmul":
                L += self._matmul_out(dst)
            else:
                L += [f"    // {o.output}: its shape is not fixed by the program (the caller allocates it).",
                      f"    (void){dst};",
                      "    return ge::GRAPH_FAILED;"]
        L += ["    return ge::GRAPH_SUCCESS;", "}", ""]
        return L

    def _matmul_dims(self) -> list[str]:
        """InferShape lines computing ``mmM`` and ``mmN`` (and the batch) like the tiling."""
        c = self.p.cube
        sa, sb = mangle("shape", c.a.tensor), mangle("shape", c.b.tensor)
        if c.batched:
            return [f"    if ({sa}->GetDimNum() != 3 || {sb}->GetDimNum() != 3) return ge::GRAPH_FAILED;",
                    f"    const int64_t mmB = {sa}->GetDim(0);",
                    f"    const int64_t mmM = {sa}->GetDim({2 if c.a.transpose else 1});",
                    f"    const int64_t mmN = {sb}->GetDim({1 if c.b.transpose else 2});"]

        def split(op: ir.Operand, var: str, name: str) -> list[str]:
            s = f"{op.split}" if op.split is not None else f"({var}->GetDimNum() - 1)"
            return [f"    int64_t {name}Rows = 1, {name}Cols = 1;",
                    f"    if ({var}->GetDimNum() < 2) return ge::GRAPH_FAILED;",
                    f"    for (size_t i = 0; i < {var}->GetDimNum(); ++i) {{",
                    f"        if (static_cast<int64_t>(i) < static_cast<int64_t>({s})) {name}Rows *= {var}->GetDim(i);",
                    f"        else {name}Cols *= {var}->GetDim(i);",
                    "    }"]

        return (split(c.a, sa, "a") + split(c.b, sb, "b")
                + [f"    const int64_t mmM = {'aCols' if c.a.transpose else 'aRows'};",
                   f"    const int64_t mmN = {'bRows' if c.b.transpose else 'bCols'};",
                   "    (void)mmM;"])

    def _matmul_out(self, dst: str) -> list[str]:
        c = self.p.cube
        sa = mangle("shape", c.a.tensor)
        if c.batched:
            return [f"    {dst}->SetDimNum(3);", f"    {dst}->SetDim(0, mmB);",
                    f"    {dst}->SetDim(1, mmM);", f"    {dst}->SetDim(2, mmN);"]
        if not c.a.transpose and c.a.split is None:  # a[..., K] @ b[K, N] -> [..., N]
            return [f"    {dst}->SetDimNum({sa}->GetDimNum());",
                    f"    for (size_t i = 0; i + 1 < {sa}->GetDimNum(); ++i) {dst}->SetDim(i, {sa}->GetDim(i));",
                    f"    {dst}->SetDim({sa}->GetDimNum() - 1, mmN);"]
        return [f"    {dst}->SetDimNum(2);", f"    {dst}->SetDim(0, mmM);", f"    {dst}->SetDim(1, mmN);"]

    # ---- cann/op_kernel/<op>.cpp ----------------------------------------------------------
    def op_kernel_cpp(self) -> str:
        lk, p = self.lk, self.p
        args = lk.gm_args()
        sig = ", ".join(f"GM_ADDR {mangle('arg', n)}" for n in args if not p.is_workspace(n))
        call = ", ".join(mangle("arg", n) for n in args)
        ktype = {("cube", "vec"): "KERNEL_TYPE_MIX_AIC_1_2", ("cube",): "KERNEL_TYPE_AIC_ONLY",
                 ("vec",): "KERNEL_TYPE_AIV_ONLY", ("mix",): "KERNEL_TYPE_MIX_AIC_1_2"}[tuple(self.stages)]
        L = [f"// CANN op_kernel of '{p.name}' (op type {self.op_type}), generated by ascendcraft from its",
             f"// @cube_kernel program: one launch ({ktype}) running the stages {', '.join(self.stages)}.",
             "// Comments 'DSL line N' point back to the program; edit the DSL, not this file.",
             "#include \"kernel_operator.h\"",
             "using namespace AscendC;",
             ""]
        # Each stage in its own namespace: both carry the same small helpers (acx_min, ...).
        d = lk.depths
        if lk.cube_class is not None:
            L += ["namespace acx_cube_stage {",
                  f"constexpr int32_t STAGES = {d['stages']};  // L1 buffers per operand (2 = ping-pong)",
                  f"constexpr int32_t L0DEPTH = {d['l0']};  // L0A/L0B buffers",
                  f"constexpr int32_t ACCDEPTH = {d['acc']};  // L0C buffers",
                  *([f"constexpr int32_t RING = {d['ring']};  // blocks in each AI Core's GM ring"]
                    if self.stages == ["mix"] else []),
                  "", lk.cube_class, "}  // namespace acx_cube_stage", ""]
        if lk.vector_class is not None:
            L += ["namespace acx_vec_stage {",
                  f"constexpr int32_t VDEPTH = {d['vec']};  // UB queue depth (2 = double buffering)",
                  *([f"constexpr int32_t RING = {d['ring']};  // blocks in each AI Core's GM ring"]
                    if self.stages == ["mix"] else []),
                  "", lk.vector_class, "}  // namespace acx_vec_stage", ""]
        L += [f"extern \"C\" __global__ __aicore__ void {self.op}({sig}, GM_ADDR workspace, GM_ADDR tiling) {{",
              f"    KERNEL_TASK_TYPE_DEFAULT({ktype});",
              "    GET_TILING_DATA(td, tiling);"]
        off = "0"
        for w in p.workspaces:
            L.append(f"    GM_ADDR {mangle('arg', w.name)} = GetUserWorkspace(workspace) + {off};  // {w.name}")
            off = f"{off} + {workspace_bytes(p).format(t='td.')}"
        name = camel(p.name)
        if self.stages == ["mix"]:  # blockDim = cubeDim AI Cores; each AIV walks its AIC's blocks
            L += ["    if ASCEND_IS_AIC {",
                  f"        acx_cube_stage::CubeKernel{name}<decltype(td)> op;",
                  f"        op.Init({call}, td);",
                  "        op.Process();",
                  "    } else {",
                  f"        acx_vec_stage::VecKernel{name}<decltype(td)> op;",
                  f"        op.Init({call}, td);",
                  "        op.Process();",
                  "    }"]
        if "cube" in self.stages:
            L += ["    if ASCEND_IS_AIC {",
                  "        if (GetBlockIdx() < td.cubeDim) {",
                  f"            acx_cube_stage::CubeKernel{name}<decltype(td)> op;",
                  f"            op.Init({call}, td);",
                  "            op.Process();",
                  "        }",
                  "    }"]
        if self.stages == ["cube", "vec"]:
            L.append("    SyncAll<false>();  // every cube result is in GM before any vector core reads it")
        if "vec" in self.stages:
            L += ["    if ASCEND_IS_AIV {",
                  "        if (GetBlockIdx() < td.vDim) {",
                  f"            acx_vec_stage::VecKernel{name}<decltype(td)> op;",
                  f"            op.Init({call}, td);",
                  "            op.Process();",
                  "        }",
                  "    }"]
        L += ["}", ""]
        return "\n".join(L)

    # ---- direct/CMakeLists.txt --------------------------------------------------------------
    def direct_cmake(self) -> str:
        sources = [f"{self.op}_{which}.cpp" for which in self.stages]
        return kernel_library_cmake(
            self.op, self.soc, sources,
            "the kernel library (one kernel per stage) with CANN's ascendc_library (bisheng)",
            f"each includes {self.op}_tiling.h and reads the tiling struct from GM; launch them in the "
            f"order {', '.join(self.stages)} on one stream ({self.op}_launch.cpp)")

    def readme(self) -> str:
        p = self.p
        tun = "\n".join(f"| `{t.name}` | {self.values[t.name]} | {t.default} |" for t in p.tunables)
        shapes = "\n".join(f"- `{o.output}`: " + {"matmul": "the matmul product's shape",
                                                   "like": f"the shape of `{o.source}`",
                                                   "unknown": "allocated by the caller"}[o.rule]
                           for o in self.shapes)
        return f"""# `{self.op}` — AscendC kernels generated by ascendcraft

Generated from the `@cube_kernel` program `{p.name}`. Stages: {', '.join(self.stages)} (cube = AIC
kernel, vec = AIV kernel). Edit the DSL, not these files. All forms share one plain C++ tiling
function, `{self.compute}` (`{self.op}_tiling.h`).

## Tunables baked in

| tunable | value | DSL default |
|---|---|---|
{tun}

Compile-time depths: {self.lk.depths}.

Outputs:

{shapes}

## Folders

- `cann/` — CANN custom-op project sources (op type `{self.op_type}`): `{self.op}.json` for msopgen,
  `op_host/{self.op}_tiling.h` (the `BEGIN_TILING_DATA_DEF` class), `op_host/{self.op}.cpp`
  (TilingFunc, InferShape, InferDataType, OpDef), `op_host/{self.op}_tiling_plain.h` and
  `op_kernel/{self.op}.cpp`: one launch running every stage (cube on the AIC cores, then the
  rows stage on the AIV cores after a cross-core barrier).
- `direct/` — direct launch: one kernel per stage, the shared tiling header, a CMake project
  using `ascendc_library` and `{self.op}_launch.cpp` (the launch order).
- `emulator/` — the same kernels with the entry points of ascendcraft's CPU emulator.

## Building on a machine with CANN (SoC `{self.soc}`)

```sh
cd cann
msopgen gen -i {self.op}.json -c ai_core-{self.soc} -lan cpp -out {self.op_type}Proj
cp op_host/* {self.op_type}Proj/op_host/ && cp op_kernel/* {self.op_type}Proj/op_kernel/
cd {self.op_type}Proj && ./build.sh && ./build_out/custom_opp_*.run
```

```sh
cd direct
cmake -S . -B build -DSOC_VERSION={self.soc} -DASCEND_CANN_PACKAGE_PATH=$ASCEND_HOME_PATH -DACX_KERNEL_LIBRARY_TYPE=SHARED
cmake --build build -j
```
"""


def render_cube_forms(lk: CubeLowered, *, soc: str = "Ascend910B2",
                      params: dict[str, int] | None = None) -> dict[str, str]:
    """Every output form of a cube lowering: the emulator and direct-launch kernels of
    ``cube.render_cube_outputs``, with the CANN project in place of its per-stage op_kernel
    files, the direct form's CMake project and a README of both."""
    values = {**lk.program.defaults(), **(params or {})}
    form = CubeCannForm(lk, soc, values)
    op = lk.op
    files = {k: v for k, v in render_cube_outputs(lk, soc=soc, params=params).items()
             if not k.startswith("cann/")}
    files.update({
        f"cann/{op}.json": form.op_json(),
        f"cann/op_host/{op}_tiling.h": form.cann_tiling_header(),
        f"cann/op_host/{op}_tiling_plain.h": lk.header,
        f"cann/op_host/{op}.cpp": form.op_host_cpp(),
        f"cann/op_kernel/{op}.cpp": form.op_kernel_cpp(),
        "direct/CMakeLists.txt": form.direct_cmake(),
        "README.md": form.readme(),
    })
    return files
