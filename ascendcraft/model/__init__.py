"""Performance model: SoC specs, trace timeline, roofline bound and eager baseline."""

from ..version import MODEL_VERSION  # the model's version, kept where nothing imports back
from .eager import EagerOp, EagerResult, eager_us, trace_aten_ops  # noqa: E402
from .report import breakdown_text, report_fields  # noqa: E402
from .roofline import min_bytes, roofline_us  # noqa: E402
from .soc import DEFAULT_SOC, OP_CLASS, SocSpec, list_socs, load_soc  # noqa: E402
from .timeline import ModelResult, simulate  # noqa: E402

__all__ = [
    "DEFAULT_SOC", "MODEL_VERSION", "OP_CLASS", "EagerOp", "EagerResult", "ModelResult", "SocSpec",
    "breakdown_text", "eager_us", "list_socs", "load_soc", "min_bytes", "report_fields",
    "roofline_us", "simulate", "trace_aten_ops",
]
