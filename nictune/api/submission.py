"""Checks a submitted job goes through before ``create_job``: what only the service decides.

``create_job`` validates the spec itself (objectives, constraints, engine and its
parameters, workload, the space). Here the service adds its own rules: a client may
name only simulated testbeds and those the operator allowed (never a file path), only
built-in spaces by name, and no budget above the service's limit. Engine parameters are
checked here too, against the engine's ``PARAMS`` narrowed to the service's bounds, so a
422 names ``engine_params.NAME``. Errors name the request's field (``objectives[1]``,
``space.knobs``) so a client can point at it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from nictune.api.schemas.jobs import JobCreate
from nictune.api.settings import ApiSettings
from nictune.errors import InvalidInputError, Problem, UnknownNameError
from nictune.jobs import JobSpec
from nictune.jobs.stopping import parse_duration
from nictune.measure.appliers.registry import load_checked_space
from nictune.measure.benchmarks.workload_spec import Source, with_options
from nictune.measure.benchmarks.workloads import BUILTIN_NAMES, resolve_entry
from nictune.measure.sim import PROFILES
from nictune.optimizer import ENGINES, MetricConstraint, Param, get_objective
from nictune.search_spaces import builtin_names

#: The service's own bounds on numeric engine parameters, within each parameter's range.
PARAM_LOW, PARAM_HIGH = 0, 1000
#: The longest text value of an engine parameter.
PARAM_MAX_CHARS = 64


def submittable_testbeds(settings: ApiSettings) -> list[str]:
    """Testbeds a client may submit to: every simulated one and those the operator allowed."""
    return [*sorted(PROFILES), *(name for name in settings.testbeds if name not in PROFILES)]


def _renamed(exc: InvalidInputError, field: str) -> InvalidInputError:
    return InvalidInputError(str(exc), field=field, allowed=exc.allowed)


def _inline_space_error(exc: InvalidInputError) -> InvalidInputError:
    """An inline space's error with its fields under ``space.`` (``space.knobs.mtu.default``),
    every problem kept."""
    def under(field: str | None) -> str:
        return f"space.{field}" if field else "space"

    problems = [Problem(under(p.field), f"inline space: {p.message}", p.allowed) for p in exc.problems]
    message = "\n".join(p.message for p in problems) if problems else f"inline space: {exc}"
    return InvalidInputError(message, field=under(exc.field), allowed=exc.allowed, problems=problems)


def _bounded(spec: Param) -> Param:
    """The parameter as the service accepts it: its range narrowed to the service's bounds."""
    if spec.kind is str:
        return spec
    low = PARAM_LOW if spec.low is None else max(spec.low, PARAM_LOW)
    high = PARAM_HIGH if spec.high is None else min(spec.high, PARAM_HIGH)
    return dataclasses.replace(spec, low=low, high=high)


def _allowed_value(spec: Param) -> str:
    return spec.describe() + (" or null (the engine's default)" if spec.default is None else "")


def check_engine_params(engine: str, params: Mapping[str, Any]) -> None:
    """Check each engine parameter against the engine's ``PARAMS`` and the service's bounds.

    An unknown engine is left to ``create_job`` (a 422 naming ``engine``).

    Raises:
        InvalidInputError: naming ``engine_params.NAME`` and that parameter's allowed values.
    """
    cls = ENGINES.get(engine)
    if cls is None:
        return
    for name, raw in params.items():
        field = f"engine_params.{name}"
        if name not in cls.PARAMS:
            known = ", ".join(cls.PARAMS) or "(none)"
            raise InvalidInputError(f"engine {engine!r} has no parameter {name!r}; known: {known}",
                                    field=field, allowed=known)
        spec = _bounded(cls.PARAMS[name])
        allowed = _allowed_value(spec)
        # The engine reads numbers from text (for the CLI's --param); a JSON body must send numbers.
        if isinstance(raw, bool) or (spec.kind is not str and isinstance(raw, str)):
            raise InvalidInputError(f"engine {engine!r}: parameter {name!r} = {raw!r} is invalid; expected {allowed}",
                                    field=field, allowed=allowed)
        if isinstance(raw, str) and len(raw) > PARAM_MAX_CHARS:
            raise InvalidInputError(f"engine {engine!r}: parameter {name!r} is longer than "
                                    f"{PARAM_MAX_CHARS} characters", field=field,
                                    allowed=f"{allowed}; at most {PARAM_MAX_CHARS} characters")
        try:
            spec.parse(engine, name, raw)
        except InvalidInputError as exc:
            raise InvalidInputError(str(exc), field=field, allowed=allowed) from None


#: Options named by the request's own top-level fields rather than ``workload_options.NAME``.
_TOP_LEVEL_OPTIONS = {"duration": "duration_s", "scenario": "scenario"}


def check_workload(body: JobCreate) -> None:
    """The request's workload: a built-in name (never a path: the service reads no files of its
    clients) or an inline definition, then its options, each checked by the one workload
    validation.

    Raises:
        InvalidInputError: naming ``workload``, ``workload.FIELD``, ``workload_options.FIELD``
            (or ``duration_s``) and what it allows.
    """
    if isinstance(body.workload, str) and body.workload not in BUILTIN_NAMES:
        raise UnknownNameError("workload", body.workload, [*BUILTIN_NAMES, "an inline definition (a mapping)"])
    try:
        entry = resolve_entry(body.workload)
    except InvalidInputError as exc:
        field = exc.field if exc.field and exc.field != "workload" else None
        raise InvalidInputError(str(exc), field=f"workload.{field}" if field else "workload",
                                allowed=exc.allowed) from None
    options = {**(body.workload_options or {}), "scenario": body.scenario, "duration": body.duration_s}
    try:
        with_options(entry, options, Source("workload_options"))
    except InvalidInputError as exc:
        name = exc.field or "workload_options"
        field = _TOP_LEVEL_OPTIONS.get(name) or f"workload_options.{name.removeprefix('latency.')}"
        raise InvalidInputError(str(exc), field=field, allowed=exc.allowed) from None


def build_spec(body: JobCreate, settings: ApiSettings) -> JobSpec:
    """The job spec of a request, after the service's own checks.

    Raises:
        InvalidInputError: naming the request field at fault and what it allows.
    """
    allowed = submittable_testbeds(settings)
    if body.testbed not in allowed:
        raise UnknownNameError("testbed", body.testbed, allowed)
    if body.budget > settings.max_budget:
        raise InvalidInputError(f"budget {body.budget} is above this service's limit of {settings.max_budget}",
                                field="budget", allowed=f"1..{settings.max_budget}")
    if body.noise is not None and body.testbed not in PROFILES:
        raise InvalidInputError("noise applies to simulated testbeds only", field="noise",
                                allowed="null for this testbed")
    for i, name in enumerate(body.objectives):
        try:
            get_objective(name)
        except InvalidInputError as exc:
            raise _renamed(exc, f"objectives[{i}]") from None
    if len(set(body.objectives)) != len(body.objectives):
        raise InvalidInputError("objectives are repeated", field="objectives", allowed="distinct objective names")
    for i, text in enumerate(body.constraints):
        try:
            MetricConstraint.parse(text)
        except InvalidInputError as exc:
            raise _renamed(exc, f"constraints[{i}]") from None
    if isinstance(body.space, str) and body.space not in builtin_names():
        # Never a path: a client must not make the service read its files.
        raise UnknownNameError("space", body.space, builtin_names())
    if isinstance(body.space, dict):
        if body.testbed not in PROFILES and not settings.inline_spaces_on_hosts:
            raise InvalidInputError("inline space definitions are accepted for simulated testbeds only; "
                                    "use a built-in space", field="space", allowed=", ".join(builtin_names()))
        try:
            # The one check `nictune spaces validate` makes (caps first, then every setting against
            # the appliers' rules), whatever the testbed: before any engine is built.
            load_checked_space(dict(body.space))
        except InvalidInputError as exc:
            raise _inline_space_error(exc) from None
    check_workload(body)
    time_limit_s = parse_duration(body.time_limit) if body.time_limit is not None else None
    spec = JobSpec(
        objectives=list(body.objectives), testbed=body.testbed, workload=body.workload,
        workload_options=dict(body.workload_options or {}), space=body.space,
        engine=body.engine, engine_params=dict(body.engine_params), constraints=list(body.constraints),
        budget=body.budget, repeats=body.repeats, racing=body.racing, warm_start=body.warm_start,
        seed=body.seed, noise=body.noise, scenario=body.scenario,
        duration_s=body.duration_s, short_run_s=body.short_run_s, short_risk=body.short_risk,
        time_limit_s=time_limit_s, patience=body.patience,
    )
    check_engine_params(spec.engine_name, spec.engine_params)
    return spec
