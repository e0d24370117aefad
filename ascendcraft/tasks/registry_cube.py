"""Cube-path tasks: the matmul family and the two mHC kernels (issue 6).

Registered into the main registry (``registry.py`` imports this module at its end). Every
reference is written from PyTorch semantics. For fp16/bf16 inputs on the CPU the references
accumulate in fp32 and round once (what the cube does: fp16/bf16 operands, fp32
accumulator); on the ``meta`` device — where the eager baseline is traced — they are the
plain one-op PyTorch expressions (``torch.matmul``, ``F.linear``...), so the eager model
costs what a PyTorch user would run.

Shapes follow the issue: ``matmul`` is the square fp16 4096³ case, the others have their
own names; mHC uses n = 4 residual streams of width C with realistic token counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from .catalog import _DEFS, _register
from .task import InputSpec, Shape

F16, F32, BF16 = torch.float16, torch.float32, torch.bfloat16
_HALF = (torch.float16, torch.bfloat16)


def _acc(*ts: torch.Tensor) -> bool:
    """True when the reference should compute in fp32 and round once (CPU, 16-bit floats)."""
    return ts[0].device.type == "cpu" and ts[0].dtype in _HALF


# ---------------------------------------------------------------------------
# references: matmul family
# ---------------------------------------------------------------------------

def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if _acc(a):
        return torch.matmul(a.float(), b.float()).to(a.dtype)
    return torch.matmul(a, b)


def matmul_batched(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if _acc(a):
        return torch.bmm(a.float(), b.float()).to(a.dtype)
    return torch.bmm(a, b)


def matmul_transpose_a(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a`` is stored K x M: C = a.T @ b."""
    if _acc(a):
        return torch.matmul(a.float().t(), b.float()).to(a.dtype)
    return torch.matmul(a.t(), b)


def matmul_transpose_b(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``b`` is stored N x K (an nn.Linear weight): C = a @ b.T."""
    if _acc(a):
        return torch.matmul(a.float(), b.float().t()).to(a.dtype)
    return torch.matmul(a, b.t())


def matmul_transpose_ab(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a`` stored K x M, ``b`` stored N x K: C = a.T @ b.T."""
    if _acc(a):
        return torch.matmul(a.float().t(), b.float().t()).to(a.dtype)
    return torch.matmul(a.t(), b.t())


def matmul_bias_relu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """relu(a @ b + bias), bias broadcast over rows."""
    if _acc(a):
        return torch.relu(torch.matmul(a.float(), b.float()) + bias.float()).to(a.dtype)
    return torch.relu(torch.matmul(a, b) + bias)


def linear_bias_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu(F.linear(x, weight, bias)): weight is N x K (transposed B), exact (erf) GELU."""
    if _acc(x):
        return F.gelu(F.linear(x.float(), weight.float(), bias.float())).to(x.dtype)
    return F.gelu(F.linear(x, weight, bias))


def matmul_scale_residual(a: torch.Tensor, b: torch.Tensor, residual: torch.Tensor, *,
                          alpha: float) -> torch.Tensor:
    """alpha * (a @ b) + residual."""
    if _acc(a):
        return (alpha * torch.matmul(a.float(), b.float()) + residual.float()).to(a.dtype)
    return alpha * torch.matmul(a, b) + residual


def matmul_fp32_out(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """fp16 operands, fp32 result (the accumulator is written without rounding)."""
    if a.device.type == "meta":
        return torch.mm(a, b, out_dtype=torch.float32)
    return torch.matmul(a.float(), b.float())


# ---------------------------------------------------------------------------
# references: mHC (Manifold-Constrained Hyper-Connections), n residual streams of width C
# ---------------------------------------------------------------------------

def mhc_pre(x: torch.Tensor, phi: torch.Tensor, bias: torch.Tensor, *, n: int, iters: int,
            alpha_pre: float, alpha_post: float, alpha_res: float,
            eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """mHC pre-mapping for tokens x[T, n, C].

    One GEMM maps the flattened streams (n*C) to n*n + 2n raw coefficients (phi is stored
    [n*n + 2n, n, C], i.e. an nn.Linear weight [out, in] over the flattened streams); each token's
    RMS (over its n*C values) rescales them: logits = alpha_group * raw / rms + bias.
    ``h_pre = sigmoid(pre logits)`` weights the streams into the layer input
    ``h = sum_i h_pre[i] * x[i]``; ``h_post = 2 * sigmoid(post logits)``; ``h_res`` is the
    n x n residual mixing matrix made doubly stochastic by Sinkhorn-Knopp: start from
    exp(logits), then ``iters`` times normalise rows, then columns.
    Returns (h [T, C], h_post [T, n], h_res [T, n, n]).
    """
    dt = x.dtype
    x, phi, bias = x.float(), phi.float(), bias.float()  # mHC mappings are computed in fp32
    t, _, c = x.shape
    xf = x.reshape(t, n * c)
    raw = torch.matmul(xf, phi.reshape(n * n + 2 * n, n * c).t())
    inv_rms = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    pre = torch.sigmoid(alpha_pre * raw[:, :n] * inv_rms + bias[:n])
    post = 2.0 * torch.sigmoid(alpha_post * raw[:, n:2 * n] * inv_rms + bias[n:2 * n])
    m = torch.exp(alpha_res * raw[:, 2 * n:] * inv_rms + bias[2 * n:]).reshape(t, n, n)
    for _ in range(iters):
        m = m / m.sum(-1, keepdim=True)
        m = m / m.sum(-2, keepdim=True)
    h = (pre.unsqueeze(-1) * x).sum(1)
    return h.to(dt), post.to(dt), m.to(dt)


def mhc_post(x: torch.Tensor, y: torch.Tensor, h_post: torch.Tensor,
             h_res: torch.Tensor) -> torch.Tensor:
    """mHC post-mapping: new streams = h_res @ x + h_post ⊗ y, per token.

    x[T, n, C] old streams, y[T, C] the layer output, h_post[T, n], h_res[T, n, n];
    returns x'[T, n, C] with x'[i] = sum_j h_res[i, j] x[j] + h_post[i] y.
    """
    dt = x.dtype
    x, y, h_post, h_res = x.float(), y.float(), h_post.float(), h_res.float()  # fp32 math
    out = torch.matmul(h_res, x) + h_post.unsqueeze(-1) * y.unsqueeze(-2)
    return out.to(dt)


# ---------------------------------------------------------------------------
# layouts (functions of the first input's shape and the dtype)
# ---------------------------------------------------------------------------

def _mk(specs: list[tuple[str, Shape, dict[str, Any]]], dt: torch.dtype) -> list[InputSpec]:
    return [InputSpec(name, tuple(shape), dt, **hint) for name, shape, hint in specs]


@dataclass(frozen=True)
class _Matmul:
    """Layout of a matmul-family task from the first input's shape: a is M x K (K x M when
    ``ta``), b is K x N (N x K when ``tb``) with N = ``n_cols`` (None: square, N = M), then
    the ``extra`` inputs ``bias`` ([N]) and/or ``residual`` ([M, N]); ``names`` of a and b."""

    n_cols: int | None = None
    ta: bool = False
    tb: bool = False
    extra: tuple[str, ...] = ()
    names: tuple[str, str] = ("a", "b")

    def shapes(self, m: int, k: int, n: int) -> list[Shape]:
        """Every input's shape for an M x K x N product."""
        a = (k, m) if self.ta else (m, k)
        b = (n, k) if self.tb else (k, n)
        return [a, b, *[(n,) if e == "bias" else (m, n) for e in self.extra]]

    def __call__(self, s: Shape, dt: torch.dtype) -> list[InputSpec]:
        if len(s) != 2:
            raise ValueError("matmul operands are 2-D")
        m, k = (s[1], s[0]) if self.ta else (s[0], s[1])
        shapes = self.shapes(m, k, m if self.n_cols is None else self.n_cols)
        return _mk([(name, shape, {}) for name, shape in zip((*self.names, *self.extra), shapes,
                                                             strict=True)], dt)


@dataclass(frozen=True)
class _Bmm:
    """torch.bmm layout: a is B x M x K, b is B x K x N with N = M."""

    def shapes(self, b: int, m: int, k: int, n: int) -> list[Shape]:
        return [(b, m, k), (b, k, n)]

    def __call__(self, s: Shape, dt: torch.dtype) -> list[InputSpec]:
        bsz, m, k = s
        return _mk([(name, shape, {}) for name, shape in zip(("a", "b"), self.shapes(bsz, m, k, m),
                                                             strict=True)], dt)


def _mhc_pre_layout(s: Shape, dt: torch.dtype) -> list[InputSpec]:
    _, n, c = s
    # phi ~ N(0, 1/(nC)) keeps raw/rms ~ N(0, 1); it is not replaced by the signed
    # distribution (2*randn would overflow exp() in the Sinkhorn start).
    std = 1.0 / math.sqrt(n * c)
    return _mk([("x", s, {}),
                ("phi", (n * n + 2 * n, n, c), {"dist": "randn", "low": 0.0, "high": std,
                                                 "signed_ok": False}),
                ("bias", (n * n + 2 * n,), {"dist": "randn", "low": 0.0, "high": 0.5})], dt)


def _mhc_post_layout(s: Shape, dt: torch.dtype) -> list[InputSpec]:
    t, n, c = s
    return _mk([("x", s, {}), ("y", (t, c), {}),
                ("h_post", (t, n), {"dist": "rand", "low": 0.0, "high": 2.0}),
                ("h_res", (t, n, n), {"dist": "rand", "low": 0.0, "high": 0.5})], dt)


# ---------------------------------------------------------------------------
# registration, with the reduced shapes for correctness runs (Task.check_shapes)
# ---------------------------------------------------------------------------
# The generic reducer ties equal dims (square 4096^3 -> 32 x 32 x 32), which never
# exercises more than one output block. Matmul tasks bring explicit (M, K, N) sets instead:
# several blocks in both directions, tails in every dim (odd sizes, not fractal multiples),
# and a K long enough for multi-stage accumulation and split-K.

_MM_SETS = [(192, 160, 320), (100, 77, 130), (150, 600, 200)]
_MHC_SETS = [(40, 4, 256), (37, 4, 160), (300, 4, 64)]  # (tokens, n, C)


def _input_shapes(layout: Any, first: Shape, dt: torch.dtype) -> list[Shape]:
    """Every input's shape when the first input has shape ``first``."""
    return [spec.shape for spec in layout(first, dt)]


CUBE_OPS: dict[str, str] = {}
"""name -> kind (``matmul`` | ``mhc_pre`` | ``mhc_post``): the tasks of this module."""


def _reg(name: str, fn: Any, shape: Shape, layout: Any, dtype: torch.dtype, *, kind: str = "matmul",
         init: dict[str, Any] | None = None, ranks: tuple[int, ...] = (2,), description: str = "",
         shape_rule: str = "", check: list[list[Shape]]) -> None:
    _register(name, "matmul", fn, shape, layout, init=init, ranks=ranks, description=description,
              shape_rule=shape_rule, dtype=dtype, check_shapes=check)
    CUBE_OPS[name] = kind


_RULE_MM = "--shape sets a (M x K); b follows (K x N, N fixed per op, N = M for the square op)."


def _mm(name: str, fn: Any, shape: Shape, layout: _Matmul, dtype: torch.dtype = F16, *,
        sets: list[tuple[int, int, int]] = _MM_SETS, **kw: Any) -> None:
    """Register a 2-D matmul-family task checked on ``sets`` of (M, K, N)."""
    kw.setdefault("shape_rule", _RULE_MM)
    _reg(name, fn, shape, layout, dtype, check=[layout.shapes(*mkn) for mkn in sets], **kw)


_mm("matmul", matmul, (4096, 4096), _Matmul(),
    description="C = A @ B, square 4096^3 fp16 (fp32 accumulation)")
_mm("matmul_tall_skinny", matmul, (32768, 1024), _Matmul(256), sets=[(640, 96, 48), (1000, 64, 40)],
    description="tall-skinny C = A @ B: M 32768, K 1024, N 256")
_mm("matmul_large_k", matmul, (512, 32768), _Matmul(512), sets=[(48, 2048, 40), (33, 1500, 64)],
    description="K-large C = A @ B: M 512, K 32768, N 512 (few output blocks: split-K)")
_mm("matmul_small_m", matmul, (16, 8192), _Matmul(16384), sets=[(16, 256, 640), (5, 100, 900)],
    description="small-M (decode-like) C = A @ B: M 16, K 8192, N 16384")
_mm("matmul_ragged", matmul, (1000, 999), _Matmul(1001), sets=[(100, 99, 101), (250, 333, 130)],
    description="ragged C = A @ B: M 1000, K 999, N 1001 (no dim a fractal multiple)")
_reg("matmul_batched", matmul_batched, (32, 1024, 512), _Bmm(), F16, ranks=(3,),
     check=[_Bmm().shapes(*bmkn) for bmkn in [(3, 70, 48, 90), (2, 130, 100, 40)]],
     description="torch.bmm: 32 x (1024 x 512 @ 512 x 1024)",
     shape_rule="--shape sets a (B x M x K); b is B x K x M.")
_mm("matmul_transpose_a", matmul_transpose_a, (4096, 2048), _Matmul(2048, ta=True),
    description="C = A.T @ B with A stored K x M (K 4096, M 2048, N 2048)",
    shape_rule="--shape sets a (K x M); b is K x N.")
_mm("matmul_transpose_b", matmul_transpose_b, (2048, 4096), _Matmul(2048, tb=True),
    description="C = A @ B.T with B stored N x K (M 2048, K 4096, N 2048)",
    shape_rule="--shape sets a (M x K); b is N x K.")
_mm("matmul_transpose_ab", matmul_transpose_ab, (4096, 2048), _Matmul(2048, ta=True, tb=True),
    description="C = A.T @ B.T, A stored K x M, B stored N x K (M 2048, K 4096, N 2048)",
    shape_rule="--shape sets a (K x M); b is N x K.")
_mm("matmul_bias_relu", matmul_bias_relu, (4096, 4096), _Matmul(4096, extra=("bias",)),
    description="relu(A @ B + bias): 4096^3 fp16, bias [N]")
_mm("linear_bias_gelu", linear_bias_gelu, (4096, 4096),
    _Matmul(11008, tb=True, extra=("bias",), names=("x", "weight")),
    description="gelu(F.linear(x, W, b)): x 4096 x 4096, W 11008 x 4096 (exact erf GELU)",
    shape_rule="--shape sets x (M x K); weight is 11008 x K, bias 11008.")
_mm("matmul_scale_residual", matmul_scale_residual, (4096, 4096), _Matmul(4096, extra=("residual",)),
    init={"alpha": 0.5}, description="0.5 * (A @ B) + residual: 4096^3 fp16")
_mm("matmul_fp32_out", matmul_fp32_out, (4096, 4096), _Matmul(),
    description="fp16 A @ B with an fp32 result (4096^3)")
_mm("matmul_fp32", matmul, (2048, 2048), _Matmul(), F32,
    description="C = A @ B in fp32, 2048^3 (cube fp32 mode: half the fp16 MAC rate)")

_MHC_INIT = {"n": 4, "iters": 20, "alpha_pre": 1.0, "alpha_post": 1.0, "alpha_res": 1.0, "eps": 1e-6}
_reg("mhc_pre", mhc_pre, (8192, 4, 4096), _mhc_pre_layout, BF16, kind="mhc_pre", init=dict(_MHC_INIT),
     ranks=(3,), check=[_input_shapes(_mhc_pre_layout, s, BF16) for s in _MHC_SETS],
     description="mHC pre-mapping: GEMM of the flattened n x C streams to n^2+2n coefficients, "
     "RMS scale, sigmoid / 2*sigmoid gates, Sinkhorn-Knopp (20 iterations) residual mixing, "
     "weighted stream sum (n = 4, tokens 8192, C 4096, bf16; fp32 math)",
     shape_rule="--shape sets x (tokens x n x C); phi is (n^2+2n) x n x C, bias n^2+2n.")
_reg("mhc_post", mhc_post, (8192, 4, 4096), _mhc_post_layout, BF16, kind="mhc_post", ranks=(3,),
     check=[_input_shapes(_mhc_post_layout, s, BF16) for s in _MHC_SETS],
     description="mHC post-mapping: x' = H_res @ x + H_post ⊗ y per token (n = 4, tokens 8192, C 4096, bf16; fp32 math)",
     shape_rule="--shape sets x (tokens x n x C); y is tokens x C, h_post tokens x n, "
     "h_res tokens x n x n.")


def cube_kind(task_name: str) -> str | None:
    """``matmul`` / ``mhc_pre`` / ``mhc_post`` for the tasks registered here, else None."""
    return CUBE_OPS.get(task_name)


assert all(n in _DEFS for n in CUBE_OPS)


def cube_task_names() -> list[str]:
    """Names of the tasks registered by this module."""
    return sorted(CUBE_OPS)
