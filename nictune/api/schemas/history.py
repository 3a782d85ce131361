"""Schemas of the history: best configurations of a context and measurements of one configuration."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ObjectiveInterval(BaseModel):
    """The objective's mean over a configuration's measurements with its confidence interval."""

    mean: float | None
    low: float | None
    high: float | None
    n: int = Field(description="Measurements behind the mean.")
    confidence: float
    noise_cv: float = Field(description="Relative noise (coefficient of variation) of one measurement, pooled "
                                        "over the configurations measured more than once on this fingerprint "
                                        "(5% assumed until repeats say otherwise).")


class BestConfiguration(BaseModel):
    """A configuration and the mean of every measurement of it in the context."""

    rank: int
    config_hash: str
    config: dict[str, Any]
    objective_value: float | None = Field(description="The objective in its own unit (e.g. Gbit/s).")
    interval: ObjectiveInterval = Field(description="The objective's mean with its interval; configurations "
                                                    "rank by its conservative end (low when maximised).")
    feasible: bool = Field(description="Whether the mean metrics meet every constraint given.")
    score: dict[str, Any]
    metrics: dict[str, float | None] = Field(description="Mean over every measurement of this configuration.")
    measurements: int
    trials: int
    jobs: list[int]
    last_measured_at: datetime | None
    fingerprint: dict[str, Any] = Field(description="The testbed fingerprint these measurements share.")


class BestOut(BaseModel):
    """The best configurations ever measured on a testbed under a workload, across jobs."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "testbed": "sim:benson-40g", "workload": "tcp", "objective": "throughput",
        "direction": "maximize", "unit": "Gbit/s", "constraints": [], "simulated": True,
        "note": "simulated testbed: figures come from a model, not from hardware", "items": [],
    }]})

    testbed: str
    workload: str
    objective: str
    direction: str
    unit: str
    constraints: list[str]
    simulated: bool
    note: str | None = None
    items: list[BestConfiguration]


class MeasurementOut(BaseModel):
    """One repeat of a measured trial."""

    job_id: int
    trial_number: int
    repeat: int
    testbed: str
    workload: str
    simulated: bool
    metrics: dict[str, float | None]
    started_at: datetime
    finished_at: datetime


class ConfigurationOut(BaseModel):
    """A configuration and every measurement of it, oldest first."""

    config_hash: str
    config: dict[str, Any]
    simulated: bool = Field(description="True when any measurement comes from a simulated testbed.")
    note: str | None = None
    trials: int
    measurements: list[MeasurementOut]
