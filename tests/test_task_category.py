"""A task file's category comes from the ATen ops its reference runs, not from its file or
class names (a name is never evidence of what a task computes): it picks the LLM prompt's
chapter (the cube's for matrix products) and examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascendcraft.tasks.taskfile import load_task_file

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
TAIL = "\n\ndef get_init_inputs():\n    return []\n"

CASES = [
    # (file name, body, expected): names chosen to mislead
    ("matmul_relu_pool.py", "class Model(nn.Module):\n    def forward(self, a, b):\n        return a * b + 1\n\n"
     "def get_inputs():\n    return [torch.randn(8, 8), torch.randn(8, 8)]", "elementwise"),
    # the Linear comes from a helper outside the class: no keyword in the Model's source
    ("blocks.py", "def make(d):\n    return nn.Sequential(nn.Linear(d, d), nn.ReLU())\n\n"
     "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.f = make(16)\n\n"
     "    def forward(self, x):\n        return self.f(x)\n\n"
     "def get_inputs():\n    return [torch.randn(4, 16)]", "matmul"),
    ("softmax_loss.py", "class Model(nn.Module):\n    def forward(self, x):\n        return F.layer_norm(x, (32,))\n\n"
     "def get_inputs():\n    return [torch.randn(4, 32)]", "normalization"),
    ("norm.py", "class Model(nn.Module):\n    def forward(self, x):\n        return x.cumsum(-1)\n\n"
     "def get_inputs():\n    return [torch.randn(4, 32)]", "math"),
    ("gemm.py", "class Model(nn.Module):\n    def forward(self, x):\n        return F.max_pool2d(x, 2)\n\n"
     "def get_inputs():\n    return [torch.randn(1, 2, 8, 8)]", "pooling"),
    ("elementwise_add.py", "class Model(nn.Module):\n    def forward(self, x, t):\n        return F.mse_loss(x, t)\n\n"
     "def get_inputs():\n    return [torch.randn(4, 32), torch.randn(4, 32)]", "loss"),
    # losses that trace to plain arithmetic: one number from a prediction and a target
    ("norm_stats.py", "class Model(nn.Module):\n    def forward(self, p, t):\n        return ((p - t) ** 2).mean()\n\n"
     "def get_inputs():\n    return [torch.randn(4, 32), torch.randn(4, 32)]", "loss"),
    ("pool.py", "class Model(nn.Module):\n    def forward(self, p, t):\n"
     "        return F.kl_div(torch.log(p), t, reduction='batchmean')\n\n"
     "def get_inputs():\n    return [torch.rand(4, 32), torch.rand(4, 32)]", "loss"),
    ("relu.py", "class Model(nn.Module):\n    def forward(self, x):\n        return x.amax(dim=1)\n\n"
     "def get_inputs():\n    return [torch.randn(4, 32)]", "reduce"),
    ("layer_norm.py", "class Model(nn.Module):\n    def forward(self, x):\n        return torch.sigmoid(x)\n\n"
     "def get_inputs():\n    return [torch.randn(4, 32)]", "activation"),
]


@pytest.mark.parametrize("name,body,expected", CASES, ids=[c[0] for c in CASES])
def test_category_follows_what_the_reference_computes(tmp_path: Path, name: str, body: str,
                                                      expected: str) -> None:
    f = tmp_path / name
    f.write_text(HEAD + body + TAIL)
    assert load_task_file(str(f)).category == expected
