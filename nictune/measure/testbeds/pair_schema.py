"""The model of a pair file (:mod:`nictune.measure.testbeds.pair_file` shows one).

Every field is checked on its own, so a file's problems are reported all at once; the key
files (``key``, ``known_hosts``) are looked up relative to the file's folder, which the
validation context gives as ``base``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field, PlainValidator, ValidationInfo, model_validator

from nictune.errors import InvalidInputError
from nictune.locations import Checked, problem, raise_all, shown
from nictune.measure.validation import check_device, check_int, check_token

SSH_URL = re.compile(
    r"^ssh://(?P<user>[a-z_][a-z0-9_.-]{0,31})@"
    r"(?P<host>[A-Za-z0-9_][A-Za-z0-9_.-]*|\[[0-9A-Fa-f:.]+\])(:(?P<port>\d{1,5}))?$"
)
_NETNS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_PORT = "an integer from 1024 to 65535"


def _not_valid(raw: Any, allowed: str) -> Any:
    return problem(f"{shown(raw)} is not valid", allowed)


def _host(raw: Any) -> str:
    if not isinstance(raw, str) or not (
        raw == "local" or SSH_URL.match(raw) or (raw.startswith("netns:") and _NETNS.match(raw[len("netns:"):]))
    ):
        raise _not_valid(raw, "local, netns:NAME or ssh://user@host[:port]")
    return raw


def _interface(raw: Any) -> str:
    try:
        return check_device(raw)
    except InvalidInputError:
        raise _not_valid(raw, "an interface name") from None


def _address(raw: Any) -> str:
    if not isinstance(raw, str) or not re.fullmatch(r"[0-9A-Fa-f.:]{2,45}", raw):
        raise _not_valid(raw, "an IPv4 or IPv6 address")
    return raw


def _file(raw: Any, info: ValidationInfo) -> str | None:
    """An existing file, relative to the pair file's folder; its absolute path."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw or raw.startswith("-"):
        raise _not_valid(raw, "a file path")
    base = Path((info.context or {}).get("base", "."))
    path = (base / Path(raw).expanduser()).resolve()
    if not path.is_file():
        raise _not_valid(raw, "an existing file")
    return str(path)


def _netns(raw: Any) -> str | None:
    if raw is not None and (not isinstance(raw, str) or not _NETNS.match(raw)):
        raise _not_valid(raw, "a namespace name")
    return raw


def _name(raw: Any) -> str:
    try:
        return check_token("name", raw)
    except InvalidInputError as exc:
        raise _not_valid(raw, str(exc.allowed)) from None


def _port(raw: Any) -> int:
    try:
        return check_int("port", raw, 1024, 65535)
    except InvalidInputError:
        raise _not_valid(raw, _PORT) from None


class PairEndFile(Checked):
    """``sender`` or ``receiver``: a host, its data interface and the interface's address."""

    model_config = ConfigDict(extra="forbid", strict=True)

    host: Annotated[str, PlainValidator(_host), Field(json_schema_extra={
        "allowed": "local, netns:NAME or ssh://user@host[:port]"})]
    interface: Annotated[str, PlainValidator(_interface), Field(json_schema_extra={"allowed": "an interface name"})]
    address: Annotated[str, PlainValidator(_address), Field(json_schema_extra={
        "allowed": "an IPv4 or IPv6 address"})]
    key: Annotated[str | None, PlainValidator(_file)] = None
    known_hosts: Annotated[str | None, PlainValidator(_file)] = None
    via_netns: Annotated[str | None, PlainValidator(_netns)] = None

    @model_validator(mode="after")
    def _ssh_has_a_key(self) -> PairEndFile:
        if self.host.startswith("ssh://") and self.key is None:
            raise_all("pair end", [(("key",), problem("is missing: an ssh host needs one",
                                                     "a private key file (required for ssh hosts)"), None)])
        return self


_END = Field(json_schema_extra={"allowed": "a mapping with host, interface and address"})


class PairFile(Checked):
    """A pair file: ``sender``, ``receiver`` and optionally ``name``, ``port`` (iperf3's) and
    ``sockperf_port``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Annotated[str | None, PlainValidator(_name)] = None
    port: Annotated[int, PlainValidator(_port)] = 5201
    sockperf_port: Annotated[int | None, PlainValidator(lambda raw: None if raw is None else _port(raw))] = None
    sender: Annotated[PairEndFile, _END]
    receiver: Annotated[PairEndFile, _END]

    @model_validator(mode="after")
    def _ports_differ(self) -> PairFile:
        if self.sockperf_port == self.port:
            raise_all("pair file", [(("sockperf_port",), _not_valid(self.sockperf_port,
                                                                     f"a port other than iperf3's ({self.port})"),
                                     self.sockperf_port)])
        return self


__all__ = ["SSH_URL", "PairEndFile", "PairFile"]
