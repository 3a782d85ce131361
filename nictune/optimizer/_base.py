"""The engine interface: ask for configurations, tell their scores.

An engine proposes configurations of a :class:`~nictune.search_spaces.SearchSpace` and
learns from their scores; it never runs a measurement. Engines are deterministic: the
same seed and the same sequence of :meth:`Engine.tell` calls give the same
:meth:`Engine.ask` answers, because a job is resumed by replaying its stored trials through
a fresh engine. So an engine draws only from its own ``random.Random(seed)`` and never
iterates over anything in hash-dependent order.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from nictune.errors import InvalidInputError, UnknownNameError
from nictune.optimizer.objectives import Score
from nictune.search_spaces import Configuration, SearchSpace


@dataclass(frozen=True)
class Param:
    """One tunable parameter of an engine.

    Attributes:
        kind: ``int``, ``float`` or ``str``.
        default: value when not given; ``None`` means "chosen by the engine".
        low: smallest allowed number (inclusive), if any.
        high: largest allowed number (inclusive), if any.
        help: one sentence for humans.
    """

    kind: type
    default: Any
    low: float | None = None
    high: float | None = None
    help: str = ""

    def parse(self, engine: str, name: str, raw: Any) -> Any:
        """Check and normalise a user-given value.

        Raises:
            InvalidInputError: with field ``engine_params``.
        """
        if raw is None and self.default is None:
            return None
        value: Any = None
        if self.kind is str:
            value = raw if isinstance(raw, str) else None
        elif not isinstance(raw, bool):
            try:
                number = float(raw) if isinstance(raw, str | int | float) else math.nan
            except ValueError:
                number = math.nan
            if self.kind is int and math.isfinite(number) and number.is_integer():
                value = int(number)
            elif self.kind is float and math.isfinite(number):
                value = number
        if value is None:
            raise _param_error(engine, name, raw, self.describe())
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            raise _param_error(engine, name, raw, self.describe())
        return value

    def describe(self) -> str:
        """Human-readable allowed values."""
        kind = {int: "an integer", float: "a number", str: "a name"}[self.kind]
        if self.low is not None and self.high is not None:
            kind += f" from {self.low:g} to {self.high:g}"
        elif self.low is not None:
            kind += f" >= {self.low:g}"
        elif self.high is not None:
            kind += f" <= {self.high:g}"
        return kind


def _param_error(engine: str, name: str, raw: Any, allowed: str) -> InvalidInputError:
    return InvalidInputError(
        f"engine {engine!r}: parameter {name!r} = {raw!r} is invalid; expected {allowed}",
        field=f"engine_params.{name}", allowed=allowed,
    )


class Engine(ABC):
    """Base class of every optimization engine (ask/tell).

    Subclasses implement :meth:`_ask` and :meth:`finished`, and may hook :meth:`_tell`,
    :meth:`_state` and :meth:`_check_params`. The base class keeps what was asked and
    told, ignores repeated tells and tracks the best score.

    Args:
        space: the search space to explore.
        seed: seed of the engine's own random generator.
        params: engine parameters (see each engine's ``PARAMS``).
        start: configurations the first batch must contain (e.g. the testbed default and
            the space's ``baseline`` profile), in order; duplicates are dropped.

    Raises:
        InvalidInputError: unknown or invalid parameters (field ``engine_params``), or a
            start configuration that is not valid in ``space``.
    """

    name: ClassVar[str]
    #: Parameters the engine accepts, with their defaults and ranges.
    PARAMS: ClassVar[Mapping[str, Param]] = {}

    def __init__(
        self,
        space: SearchSpace,
        *,
        seed: int,
        params: Mapping[str, Any] | None = None,
        start: Sequence[Configuration] = (),
    ):
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InvalidInputError(f"seed must be an integer, got {seed!r}", field="seed",
                                    allowed="an integer")
        self.space = space
        self.seed = seed
        self.params: dict[str, Any] = self.parse_params(params)
        self._check_params(self.params)
        self.rng = random.Random(seed)
        self.start: list[Configuration] = []
        seen: set[str] = set()
        for config in start:
            canonical = space.configuration(dict(config), strict=True)
            if canonical.hash not in seen:
                seen.add(canonical.hash)
                self.start.append(canonical)
        self._asked: dict[str, Configuration] = {}
        self._scores: dict[str, Score] = {}
        self._metrics: dict[str, dict[str, float]] = {}
        self._best: tuple[Configuration, Score] | None = None

    # ------------------------------------------------------------ parameters
    @classmethod
    def parse_params(cls, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults overlaid with ``params``, each checked against :attr:`PARAMS`.

        Raises:
            InvalidInputError: with field ``engine_params``.
        """
        given = dict(params or {})
        for key in given:
            if key not in cls.PARAMS:
                allowed = ", ".join(cls.PARAMS) or "(none)"
                raise InvalidInputError(
                    f"engine {cls.name!r}: unknown parameter {key!r}; known: {allowed}",
                    field=f"engine_params.{key}", allowed=allowed,
                )
        out: dict[str, Any] = {}
        for key, spec in cls.PARAMS.items():
            out[key] = spec.parse(cls.name, key, given[key]) if key in given else spec.default
        return out

    def _check_params(self, params: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Check relations between parameters; raise :func:`param_error` on a bad one."""

    def param_error(self, name: str, why: str) -> InvalidInputError:
        """An ``engine_params`` error about parameter ``name``."""
        return InvalidInputError(
            f"engine {self.name!r}: parameter {name!r} = {self.params.get(name)!r}: {why}",
            field=f"engine_params.{name}", allowed=f"{self.PARAMS[name].describe()}, {why}",
        )

    # ----------------------------------------------------------------- ask/tell
    def ask(self, n: int) -> list[Configuration]:
        """Up to ``n`` configurations never asked nor told before, in the order to run them.

        An empty list means :attr:`finished`, or that every configuration the engine can
        propose now is still awaiting :meth:`tell` (a generation or a round in flight):
        tell the :attr:`awaiting` ones, then ask again.

        Raises:
            ValueError: ``n`` is not a positive integer.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"ask() needs a positive batch size, got {n!r}")
        out = self._ask(n)
        for config in out:
            if self.known(config):  # a bug in the engine, never the user's fault
                raise RuntimeError(f"engine {self.name!r} proposed {config!r} twice")
            self._asked[config.hash] = config
        return out

    def tell(self, config: Configuration, score: Score, metrics: Mapping[str, float] | None = None) -> None:
        """Record the score of ``config``. A second tell of the same hash is ignored.

        A configuration the engine did not ask for is recorded (it counts for
        :meth:`best` and is never proposed), but does not steer the search.

        Args:
            config: the configuration measured.
            score: what it scored.
            metrics: the mean metrics behind the score (counters such as drops or the
                busiest core), for engines that read more than the score; optional.
        """
        if not isinstance(score, Score):
            raise TypeError(f"tell() needs a Score, got {type(score).__name__}")
        if config.hash in self._scores:
            return
        self._scores[config.hash] = score
        if metrics:
            self._metrics[config.hash] = {k: float(v) for k, v in metrics.items()}
        if self._best is None or score > self._best[1]:
            self._best = (config, score)
        self._tell(config, score)

    def _tell(self, config: Configuration, score: Score) -> None:  # noqa: B027 - optional hook
        """React to a new score (called once per hash)."""

    @abstractmethod
    def _ask(self, n: int) -> list[Configuration]:
        """Up to ``n`` new configurations (none of them :meth:`known`)."""

    @property
    @abstractmethod
    def finished(self) -> bool:
        """Nothing more to propose and nothing awaiting a score."""

    @property
    def stop_reason(self) -> str | None:
        """Why a :attr:`finished` engine proposes nothing more, when a rule of its own decided
        it (e.g. ``expected-improvement``); ``None`` when it simply ran out of configurations
        (the job says ``engine-done``) or is not finished."""
        return None

    @property
    def stop_detail(self) -> str | None:
        """The sentence behind :attr:`stop_reason`, for humans (``None`` with it)."""
        return None

    # ------------------------------------------------------------------ queries
    def known(self, config: Configuration) -> bool:
        """Whether ``config`` was asked or told already."""
        return config.hash in self._asked or config.hash in self._scores

    def score_of(self, config: Configuration) -> Score | None:
        """The score told for ``config``, if any."""
        return self._scores.get(config.hash)

    def metrics_of(self, config: Configuration) -> dict[str, float]:
        """The metrics told with ``config``'s score (empty when none were)."""
        return self._metrics.get(config.hash, {})

    @property
    def awaiting(self) -> list[Configuration]:
        """Configurations asked but not told yet, in the order they were asked."""
        return [c for h, c in self._asked.items() if h not in self._scores]

    def best(self) -> tuple[Configuration, Score] | None:
        """The best configuration told so far and its score (the first one on a tie)."""
        return self._best

    def describe_state(self) -> dict[str, Any]:
        """JSON-able progress: counts, best so far and the engine's own state."""
        best = None
        if self._best is not None:
            config, score = self._best
            best = {"hash": config.hash, "config": config.as_dict(), "score": _json_score(score)}
        return {
            "engine": self.name,
            "seed": self.seed,
            "params": dict(self.params),
            "asked": len(self._asked),
            "told": len(self._scores),
            "awaiting": len(self.awaiting),
            "finished": self.finished,
            "best": best,
            **self._state(),
        }

    def _state(self) -> dict[str, Any]:
        """Engine-specific, JSON-able part of :meth:`describe_state`."""
        return {}


def _json_score(score: Score) -> dict[str, Any]:
    def finite(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return {"feasible": score.feasible, "value": finite(score.value),
            "violation": finite(score.violation)}


#: Engines by name, filled by :func:`register_engine` as their modules are imported.
ENGINES: dict[str, type[Engine]] = {}

E = TypeVar("E", bound=type[Engine])


def register_engine(cls: E) -> E:
    """Class decorator: make an engine available to :func:`make_engine` under ``cls.name``."""
    ENGINES[cls.name] = cls
    return cls


def make_engine(
    name: str,
    space: SearchSpace,
    *,
    seed: int,
    params: Mapping[str, Any] | None = None,
    start: Sequence[Configuration] = (),
) -> Engine:
    """A fresh engine by name.

    Raises:
        InvalidInputError: unknown engine (field ``engine``, allowed names) or unknown or
            invalid parameters (field ``engine_params``).
    """
    if not isinstance(name, str) or name not in ENGINES:
        raise UnknownNameError("engine", str(name), list(ENGINES))
    factory: Callable[..., Engine] = ENGINES[name]
    return factory(space, seed=seed, params=params, start=start)
