"""The prompts, filled in from a versioned template file.

The wording lives in ``prompts/<version>.md`` (package data), one section per message
(``system``, ``propose``, ``repair``, ``optimise``, ``format``); this module only supplies the values:
the DSL reference (the cube chapter too for a cube task), few-shot examples
(:mod:`.examples`), the task (its PyTorch source, inputs with shapes and dtypes, outputs),
the SoC's buffers and cores from its typed :class:`~ascendcraft.soc.Soc`, and how many
distinct candidates are wanted. Values are substituted once (``string.Template``): a ``$``
in a task's source stays a ``$``.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ...soc import Soc
from ...status import Status
from ...tasks.task import Task, dtype_name
from .examples import Example, category_examples

PROMPT_VERSION = "v1"
SECTIONS = ("system", "propose", "repair", "optimise", "format")
_SECTION = re.compile(r"^## \[([a-z]+)\][ \t]*$", re.MULTILINE)

ANSWER_EXAMPLE = {"candidates": [{
    "name": "rows_whole",
    "structure": "ROWS whole rows per tile, one pass",
    "dsl": "@kernel(category=\"...\")\ndef name(x: In[f32], y: Out[f32]):\n    ...",
    "tiling": [{"tunable": "ROWS", "value": 8, "reason": "8 rows of 4096 f32 fit UB twice"}],
}]}


def load_template(version: str = PROMPT_VERSION) -> dict[str, str]:
    """The sections of ``prompts/<version>.md``; a missing section is an error naming it."""
    text = resources.files("ascendcraft.search.llm").joinpath("prompts", f"{version}.md").read_text(
        encoding="utf-8")
    parts = _SECTION.split(text)
    sections = {parts[i]: parts[i + 1].strip("\n") + "\n" for i in range(1, len(parts) - 1, 2)}
    missing = [s for s in SECTIONS if s not in sections]
    if missing:
        raise ValueError(f"prompt template {version} lacks the section(s) {', '.join(missing)}")
    return sections


def _reference(name: str) -> str:
    return resources.files("ascendcraft.dsl").joinpath(name).read_text(encoding="utf-8")


def is_cube_task(task: Task) -> bool:
    """A task for the cube unit (matrix products): its prompt carries the cube chapter."""
    return task.category == "matmul"


#: Where a failure of each status happened, in the words of a repair prompt.
STAGES = {Status.DSL_ERROR: "parse/check", Status.BUILD_ERROR: "build",
          Status.CHECK_ERROR: "run (the emulator's AscendC API checks)",
          Status.WRONG: "correctness (compared with the PyTorch reference)",
          Status.CRASH: "run", Status.TIMEOUT: "run (time limit)",
          Status.INFEASIBLE: "fit (checked before any build)", Status.TRACE_LIMIT: "timing"}

_LINE = re.compile(r"\bline (\d+), col \d+")
#: where the evaluator says a run failed: ``(shapes [(16, 1000)], seed 0, signed inputs)``
_WHERE = re.compile(r"\(shapes \[([0-9(), ]*)\], seed (\d+)(?:, (signed|task) inputs)?\)")


def failure_line(message: str) -> int | None:
    """The program line a DSL error names (``line N, col M: ...``)."""
    m = _LINE.search(message)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Failure:
    """What went wrong with a candidate, as exactly as it is known (for a repair round)."""

    stage: str  # the word for where it failed: parse/check, fit, build, run, correctness...
    status: str
    message: str
    line: int | None = None
    params: Mapping[str, int] | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    shapes: Sequence[Sequence[Sequence[int]]] = ()

    @classmethod
    def of(cls, status: Status | str, message: str, params: Mapping[str, int] | None = None,
           max_abs_err: Any = None, max_rel_err: Any = None,
           shapes: Sequence[Sequence[Sequence[int]]] = ()) -> Failure:
        """A verdict's failure (a trial's, a check's) as a repair round states it; error
        figures only for a wrong result."""
        st = Status.parse(status)
        wrong = st is Status.WRONG

        def figure(x: Any) -> float | None:
            return float(x) if wrong and isinstance(x, (int, float)) and not isinstance(x, bool) else None

        return cls(STAGES.get(st, "run"), st.value, message, line=failure_line(message),
                   params=dict(params) if params is not None else None,
                   max_abs_err=figure(max_abs_err), max_rel_err=figure(max_rel_err),
                   shapes=tuple(shapes))

    def text(self, dsl: str) -> str:
        lines = [f"- stage: {self.stage} (status {self.status})", f"- error: {self.message}"]
        if self.line:
            src = dsl.splitlines()
            if 0 < self.line <= len(src):
                lines.append(f"- line {self.line}: `{src[self.line - 1].strip()}`")
        where = _WHERE.search(self.message)
        if where:
            shapes = re.findall(r"\(([0-9, ]*)\)", where.group(1))
            dims = ", ".join("x".join(d.strip() for d in sh.split(",") if d.strip()) or "()"
                             for sh in shapes)
            kind = f", {where.group(3)} inputs" if where.group(3) else ""
            lines.append(f"- failing shapes: {dims} (seed {where.group(2)}{kind})")
        if self.max_abs_err is not None:
            rel = f", max rel err {self.max_rel_err:.3g}" if self.max_rel_err is not None else ""
            lines.append(f"- error figures: max abs err {self.max_abs_err:.3g}{rel}")
        if self.params:
            lines.append(f"- tunables used: {json.dumps(dict(self.params))}")
        if self.shapes:
            sets = "; ".join(", ".join("x".join(map(str, s)) or "()" for s in ss) for ss in self.shapes)
            lines.append(f"- shapes checked: {sets}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Incumbent:
    """The best correct kernel so far and its figures (for an optimisation round)."""

    name: str
    origin: str
    dsl: str
    params: Mapping[str, int]
    time_us: float
    timing_kind: str
    metrics: Mapping[str, Any]


class Prompts:
    """The messages of one task on one SoC."""

    def __init__(self, task: Task, soc: Soc, candidates: int, *, version: str = PROMPT_VERSION,
                 examples: list[Example] | None = None) -> None:
        self.task = task
        self.soc = soc
        self.candidates = candidates
        self.version = version
        self.sections = load_template(version)
        self._examples = examples

    # ---- the parts ----------------------------------------------------------------------
    def examples(self) -> list[Example]:
        if self._examples is None:
            self._examples = category_examples(self.task)
        return self._examples

    def _soc_values(self) -> dict[str, Any]:
        s = self.soc
        return {"soc_name": s.name, "vector_cores": s.vector_cores, "cube_cores": s.cube_cores,
                "organisation": s.organisation, "ub_kib": s.ub_kib, "ub_budget_kib": s.ub_budget_kib,
                "l1_kib": s.l1_kib, "l0a_kib": s.l0a_kib, "l0b_kib": s.l0b_kib, "l0c_kib": s.l0c_kib,
                "hbm_gbps": f"{s.hbm_gbps:g}",
                "data_copy_pad": "yes" if s.capabilities.data_copy_pad else "no",
                "bf16": "yes" if s.capabilities.bf16 else "no"}

    def task_block(self) -> str:
        t = self.task
        lines = [f"# The task: `{t.name}` ({t.category})"]
        if t.description:
            lines.append(t.description)
        lines += ["PyTorch reference (the kernel computes exactly this):", "```python",
                  (t.source or "(source not available)").strip(), "```",
                  "Inputs, in order, at their full shapes:"]
        lines += [f"- {s.describe()}" for s in t.inputs]
        try:
            outs = ", ".join(f"{'x'.join(map(str, sh)) or 'scalar'} {dtype_name(dt)}"
                             for sh, dt in t.output_meta())
        except Exception:  # noqa: BLE001 - a reference the meta device cannot run
            outs = "(computed by the reference)"
        lines.append(f"Outputs: {outs}")
        params = t.params()
        if params:
            lines.append("Parameters baked into the reference: "
                         + ", ".join(f"{k}={v!r}" for k, v in params.items()))
        tol = t.tolerance
        if tol is not None:
            lines.append(f"Tolerance: |kernel - reference| <= {tol.atol:g} + {tol.rtol:g} * |reference|")
        return "\n".join(lines)

    # ---- the messages -------------------------------------------------------------------
    def _fill(self, section: str, values: Mapping[str, Any]) -> str:
        return string.Template(self.sections[section]).substitute(values)

    def system(self) -> str:
        cube = ("\n# Cube stages\n" + _reference("CUBE_REFERENCE.md")) if is_cube_task(self.task) else ""
        return self._fill("system", {
            **self._soc_values(), "answer_format": json.dumps(ANSWER_EXAMPLE, indent=1),
            "dsl_reference": _reference("REFERENCE.md").strip(), "cube_reference": cube})

    def _messages(self, user: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system()}, {"role": "user", "content": user}]

    def propose(self, n: int | None = None) -> list[dict[str, str]]:
        examples = "\n".join(e.text() for e in self.examples()) or "(none for this category)"
        return self._messages(self._fill("propose", {
            "task_block": self.task_block(), "examples": examples, "task_name": self.task.name,
            "n_candidates": n or self.candidates}))

    def repair(self, name: str, dsl: str, failure: Failure) -> list[dict[str, str]]:
        return self._messages(self._fill("repair", {
            "task_block": self.task_block(), "candidate_name": name, "dsl": dsl.strip(),
            "failure": failure.text(dsl)}))

    def reformat(self, messages: Sequence[dict[str, str]], answer: str,
                 problem: str) -> list[dict[str, str]]:
        """The conversation so far, the unreadable answer (its start) and the reminder."""
        return [*messages, {"role": "assistant", "content": answer[:4000]},
                {"role": "user", "content": self._fill("format", {"problem": problem})}]

    def optimise(self, inc: Incumbent, n: int) -> list[dict[str, str]]:
        m = inc.metrics
        pipes = m.get("pipes")
        pipes_text = (", ".join(f"{k} {100 * float(v):.0f}%" for k, v in pipes.items())
                      if isinstance(pipes, Mapping) and pipes else "(not reported)")
        speedup = m.get("speedup")
        frac = m.get("roofline_frac")
        return self._messages(self._fill("optimise", {
            "task_block": self.task_block(), "candidate_name": inc.name, "origin": inc.origin,
            "dsl": inc.dsl.strip(), "params": json.dumps(dict(inc.params)),
            "time_us": f"{inc.time_us:.3f}", "timing_kind": inc.timing_kind or "time",
            "speedup": f"{float(speedup):.2f}x" if isinstance(speedup, (int, float)) else "(unknown)",
            "roofline": (f"{100 * float(frac):.1f}% of the roofline time"
                         if isinstance(frac, (int, float)) else "(unknown)"),
            "bound": str(m.get("bound") or "(unknown)"), "pipes": pipes_text,
            "task_name": self.task.name, "n_candidates": n}))
