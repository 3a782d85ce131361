"""Search spaces: knob types, conditions, constraints, canonical form, YAML validation."""

from __future__ import annotations

import hashlib
import random

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nictune.errors import ConfigurationError, SpaceDefinitionError, UnknownNameError
from nictune.search_spaces import (
    Configuration,
    Family,
    IntKnob,
    builtin_names,
    load_space,
    space_from_dict,
)

REQUIRED = {"benson-40g", "nurika-pfring", "linux-tcp", "linux-nic"}


def tiny(**extra: object) -> dict:
    data = {
        "name": "tiny",
        "knobs": {
            "rx_mode": {"type": "choice", "choices": ["adaptive", "timer", "watermark"],
                        "default": "adaptive", "family": "ethtool_coalesce", "target": "mode"},
            "poll_usecs": {"type": "int", "low": 1, "high": 512, "default": 16, "log": True,
                           "target": "rx-usecs", "family": "ethtool_coalesce",
                           "when": {"rx_mode": "timer"}},
            "watermark_frames": {"type": "int", "power_of_two": True, "low": 2, "high": 256,
                                 "default": 32, "family": "ethtool_coalesce",
                                 "target": "rx-frames", "when": {"rx_mode": "watermark"}},
            "rx_ring": {"type": "int", "power_of_two": True, "low": 256, "high": 8192,
                        "default": 1024, "family": "ethtool_rings", "target": "rx"},
            "gro": {"type": "bool", "default": True, "family": "ethtool_features", "target": "gro"},
            "rate": {"type": "float", "low": 0.1, "high": 10.0, "default": 1.0, "target": "x"},
        },
        "limits": {"ring_max": 4096},
        "constraints": ["rx_ring <= ring_max", "watermark_frames <= rx_ring / 2"],
        "profiles": {"fast": {"rx_ring": 4096, "rx_mode": "timer", "poll_usecs": 8}},
    }
    data.update(extra)
    return data


def test_builtin_spaces_exist_and_are_valid() -> None:
    assert set(builtin_names()) >= REQUIRED
    for name in builtin_names():
        space = load_space(name)
        space.default()
        for profile in space.profiles:
            space.profile(profile)


def test_benson_has_table_iii_baseline_and_modes() -> None:
    space = load_space("benson-40g")
    base = space.profile("baseline")
    assert base["mtu"] == 9000 and base["rx_ring"] == 8192 and base["buffers"] == "large"
    assert base["irq_affinity"] == "single-core" and base["app_cpu"] == "numa-local"
    assert set(space.knob("rx_mode").values() or []) >= {"interrupt", "timer", "watermark", "adaptive"}
    assert "busy-poll" in (load_space("linux-nic").knob("rx_mode").values() or [])


def test_conditional_knobs_only_active_under_their_mode() -> None:
    space = space_from_dict(tiny())
    assert "poll_usecs" not in space.default()
    timer = space.configuration({"rx_mode": "timer", "poll_usecs": 64})
    assert timer["poll_usecs"] == 64 and "watermark_frames" not in timer
    with pytest.raises(ConfigurationError) as exc:
        space.configuration({"poll_usecs": 64})
    assert exc.value.field == "poll_usecs" and "rx_mode == timer" in str(exc.value)
    # Non-strict (engine output): inactive values are dropped, not errors.
    assert "poll_usecs" not in space.configuration({"poll_usecs": 64}, strict=False)


def test_constraints_make_configurations_invalid() -> None:
    space = space_from_dict(tiny())
    with pytest.raises(ConfigurationError, match="rx_ring <= ring_max"):
        space.configuration({"rx_ring": 8192})
    with pytest.raises(ConfigurationError, match="watermark_frames <= rx_ring / 2"):
        space.configuration({"rx_mode": "watermark", "watermark_frames": 256, "rx_ring": 256})
    # The watermark constraint does not apply while its knob is inactive.
    assert space.configuration({"rx_ring": 256})["rx_ring"] == 256


def test_values_are_validated_and_normalised() -> None:
    space = space_from_dict(tiny())
    c = space.configuration({"rx_ring": "2048", "gro": "off", "rate": "2.50000001"})
    assert c["rx_ring"] == 2048 and c["gro"] is False and c["rate"] == 2.5
    for bad in ({"rx_ring": 1000}, {"rx_ring": "1500; reboot"}, {"gro": "maybe"},
                {"rx_mode": "$(id)"}, {"rate": 11}, {"rate": "nan"}):
        with pytest.raises(ConfigurationError) as exc:
            space.configuration(bad)
        assert exc.value.field == next(iter(bad)) and exc.value.allowed
    with pytest.raises(UnknownNameError, match="unknown knob 'mtu'"):
        space.configuration({"mtu": 9000})


def test_canonical_form_and_hash_are_stable() -> None:
    space = space_from_dict(tiny())
    a = space.configuration({"rx_mode": "timer", "poll_usecs": "8", "rx_ring": 4096})
    b = space.configuration({"rx_ring": 4096, "poll_usecs": 8, "rx_mode": "timer"})
    assert a == b and a.hash == b.hash and a.canonical_json == b.canonical_json
    assert list(a) == sorted(a)
    assert a.hash == space.profile("fast").hash
    assert a.hash != space.default().hash
    assert Configuration.from_values(a.as_dict()).hash == a.hash
    # The hash of a known canonical form never changes between versions (it is a cache key).
    pinned = hashlib.sha256(b'{"a":1,"b":"x"}').hexdigest()
    assert Configuration.from_values({"b": "x", "a": 1}).hash == pinned


def test_size_counts_conditional_knobs() -> None:
    space = space_from_dict(tiny(knobs={
        "m": {"type": "choice", "choices": ["a", "b"], "default": "a", "target": "m"},
        "x": {"type": "int", "low": 1, "high": 3, "default": 1, "target": "x", "when": {"m": "b"}},
        "y": {"type": "bool", "default": False, "target": "y"},
    }, constraints=[], profiles={}, limits={}))
    assert space.size() == (1 + 3) * 2


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(sorted(REQUIRED)))
@pytest.mark.slow
def test_samples_and_repairs_are_always_valid(seed: int, name: str) -> None:
    space = load_space(name)
    rng = random.Random(seed)
    c = space.sample(rng)
    assert space.configuration(c.as_dict(), strict=True) == c
    # Repair of a random, possibly broken assignment also yields a valid configuration.
    raw = {k.name: k.sample(rng) for k in space.knobs.values()}
    repaired = space.repair(raw, rng)
    assert space.configuration(repaired.as_dict(), strict=True) == repaired


def test_mutation_respects_grids() -> None:
    knob = IntKnob(name="ring", default=1024, family=Family.ETHTOOL_RINGS, target="rx",
                   low=256, high=8192, power_of_two=True)
    rng = random.Random(3)
    seen = {knob.mutate(1024, rng) for _ in range(200)}
    assert seen <= {256, 512, 2048, 4096, 8192} and len(seen) >= 3


def test_neighbours_change_one_knob() -> None:
    space = load_space("benson-40g")
    base = space.profile("baseline")
    neigh = space.neighbours(base)
    assert neigh
    for name, config in neigh:
        diff = {k for k in set(base) | set(config) if base.get(k) != config.get(k)}
        assert name in diff and diff <= {name, "poll_usecs", "watermark_frames"}


@pytest.mark.parametrize(
    ("mutate", "field", "needle"),
    [
        (lambda d: d["knobs"]["poll_usecs"].update(when={"rx_mod": "timer"}), "knobs.poll_usecs.when",
         "unknown knob 'rx_mod'"),
        (lambda d: d["knobs"]["rx_ring"].update(default=100), "knobs.rx_ring.default", "out of range"),
        (lambda d: d["knobs"]["rx_mode"].update(choices=[]), "knobs.rx_mode.choices", "non-empty list"),
        (lambda d: d["knobs"]["gro"].update(defualt=True), "knobs.gro.defualt", "unknown field 'defualt'"),
        (lambda d: d["knobs"]["rx_ring"].update(type="integer"), "knobs.rx_ring.type", "'integer'"),
        (lambda d: d["knobs"]["poll_usecs"].update(when={"rx_mode": "polling"}), "knobs.poll_usecs.when",
         "not a value of"),
        (lambda d: d["knobs"]["gro"].update(family="netlink"), "knobs.gro.family", "'netlink'"),
        (lambda d: d.update(constraints=["rx_ring <= bogus"]), "constraints[0]", "unknown name 'bogus'"),
        (lambda d: d.update(constraints=["__import__('os').system('id') == 0"]), "constraints[0]", "not allowed"),
        (lambda d: d["profiles"]["fast"].update(rx_ring=3000), "profiles.fast.rx_ring", "not a power of two"),
    ],
)
def test_definition_errors_name_knob_and_field(mutate, field: str, needle: str) -> None:  # type: ignore[no-untyped-def]
    data = tiny()
    mutate(data)
    with pytest.raises(SpaceDefinitionError) as exc:
        space_from_dict(data)
    assert exc.value.field == field
    assert str(exc.value).startswith(f"{field}: ") and needle in str(exc.value)


def test_user_yaml_file_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(tiny()))
    space = load_space(str(path))
    assert space.name == "tiny" and space.profile("fast")["poll_usecs"] == 8
    with pytest.raises(UnknownNameError):
        load_space(str(tmp_path / "missing.yaml"))
