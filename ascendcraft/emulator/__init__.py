"""CPU emulator of the AscendC API: build kernels with g++, run them in a child process,
check them like CANN's CPU debug mode, and record a per-call trace for the performance model
(by default summarised in memory: :class:`TraceSummary`).
"""

from ascendcraft.emulator.build import BuildError, ToolchainError, build_kernel
from ascendcraft.emulator.runner import (
    CORE_TYPES,
    DEFAULT_MAX_SUMMARY_RECORDS,
    DEFAULT_MAX_TRACE_BYTES,
    DEFAULT_MAX_TRACE_RECORDS,
    RunResult,
    TilingRequest,
    buffer_capacities,
    compute_tiling,
    run_kernel,
    trace_cap,
)
from ascendcraft.emulator.trace_summary import TraceSummary

__all__ = [
    "CORE_TYPES",
    "DEFAULT_MAX_SUMMARY_RECORDS",
    "DEFAULT_MAX_TRACE_BYTES",
    "DEFAULT_MAX_TRACE_RECORDS",
    "BuildError",
    "RunResult",
    "TilingRequest",
    "TraceSummary",
    "ToolchainError",
    "buffer_capacities",
    "build_kernel",
    "compute_tiling",
    "run_kernel",
    "trace_cap",
]
