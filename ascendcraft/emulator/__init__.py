"""CPU emulator of the AscendC API: build kernels with g++, run them in a child process,
check them like CANN's CPU debug mode, and record a per-call trace for the performance model.
"""

from ascendcraft.emulator.build import BuildError, ToolchainError, build_kernel
from ascendcraft.emulator.runner import (
    CORE_TYPES,
    DEFAULT_MAX_TRACE_BYTES,
    DEFAULT_MAX_TRACE_RECORDS,
    RunResult,
    TilingRequest,
    buffer_capacities,
    compute_tiling,
    run_kernel,
    trace_cap,
)

__all__ = [
    "CORE_TYPES",
    "DEFAULT_MAX_TRACE_BYTES",
    "DEFAULT_MAX_TRACE_RECORDS",
    "BuildError",
    "RunResult",
    "TilingRequest",
    "ToolchainError",
    "buffer_capacities",
    "build_kernel",
    "compute_tiling",
    "run_kernel",
    "trace_cap",
]
