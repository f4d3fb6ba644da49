"""The shared floor every mechanism trains on: the loop (:func:`fit`, :class:`History`, :func:`seeded`), schedules,
runs over seeds in worker processes (:func:`over_seeds`, :func:`over_runs`, :class:`Background`) and progress bars.

A mechanism's own trainer (a loss function and a checkpoint handed to :func:`fit`) lives in the mechanism's package.
"""

from attn.training.loop import History, Trained, build_seeded, evaluating, fit, seeded
from attn.training.progress import progress_bar
from attn.training.schedules import noam_schedule
from attn.training.seeds import Background, dask_executor, over_runs, over_seeds, scheduler_address

__all__ = [
    "Background",
    "History",
    "Trained",
    "build_seeded",
    "dask_executor",
    "scheduler_address",
    "evaluating",
    "fit",
    "noam_schedule",
    "over_runs",
    "over_seeds",
    "progress_bar",
    "seeded",
]
