"""The graph frontend's reading of the shared ATen tracer (:mod:`ascendcraft.tasks.aten`).

The trace itself (meta tensors, one ``networkx`` node per ATen call, arguments bound by
schema name) is the tasks layer's, shared with the eager cost model. What the frontend adds
is its error: anything that stops a dataflow reading of the trace - a reference that does not
run on meta tensors, returns something other than tensors, or updates a view in place - ends
as :class:`Unsupported` with one readable paragraph.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...tasks.aten import AtenGraph, Ref, TraceError
from ...tasks.aten import trace_task as _trace_task
from ...tasks.task import Shape, Task


class Unsupported(Exception):
    """The graph frontend cannot handle the task; the message is one readable paragraph."""


def trace_task(task: Task, shapes: Sequence[Shape] | None = None,
               scalars_as_tensors: bool = True) -> AtenGraph:
    """The task's ATen graph (see :func:`ascendcraft.tasks.aten.trace_task`) as a dataflow
    graph the frontend can read; raises :class:`Unsupported` when it is not one."""
    try:
        ag = _trace_task(task, shapes, scalars_as_tensors)
    except TraceError as e:
        raise Unsupported(e.notes[0] if e.notes else str(e)) from None
    if ag.notes:
        raise Unsupported(ag.notes[0])
    if ag.returned:
        raise Unsupported(f"the reference returns a {ag.returned[0]}, not a tensor")
    return ag


__all__ = ["AtenGraph", "Ref", "Unsupported", "trace_task"]
