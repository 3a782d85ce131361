"""``/v1/spaces``: the built-in search spaces."""

from __future__ import annotations

import functools
from typing import Annotated

from fastapi import APIRouter, Path

from nictune.api.auth import ReadToken
from nictune.api.errors import ApiError
from nictune.api.schemas.catalog import SpaceDetail, SpaceList, SpaceSummary
from nictune.api.schemas.common import error_responses
from nictune.search_spaces import builtin_names, load_space

router = APIRouter(prefix="/v1/spaces", tags=["catalog"])


@functools.cache
def _describe(name: str) -> SpaceDetail:
    # Built-in spaces ship with the package: describing one never changes while we run.
    return SpaceDetail.model_validate(load_space(name).describe())


@router.get("", response_model=SpaceList, responses=error_responses(401, 503))
def list_spaces(_token: ReadToken) -> SpaceList:
    """The built-in search spaces (an inline definition can be submitted with a job, too)."""
    items = []
    for name in builtin_names():
        detail = _describe(name)
        items.append(SpaceSummary(name=name, description=detail.description, testbed=detail.testbed,
                                  knobs=len(detail.knobs), size=detail.size))
    return SpaceList(items=items)


@router.get("/{name}", response_model=SpaceDetail, responses=error_responses(401, 404, 422, 503))
def get_space(name: Annotated[str, Path(max_length=64, description="A built-in space name.")],
              _token: ReadToken) -> SpaceDetail:
    """A search space: knobs with types, ranges, units, conditions; constraints and profiles."""
    if name not in builtin_names():
        raise ApiError(404, f"unknown space {name!r}", field="name", allowed=", ".join(builtin_names()))
    return _describe(name)
