"""Registry: names, categories, references at reduced shapes, metadata at full shapes."""

from __future__ import annotations

import math
import resource
from collections import Counter

import pytest
import torch

from ascendcraft.tasks import (
    InputSpec,
    Task,
    TaskError,
    Tolerance,
    get_task,
    list_tasks,
    reduced_shapes,
)
from ascendcraft.tasks.registry import task_names

REQUIRED = [
    "add", "mul_scalar", "relu", "gelu", "sigmoid", "swish", "softmax", "log_softmax",
    "layer_norm", "rms_norm", "sum_lastdim", "max_middim",
]
MIN_PER_CATEGORY = {
    "activation": 15, "loss": 7, "math": 6, "normalization": 8, "optimizer": 5,
    "pooling": 6, "reduce": 5,
}
ALL = task_names()


def _rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_required_names_and_counts() -> None:
    tasks = list_tasks()
    names = {t.name for t in tasks}
    assert len(tasks) >= 60
    assert set(REQUIRED) <= names
    counts = Counter(t.category for t in tasks)
    for cat, n in MIN_PER_CATEGORY.items():
        assert counts[cat] >= n, (cat, counts[cat])
    for spelled in ["leaky_relu", "elu", "selu", "gelu_tanh", "hardsigmoid", "hardtanh",
                    "softplus", "softsign", "tanh", "mish", "hardswish", "mse_loss",
                    "huber_loss", "kl_div", "cross_entropy", "hinge_loss",
                    "cosine_similarity_loss", "triplet_margin_loss", "cumsum", "cumprod",
                    "cumsum_exclusive", "cumsum_reverse", "masked_cumsum", "batch_norm",
                    "layer_norm_2d", "group_norm", "instance_norm", "rms_norm_nchw", "l1_norm",
                    "l2_norm", "frobenius_norm", "sgd_momentum", "adam", "adagrad", "rmsprop",
                    "lamb", "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d",
                    "max_pool3d"]:
        assert spelled in names, spelled


def test_default_shapes_are_large_and_metadata_only() -> None:
    before = _rss_peak_mb()
    for t in list_tasks():
        biggest = max(s.nbytes for s in t.inputs if s.is_tensor)
        # vector ops are memory-bound: tens of MB to GB; matmul shapes are fixed by the issue
        # (4096^3 fp16 is 32 MiB an operand; small-M and ragged cases are smaller)
        lo = 1 << 20 if t.category == "matmul" else 64 << 20
        assert lo <= biggest <= 2 << 30, (t.name, biggest)
        t.output_meta()
    # every registry task x hundreds of MB each: anything but metadata would show here
    assert _rss_peak_mb() - before < 300


def test_unknown_name_suggests_close_matches() -> None:
    with pytest.raises(TaskError, match="layer_norm"):
        get_task("layernorm")
    with pytest.raises(TaskError, match="softmax"):
        get_task("sofmax")


@pytest.mark.parametrize("name", ALL)
def test_reference_runs_at_reduced_shapes(name: str) -> None:
    task = get_task(name)
    full_meta = task.output_meta()
    sets = reduced_shapes(task)
    # tasks that bring their own correctness sets (Task.check_shapes) are checked on those
    assert len(sets) >= (1 if task.check_shapes else 2), name
    for k, shapes in enumerate(sets[:2]):
        for signed in (False, True):
            inputs = task.make_inputs(shapes, seed=k, signed=signed)
            outs = task.run_reference(inputs)
            meta = task.output_meta(shapes)
            assert [(tuple(o.shape), o.dtype) for o in outs] == meta
            # same output structure (rank, dtype) as at the full shape
            assert [(len(s), d) for s, d in meta] == [(len(s), d) for s, d in full_meta]
            for o in outs:
                if o.dtype.is_floating_point:
                    assert torch.isfinite(o).all(), (name, shapes, signed)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_variants_run(dtype: str) -> None:
    for t in list_tasks():
        half = t.with_shape(t.shapes[0], dtype)
        assert half.tolerance == Tolerance.for_dtype(half.dtype)
        shapes = reduced_shapes(half)[-1]
        outs = half.run_reference(half.make_inputs(shapes, seed=0, signed=True))
        assert [(tuple(o.shape), o.dtype) for o in outs] == half.output_meta(shapes), t.name


def test_full_shape_output_meta_examples() -> None:
    assert get_task("sum_lastdim").output_meta() == [((4096,), torch.float32)]
    assert get_task("max_middim").output_meta() == [((64, 1023), torch.float32)]
    assert get_task("cross_entropy").output_meta() == [((), torch.float32)]
    assert get_task("avg_pool2d").output_meta() == [((16, 64, 256, 256), torch.float32)]


def test_references_match_torch_semantics() -> None:
    torch.manual_seed(0)
    x = torch.randn(6, 37)
    y = torch.randn(6, 37)
    f = torch.nn.functional
    assert torch.allclose(get_task("gelu").reference(x), f.gelu(x), atol=1e-6)
    assert torch.allclose(get_task("gelu_tanh").reference(x), f.gelu(x, approximate="tanh"), atol=1e-6)
    assert torch.allclose(get_task("selu").reference(x), f.selu(x), atol=1e-6)
    assert torch.allclose(get_task("elu").reference(x), f.elu(x), atol=1e-6)
    assert torch.allclose(get_task("mish").reference(x), f.mish(x), atol=1e-6)
    assert torch.allclose(get_task("hardswish").reference(x), f.hardswish(x), atol=1e-6)
    assert torch.allclose(get_task("hardsigmoid").reference(x), f.hardsigmoid(x), atol=1e-6)
    assert torch.allclose(get_task("huber_loss").reference(x, y), f.huber_loss(x, y), atol=1e-6)
    assert torch.allclose(get_task("smooth_l1_loss").reference(x, y), f.smooth_l1_loss(x, y), atol=1e-6)
    assert torch.allclose(get_task("rms_norm").reference(x), f.rms_norm(x, (37,), eps=1e-6), atol=1e-5)
    assert torch.allclose(get_task("l2_norm").reference(x), f.normalize(x, dim=1), atol=1e-6)
    ex = get_task("cumsum_exclusive").reference(x)
    assert torch.allclose(ex[:, 0], torch.zeros(6)) and torch.allclose(ex[:, 5], x[:, :5].sum(1), atol=1e-5)
    rev = get_task("cumsum_reverse").reference(x)
    assert torch.allclose(rev[:, 0], x.sum(1), atol=1e-5)
    # optimizers against torch.optim, one step
    p = torch.randn(5, 7)
    g = torch.randn(5, 7)
    for name, opt_cls, kw in [
        ("adam", torch.optim.Adam, dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8)),
        ("rmsprop", torch.optim.RMSprop, dict(lr=0.01, alpha=0.99, eps=1e-8)),
        ("adagrad", torch.optim.Adagrad, dict(lr=0.01, eps=1e-10)),
    ]:
        param = torch.nn.Parameter(p.clone())
        opt = opt_cls([param], **kw)
        param.grad = g.clone()
        opt.step()
        task = get_task(name)
        if name == "adam":
            got = task.reference(p, g, torch.zeros_like(p), torch.zeros_like(p), 1)
        else:
            got = task.reference(p, g, torch.zeros_like(p))
        assert torch.allclose(got, param.detach(), atol=1e-6), name
    param = torch.nn.Parameter(p.clone())
    opt = torch.optim.SGD([param], lr=0.01, momentum=0.9, weight_decay=1e-4)
    param.grad = g.clone()
    opt.step()  # first step: buffer = grad
    got = get_task("sgd_momentum").reference(p, g, torch.zeros_like(p))
    assert torch.allclose(got, param.detach(), atol=1e-6)


def test_pooling_count_include_pad() -> None:
    x = torch.ones(1, 1, 4, 4)
    out = get_task("avg_pool2d").reference(x)
    assert out[0, 0, 0, 0].item() == pytest.approx(4 / 9)  # padded zeros are counted


def test_make_inputs_deterministic_and_signed() -> None:
    task = get_task("adam")
    shapes = reduced_shapes(task)[0]
    a = task.make_inputs(shapes, seed=3)
    b = task.make_inputs(shapes, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a[:4], b[:4], strict=True))
    assert a[4] == 10  # scalar step
    s = task.make_inputs(shapes, seed=3, signed=True)
    assert (s[0] < 0).any() and (s[0] == 0).any()
    assert (s[3] >= 0).all(), "exp_avg_sq keeps its non-negative distribution"
    relu = get_task("relu")
    pos = relu.make_inputs([(4, 64)], seed=0, signed=True)[0]
    assert (pos < 0).any()


def test_special_generators() -> None:
    ce = get_task("cross_entropy")
    shapes = [(16, 37), (16,)]
    logits, targets = ce.make_inputs(shapes, seed=0)
    assert targets.dtype == torch.int64 and 0 <= targets.min() and targets.max() < 37
    kl = get_task("kl_div")
    lp, tg = kl.make_inputs([(8, 33), (8, 33)], seed=0, signed=True)
    assert torch.allclose(lp.exp().sum(-1), torch.ones(8), atol=1e-5)
    assert torch.allclose(tg.sum(-1), torch.ones(8), atol=1e-5)
    hinge = get_task("hinge_loss")
    _, t = hinge.make_inputs([(8, 16), (8, 16)], seed=0, signed=True)
    assert set(t.unique().tolist()) <= {-1.0, 1.0}
    mask = get_task("masked_cumsum").make_inputs([(4, 64), (4, 64)], seed=0)[1]
    assert mask.dtype == torch.bool and mask.any() and not mask.all()


def test_with_shape_rules() -> None:
    add = get_task("add").with_shape("1x500000")
    assert [s.shape for s in add.inputs] == [(1, 500000), (1, 500000)]
    relu16 = get_task("relu").with_shape((1, 500000), dtype="fp16")
    assert relu16.inputs[0].dtype == torch.float16
    assert relu16.tolerance == Tolerance(1e-3, 1e-3)
    assert relu16.output_meta() == [((1, 500000), torch.float16)]
    ln = get_task("layer_norm").with_shape("16x2048", dtype="bf16")
    assert [s.shape for s in ln.inputs] == [(16, 2048), (2048,), (2048,)]
    assert ln.tolerance == Tolerance(1e-2, 1e-2)
    ce = get_task("cross_entropy").with_shape("64x1000")
    assert [s.shape for s in ce.inputs] == [(64, 1000), (64,)]
    assert ce.inputs[1].dtype == torch.int64
    gn = get_task("group_norm").with_shape("2x32x7x7")
    assert gn.init_args["num_channels"] == 32
    ms = get_task("mul_scalar").with_shape("3x5")
    assert ms.inputs[1].kind == "scalar" and ms.params()["s"] == 3.14
    with pytest.raises(TaskError, match="rank-3"):
        get_task("max_middim").with_shape("10x20")
    with pytest.raises(TaskError, match="Unknown dtype"):
        get_task("relu").with_shape("4x4", dtype="fp7")


def test_tolerance_defaults_and_params() -> None:
    assert get_task("relu").tolerance == Tolerance(1e-4, 1e-4)
    assert Tolerance.for_dtype(torch.int64) == Tolerance(0.0, 0.0)
    assert get_task("avg_pool2d").params() == {"kernel_size": 3, "stride": 2, "padding": 1}
    t = get_task("softmax")
    assert "def softmax" in t.source and "dim=-1" in t.source
    assert "softmax" in t.summary()


def test_task_validation() -> None:
    with pytest.raises(TaskError, match="category"):
        Task("x", "misc", lambda x: x, [InputSpec("x", (2,))])
    with pytest.raises(TaskError, match="kind"):
        InputSpec("x", (2,), kind="weird")
    t = get_task("relu")
    with pytest.raises(TaskError, match="1 inputs"):
        t.make_inputs([(2, 2), (2, 2)])
    assert math.prod(t.inputs[0].shape) * 4 == t.total_bytes
