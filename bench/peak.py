"""The machine's matrix-multiply peak: the physical limit each FLOP rate is measured against.

A large square GEMM is the fastest thing a CPU's BLAS does, so its rate is the ceiling for any
implementation built on the same hardware. It is measured in the same run as the contenders, with
both NumPy's BLAS and torch's, in each dtype, and the faster library's best rate is the peak.
"""

from __future__ import annotations

import numpy as np

from .timing import interleaved


def gemm_flops(n: int) -> float:
    """An n x n by n x n product: n^2 outputs, each n multiplies and n adds."""
    return 2.0 * n**3


def matmul_peak(dtype: str, n: int = 2048, repeats: int = 5) -> dict:
    """FLOP/s of an n x n GEMM in `dtype`, by NumPy and by torch (when installed)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    contenders = {"numpy": lambda: np.matmul(a, b, out=out)}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        tout = torch.empty((n, n), dtype=ta.dtype)
        contenders["torch"] = lambda: torch.matmul(ta, tb, out=tout)
    timings, errors = interleaved(contenders, repeats=repeats, warmup=1)
    if errors:
        raise RuntimeError(f"the {dtype} GEMM failed: {errors}")
    # The fastest repeat, not the median: the peak is a limit, and other jobs can only slow a GEMM.
    rates = {name: gemm_flops(n) / min(t.times) for name, t in timings.items()}
    best = max(rates, key=rates.__getitem__)
    return {"dtype": dtype, "n": n, "flops_per_s": rates[best], "library": best, "by_library": rates}
