"""Uniform random search: the baseline every smarter engine has to beat."""

from __future__ import annotations

from typing import Any, ClassVar

from nictune.optimizer._base import Engine, register_engine
from nictune.search_spaces import Configuration

#: Consecutive draws of known configurations after which the space counts as exhausted.
MAX_DUPLICATE_DRAWS = 1000


@register_engine
class RandomEngine(Engine):
    """Random search (``random``): the start configurations, then uniform valid samples.

    Never proposes a configuration twice. Finished once the space is exhausted: every
    configuration of a finite space was seen, or :data:`MAX_DUPLICATE_DRAWS` draws in a
    row gave only known configurations.
    """

    name: ClassVar[str] = "random"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._size = self.space.size()
        self._exhausted = False

    def _ask(self, n: int) -> list[Configuration]:
        out: list[Configuration] = []
        taken: set[str] = set()
        for config in self.start:
            if len(out) < n and not self.known(config) and config.hash not in taken:
                out.append(config)
                taken.add(config.hash)
        while len(out) < n and not self._exhausted:
            if self._size is not None and len(self._asked) + len(taken) >= self._size:
                # Constraints only shrink a space, so this many distinct configurations is all.
                self._exhausted = True
                break
            for _ in range(MAX_DUPLICATE_DRAWS):
                config = self.space.sample(self.rng)
                if not self.known(config) and config.hash not in taken:
                    out.append(config)
                    taken.add(config.hash)
                    break
            else:
                self._exhausted = True
        return out

    @property
    def finished(self) -> bool:
        return self._exhausted and not self.awaiting

    def _state(self) -> dict[str, Any]:
        return {"exhausted": self._exhausted}
