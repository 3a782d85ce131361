"""Executors: where the job loop's measurements run (in process, or on remote workers)."""

from nictune.executors._base import Executor, MeasurementWithdrawn, MeasureRequest
from nictune.executors.local import LocalExecutor

__all__ = ["Executor", "LocalExecutor", "MeasureRequest", "MeasurementWithdrawn"]
