"""Per-channel operands over many rows: ``load_per_row(v, t, d)`` (row ``g`` reads
``v[(g // d) % numel(v)]``) run in the emulator against PyTorch at odd H/W, fp16, 3-D to 5-D
tensors and remainder tiles; misuse is a DslError naming the reason; the graph frontend offers
rows over the ``[N*C*H, W]`` view beside the channels loop for per-channel operands given as
inputs (``view(1, -1, 1, 1)``, ``[None, :, None, None]``), buffers and parameters (``[C]``,
``[C, 1, 1]``, ``[1, C, 1, 1]``), and the rows view is modeled faster at the ImageNet shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascendcraft.dsl.checker import check_program
from ascendcraft.dsl.parser import DslError, parse
from ascendcraft.search.graph import propose_from_graph

from ascendcraft.app.checking import first_feasible
from ascendcraft.evaluate import Evaluator, prepare
from ascendcraft.status import Status
from ascendcraft.tasks.taskfile import load_task_file

SOC = "Ascend910B2"
CORPUS = Path(__file__).parent / "taskfiles" / "corpus"


def _task(tmp_path: Path, forward: str, inputs: str, args: str, init: str = "") -> object:
    p = tmp_path / "t.py"
    p.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                 f"    def __init__(self):\n        super().__init__()\n{init or '        pass'}\n\n"
                 f"    def forward(self, {args}):\n        return {forward}\n\n"
                 f"def get_inputs():\n    return [{inputs}]\n\n"
                 "def get_init_inputs():\n    return []\n")
    return load_task_file(p)


def _run(task, src: str, timing: bool = False):
    ev = Evaluator(task, SOC, seeds=(0,), shape_sets=[list(task.shapes)])
    return ev.evaluate(prepare("k", src), {}, timing=timing)


KERNEL = '''
@kernel
def k(x: In[{dt}], m: In[{dt}], s: In[{dt}], y: Out[{dt}]):
    R = tunable(span(1, 64, 1), default={rows})
    for t in rows(x, rows=R{dims}):
        store(y, t, {body})
'''
F32 = "(load(x, t) - load_per_row(m, t, {d})) * load_per_row(s, t, {d})"
F16 = ("cast((cast(load(x, t), f32) - cast(load_per_row(m, t, {d}), f32)) * "
       "cast(load_per_row(s, t, {d}), f32), f16)")


@pytest.mark.parametrize("dt,shape,view,d,rows,dims", [
    # NCHW at odd H and W, 5 rows a tile: tiles start mid-channel and cross channels
    ("f32", "2, 3, 5, 37", "view(1, -1, 1, 1)", "size(x, 2)", 5, ""),
    # fp16, more rows a tile than one channel has (a tile holds several runs)
    ("f16", "3, 4, 7, 33", "view(1, -1, 1, 1)", "size(x, 2)", 16, ""),
    # 5-D: the operand's block sits two dims before the rows (d = T * H)
    ("f32", "2, 3, 3, 5, 19", "view(1, -1, 1, 1, 1)", "size(x, 2) * size(x, 3)", 8, ""),
    # the leading dim is the channel ([C, 1, 1] against [C, H, W]), rows of H*W: d = 1
    ("f32", "6, 5, 11", "view(-1, 1, 1)", "1.0", 4, ", dims=2"),
])
def test_per_row_every_d_rows_matches_torch(tmp_path: Path, dt: str, shape: str, view: str, d: str,
                                            rows: int, dims: str) -> None:
    tdt = "torch.float16" if dt == "f16" else "torch.float32"
    c = shape.split(", ")[1 if "1, -1" in view else 0]
    task = _task(tmp_path, f"(x - m.{view}) * s.{view}",
                 f"torch.randn({shape}, dtype={tdt}), torch.randn({c}, dtype={tdt}), "
                 f"torch.rand({c}, dtype={tdt}) + 0.5", "x, m, s")
    body = (F16 if dt == "f16" else F32).format(d=d)
    out = _run(task, KERNEL.format(dt=dt, rows=rows, dims=dims, body=body))
    assert out.status == Status.OK, out.message


def test_a_wrong_divisor_is_a_wrong_result(tmp_path: Path) -> None:
    """The emulator sees the mapping: d = W instead of H reads the wrong channel's values."""
    task = _task(tmp_path, "(x - m.view(1, -1, 1, 1)) * s.view(1, -1, 1, 1)",
                 "torch.randn(2, 3, 5, 37), torch.randn(3), torch.rand(3) + 0.5", "x, m, s")
    out = _run(task, KERNEL.format(dt="f32", rows=4, dims="", body=F32.format(d="size(x, 3)")))
    assert out.status == Status.WRONG, (out.status, out.message)


def test_a_fractional_divisor_stops_the_kernel(tmp_path: Path) -> None:
    """d = H / 2 with H = 5 is 2.5 rows: not a whole number, the kernel traps (no truncation)."""
    task = _task(tmp_path, "(x - m.view(1, -1, 1, 1)) * s.view(1, -1, 1, 1)",
                 "torch.randn(2, 3, 5, 37), torch.randn(3), torch.rand(3) + 0.5", "x, m, s")
    out = _run(task, KERNEL.format(dt="f32", rows=4, dims="", body=F32.format(d="size(x, 2) / 2.0")))
    assert out.status not in (Status.OK, Status.WRONG), (out.status, out.message)
    assert "trap" in out.message.lower(), out.message


@pytest.mark.parametrize("loop,body,why", [
    ("tiles(x, tile=1024)", "load(x, t) * load_per_row(m, t, 2.0)", "belongs to a plain rows loop"),
    ("rows(x, rows=4)", "load(x, t) * load_per_row(m, t, load(x, t))", "d is a host scalar"),
    ("rows(x, rows=4)", "load(x, t) * load_per_row(m, t, 2.0, 3.0)", "takes 2 or 3 arguments"),
    ("rows(x, rows=4)", "load(x, t) * load_per_row(q, t, 2.0)", "q"),
])
def test_misuse_is_named(loop: str, body: str, why: str) -> None:
    src = f'''
@kernel
def k(x: In[f32], m: In[f32], y: Out[f32]):
    for t in {loop}:
        store(y, t, {body})
'''
    with pytest.raises(DslError, match=why):
        check_program(parse(src))


def test_a_channels_loop_is_named() -> None:
    """A per-channel loop has one row per channel already: load_per_row(v, t) there."""
    src = '''
@kernel
def k(x: In[f32], m: In[f32], y: Out[f32]):
    for t in rows(x, rows=1, axis=1):
        a = load_per_row(m, t, 2.0)
        for c in chunks(t, 256):
            store(y, c, load(x, c) * a)
'''
    with pytest.raises(DslError, match="belongs to a plain rows loop"):
        check_program(parse(src))


def test_at_a_chunk_is_named() -> None:
    src = '''
@kernel
def k(x: In[f32], m: In[f32], y: Out[f32]):
    for t in rows(x, rows=2):
        for c in chunks(t, 256):
            store(y, c, load(x, c) * load_per_row(m, c, size(x, 2)))
'''
    with pytest.raises(DslError, match="use the rows variable"):
        check_program(parse(src))


def _evaluate_all(task) -> list[tuple[str, str, object]]:
    """Every frontend candidate at the evaluator's reduced shapes (as ``ascendcraft check``)."""
    ev = Evaluator(task, SOC, seeds=(0,))
    out = []
    for cand in propose_from_graph(task):
        prep = prepare(cand.name, cand.source)
        params = first_feasible(ev, prep)
        res = None if params is None else ev.evaluate(prep, params, timing=False)
        out.append((cand.name, cand.source, res))
    return out


BUFFERS = ('        self.register_buffer("mu", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))\n'
           '        self.register_buffer("sigma", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))')


@pytest.mark.parametrize("which", ["image_normalize_per_channel", "frozen_bn_explicit_params",
                                   "video_clip_gain_offset_fp16", "buffers_1c11"])
def test_frontend_offers_the_rows_view_and_every_candidate_is_right(tmp_path: Path, which: str) -> None:
    if which == "buffers_1c11":  # [1, C, 1, 1] buffers with non-uniform values
        task = _task(tmp_path, "(img - self.mu) / self.sigma", "torch.rand(2, 3, 13, 29)", "img",
                     BUFFERS)
    else:
        task = load_task_file(CORPUS / f"{which}.py")
    results = _evaluate_all(task)
    names = [n.split("/")[-1] for n, _, _ in results]
    assert "graph-channels" in names and "graph-rows" in names, names
    rows_src = next(s for n, s, _ in results if n.endswith("/graph-rows"))
    assert "load_per_row(" in rows_src and ", t, size(" in rows_src, rows_src
    for name, _, res in results:
        if res is not None:  # a structure may not fit UB at the task's shapes; none may be wrong
            assert res.status == Status.OK, (name, res.status, res.message)
    assert any(res is not None and res.correct for n, _, res in results if "rows" in n)


def test_rows_view_is_modeled_faster_at_the_imagenet_shape() -> None:
    """8x3x224x224: the channels loop runs 3 units on 48 cores; rows of the [N*C, H*W] view
    (24 rows, chunked) and of [N*C*H, W] (5376 rows) spread over the cores."""
    task = load_task_file(CORPUS / "image_normalize_per_channel.py")
    ev = Evaluator(task, SOC, seeds=(0,))
    times = {}
    for cand in propose_from_graph(task):
        s = cand.name.split("/")[-1]
        if s not in ("graph-channels", "graph-chunked_rows2"):
            continue
        prep = prepare(cand.name, cand.source)
        res = ev.evaluate(prep, first_feasible(ev, prep), timing=True)
        assert res.status == Status.OK and res.time_us, res.message
        times[s] = res.time_us
    assert times["graph-chunked_rows2"] < 0.6 * times["graph-channels"], times


def test_a_per_channel_scale_before_a_last_dim_sum() -> None:
    """(x * scale[c]).sum(-1): no channels loop serves the reduction; rows over the last dim
    read the scale per row (tried after every loop failed without it)."""
    task = load_task_file(CORPUS / "channel_scale_rowsum.py")
    results = _evaluate_all(task)
    assert results and all("load_per_row(scale, t, size(x, 2))" in s and "row_sum(" in s
                           for _, s, _ in results)
    assert all(res is not None and res.status == Status.OK for _, _, res in results), \
        [(n, res and res.message) for n, _, res in results]
