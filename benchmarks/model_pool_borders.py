"""Modeled time of the pooling forms the graph frontend builds from task files (border
divisors with count_include_pad=False, ceil_mode, per-dim kernels, dilation), at the registry pools'
default shapes, beside the registry pool of the same kernel whose divisor is constant.

Each corpus task file is re-shaped to a large default shape; every candidate is built at
its default tunables (or the nearest feasible assignment), run trace-only and simulated
(model_all_ops.model_op). All times are MODELED; correctness is the tests' business.

    python benchmarks/model_pool_borders.py [--soc Ascend910B2] [--only avgpool3d]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from model_all_ops import model_op

from ascendcraft.model import MODEL_VERSION
from ascendcraft.tasks.registry import get_task
from ascendcraft.tasks.taskfile import load_task_file

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "taskfiles" / "corpus"

#: (corpus file, shape it is modeled at, dtype or None = the file's, registry op, same window)
CASES = [
    ("avgpool3d_exclude_pad", (16, 32, 64, 64, 64), None, "avg_pool3d", True),
    ("avgpool2d_ceil_exclude_fp16", (16, 64, 512, 511), None, "avg_pool2d", True),
    ("avgpool2d_ceil_exclude_fp16", (16, 64, 512, 511), torch.float32, "avg_pool2d", True),
    ("avgpool1d_ceil_include", (64, 128, 32767), None, "avg_pool1d", False),
    ("avgpool2d_tuple_kernel", (16, 64, 512, 512), None, "avg_pool2d", False),
    ("maxpool3d_tuple_ceil_fp16", (16, 32, 64, 64, 63), None, "max_pool3d", False),
    ("maxpool2d_ceil_bf16_batch1", (1, 64, 513, 513), None, "max_pool2d", False),
    ("maxpool2d_dilation2", (16, 64, 512, 512), None, "max_pool2d", False),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--soc", default="Ascend910B2")
    ap.add_argument("--only", default="", help="model only the files whose name contains this")
    a = ap.parse_args()
    print(f"modeled, model {MODEL_VERSION}, {a.soc}, default tunables")
    print(f"{'task':34s} {'dtype':8s} {'shape':18s} {'modeled us':>10s} {'roof us':>8s} {'% roof':>6s} "
          f"{'eager us':>9s} {'speedup':>7s}  candidate")
    for stem, shape, dtype, twin, same in CASES:
        if a.only not in stem:
            continue
        file_task = load_task_file(CORPUS / f"{stem}.py")
        dtype = dtype or file_task.dtype
        rows = [(stem, file_task.with_shape(shape, dtype)),
                (f"  registry {twin} ({'same window' if same else 'nearest'})",
                 get_task(twin).with_shape(shape, dtype))]
        for name, task in rows:
            r = model_op(task, a.soc)
            if r is None:
                print(f"{name:34s} no feasible candidate")
                continue
            print(f"{name:34s} {str(dtype).replace('torch.', ''):8s} {'x'.join(map(str, shape)):18s} "
                  f"{r['modeled_us']:10.1f} {r['roofline_us']:8.1f} {100 * r['roofline_frac']:6.1f} "
                  f"{r['eager_us']:9.1f} {r['speedup']:7.2f}  {r['candidate']}", flush=True)

if __name__ == "__main__":
    main()
