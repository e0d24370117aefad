"""The registry's definition table: what one built-in task is (reference, input layout as a
function of the primary shape, constructor args), and how a definition becomes a Task.

The definitions themselves live in :mod:`.registry_vector` and :mod:`.registry_cube`; the
public API (``get_task``, ``list_tasks``) in :mod:`.registry`, which imports both.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .task import InputSpec, Shape, Task, TaskError

Layout = Callable[[Shape, torch.dtype], list[InputSpec]]


@dataclass(frozen=True)
class _Def:
    name: str
    category: str
    fn: Callable[..., Any]
    shape: Shape
    layout: Layout
    init: dict[str, Any] | Callable[[Shape], dict[str, Any]]
    ranks: tuple[int, ...] | None
    description: str
    shape_rule: str
    dtype: torch.dtype = torch.float32  # the op's default dtype (fp16 for the matmul family)
    check_shapes: tuple[tuple[Shape, ...], ...] | None = None  # the task's own correctness sets


_DEFS: dict[str, _Def] = {}


def _build(d: _Def, shape: Shape, dtype: torch.dtype) -> Task:
    if d.ranks is not None and len(shape) not in d.ranks:
        ranks = " or ".join(str(r) for r in d.ranks)
        raise TaskError(
            f"Task {d.name!r} needs a rank-{ranks} shape for its first input "
            f"(default {'x'.join(map(str, d.shape))}); got {'x'.join(map(str, shape)) or '()'}."
        )
    if any(s <= 0 for s in shape):
        raise TaskError(f"Task {d.name!r}: shape {shape} has an empty dimension.")
    init = d.init(shape) if callable(d.init) else dict(d.init)
    ref = functools.partial(d.fn, **init) if init else d.fn
    if init:
        functools.update_wrapper(ref, d.fn)
    src = inspect.getsource(d.fn)
    specs = d.layout(tuple(shape), dtype)
    header = "# inputs: " + "; ".join(s.describe() for s in specs)
    if init:
        header += "\n# params: " + ", ".join(f"{k}={v!r}" for k, v in init.items())
    task = Task(
        name=d.name,
        category=d.category,
        reference=ref,
        inputs=specs,
        init_args=init,
        source=f"{header}\n{src}",
        description=d.description,
        origin="registry",
        shape_rule=d.shape_rule,
        _builder=functools.partial(_build, d),
        check_shapes=None if d.check_shapes is None else [list(s) for s in d.check_shapes],
    )
    return task


def _register(
    name: str,
    category: str,
    fn: Callable[..., Any],
    shape: Shape,
    layout: Layout,
    *,
    init: dict[str, Any] | Callable[[Shape], dict[str, Any]] | None = None,
    ranks: tuple[int, ...] | None = None,
    description: str = "",
    shape_rule: str = "",
    dtype: torch.dtype = torch.float32,
    check_shapes: Sequence[Sequence[Shape]] | None = None,
) -> None:
    if name in _DEFS:
        raise ValueError(f"duplicate task {name}")
    sets = None if check_shapes is None else tuple(tuple(tuple(s) for s in ss) for ss in check_shapes)
    _DEFS[name] = _Def(name, category, fn, tuple(shape), layout, init or {}, ranks,
                       description, shape_rule, dtype, sets)
