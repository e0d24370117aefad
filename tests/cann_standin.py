"""A stand-in for CANN's ``ascendc.cmake`` so generated CMake projects can be configured here.

The real module defines ``ascendc_library`` (compiles AscendC sources with bisheng); the
stand-in records each call (target, library kind, sources) in ``<build>/kernels.txt`` and
makes an INTERFACE library of the target, so configuring checks every other line of the
generated project with CMake itself. Only configuring: nothing is compiled.
"""

from __future__ import annotations

from pathlib import Path

ASCENDC_CMAKE = (
    "function(ascendc_library target kind)\n"
    "  file(APPEND ${CMAKE_BINARY_DIR}/kernels.txt \"${target} ${kind} ${ARGN}\\n\")\n"
    "  add_library(${target} INTERFACE)\nendfunction()\n"
    "function(ascendc_include_directories target)\nendfunction()\n"
)


def fake_cann_home(root: Path) -> Path:
    """A toolkit folder holding only the stand-in ``compiler/tikcpp/ascendc_kernel_cmake``."""
    module = root / "compiler/tikcpp/ascendc_kernel_cmake"
    module.mkdir(parents=True, exist_ok=True)
    (module / "ascendc.cmake").write_text(ASCENDC_CMAKE)
    return root


def recorded_kernels(build: Path) -> list[list[str]]:
    """Each ``ascendc_library`` call of a configure run: [target, kind, sources joined by ;]."""
    return [line.split() for line in (build / "kernels.txt").read_text().splitlines()]
