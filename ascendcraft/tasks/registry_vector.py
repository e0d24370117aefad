"""Built-in vector tasks in PyTorch's naming with KernelBench-sized shapes (the matmul family
and mHC are in :mod:`.registry_cube`); registered into :mod:`.catalog` on import.

Default shapes are realistic - each input is ~64 MiB .. 2 GiB - and are only ever used as
metadata; correctness runs use :func:`ascendcraft.tasks.shapes.reduced_shapes`.
References are written from PyTorch semantics; hyper-parameters are keyword-only
arguments bound from ``init_args``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from .catalog import Layout, _register
from .task import InputSpec, Shape

# ---------------------------------------------------------------------------
# layouts
# ---------------------------------------------------------------------------

def _unary(**hint: Any) -> Layout:
    return lambda s, dt: [InputSpec("x", s, dt, **hint)]


def _same(*names: str, **hints: dict[str, Any]) -> Layout:
    """All tensor inputs share the primary shape (add, losses, optimizer states)."""
    return lambda s, dt: [InputSpec(n, s, dt, **hints.get(n, {})) for n in names]


_UNARY_RULE = "--shape sets x's shape (any rank)."
_SAME_RULE = "--shape sets the shape of every tensor input (they must match)."
_POS = {"dist": "rand", "low": 0.0, "high": 1.0, "signed_ok": False}  # variances, sums of squares

E2 = (4096, 32768)        # 128 Mi elements: 512 MiB fp32 per input
E2_BIG = (4096, 65536)    # 1 GiB fp32
NCHW = (16, 64, 256, 256)  # 64 Mi elements: 256 MiB
POOL2D = (16, 64, 512, 512)
POOL3D = (16, 32, 64, 64, 64)
RED3 = (64, 4096, 1023)   # odd last dim; 1 GiB


# ---------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------

def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y


def sub(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x - y


def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * y


def div(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x / y


def maximum(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.maximum(x, y)


def mul_scalar(x: torch.Tensor, s: float) -> torch.Tensor:
    return x * s


for _n, _f in [("add", add), ("sub", sub), ("mul", mul), ("maximum", maximum)]:
    _register(_n, "elementwise", _f, E2, _same("x", "y"), description=f"{_n} of two same-shape tensors",
              shape_rule=_SAME_RULE)
_register("div", "elementwise", div, E2,
          _same("x", "y", y={"dist": "rand", "low": 0.5, "high": 2.0, "signed_ok": False}),
          description="x / y, y in [0.5, 2)", shape_rule=_SAME_RULE)
_register("mul_scalar", "elementwise", mul_scalar, (16384, 4096),
          lambda s, dt: [InputSpec("x", s, dt), InputSpec("s", (), dt, kind="scalar", value=3.14)],
          description="x * s with a Python float s", shape_rule=_UNARY_RULE)


# ---------------------------------------------------------------------------
# activation
# ---------------------------------------------------------------------------

def relu(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)


def relu6(x: torch.Tensor) -> torch.Tensor:
    return torch.clamp(x, 0.0, 6.0)


def leaky_relu(x: torch.Tensor, *, negative_slope: float) -> torch.Tensor:
    return torch.where(x >= 0, x, x * negative_slope)


def elu(x: torch.Tensor, *, alpha: float) -> torch.Tensor:
    return torch.where(x > 0, x, alpha * torch.expm1(x))


def selu(x: torch.Tensor) -> torch.Tensor:
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * torch.where(x > 0, x, alpha * torch.expm1(x))


def celu(x: torch.Tensor, *, alpha: float) -> torch.Tensor:
    return torch.clamp(x, min=0) + torch.clamp(alpha * torch.expm1(x / alpha), max=0)


def gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.erf(x * 0.7071067811865476))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x)


def logsigmoid(x: torch.Tensor) -> torch.Tensor:
    return F.logsigmoid(x)


def hardsigmoid(x: torch.Tensor) -> torch.Tensor:
    return torch.clamp(x / 6.0 + 0.5, 0.0, 1.0)


def hardswish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.clamp(x + 3.0, 0.0, 6.0) / 6.0


def hardtanh(x: torch.Tensor, *, min_val: float, max_val: float) -> torch.Tensor:
    return torch.clamp(x, min_val, max_val)


def softplus(x: torch.Tensor, *, beta: float, threshold: float) -> torch.Tensor:
    return F.softplus(x, beta=beta, threshold=threshold)


def softsign(x: torch.Tensor) -> torch.Tensor:
    return x / (1.0 + torch.abs(x))


def swish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)


def silu(x: torch.Tensor) -> torch.Tensor:
    return F.silu(x)


def tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x)


def mish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.tanh(F.softplus(x))


def softmax(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.softmax(x, dim=dim)


def log_softmax(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.log_softmax(x, dim=dim)


for _n, _f, _init in [
    ("relu", relu, None),
    ("relu6", relu6, None),
    ("leaky_relu", leaky_relu, {"negative_slope": 0.01}),
    ("elu", elu, {"alpha": 1.0}),
    ("selu", selu, None),
    ("celu", celu, {"alpha": 1.0}),
    ("gelu", gelu, None),
    ("gelu_tanh", gelu_tanh, None),
    ("sigmoid", sigmoid, None),
    ("logsigmoid", logsigmoid, None),
    ("hardsigmoid", hardsigmoid, None),
    ("hardswish", hardswish, None),
    ("hardtanh", hardtanh, {"min_val": -1.0, "max_val": 1.0}),
    ("softplus", softplus, {"beta": 1.0, "threshold": 20.0}),
    ("softsign", softsign, None),
    ("swish", swish, None),
    ("silu", silu, None),
    ("tanh", tanh, None),
    ("mish", mish, None),
]:
    _register(_n, "activation", _f, E2, _unary(), init=_init,
              description=f"elementwise {_n}", shape_rule=_UNARY_RULE)
for _n, _f in [("softmax", softmax), ("log_softmax", log_softmax)]:
    _register(_n, "activation", _f, E2_BIG, _unary(), init={"dim": -1},
              description=f"{_n} over the last dim", shape_rule=_UNARY_RULE)


# ---------------------------------------------------------------------------
# loss (scalar outputs)
# ---------------------------------------------------------------------------

def mse_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return torch.mean((predictions - targets) ** 2)


def l1_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return torch.mean(torch.abs(predictions - targets))


def huber_loss(predictions: torch.Tensor, targets: torch.Tensor, *, delta: float) -> torch.Tensor:
    d = torch.abs(predictions - targets)
    return torch.mean(torch.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)))


def smooth_l1_loss(predictions: torch.Tensor, targets: torch.Tensor, *, beta: float) -> torch.Tensor:
    d = torch.abs(predictions - targets)
    return torch.mean(torch.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta))


def kl_div(log_predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # reduction="batchmean": sum(target * (log target - log_pred)) / batch
    return F.kl_div(log_predictions, targets, reduction="batchmean")


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, targets)


def hinge_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def cosine_similarity_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    cos = F.cosine_similarity(predictions, targets, dim=1)
    return torch.mean(1 - cos)


def triplet_margin_loss(
    anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor, *, margin: float
) -> torch.Tensor:
    return F.triplet_margin_loss(anchor, positive, negative, margin=margin)


_LOSS2 = (16384, 8192)  # 512 MiB per input
for _n, _f, _init in [
    ("mse_loss", mse_loss, None),
    ("l1_loss", l1_loss, None),
    ("huber_loss", huber_loss, {"delta": 1.0}),
    ("smooth_l1_loss", smooth_l1_loss, {"beta": 1.0}),
]:
    _register(_n, "loss", _f, _LOSS2, _same("predictions", "targets"), init=_init,
              description=f"{_n}, mean reduction, scalar output", shape_rule=_SAME_RULE)
_register("kl_div", "loss", kl_div, (16384, 4096),
          _same("log_predictions", "targets",
                log_predictions={"dist": "log_softmax", "signed_ok": False},
                targets={"dist": "softmax", "signed_ok": False}),
          description="KL divergence, log-prob input, batchmean", shape_rule=_SAME_RULE)
_register("cross_entropy", "loss", cross_entropy, (32768, 4096),
          lambda s, dt: [InputSpec("logits", s, dt),
                         InputSpec("targets", s[:1], torch.int64, kind="index", dist="randint",
                                   low=0, high=s[1], high_from=(0, 1), signed_ok=False)],
          ranks=(2,), description="cross entropy with int64 class targets, mean reduction",
          shape_rule="--shape sets logits (N, C); targets become (N,) int64 in [0, C).")
_register("hinge_loss", "loss", hinge_loss, _LOSS2,
          _same("predictions", "targets", targets={"dist": "sign", "signed_ok": False}),
          description="mean(clamp(1 - pred*target, min=0)), targets +-1", shape_rule=_SAME_RULE)
_register("cosine_similarity_loss", "loss", cosine_similarity_loss, (32768, 4096),
          _same("predictions", "targets"), ranks=(2,),
          description="mean(1 - cosine_similarity(a, b, dim=1))", shape_rule=_SAME_RULE)
_register("triplet_margin_loss", "loss", triplet_margin_loss, (32768, 4096),
          _same("anchor", "positive", "negative"), init={"margin": 1.0}, ranks=(2,),
          description="triplet margin loss (p=2, margin 1)", shape_rule=_SAME_RULE)


# ---------------------------------------------------------------------------
# math (scans)
# ---------------------------------------------------------------------------

def cumsum(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.cumsum(x, dim=dim)


def cumprod(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.cumprod(x, dim=dim)


def cumsum_exclusive(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    # out[i] = sum(x[:i]): a zero, then the inclusive scan without its last element
    n = x.size(dim)
    zero = torch.zeros_like(x.narrow(dim, 0, 1))
    return torch.cat([zero, torch.cumsum(x, dim=dim).narrow(dim, 0, n - 1)], dim=dim)


def cumsum_reverse(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.flip(torch.cumsum(torch.flip(x, [dim]), dim=dim), [dim])


def masked_cumsum(x: torch.Tensor, mask: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.cumsum(x * mask, dim=dim)


def logcumsumexp(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.logcumsumexp(x, dim=dim)




def matrix_scalar_multiplication(a: torch.Tensor, s: float) -> torch.Tensor:
    return a * s


_SCAN = (8192, 16384)  # 512 MiB
_SCAN_RULE = "--shape sets x (rank >= 2; the scan runs along dim 1)."
for _n, _f, _hint in [
    ("cumsum", cumsum, {}),
    ("cumprod", cumprod, {"dist": "rand", "low": 0.9, "high": 1.1}),
    ("cumsum_exclusive", cumsum_exclusive, {}),
    ("cumsum_reverse", cumsum_reverse, {}),
    ("logcumsumexp", logcumsumexp, {}),
]:
    _register(_n, "math", _f, _SCAN, _unary(**_hint), init={"dim": 1}, ranks=(2, 3),
              description=f"{_n} along dim 1", shape_rule=_SCAN_RULE)
_register("masked_cumsum", "math", masked_cumsum, _SCAN,
          lambda s, dt: [InputSpec("x", s, dt),
                         InputSpec("mask", s, torch.bool, kind="mask", dist="bernoulli", high=0.5,
                                   signed_ok=False)],
          init={"dim": 1}, ranks=(2, 3), description="cumsum(x * mask) along dim 1, bool mask",
          shape_rule="--shape sets x and the bool mask (same shape).")
_register("matrix_scalar_multiplication", "math", matrix_scalar_multiplication, (16384, 4096),
          lambda s, dt: [InputSpec("a", s, dt), InputSpec("s", (), dt, kind="scalar", value=3.14)],
          description="A * s, Python float s", shape_rule=_UNARY_RULE)


# ---------------------------------------------------------------------------
# normalization
# ---------------------------------------------------------------------------

def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, *, eps: float) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)


def layer_norm_2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, *, eps: float) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-2:], weight, bias, eps)


def rms_norm(x: torch.Tensor, *, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps)


def rms_norm_nchw(x: torch.Tensor, *, num_features: int, eps: float) -> torch.Tensor:
    return x / torch.sqrt(torch.mean(x * x, dim=1, keepdim=True) + eps)


def batch_norm(x: torch.Tensor, *, num_features: int, eps: float) -> torch.Tensor:
    # training mode: per-channel batch statistics (biased variance), weight 1, bias 0
    return F.batch_norm(x, None, None, training=True, eps=eps)


def instance_norm(x: torch.Tensor, *, num_features: int, eps: float) -> torch.Tensor:
    return F.instance_norm(x, eps=eps)


def group_norm(x: torch.Tensor, *, num_groups: int, num_channels: int, eps: float) -> torch.Tensor:
    return F.group_norm(x, num_groups, eps=eps)


def l1_norm(x: torch.Tensor) -> torch.Tensor:
    return x / torch.sum(torch.abs(x), dim=1, keepdim=True)


def l2_norm(x: torch.Tensor) -> torch.Tensor:
    return x / torch.sqrt(torch.sum(x * x, dim=1, keepdim=True))


def frobenius_norm(x: torch.Tensor) -> torch.Tensor:
    return x / torch.sqrt(torch.sum(x * x))


_register("layer_norm", "normalization", layer_norm, (4096, 8192),
          lambda s, dt: [InputSpec("x", s, dt), InputSpec("weight", s[-1:], dt),
                         InputSpec("bias", s[-1:], dt)],
          init={"eps": 1e-5}, description="layer norm over the last dim with affine weight/bias",
          shape_rule="--shape sets x; weight and bias become x's last dim.")
_register("layer_norm_2d", "normalization", layer_norm_2d, (32, 64, 256, 256),
          lambda s, dt: [InputSpec("x", s, dt), InputSpec("weight", s[-2:], dt),
                         InputSpec("bias", s[-2:], dt)],
          init={"eps": 1e-5}, ranks=(3, 4, 5),
          description="layer norm over the last two dims with affine weight/bias",
          shape_rule="--shape sets x; weight and bias become x's last two dims.")
_register("rms_norm", "normalization", rms_norm, (4096, 8192), _unary(), init={"eps": 1e-6},
          description="RMS norm over the last dim, no affine", shape_rule=_UNARY_RULE)
_NC = "--shape sets x (N, C, ...); the channel-count argument follows C."
_register("rms_norm_nchw", "normalization", rms_norm_nchw, NCHW, _unary(),
          init=lambda s: {"num_features": s[1], "eps": 1e-5}, ranks=(3, 4, 5),
          description="RMS norm over the channel dim of NCHW", shape_rule=_NC)
_register("batch_norm", "normalization", batch_norm, NCHW, _unary(),
          init=lambda s: {"num_features": s[1], "eps": 1e-5}, ranks=(2, 3, 4, 5),
          description="batch norm with training-mode batch statistics", shape_rule=_NC)
_register("instance_norm", "normalization", instance_norm, NCHW, _unary(),
          init=lambda s: {"num_features": s[1], "eps": 1e-5}, ranks=(3, 4, 5),
          description="instance norm (per sample and channel)", shape_rule=_NC)
_register("group_norm", "normalization", group_norm, NCHW, _unary(),
          init=lambda s: {"num_groups": 8 if s[1] % 8 == 0 else 1, "num_channels": s[1],
                          "eps": 1e-5},
          ranks=(3, 4, 5), description="group norm, 8 groups, no affine", shape_rule=_NC)
_register("l1_norm", "normalization", l1_norm, (16384, 16383), _unary(), ranks=(2,),
          description="x / sum(|x|) along dim 1 (odd row width)", shape_rule=_UNARY_RULE)
_register("l2_norm", "normalization", l2_norm, (16384, 16383), _unary(), ranks=(2,),
          description="x / ||x||_2 along dim 1 (odd row width)", shape_rule=_UNARY_RULE)
_register("frobenius_norm", "normalization", frobenius_norm, NCHW, _unary(),
          description="x / ||x||_F (one global scalar)", shape_rule=_UNARY_RULE)


# ---------------------------------------------------------------------------
# optimizer: one fused step, returns the new parameter
# ---------------------------------------------------------------------------

def sgd_momentum(
    param: torch.Tensor, grad: torch.Tensor, momentum_buffer: torch.Tensor, *,
    lr: float, momentum: float, weight_decay: float,
) -> torch.Tensor:
    g = grad + weight_decay * param
    buf = momentum * momentum_buffer + g
    return param - lr * buf


def adam(
    param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor,
    step: int, *, lr: float, beta1: float, beta2: float, eps: float,
) -> torch.Tensor:
    m = beta1 * exp_avg + (1 - beta1) * grad
    v = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    m_hat = m / (1 - beta1**step)
    v_hat = v / (1 - beta2**step)
    return param - lr * m_hat / (torch.sqrt(v_hat) + eps)


def adamw(
    param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor,
    step: int, *, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
) -> torch.Tensor:
    p = param * (1 - lr * weight_decay)
    m = beta1 * exp_avg + (1 - beta1) * grad
    v = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    m_hat = m / (1 - beta1**step)
    v_hat = v / (1 - beta2**step)
    return p - lr * m_hat / (torch.sqrt(v_hat) + eps)


def adagrad(
    param: torch.Tensor, grad: torch.Tensor, state_sum: torch.Tensor, *, lr: float, eps: float,
) -> torch.Tensor:
    s = state_sum + grad * grad
    return param - lr * grad / (torch.sqrt(s) + eps)


def rmsprop(
    param: torch.Tensor, grad: torch.Tensor, square_avg: torch.Tensor, *,
    lr: float, alpha: float, eps: float,
) -> torch.Tensor:
    v = alpha * square_avg + (1 - alpha) * grad * grad
    return param - lr * grad / (torch.sqrt(v) + eps)


def lamb(
    param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor,
    step: int, *, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
) -> torch.Tensor:
    m = beta1 * exp_avg + (1 - beta1) * grad
    v = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    m_hat = m / (1 - beta1**step)
    v_hat = v / (1 - beta2**step)
    update = m_hat / (torch.sqrt(v_hat) + eps) + weight_decay * param
    w_norm = torch.linalg.vector_norm(param)   # global norm 1
    u_norm = torch.linalg.vector_norm(update)  # global norm 2
    trust = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
    return param - lr * trust * update


_OPT = (8192, 8192)  # 256 MiB per state tensor
_OPT_RULE = "--shape sets the parameter and every state tensor (same shape)."
_STEP = {"kind": "scalar", "value": 10}
_register("sgd_momentum", "optimizer", sgd_momentum, _OPT,
          _same("param", "grad", "momentum_buffer"),
          init={"lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4},
          description="SGD with momentum (dampening 0), returns the new param",
          shape_rule=_OPT_RULE)


def _adam_layout(s: Shape, dt: torch.dtype) -> list[InputSpec]:
    return [InputSpec("param", s, dt), InputSpec("grad", s, dt),
            InputSpec("exp_avg", s, dt, low=0.0, high=0.1),
            InputSpec("exp_avg_sq", s, dt, **_POS), InputSpec("step", (), dt, **_STEP)]


_ADAM = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
_register("adam", "optimizer", adam, _OPT, _adam_layout, init=_ADAM,
          description="Adam step with bias correction", shape_rule=_OPT_RULE)
_register("adamw", "optimizer", adamw, _OPT, _adam_layout, init={**_ADAM, "weight_decay": 0.01},
          description="AdamW step (decoupled weight decay)", shape_rule=_OPT_RULE)
_register("lamb", "optimizer", lamb, _OPT, _adam_layout,
          init={"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-6, "weight_decay": 0.01},
          description="LAMB step (global trust ratio from two norms)", shape_rule=_OPT_RULE)
_register("adagrad", "optimizer", adagrad, _OPT,
          _same("param", "grad", "state_sum", state_sum=_POS), init={"lr": 0.01, "eps": 1e-10},
          description="Adagrad step", shape_rule=_OPT_RULE)
_register("rmsprop", "optimizer", rmsprop, _OPT,
          _same("param", "grad", "square_avg", square_avg=_POS),
          init={"lr": 0.01, "alpha": 0.99, "eps": 1e-8},
          description="RMSprop step (no momentum, not centered)", shape_rule=_OPT_RULE)


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------

def avg_pool1d(x: torch.Tensor, *, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    return F.avg_pool1d(x, kernel_size, stride, padding, count_include_pad=True)


def avg_pool2d(x: torch.Tensor, *, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    return F.avg_pool2d(x, kernel_size, stride, padding, count_include_pad=True)


def avg_pool3d(x: torch.Tensor, *, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    if x.device.type == "cpu" and x.dtype in (torch.float16, torch.bfloat16):
        # CPU has no half avg_pool3d kernel: accumulate in fp32, round once
        y = F.avg_pool3d(x.float(), kernel_size, stride, padding, count_include_pad=True)
        return y.to(x.dtype)
    return F.avg_pool3d(x, kernel_size, stride, padding, count_include_pad=True)


def max_pool1d(x: torch.Tensor, *, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    return F.max_pool1d(x, kernel_size, stride, padding)


def max_pool2d(x: torch.Tensor, *, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    return F.max_pool2d(x, kernel_size, stride, padding)


def max_pool3d(x: torch.Tensor, *, kernel_size: int, stride: int, padding: int) -> torch.Tensor:
    return F.max_pool3d(x, kernel_size, stride, padding)


_POOL = {"kernel_size": 3, "stride": 2, "padding": 1}
_POOL1 = {"kernel_size": 4, "stride": 2, "padding": 1}
for _n, _f, _shape, _init, _rank in [
    ("avg_pool1d", avg_pool1d, (64, 128, 32768), _POOL1, 3),
    ("max_pool1d", max_pool1d, (64, 128, 32768), _POOL1, 3),
    ("avg_pool2d", avg_pool2d, POOL2D, _POOL, 4),
    ("max_pool2d", max_pool2d, POOL2D, _POOL, 4),
    ("avg_pool3d", avg_pool3d, POOL3D, _POOL, 5),
    ("max_pool3d", max_pool3d, POOL3D, _POOL, 5),
]:
    k, s_, p = _init["kernel_size"], _init["stride"], _init["padding"]
    _register(_n, "pooling", _f, _shape, _unary(), init=_init, ranks=(_rank,),
              description=f"{_n}, kernel {k}, stride {s_}, padding {p}"
              + (" (count_include_pad)" if _n.startswith("avg") else ""),
              shape_rule=f"--shape sets x (rank {_rank}: N, C, spatial...).")


# ---------------------------------------------------------------------------
# reduce
# ---------------------------------------------------------------------------

def sum_lastdim(x: torch.Tensor) -> torch.Tensor:
    return x.sum(-1)


def max_middim(x: torch.Tensor) -> torch.Tensor:
    return torch.max(x, dim=1).values


def sum_dim(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.sum(x, dim=dim, keepdim=True)


def mean_dim(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.mean(x, dim=dim)


def max_dim(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.amax(x, dim=dim)


def min_dim(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.amin(x, dim=dim)


def prod_dim(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.prod(x, dim=dim)






def logsumexp_dim(x: torch.Tensor, *, dim: int) -> torch.Tensor:
    return torch.logsumexp(x, dim=dim)


_register("sum_lastdim", "reduce", sum_lastdim, E2_BIG, _unary(),
          description="x.sum(-1)", shape_rule=_UNARY_RULE)
_register("max_middim", "reduce", max_middim, RED3, _unary(), ranks=(3,),
          description="torch.max(x, dim=1).values of a 3-D tensor",
          shape_rule="--shape sets the 3-D x.")
for _n, _f, _dim, _hint in [
    ("sum_dim", sum_dim, 1, {}),
    ("mean_dim", mean_dim, 1, {}),
    ("max_dim", max_dim, 2, {}),
    ("min_dim", min_dim, 1, {}),
    ("prod_dim", prod_dim, 1, {"dist": "rand", "low": 0.9, "high": 1.1}),
    ("logsumexp_dim", logsumexp_dim, 1, {}),
]:
    _register(_n, "reduce", _f, RED3, _unary(**_hint), init={"dim": _dim}, ranks=(3,),
              description=f"{_n.removesuffix('_dim')} over dim {_dim} of a 3-D tensor"
              + (" (keepdim)" if _n == "sum_dim" else ""),
              shape_rule="--shape sets the 3-D x.")
