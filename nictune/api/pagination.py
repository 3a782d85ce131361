"""Page parameters and the link to the next page."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response
from pydantic import BaseModel

#: The largest page a list endpoint serves (clients read longer lists page by page).
PAGE_MAX = 1000
Limit = Annotated[int, Query(ge=1, le=PAGE_MAX, description="Items per page.")]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000, description="Items to skip.")]


def next_page(request: Request, total: int, limit: int, offset: int) -> str | None:
    """Path and query of the page after this one, or ``None`` on the last page."""
    if offset + limit >= total:
        return None
    url = request.url.include_query_params(offset=offset + limit, limit=limit)
    return f"{url.path}?{url.query}"


def json_response(model: BaseModel) -> Response:
    """``model`` as a JSON response, serialised once.

    For large pages: a model returned as such is dumped, validated against the route's
    ``response_model`` and serialised again; this one was validated when it was built.
    """
    return Response(model.model_dump_json(), media_type="application/json")
