"""Schemas every endpoint shares: the error body and the page envelope."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue
from pydantic_core import PydanticCustomError

from nictune.db.types import as_utc

ItemT = TypeVar("ItemT")


class FieldProblem(BaseModel):
    """One thing wrong with a request."""

    field: str | None = Field(None, description="The field, query parameter or knob at fault.")
    message: str
    allowed: str | None = Field(None, description="What would have been accepted.")


class ErrorBody(BaseModel):
    """The body of every 4xx and 5xx response."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "error": "invalid_input",
        "message": "budget must be a positive number of trials, got -3",
        "field": "budget",
        "allowed": "an integer >= 1",
        "problems": [{"field": "budget", "message": "budget must be a positive number of trials, got -3",
                      "allowed": "an integer >= 1"}],
    }]})

    error: str = Field(description="Machine-readable kind: invalid_input, not_found, unauthorized, "
                                   "forbidden, conflict, too_large, unavailable, internal.")
    message: str = Field(description="What went wrong, for humans.")
    field: str | None = Field(None, description="The first field at fault, when there is one.")
    allowed: str | None = Field(None, description="What that field accepts.")
    problems: list[FieldProblem] = Field(default_factory=list,
                                         description="Every problem found (validation reports them all).")


class Page(BaseModel, Generic[ItemT]):
    """One page of a list; follow ``next`` for the following one."""

    items: list[ItemT]
    total: int = Field(ge=0, description="How many items match, over all pages.")
    limit: int = Field(ge=1)
    offset: int = Field(ge=0)
    next: str | None = Field(None, description="Path and query of the next page; null on the last.")


_MEANING = {
    400: "Malformed request.",
    401: "No token, or an unknown, revoked or expired one.",
    403: "The token's role does not allow this call.",
    404: "No such resource.",
    409: "The resource is in a state that does not allow this.",
    413: "Request body too large.",
    422: "Invalid input: the body names the field and the allowed values.",
    429: "The token (or the service) is at a limit: the body says which, and how many are in use.",
    503: "The database or the testbed is unavailable.",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for error statuses, all with :class:`ErrorBody`."""
    return {status: {"model": ErrorBody, "description": _MEANING[status]} for status in statuses}


def json_error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The same for routes whose success is not JSON (FastAPI would file the errors under that type)."""
    ref = {"$ref": "#/components/schemas/ErrorBody"}
    return {status: {"description": _MEANING[status], "content": {"application/json": {"schema": ref}}}
            for status in statuses}


def enum_of(values: Iterable[str]) -> dict[str, JsonValue]:
    """``json_schema_extra`` that lists the allowed values of a string checked at run time."""
    listed: list[JsonValue] = [str(value) for value in sorted(values)]
    return {"enum": listed}


def _in_utc(value: datetime) -> datetime:
    # Every query compares in UTC: an offset that pushes the instant past year 1 or 9999 has
    # no UTC datetime (OverflowError), so it is refused here rather than deep in a query.
    try:
        return as_utc(value)
    except OverflowError:
        raise PydanticCustomError(
            "datetime_out_of_range", "out of range: {value} is outside the years 1 to 9999 in UTC",
            {"value": value.isoformat(),
             "allowed": "an ISO 8601 date-time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z (in UTC)"},
        ) from None


#: A date-time query parameter, converted to UTC (naive means UTC); out of range is a 422.
UtcDateTime = Annotated[datetime, AfterValidator(_in_utc)]
