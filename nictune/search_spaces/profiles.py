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

A stock profile needs a ``source``. Every error names the profile and the field at fault.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from nictune.errors import SpaceDefinitionError

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


def _fail(profile: str, field: str, msg: str, allowed: str) -> SpaceDefinitionError:
    return SpaceDefinitionError(f"profile {profile!r}: field {field!r} {msg}; allowed: {allowed}",
                                field=profile, allowed=allowed)


def _texts(profile: str, field: str, raw: Any, *, one_allowed: bool = False) -> tuple[str, ...]:
    """A list of non-empty strings (or, with ``one_allowed``, a single one)."""
    allowed = ("a string or " if one_allowed else "") + "a list of non-empty strings"
    if one_allowed and isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or any(not isinstance(x, str) or not x.strip() for x in raw):
        raise _fail(profile, field, f"must be {allowed}, not {raw!r}"[:200], allowed)
    return tuple(x.strip() for x in raw)


def is_long_form(raw: Mapping[str, Any], knob_names: Collection[str]) -> bool:
    """Whether a profile entry uses the long form: it has a field of :data:`PROFILE_FIELDS`
    that is not also a knob's name."""
    return any(key in PROFILE_FIELDS and key not in knob_names for key in raw)


def parse_profile(profile: str, raw: Mapping[str, Any]) -> tuple[dict[str, Any], ProfileInfo]:
    """The knob values and the :class:`ProfileInfo` of a long-form profile entry.

    Raises:
        SpaceDefinitionError: an unknown field, a field of the wrong type, a stock profile
            without a source; naming the profile and the field.
    """
    unknown = sorted(str(k) for k in raw if k not in PROFILE_FIELDS)
    if unknown:
        raise _fail(profile, unknown[0], "is not a field of a profile (a knob's value goes under 'values')",
                    ", ".join(PROFILE_FIELDS))
    values = raw.get("values", {})
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise _fail(profile, "values", f"must map knob names to values, not {values!r}"[:200],
                    "a mapping such as {rx_ring: 4096}")
    stock = raw.get("stock", False)
    if not isinstance(stock, bool):
        raise _fail(profile, "stock", f"must be true or false, not {stock!r}", "true, false")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise _fail(profile, "description", f"must be a string, not {description!r}"[:200], "a string")
    source = _texts(profile, "source", raw["source"], one_allowed=True) if "source" in raw else ()
    if stock and not source:
        raise _fail(profile, "source", "is missing: a stock profile says where its values come from",
                    "a file path or web address, or a list of them")
    info = ProfileInfo(
        stock=stock,
        description=" ".join(description.split()),
        source=source,
        not_expressed=_texts(profile, "not_expressed", raw["not_expressed"]) if "not_expressed" in raw else (),
        notes=_texts(profile, "notes", raw["notes"]) if "notes" in raw else (),
    )
    return dict(values), info


def profile_definition(values: Mapping[str, Any], info: ProfileInfo | None) -> dict[str, Any]:
    """A profile as a space file writes it: plain values, or the long form when it has an
    :class:`ProfileInfo` (the inverse of :func:`parse_profile`)."""
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
