"""Learning-rate schedules (Vaswani et al. 2017, §5.3)."""

from __future__ import annotations

from attn._checks import check_positive_int

__all__ = ["noam_schedule"]


def noam_schedule(step: int, d_model: int, warmup: int) -> float:
    """``lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`` (Vaswani et al. 2017, §5.3, eq. 3), step
    counted from 1: a linear rise for ``warmup`` steps to its peak ``(d_model · warmup)^-0.5``, then a decay as
    step^-0.5. With :class:`torch.optim.lr_scheduler.LambdaLR` (which counts from 0) and a base rate of 1:
    ``LambdaLR(optimizer, lambda i: noam_schedule(i + 1, d_model, warmup))``, or :func:`fit` with
    ``lr=1.0, schedule=lambda step: noam_schedule(step, d_model, warmup)``."""
    for name, value in (("step", step), ("d_model", d_model), ("warmup", warmup)):
        check_positive_int(name, value)
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
