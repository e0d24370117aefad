"""The exact commands that build a kernel with CANN, in either output form.

Direct launch: the ``direct/`` CMake project (CANN's ``ascendc_library``, bisheng) configured
and built, as a shared library the npu backend loads. Custom op: ``msopgen gen`` creates the
operator project from the msopgen JSON for ``ai_core-<SoC>``, the generated ``op_host`` and
``op_kernel`` sources are copied over its templates, and the project's ``build.sh`` builds
the installable operator package (``build_out/custom_opp_*.run``). Both are plain argv lists
with a working folder, so ``--dry-run`` prints exactly what a build would run.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Command:
    """One step of a build: argv run in ``cwd`` (None: the caller's folder)."""

    argv: tuple[str, ...]
    cwd: str | None = None

    def shell(self) -> str:
        """The step as one shell line."""
        line = " ".join(_quote(a) for a in self.argv)
        return f"(cd {shlex.quote(self.cwd)} && {line})" if self.cwd else line


def _quote(arg: str) -> str:
    """shlex quoting, except that a ``$VARIABLE`` placeholder stays expandable."""
    if "$" in arg and not any(c in arg for c in '"`\\'):
        return f'"{arg}"'
    return shlex.quote(arg)


def direct_commands(src: str | Path, build: str | Path, soc: str, cann_home: str | Path,
                    *, target: str | None = "kernels", shared: bool = True) -> list[Command]:
    """Configure and build the direct-launch project in ``src`` into ``build`` (``target``
    None: every target of the project)."""
    kind = "SHARED" if shared else "STATIC"
    return [
        Command(("cmake", "-S", str(src), "-B", str(build), f"-DSOC_VERSION={soc}",
                 f"-DASCEND_CANN_PACKAGE_PATH={cann_home}", f"-DACX_KERNEL_LIBRARY_TYPE={kind}",
                 "-DCMAKE_BUILD_TYPE=Release")),
        Command(("cmake", "--build", str(build), *(("--target", target) if target else ()), "-j")),
    ]


def custom_op_commands(cann_form: str | Path, op_json: str, project: str | Path, soc: str,
                       *, msopgen: str = "msopgen") -> list[Command]:
    """Generate the custom-op project ``project`` from ``cann_form/op_json`` with msopgen, put
    the generated op_host/op_kernel sources in it, and build it with its build.sh."""
    form = Path(cann_form)
    return [
        Command((msopgen, "gen", "-i", str(form / op_json), "-c", f"ai_core-{soc}", "-lan", "cpp",
                 "-out", str(project))),
        Command(("cp", "-r", str(form / "op_host"), str(form / "op_kernel"), str(project))),
        Command(("bash", "build.sh"), cwd=str(project)),
    ]
