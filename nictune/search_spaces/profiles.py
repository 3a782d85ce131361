"""What a space file says about a profile besides its knob values.

A profile is written either as plain ``knob: value`` pairs, or in the long form that says
where it comes from::

    tuned-network-throughput:
      stock: true                      # what users would otherwise apply: jobs measure it
      description: TuneD's network-throughput profile
      source: /usr/lib/tuned/network-throughput/tuned.conf   # or a list of addresses
      not_expressed: [cpu energy_perf_bias performance]      # the source's settings without a knob here
      notes: [tcp_wmem max 16777216 is the knob's value exactly]
      values: {tcp_rmem_max: 16777216}

A stock profile needs a ``source``. :class:`ProfileSpec` checks the long form; every problem
names the profile and the field at fault (``profiles.esnet.source``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import ConfigDict, Field, PlainValidator, model_validator

from nictune.locations import Checked, problem, raise_all, shown

#: The fields of a profile's long form.
PROFILE_FIELDS = ("stock", "description", "source", "not_expressed", "notes", "values")


@dataclass(frozen=True)
class ProfileInfo:
    """A profile's provenance.

    Attributes:
        stock: a configuration users would otherwise apply (TuneD, ESnet ...): every job on
            the space measures it at its start and shows the recommendation against it.
        description: what the profile is.
        source: where its values were read (file paths or web addresses).
        not_expressed: the source's settings the space has no knob for.
        notes: how values were mapped, e.g. rounded to the nearest value a knob allows.
    """

    stock: bool = False
    description: str = ""
    source: tuple[str, ...] = ()
    not_expressed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        """Plain data for ``spaces show`` and the API."""
        return {"stock": self.stock, "description": self.description, "source": list(self.source),
                "not_expressed": list(self.not_expressed), "notes": list(self.notes)}


def _texts(raw: Any, *, one_allowed: bool = False) -> tuple[str, ...]:
    """A list of non-empty strings (or, with ``one_allowed``, a single one)."""
    allowed = ("a string or " if one_allowed else "") + "a list of non-empty strings"
    if one_allowed and isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or any(not isinstance(x, str) or not x.strip() for x in raw):
        raise problem(f"must be {allowed}, not {shown(raw, 200)}", allowed)
    return tuple(x.strip() for x in raw)


def _one_or_more(raw: Any) -> tuple[str, ...]:
    return _texts(raw, one_allowed=True)


def _values(raw: Any) -> dict[Any, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise problem(f"must map knob names to values, not {shown(raw, 200)}", "a mapping such as {rx_ring: 4096}")
    return dict(raw)


def is_long_form(raw: Mapping[str, Any], knob_names: Collection[str]) -> bool:
    """Whether a profile entry uses the long form: it has a field of :data:`PROFILE_FIELDS`
    that is not also a knob's name."""
    return any(key in PROFILE_FIELDS and key not in knob_names for key in raw)


class ProfileSpec(Checked):
    """A long-form profile of a space file (the knob values are the space's to check).

    A stock profile needs a ``source``.
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    extra_hint: ClassVar[str] = "a knob's value goes under 'values'"

    stock: Annotated[bool, Field(json_schema_extra={"allowed": "true, false"})] = False
    description: Annotated[str, Field(json_schema_extra={"allowed": "a string"})] = ""
    source: Annotated[tuple[str, ...], PlainValidator(_one_or_more)] = ()
    not_expressed: Annotated[tuple[str, ...], PlainValidator(_texts)] = ()
    notes: Annotated[tuple[str, ...], PlainValidator(_texts)] = ()
    values: Annotated[dict[Any, Any], PlainValidator(_values)] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _stock_has_a_source(self) -> ProfileSpec:
        if self.stock and not self.source:
            raise_all("profile", [(("source",), problem("is missing: a stock profile says where its values come from",
                                                       "a file path or web address, or a list of them"), None)])
        return self

    def info(self) -> ProfileInfo:
        """What the profile says besides its values."""
        return ProfileInfo(stock=self.stock, description=" ".join(self.description.split()), source=self.source,
                           not_expressed=self.not_expressed, notes=self.notes)


def profile_definition(values: Mapping[str, Any], info: ProfileInfo | None) -> dict[str, Any]:
    """A profile as a space file writes it: plain values, or the long form when it has an
    :class:`ProfileInfo` (the inverse of :class:`ProfileSpec`)."""
    if info is None:
        return dict(values)
    out: dict[str, Any] = {}
    if info.stock:
        out["stock"] = True
    if info.description:
        out["description"] = info.description
    if info.source:
        out["source"] = list(info.source)
    if info.not_expressed:
        out["not_expressed"] = list(info.not_expressed)
    if info.notes:
        out["notes"] = list(info.notes)
    out["values"] = dict(values)
    return out
