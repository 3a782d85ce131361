"""One factor at a time: the hand-tuning procedure of the 40 GbE study, as an engine.

Start from a center (the space's ``baseline`` profile when it has one), measure it and
every one-factor change of it (:meth:`SearchSpace.neighbours`). If the best change beats
the center, it becomes the new center and the next round starts; a round that brings no
improvement ends the search. Configurations measured in an earlier round are not measured
again: their scores are reused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from nictune.optimizer._base import Engine, Param, register_engine
from nictune.optimizer.objectives import Score
from nictune.search_spaces import Configuration


@register_engine
class OfatEngine(Engine):
    """One-factor-at-a-time search (``ofat``). See the module docstring.

    The start configurations are measured in the first round for reference; only
    one-factor changes of the center can become the next center.
    """

    name: ClassVar[str] = "ofat"
    PARAMS: ClassVar[Mapping[str, Param]] = {
        "center": Param(str, None, help="profile to start from (default: 'baseline' if the "
                                        "space has it, else the first start configuration)"),
        "max_rounds": Param(int, None, low=1, help="stop after this many rounds"),
    }

    def _check_params(self, params: dict[str, Any]) -> None:
        center = params["center"]
        if center is not None and center not in self.space.profile_names():
            raise self.param_error(
                "center", f"not a profile of space {self.space.name!r} "
                          f"(profiles: {', '.join(self.space.profile_names())})",
            )

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.round = 0
        self.centers: list[Configuration] = [self._first_center()]
        self._done = False
        self._changes: list[Configuration] = []
        self._round: list[Configuration] = []
        self._start_round(with_start=True)
        self._advance()

    def _first_center(self) -> Configuration:
        name = self.params["center"]
        if name is not None:
            return self.space.profile(name)
        if "baseline" in self.space.profiles:
            return self.space.profile("baseline")
        return self.start[0] if self.start else self.space.default()

    @property
    def center(self) -> Configuration:
        """The configuration whose one-factor changes the current round measures."""
        return self.centers[-1]

    def _start_round(self, *, with_start: bool = False) -> None:
        """Queue the center and its one-factor changes (and the start configurations)."""
        members = [*self.start] if with_start else []
        seen = {c.hash for c in members}
        changes: list[Configuration] = []
        for config in [self.center, *(c for _, c in self.space.neighbours(self.center))]:
            if config.hash in seen:
                continue
            seen.add(config.hash)
            members.append(config)
            if config.hash != self.center.hash:
                changes.append(config)
        self._changes = changes
        self._round = members

    def _advance(self) -> None:
        """Close every complete round, moving the center, until a round awaits scores."""
        max_rounds = self.params["max_rounds"]
        while not self._done and all(self.score_of(c) is not None for c in self._round):
            center_score = self.score_of(self.center)
            assert center_score is not None
            best: tuple[Score, Configuration] | None = None
            for config in self._changes:  # first best change wins a tie
                score = self.score_of(config)
                assert score is not None
                if best is None or score > best[0]:
                    best = (score, config)
            last_round = max_rounds is not None and self.round + 1 >= max_rounds
            if best is None or not best[0] > center_score or last_round:
                self._done = True
                return
            self.round += 1
            self.centers.append(best[1])
            self._start_round()

    def _ask(self, n: int) -> list[Configuration]:
        return [c for c in self._round if not self.known(c)][:n]

    def _tell(self, config: Configuration, score: Score) -> None:
        self._advance()

    @property
    def finished(self) -> bool:
        return self._done

    def _state(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "center": self.center.hash,
            "centers": [c.hash for c in self.centers],
            "round_size": len(self._round),
            "evaluated_in_round": sum(1 for c in self._round if self.score_of(c) is not None),
        }
