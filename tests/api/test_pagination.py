"""The link to the next page: the request's parameters as they came (repeated, blank, encoded),
then the next offset and the limit; what starlette's URL.include_query_params gives."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from nictune.api.pagination import next_page


def _request(path: str, query: bytes) -> Request:
    return Request({"type": "http", "path": path, "query_string": query, "scheme": "http",
                    "server": ("127.0.0.1", 8000), "headers": [(b"host", b"127.0.0.1:8000")]})


@pytest.mark.parametrize(("path", "query"), [
    ("/v1/jobs/12/trials", b"sort=-throughput_gbps&limit=50&offset=950"),
    ("/v1/jobs/12/trials", b""),
    ("/v1/jobs", b"offset=3&state=completed&limit=7&offset=9"),
    ("/v1/history/trials", b"objective=throughput&objective=interrupts&testbed=sim%3Abenson-40g&x=&y"),
    ("/v1/a b/%C3%A9?#\\", b"q=%E2%82%AC+1&limit=2"),
])
def test_the_next_page_keeps_the_parameters_and_replaces_offset_and_limit(path: str, query: bytes) -> None:
    request = _request(path, query)
    url = _request(path, query).url.include_query_params(offset=150, limit=50)
    assert next_page(request, total=1000, limit=50, offset=100) == f"{url.path}?{url.query}"
    assert next_page(request, total=150, limit=50, offset=100) is None  # the last page
    assert next_page(request, total=151, limit=50, offset=100) is not None
