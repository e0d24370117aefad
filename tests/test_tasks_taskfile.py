"""Task files (KernelBench format): loading on meta, generators, categories, errors."""

from __future__ import annotations

import resource
import textwrap
import time
from pathlib import Path

import pytest
import torch

from ascendcraft.tasks import TaskError, compare, load_task_file, reduced_shapes
from ascendcraft.tasks.shapes import check_rules

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def write(tmp_path: Path, name: str, body: str) -> Path:
    p = tmp_path / f"{name}.py"
    p.write_text(HEADER + textwrap.dedent(body))
    return p


CELU = """
class Model(nn.Module):
    \"\"\"Simple model that performs a CELU activation.\"\"\"
    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.celu(x, alpha=self.alpha)

batch_size = 4096
dim = 16384

def get_inputs():
    x = torch.randn(batch_size, dim, device="cuda")
    return [x.cuda()]

def get_init_inputs():
    return [1.5]
"""

ADDCMUL = """
class Model(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, x, t1, t2):
        return torch.addcmul(x, t1, t2, value=self.value)

def get_inputs():
    return [torch.randn(8192, 4096), torch.rand(1, 4096), torch.randn(8192, 4096)]

def get_init_inputs():
    return [0.5]
"""

ABSMAX = """
class Model(nn.Module):
    def forward(self, x):
        return torch.max(torch.abs(x), dim=-1).values

def get_inputs():
    return [torch.randn(2048, 8191)]

def get_init_inputs():
    return []
"""

WHERE = """
class Model(nn.Module):
    def forward(self, x):
        return torch.where(x > 0, x, 0.1 * x**3)

def get_inputs():
    return [torch.rand(16384, 8192)]
"""

HUGE = """
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2

batch_size = 32768
dim = 65536  # 2**31 fp32 elements = 8 GiB

def get_inputs():
    return [torch.randn(batch_size, dim).to("cuda")]

def get_init_inputs():
    return []
"""

LAYERNORM = """
class Model(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        return self.ln(x)

def get_inputs():
    return [torch.randn(64, 1024, 768)]

def get_init_inputs():
    return [(768,)]
"""

KLDIV = """
class Model(nn.Module):
    def forward(self, predictions, targets, mask):
        return F.kl_div(torch.log(predictions), targets * mask, reduction="batchmean")

def get_inputs():
    p = torch.randn(4096, 4000).softmax(dim=-1)
    t = torch.randn(4096, 4000).softmax(dim=-1)
    return [p, t, torch.rand(4096, 4000) > 0.25]
"""

CROSS_ENTROPY = """
class Model(nn.Module):
    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)

batch_size = 32768
num_classes = 1000

def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]

def get_init_inputs():
    return []
"""


def test_celu_file(tmp_path: Path) -> None:
    task = load_task_file(write(tmp_path, "celu", CELU))
    assert task.name == "celu" and task.category == "activation"
    assert task.init_args == {"alpha": 1.5}
    assert task.inputs[0].shape == (4096, 16384) and task.inputs[0].dist == "randn"
    assert task.output_meta() == [((4096, 16384), torch.float32)]
    assert "CELU" in task.description and "class Model" in task.source
    for shapes in reduced_shapes(task):
        (x,) = task.make_inputs(shapes, seed=1, signed=True)
        (out,) = task.run_reference([x])
        assert compare(out, torch.celu(x, alpha=1.5), task.tolerance).ok


def test_addcmul_broadcast_operand(tmp_path: Path) -> None:
    task = load_task_file(write(tmp_path, "addcmul", ADDCMUL))
    assert task.category == "elementwise"
    assert [s.name for s in task.inputs] == ["x", "t1", "t2"]
    assert task.inputs[1].dist == "rand"
    sets = reduced_shapes(task)
    assert len(sets) >= 2
    for x, t1, t2 in sets:
        assert t1[0] == 1 and x == t2 and t1[1] == x[1]
        assert not check_rules(task, [x, t1, t2])
    inputs = task.make_inputs(sets[1], seed=0)
    assert (inputs[1] >= 0).all()  # rand stays rand in the task's own distribution
    (out,) = task.run_reference(inputs)
    assert torch.allclose(out, torch.addcmul(*inputs, value=0.5))
    wide = task.with_shape("8x100")
    assert [s.shape for s in wide.inputs] == [(8, 100), (1, 100), (8, 100)]


def test_absmax_lastdim_is_reduce(tmp_path: Path) -> None:
    task = load_task_file(write(tmp_path, "absmax", ABSMAX))
    assert task.category == "reduce"
    assert task.output_meta() == [((2048,), torch.float32)]
    assert task.init_args == {}
    for shapes in reduced_shapes(task):
        assert shapes[0][1] % 2 == 1  # odd last dim stays odd
        task.run_reference(task.make_inputs(shapes))


def test_where_cubic(tmp_path: Path) -> None:
    task = load_task_file(write(tmp_path, "leaky_cubic", WHERE))
    assert task.category == "activation"
    assert task.inputs[0].dist == "rand"
    shapes = reduced_shapes(task)[0]
    (own,) = task.make_inputs(shapes, seed=0)
    (signed,) = task.make_inputs(shapes, seed=0, signed=True)
    assert (own >= 0).all() and (signed < 0).any()  # negative branch gets exercised
    (out,) = task.run_reference([signed])
    neg = signed < 0
    assert torch.allclose(out[neg], 0.1 * signed[neg] ** 3)


def test_8gib_input_loads_without_allocating(tmp_path: Path) -> None:
    path = write(tmp_path, "huge_relu", HUGE)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    task = load_task_file(path)
    assert task.inputs[0].nbytes == 8 << 30
    assert task.output_meta() == [((32768, 65536), torch.float32)]
    sets = reduced_shapes(task)
    for shapes in sets:
        task.run_reference(task.make_inputs(shapes))
    elapsed = time.perf_counter() - t0
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
    assert grown < 300, f"peak RSS grew by {grown:.0f} MB"
    assert elapsed < 10  # filling 8 GiB with randn would take far longer on 2 cores


def test_constructor_args_fix_dims(tmp_path: Path) -> None:
    task = load_task_file(write(tmp_path, "ln", LAYERNORM))
    assert task.category == "normalization"
    assert task.init_args == {"normalized_shape": (768,)}
    assert task.reference.module_tensors() == {
        "ln.weight": ((768,), torch.float32), "ln.bias": ((768,), torch.float32)}
    assert [(s.name, s.kind, s.shape) for s in task.inputs[1:]] == [
        ("ln.weight", "state", (768,)), ("ln.bias", "state", (768,))]
    for shape, w, b in reduced_shapes(task):
        assert shape[-1] == 768 and len(shape) == 3 and w == b == (768,)
        assert shape[0] * shape[1] * 768 <= 1 << 17 or shape[:2] == (1, 1)
        task.run_reference(task.make_inputs([shape, w, b]))
    wider = task.with_shape("4x8x512")
    assert wider.init_args == {"normalized_shape": (512,)}
    assert [s.shape for s in wider.inputs] == [(4, 8, 512), (512,), (512,)]
    assert wider.output_meta() == [((4, 8, 512), torch.float32)]
    assert wider.make_inputs([(2, 3, 512), (512,), (512,)])[1].shape == (512,)


def test_factory_chain_replayed(tmp_path: Path) -> None:
    task = load_task_file(write(tmp_path, "kl", KLDIV))
    assert task.category == "loss"
    assert [s.kind for s in task.inputs] == ["tensor", "tensor", "mask"]
    assert not task.inputs[0].signed_ok
    shapes = reduced_shapes(task)[1]
    p, t, m = task.make_inputs(shapes, seed=0, signed=True)
    assert torch.allclose(p.sum(-1), torch.ones(p.shape[0]), atol=1e-5)
    assert (p > 0).all() and m.dtype == torch.bool and 0.5 < m.float().mean() < 0.95
    (out,) = task.run_reference([p, t, m])
    assert torch.isfinite(out)


def test_class_targets_follow_reduced_classes(tmp_path: Path) -> None:
    task = load_task_file(write(tmp_path, "ce", CROSS_ENTROPY))
    assert task.category == "loss"
    spec = task.inputs[1]
    assert spec.kind == "index" and spec.high == 1000 and spec.high_from == (0, 1)
    for logits_shape, targets_shape in reduced_shapes(task):
        assert targets_shape == logits_shape[:1]
        logits, targets = task.make_inputs([logits_shape, targets_shape], seed=2)
        assert targets.max() < logits_shape[1]
        task.run_reference([logits, targets])


# --------------------------------------------------------------------------- errors

BROKEN = {
    "syntax": ("""
class Model(nn.Module):
    def forward(self, x)
        return x
""", r"syntax\.py:\d+: syntax error"),
    "no_inputs": ("""
class Model(nn.Module):
    def forward(self, x):
        return x
""", "no function get_inputs"),
    "no_model": ("""
def get_inputs():
    return [torch.randn(4, 4)]
""", "no class Model"),
    "init_raises": ("""
class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        raise ValueError("k must be even")

    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(4, 4)]

def get_init_inputs():
    return [3]
""", r"init_raises\.py:\d+: Model.__init__ raised ValueError: k must be even"),
    "forward_raises": ("""
class Model(nn.Module):
    def forward(self, x, y):
        return x @ y

def get_inputs():
    return [torch.randn(4, 5), torch.randn(4, 5)]
""", r"forward_raises\.py:\d+: Model.forward raised RuntimeError.*x @ y"),
    "inputs_raise": ("""
class Model(nn.Module):
    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(N, 4)]
""", r"inputs_raise\.py:\d+: get_inputs\(\) raised NameError"),
    "import_fails": ("""
import not_a_real_module_xyz
""", r"import_fails\.py:\d+: importing the file raised ModuleNotFoundError"),
    "bad_return": ("""
class Model(nn.Module):
    def forward(self, x):
        return x

def get_inputs():
    return torch.randn(4)
""", "must return a list"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_files_give_one_paragraph(tmp_path: Path, case: str) -> None:
    body, pattern = BROKEN[case]
    path = write(tmp_path, case, body)
    with pytest.raises(TaskError, match=pattern) as info:
        load_task_file(path)
    msg = str(info.value)
    assert "\n" not in msg and "Traceback" not in msg
    assert str(path) in msg


def test_line_number_points_into_file(tmp_path: Path) -> None:
    path = write(tmp_path, "fwd", BROKEN["forward_raises"][0])
    with pytest.raises(TaskError) as info:
        load_task_file(path)
    lineno = int(str(info.value).split(f"{path}:")[1].split(":")[0])
    assert "x @ y" in path.read_text().splitlines()[lineno - 1]


def test_missing_file() -> None:
    with pytest.raises(TaskError, match="Cannot read task file"):
        load_task_file("/nonexistent/task.py")
