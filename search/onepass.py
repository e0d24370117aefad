"""One-pass row statistics for the vector recipes: DSL lines that read each chunk of a row
once to get what a multi-pass kernel reads it twice for.

Rows wider than UB are walked in column chunks, and every pass over the chunks is another
read of x from GM. Softmax-like ops need the row max before the sum of exponentials, norms
the mean before the centred second moment; these helpers fold both statistics into one
chunks pass, so softmax reads x twice instead of three times and a norm twice instead of
three times (a row that fits in UB is read once by the whole-row recipes anyway). They are
offered beside the multi-pass structures; the search picks whichever models faster.

**Online log-sum-exp** (the running max and a rescaled sum): after chunk ``c`` with row
max ``M_c = max(M_{c-1}, max(x_c))``, ``S_c = S_{c-1}·exp(M_{c-1} - M_c) + Σ exp(x_c - M_c)``,
so ``S = Σ exp(x - M)`` over the row exactly as the second pass of the three-pass kernel
computes it, every exponent ≤ 0 (no overflow). The running max starts at the lowest finite
float rather than ``-inf``: a chunk of only ``-inf`` (masked logits) would otherwise give
``exp(-inf - -inf) = NaN`` and poison the sum; a row of only ``-inf`` still gives NaN, as
PyTorch does.

**Shifted moments** for the variance: ``Σ(x - K)`` and ``Σ(x - K)²`` in one pass, with the
shift ``K`` the first chunk's last element (one sample of the row, read with ``row_last``
once per chunk). ``var = Σ(x-K)²/W - (Σ(x-K)/W)²``, ``mean = K + Σ(x-K)/W``. Accuracy: the
unshifted formula ``E[x²] - E[x]²`` loses about ``log2((μ² + σ²)/σ²)`` bits to cancellation
(all of fp32's 24 bits for mean 1000, standard deviation 0.1); with a shift the loss is
``log2(1 + (μ - K)²/σ²)``, and a sample of the row is within a few σ of its mean for any
distribution that is not dominated by outliers, so the result keeps nearly full fp32 accuracy
(Chan, Golub and LeVeque, "Algorithms for computing the sample variance", 1983, §3: shifting
by a data value). The chunk partial sums are vector reductions over at most ``CHUNK``
elements, accumulated across chunks in fp32; inputs of any dtype are cast to fp32 before any
arithmetic. A clamp at 0 keeps a round-off negative variance from reaching ``rsqrt``.
``tests/test_onepass_stats.py`` checks both against float64 on fp32 and fp16 inputs with
large means.
"""

from __future__ import annotations

LOWEST_F32 = "-3.4028234663852886e+38"  # the lowest finite float: the running max's start


def online_logsumexp(value: str, m: str = "m", s: str = "s", step: str = "for c in chunks(t, CHUNK):",
                     fill: str = "row_fill") -> list[str]:
    """A loop over the chunks (or steps) leaving ``m`` = the max of ``value`` and ``s`` =
    Σ exp(value - m), with one evaluation of ``value`` per iteration."""
    return [f"{m} = {fill}({LOWEST_F32})", f"{s} = {fill}(0.0)", step,
            f"    a = {value}", f"    mn = maximum({m}, {'row_max(a)' if fill == 'row_fill' else 'a'})",
            f"    {s} = {s} * exp({m} - mn) + {'row_sum(exp(a - mn))' if fill == 'row_fill' else 'exp(a - mn)'}",
            f"    {m} = mn"]


def shifted_moments(value: str, width: str, eps: str, mean: str = "mean", rstd: str = "rstd") -> list[str]:
    """A chunks loop leaving the row values ``mean`` and ``rstd`` = 1/sqrt(biased var + eps)
    of ``value`` over rows of ``width`` elements, from shifted sums (see the module doc)."""
    return ["first = row_fill(1.0)", "k = row_fill(0.0)", "s1 = row_fill(0.0)", "s2 = row_fill(0.0)",
            "for c in chunks(t, CHUNK):", f"    a = {value}",
            "    k = k + first * row_last(a)", "    first = first * 0.0",
            "    d = a - k", "    s1 = s1 + row_sum(d)", "    s2 = s2 + row_sum(d * d)",
            f"dm = s1 / {width}", f"{mean} = k + dm",
            f"{rstd} = rsqrt(maximum(s2 / {width} - dm * dm, 0.0) + {eps})"]
