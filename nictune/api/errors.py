"""HTTP statuses for nictune's errors, and one error body for every failure.

This module is the only place where :class:`~nictune.errors.NictuneError` subclasses
become HTTP statuses: invalid input 422, a job in the wrong state 409, the database or a
testbed unavailable 503. Routers raise :class:`ApiError` for what only HTTP knows (not
found, unauthorized, forbidden).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from nictune.api.schemas.common import ErrorBody, FieldProblem
from nictune.errors import (
    InvalidInputError,
    JobError,
    MeasurementError,
    NictuneError,
    StorageError,
)

log = logging.getLogger("nictune.api")

_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
          405: "method_not_allowed", 409: "conflict", 413: "too_large", 422: "invalid_input",
          429: "too_many_requests",
          500: "internal", 503: "unavailable"}


class ApiError(Exception):
    """An error with its HTTP status, raised by routers and dependencies.

    Args:
        status: the HTTP status.
        message: for humans.
        field: the field at fault.
        allowed: what that field accepts.
        headers: extra response headers (``WWW-Authenticate``).
    """

    def __init__(self, status: int, message: str, *, field: str | None = None, allowed: str | None = None,
                 headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.allowed = allowed
        self.headers = dict(headers or {})


def status_of(exc: NictuneError) -> int:
    """The HTTP status of a nictune error met while serving a request."""
    if isinstance(exc, InvalidInputError):
        return 422
    if isinstance(exc, JobError):
        return 409
    if isinstance(exc, StorageError | MeasurementError):
        return 503
    return 500


def error_response(status: int, message: str, *, field: str | None = None, allowed: str | None = None,
                   problems: Sequence[FieldProblem] = (), headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A JSON response with an :class:`ErrorBody`."""
    if not problems and (field or allowed):
        problems = [FieldProblem(field=field, message=message, allowed=allowed)]
    body = ErrorBody(error=_CODES.get(status, "error"), message=message, field=field, allowed=allowed,
                     problems=list(problems))
    return JSONResponse(body.model_dump(), status_code=status, headers=dict(headers or {}))


def _field(loc: Sequence[Any]) -> str | None:
    parts = list(loc[1:]) if loc and loc[0] in ("body", "query", "path", "header") else list(loc)
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not str(part).startswith(("function-", "tagged-union")) and part != "[key]":
            text += ("." if text else "") + str(part)
    return text or (str(loc[0]) if loc else None)


def _allowed(error: Mapping[str, Any]) -> str | None:
    ctx = error.get("ctx") or {}
    kind = str(error.get("type", ""))
    if isinstance(ctx.get("allowed"), str):
        return str(ctx["allowed"])
    bounds = {"greater_than_equal": ">= {ge}", "greater_than": "> {gt}", "less_than_equal": "<= {le}",
              "less_than": "< {lt}", "too_short": "at least {min_length} items",
              "too_long": "at most {max_length} items", "string_too_short": "at least {min_length} characters",
              "string_too_long": "at most {max_length} characters", "literal_error": "{expected}",
              "enum": "{expected}", "string_pattern_mismatch": "a string matching {pattern}"}
    if kind in bounds:
        try:
            return bounds[kind].format(**ctx)
        except (KeyError, IndexError):
            return None
    plain = {"int_parsing": "an integer", "int_type": "an integer", "int_from_float": "an integer",
             "float_parsing": "a number", "float_type": "a number", "bool_parsing": "true or false",
             "bool_type": "true or false", "string_type": "a string", "missing": "a value (required)",
             "datetime_parsing": "an ISO 8601 date-time", "datetime_from_date_parsing": "an ISO 8601 date-time",
             "json_invalid": "a JSON document", "dict_type": "an object", "list_type": "an array",
             "model_attributes_type": "an object", "finite_number": "a finite number"}
    return plain.get(kind)


def validation_problems(errors: Sequence[Mapping[str, Any]]) -> list[FieldProblem]:
    """Turn pydantic's error list into :class:`FieldProblem` entries."""
    problems = []
    for e in errors:
        ctx = e.get("ctx") or {}
        # Validators that know better name the field themselves (an unknown body field).
        field = str(ctx["field"]) if isinstance(ctx.get("field"), str) else _field(e.get("loc", ()))
        problems.append(FieldProblem(field=field, message=str(e.get("msg", "invalid value")), allowed=_allowed(e)))
    return problems


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _body_problem(request: Request, errors: Sequence[Mapping[str, Any]]) -> FieldProblem | None:
    """The problem with the body as a whole (not JSON, or not sent as JSON), if that is what failed."""
    for e in errors:
        loc = tuple(e.get("loc", ()))
        if e.get("type") == "json_invalid" and loc[:1] == ("body",):
            # FastAPI puts the character offset where a field name would be: loc ('body', 7).
            where = f" at character {loc[1]}" if len(loc) > 1 and isinstance(loc[1], int) else ""
            reason = (e.get("ctx") or {}).get("error") or "JSON decode error"
            return FieldProblem(field="body", message=f"the request body is not valid JSON ({reason}{where})",
                                allowed="a JSON document")
        if loc == ("body",) and e.get("type") in ("model_attributes_type", "dict_type"):
            # FastAPI parses only JSON media types; any other body arrives as bytes and fails as "not a dict".
            content_type = request.headers.get("content-type", "")
            if not _is_json(content_type):
                got = f"got {content_type!r}" if content_type else "no Content-Type was sent"
                return FieldProblem(field="Content-Type",
                                    message=f"the request body must be sent as application/json ({got})",
                                    allowed="application/json")
    return None


async def _on_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    whole = _body_problem(request, exc.errors())
    if whole is not None:
        return error_response(422, whole.message, field=whole.field, allowed=whole.allowed, problems=[whole])
    problems = validation_problems(exc.errors())
    first = problems[0] if problems else FieldProblem(field=None, message="invalid request", allowed=None)
    message = f"{first.field}: {first.message}" if first.field else first.message
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return error_response(422, message, field=first.field, allowed=first.allowed, problems=problems)


async def _on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.message, field=exc.field, allowed=exc.allowed, headers=exc.headers)


async def _on_nictune_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, NictuneError)
    status = status_of(exc)
    if status >= 500:
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
    field = getattr(exc, "field", None)
    allowed = getattr(exc, "allowed", None)
    problems = [FieldProblem(field=p.field, message=p.message, allowed=p.allowed) for p in getattr(exc, "problems", ())]
    return error_response(status, str(exc), field=field, allowed=allowed, problems=problems)


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = str(exc.detail) if exc.detail else "error"
    if exc.status_code == 404 and message == "Not Found":
        message = f"no such endpoint: {request.method} {request.url.path} (see /docs)"
    return error_response(exc.status_code, message, headers=exc.headers)


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s %s failed unexpectedly", request.method, request.url.path)
    return error_response(500, "internal error; the service log has the details")


def install_error_handlers(app: FastAPI) -> None:
    """Make every error leave ``app`` as an :class:`ErrorBody` with the right status."""
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(NictuneError, _on_nictune_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(Exception, _on_unexpected)
