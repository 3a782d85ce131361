"""Schemas of what a client can choose from: spaces and testbeds; and of the health check."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class SpaceSummary(BaseModel):
    """A built-in search space in a list."""

    name: str
    description: str
    testbed: str | None = Field(description="The testbed the space was written for.")
    knobs: int
    size: int | None = Field(description="Distinct configurations before constraints; null if continuous.")


class SpaceList(BaseModel):
    """The built-in search spaces."""

    items: list[SpaceSummary]


class SpaceDetail(BaseModel):
    """A search space: knobs with their ranges, conditions, constraints and profiles."""

    name: str
    description: str
    testbed: str | None
    size: int | None
    knobs: list[dict[str, Any]]
    constraints: list[str]
    limits: dict[str, float]
    profiles: dict[str, dict[str, Any]]
    profile_info: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="What the space file says of a profile besides its values: stock (a configuration users "
                    "would otherwise apply, which every job measures at its start), description, source, "
                    "not_expressed (the source's settings the space has no knob for) and notes.")


class AvailableTestbed(BaseModel):
    """A testbed jobs may be submitted to."""

    name: str
    kind: str
    simulated: bool
    default_space: str | None
    description: str


class StoredTestbed(BaseModel):
    """A testbed (name and fingerprint) that has results in the history."""

    id: int
    name: str
    kind: str
    simulated: bool
    fingerprint: dict[str, Any]
    created_at: datetime
    jobs: int


class TestbedList(BaseModel):
    """Testbeds to submit to, and testbeds the history knows."""

    __test__ = False  # keep pytest from collecting a class whose name starts with "Test"

    available: list[AvailableTestbed]
    stored: list[StoredTestbed]
    note: str


class Health(BaseModel):
    """The service is up and its database answers."""

    status: str
    database: str
    schema_revision: str | None
    version: str
