"""Performance model: trace timeline, roofline bound and eager baseline, on the numbers of a
SoC (``ascendcraft.soc``)."""

from ..version import MODEL_VERSION  # the model's version, kept where nothing imports back
from .eager import EagerOp, EagerResult, eager_us, trace_aten_ops  # noqa: E402
from .op_costs import OP_CLASS  # noqa: E402
from .report import breakdown_text, report_fields  # noqa: E402
from .roofline import min_bytes, roofline_us  # noqa: E402
from .timeline import ModelResult, simulate  # noqa: E402

__all__ = [
    "MODEL_VERSION", "OP_CLASS", "EagerOp", "EagerResult", "ModelResult", "breakdown_text",
    "eager_us", "min_bytes", "report_fields", "roofline_us", "simulate", "trace_aten_ops",
]
