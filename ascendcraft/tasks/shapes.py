"""Reduced shapes for correctness runs, derived automatically from the full shapes.

Full task shapes are far too large to run the reference on (GBs), so candidates are
checked on small shape sets that still exercise what the full shape exercises:

1. **Rank is kept** - a kernel tiled for 4-D must be checked on 4-D.
2. **Broadcast relations are kept** - a dim of size 1 stays 1 (broadcast), and dims
   that are equal *across inputs* stay equal (``add``'s operands, layer_norm's weight
   vs ``x``'s last dim, cross_entropy targets vs logits rows).  Equal dims are linked
   by position (right-aligned, then left-aligned) and, when neither matches, by value;
   if the reference rejects the result on the meta device, every equal-valued dim is
   tied instead (e.g. square operands).
3. **Dims fixed by constructor arguments are kept** - an int (or tuple-of-int) init
   arg whose value equals a dim (``normalized_shape``, ``num_features``, channels...)
   means the module is built for exactly that extent.  ``dim``/``axis``-style args are
   indices, not extents, and are ignored.  Kernel-size args also set a floor so pooling
   windows still fit.  Fixed dims are kept even if that exceeds the budget.
4. **Alignment class is kept** per dim and per dtype: 1 stays 1; a dim whose byte
   size (``dim * itemsize``) is a multiple of 32 B stays a multiple of 32 B; an odd dim
   stays odd; any other dim stays even but not 32 B aligned.  The Ascend vector unit
   moves 32 B blocks, so these classes decide which code paths (tails, padding) run.
   Only when that cannot fit the budget (fp16 rank-4/5: every aligned dim >= 16) do
   outer dims keep just 1 / odd / even; the innermost dim always keeps its class.
5. **Tails are exercised** - besides a ``regular`` set there is a ``tail`` set whose
   innermost dim is ~1000 with an odd factor (e.g. 1000 = 8 x 125 for fp32: 32 B
   aligned but not a multiple of any power-of-two tile above 8 elements, odd dims ~999)
   and an ``outer`` set with ~1000 rows so multi-core splits have remainders.
6. **Innermost extents kept as a fallback** - when no set above is accepted (a task
   whose constructor or forward ties the last dim to a size it does not equal:
   ``split(x, [h, h], -1)`` with ``h`` from the constructor, ``x.narrow(-1, n - k, k)``,
   one input's last dim twice another's), the innermost dim of every input keeps its
   full extent and only the outer dims shrink (sets ``inner`` and ``inner-outer``),
   provided those extents stay under ``INNER_KEEP_LIMIT`` elements per input.

Every input of every set has at most ``budget_elems`` elements (unless fixed dims
force more); sets are validated by running the reference on the meta device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from . import limits
from .task import Shape, Task, TaskError, is_index_like_arg

DEFAULT_BUDGET = 1 << 17
BLOCK_BYTES = 32
TAIL_TARGET = 1000

PROFILES: tuple[str, ...] = ("regular", "tail", "outer")
#: fallback profiles (rule 6) and the profile whose outer-dim targets each one uses
INNER_PROFILES: tuple[tuple[str, str], ...] = (("inner", "regular"), ("inner-outer", "outer"))
INNER_KEEP_LIMIT = 1 << 22  # innermost extents kept at full size only up to 4 Mi elements


def align_quantum(itemsize: int) -> int:
    """Elements per 32 B block (fp32: 8, fp16/bf16: 16, int64: 4, bool/int8: 32)."""
    return max(1, BLOCK_BYTES // itemsize)


def alignment_class(size: int, itemsize: int) -> str:
    """``one`` | ``aligned`` (multiple of 32 B) | ``odd`` | ``unaligned`` (even, not 32 B)."""
    if size == 1:
        return "one"
    if size % align_quantum(itemsize) == 0:
        return "aligned"
    return "odd" if size % 2 else "unaligned"


def fixed_extents(task: Task) -> set[int]:
    """Dim sizes fixed by constructor args (ints > 1 and tuples of ints, not ``dim`` args)."""
    vals: set[int] = set()
    for name, v in task.init_args.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            if v > 1 and not is_index_like_arg(name, v):
                vals.add(v)
        elif isinstance(v, (tuple, list, torch.Size)) and v and all(
            isinstance(x, int) and not isinstance(x, bool) for x in v
        ):
            if not _is_index_name(name):
                vals.update(x for x in v if x > 1)
    dims = {d for s in task.inputs if s.is_tensor for d in s.shape}
    return vals & dims


def _is_index_name(name: str) -> bool:
    return is_index_like_arg(name, 0)


def size_floor(task: Task) -> int:
    """Smallest extent a reduced dim may get: the largest kernel/window size (pooling)."""
    floor = 1
    for name, v in task.init_args.items():
        low = name.lower()
        if "kernel" in low or "window" in low:
            if isinstance(v, int) and not isinstance(v, bool):
                floor = max(floor, v)
            elif isinstance(v, (tuple, list)):
                floor = max([floor, *[x for x in v if isinstance(x, int)]])
    return floor


@dataclass
class _Group:
    members: list[tuple[int, int]]
    orig: int
    itemsizes: set[int]
    pos: int  # distance from the innermost dim (max over members: targets (N,) count as rows)
    fixed: bool = False
    classes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.classes = [alignment_class(self.orig, s) for s in sorted(self.itemsizes)]

    relaxed: bool = False  # outer dim whose 32 B class was given up for the budget

    def matches(self, c: int) -> bool:
        if self.relaxed:
            return _parity(c) == _parity(self.orig)
        return [alignment_class(c, s) for s in sorted(self.itemsizes)] == self.classes

    def tail_ok(self, c: int) -> bool:
        """Aligned dims in tail sets use an odd number of 32 B blocks (1000 = 8 x 125)."""
        if self.relaxed or "aligned" not in self.classes:
            return True
        q = max(align_quantum(s) for s in self.itemsizes)
        return (c // q) % 2 == 1

    def pick(self, desire: int, tail: bool, floor: int) -> int:
        """Largest same-class size <= desire (and >= floor), searching upwards if none."""
        if self.fixed:
            return self.orig
        lo = min(floor, self.orig)
        start = max(min(desire, self.orig), 1)

        def ok(c: int) -> bool:
            return c >= lo and self.matches(c) and (not tail or self.tail_ok(c))

        for c in range(start, 1, -1):
            if ok(c):
                return c
        for c in range(start + 1, self.orig + 1):
            if ok(c):
                return c
        if tail:  # no tail-shaped member of the class: fall back to any member
            return self.pick(desire, False, floor)
        return self.orig


def _parity(n: int) -> str:
    return "one" if n == 1 else "odd" if n % 2 else "even"


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[tuple[int, int], tuple[int, int]] = {}

    def find(self, x: tuple[int, int]) -> tuple[int, int]:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: tuple[int, int], b: tuple[int, int]) -> None:
        self.parent[self.find(a)] = self.find(b)


def _groups(task: Task, mode: str) -> list[_Group]:
    """Link dims that must stay equal; ``mode`` is ``positional`` or ``value``."""
    specs = task.inputs
    idx = [i for i, s in enumerate(specs) if s.is_tensor]
    uf = _UnionFind()
    nodes = [(i, d) for i in idx for d, v in enumerate(specs[i].shape) if v > 1]
    for n in nodes:
        uf.find(n)
    if mode == "value":
        by_val: dict[int, tuple[int, int]] = {}
        for i, d in nodes:
            v = specs[i].shape[d]
            if v in by_val:
                uf.union((i, d), by_val[v])
            else:
                by_val[v] = (i, d)
    else:
        for k in idx:
            sk = specs[k].shape
            for i in idx:
                if i == k:
                    continue
                si = specs[i].shape
                for lk, v in enumerate(sk):
                    if v <= 1:
                        continue
                    right = lk + len(si) - len(sk)
                    if 0 <= right < len(si) and si[right] == v:
                        uf.union((k, lk), (i, right))
                    elif lk < len(si) and si[lk] == v:
                        uf.union((k, lk), (i, lk))
                    else:
                        for li, w in enumerate(si):
                            if w == v:
                                uf.union((k, lk), (i, li))
    comps: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for n in nodes:
        comps.setdefault(uf.find(n), []).append(n)
    fixed_vals = fixed_extents(task)
    groups = []
    for members in comps.values():
        i0, d0 = members[0]
        orig = specs[i0].shape[d0]
        isz = {torch.empty((), dtype=specs[i].dtype).element_size() for i, _ in members}
        pos = max(len(specs[i].shape) - 1 - d for i, d in members)
        g = _Group(sorted(members), orig, isz, pos)
        g.fixed = orig in fixed_vals or any(specs[i].data is not None or specs[i].kind == "state"
                                             for i, _ in members)
        groups.append(g)
    groups.sort(key=lambda g: g.members)
    return groups


def _apply(task: Task, groups: list[_Group], sizes: dict[int, int]) -> list[Shape]:
    shapes = [list(s.shape) if s.is_tensor else [] for s in task.inputs]
    for gi, g in enumerate(groups):
        for i, d in g.members:
            shapes[i][d] = sizes[gi]
    return [tuple(s) for s in shapes]


def _assign(task: Task, groups: list[_Group], profile: str, budget: int) -> list[Shape]:
    """Sizes for one profile; outer dims fall back to parity classes only if needed.

    With strict classes every aligned dim of an fp16 tensor is >= 16, so a rank-4/5
    tensor may not fit the budget.  Only then outer dims (not the
    innermost) keep only 1 / odd / even - their own byte size does not decide any
    32 B alignment; the innermost dim always keeps its full class.
    """
    shapes, bad = _assign_once(task, groups, profile, budget, relax=False)
    if bad:
        shapes, _ = _assign_once(task, groups, profile, budget, relax=True)
    for g in groups:
        g.relaxed = False
    return shapes


def _assign_once(
    task: Task, groups: list[_Group], profile: str, budget: int, relax: bool
) -> tuple[list[Shape], bool]:
    for g in groups:
        g.relaxed = relax and g.pos > 0
    floor = size_floor(task)
    max_pos = max((g.pos for g in groups), default=0)
    outer_gi = {gi for gi, g in enumerate(groups) if g.pos == max_pos and g.pos > 0}

    def desire(gi: int, g: _Group) -> tuple[int, bool]:
        if profile == "regular":
            return (512 if g.pos == 0 else 32 if g.pos == 1 else 8), False
        if profile == "tail":
            return (TAIL_TARGET, True) if g.pos == 0 else (5, False)
        if gi in outer_gi:
            return TAIL_TARGET + 1, True
        return (48, True) if g.pos == 0 else (5, False)

    sizes = {gi: g.pick(*desire(gi, g), floor) for gi, g in enumerate(groups)}

    def priority(gi: int) -> tuple[int, int]:
        g = groups[gi]
        if profile == "tail":
            return (0 if g.pos > 0 else 1, -sizes[gi])
        if profile == "outer":
            return (1 if gi in outer_gi else 0, -sizes[gi])
        return (0, -sizes[gi])

    exhausted: set[int] = set()
    while True:
        shapes = _apply(task, groups, sizes)
        over = [i for i, s in enumerate(task.inputs) if s.is_tensor and math.prod(shapes[i]) > budget]
        if not over:
            return shapes, False
        cands = [
            gi for gi, g in enumerate(groups)
            if not g.fixed and gi not in exhausted and any(i in over for i, _ in g.members)
        ]
        if not cands:
            return shapes, True  # over budget (fixed dims are kept regardless)
        gi = min(cands, key=priority)
        _, is_tail = desire(gi, groups[gi])
        new = groups[gi].pick(max(sizes[gi] // 2, 1), is_tail, floor)
        if new >= sizes[gi]:
            new = groups[gi].pick(max(sizes[gi] // 2, 1), False, floor)
        if new >= sizes[gi]:
            exhausted.add(gi)
        else:
            sizes[gi] = new


def _valid(task: Task, shapes: list[Shape]) -> bool:
    """Does the reference accept these shapes? (meta device; small CPU run if no meta)."""
    try:
        if task.meta_ok:
            task.output_meta(shapes)
        else:
            task.run_reference(task.make_inputs(shapes))
    except Exception:  # noqa: BLE001 - any failure means "not valid"
        return False
    return True


def labeled_reduced_shapes(
    task: Task, budget_elems: int = DEFAULT_BUDGET
) -> list[tuple[str, list[Shape]]]:
    """Like :func:`reduced_shapes` but each set comes with its profile name."""
    errors: list[str] = []
    out = _accepted_sets(task, budget_elems, [(p, p) for p in PROFILES], False, errors)
    if not out and not any(s.is_tensor and s.shape and s.shape[-1] > INNER_KEEP_LIMIT for s in task.inputs):
        out = _accepted_sets(task, budget_elems, INNER_PROFILES, True, errors)  # rule 6
    if not out:
        raise TaskError(
            f"Task {task.name!r}: could not derive reduced shapes that the reference accepts "
            f"(tried {'; '.join(errors)}); the full shapes are "
            f"{task.shapes} - add a registry layout or give smaller shapes with --shape."
        )
    _refuse_sets_over_memory(task, out, budget_elems)
    return out


def _refuse_sets_over_memory(task: Task, sets: list[tuple[str, list[Shape]]], budget_elems: int) -> None:
    """Rule 3 keeps dims fixed by the constructor even past the budget. A set they force past
    this machine's memory ceiling (:func:`limits.check_bytes`, the ceiling the full-shape check
    uses) cannot be checked at all: refused by name, before a run the kernel would kill."""
    ceiling = limits.memory_ceiling()
    for _, shapes in sets:
        if all(math.prod(s) <= budget_elems for s, spec in zip(shapes, task.inputs, strict=True) if spec.is_tensor):
            continue
        need = limits.check_bytes(task, shapes)
        if need > ceiling:
            raise TaskError(
                f"Task {task.name!r}: its constructor fixes dims that a correctness run cannot shrink "
                f"(the smallest checkable shapes are {shapes}), and checking there needs about "
                f"{limits.fmt_bytes(need)}, above this machine's ceiling of {limits.fmt_bytes(ceiling)} "
                f"(a quarter of its memory). Build the module with smaller sizes (get_init_inputs) to "
                f"check it."
            )


def _accepted_sets(task: Task, budget_elems: int, profiles: Sequence[tuple[str, str]], keep_inner: bool,
                   errors: list[str]) -> list[tuple[str, list[Shape]]]:
    """One set per (label, profile) that the reference accepts, linking dims by position
    first and by value if that fails; duplicates dropped, the refused sets appended to
    ``errors``. ``keep_inner`` (rule 6): innermost dims keep their full extent."""
    out: list[tuple[str, list[Shape]]] = []
    seen: set[tuple[Shape, ...]] = set()
    group_sets = {mode: _groups(task, mode) for mode in ("positional", "value")}
    for groups in group_sets.values() if keep_inner else ():
        for g in groups:
            g.fixed = g.fixed or g.pos == 0
    for label, profile in profiles:
        for mode in ("positional", "value"):
            shapes = _assign(task, group_sets[mode], profile, budget_elems)
            if _valid(task, shapes):
                if tuple(shapes) not in seen:
                    seen.add(tuple(shapes))
                    out.append((label, shapes))
                break
            errors.append(f"{label}/{mode}: {shapes}")
    return out


def reduced_shapes(task: Task, budget_elems: int = DEFAULT_BUDGET) -> list[list[Shape]]:
    """Shape sets (one shape per input, ``()`` for scalars) for correctness runs.

    Order: ``regular`` (innermost dim ~512, small outer dims), ``tail`` (innermost
    ~1000 with odd factors), ``outer`` (~1000 outermost rows); duplicates are dropped, so
    tiny tasks may get fewer sets.  See the module docstring for the rules.
    """
    return [shapes for _, shapes in labeled_reduced_shapes(task, budget_elems)]


def check_rules(task: Task, shapes: Sequence[Shape]) -> list[str]:
    """Violations of the rank / 1-stays-1 / alignment-class rules (empty = fine)."""
    problems = []
    for spec, new in zip(task.inputs, shapes, strict=True):
        if not spec.is_tensor:
            continue
        if len(new) != len(spec.shape):
            problems.append(f"{spec.name}: rank {len(new)} != {len(spec.shape)}")
            continue
        isz = torch.empty((), dtype=spec.dtype).element_size()
        for d, (o, n) in enumerate(zip(spec.shape, new, strict=True)):
            if alignment_class(o, isz) != alignment_class(n, isz):
                problems.append(
                    f"{spec.name} dim {d}: {o} ({alignment_class(o, isz)}) -> {n} "
                    f"({alignment_class(n, isz)})"
                )
            if n > o:
                problems.append(f"{spec.name} dim {d}: grew {o} -> {n}")
    return problems
