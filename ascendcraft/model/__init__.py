"""Performance model: SoC specs, trace timeline, roofline bound and eager baseline."""

from .eager import EagerOp, EagerResult, eager_us, trace_aten_ops
from .report import breakdown_text, report_fields
from .roofline import min_bytes, roofline_us
from .soc import DEFAULT_SOC, OP_CLASS, SocSpec, list_socs, load_soc
from .timeline import ModelResult, simulate

#: Version of the performance model; bump it whenever modeled times change, so runs made with
#: another model are not resumed or compared as if they were the same.
MODEL_VERSION = "1"

__all__ = [
    "DEFAULT_SOC", "MODEL_VERSION", "OP_CLASS", "EagerOp", "EagerResult", "ModelResult", "SocSpec",
    "breakdown_text", "eager_us", "list_socs", "load_soc", "min_bytes", "report_fields",
    "roofline_us", "simulate", "trace_aten_ops",
]
