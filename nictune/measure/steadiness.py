"""Whether a configuration's runs measured one steady host.

A host's run-to-run noise is a few per cent (the veth table: a median coefficient of
variation of 6-7 % per 5 s run). A host that something else slows for a while (other load;
a virtual machine whose host takes its CPU: on the python-svc machines every configuration
runs at about half its rate in streaks of consecutive runs) gives runs of two kinds, and
their mean describes neither. :func:`unsteady_runs` finds that case, as a benchmark tool
warns of outliers (hyperfine: "Statistical outliers were detected"), so that `measure` can
say so instead of printing the mean as if it were one condition's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nictune.metrics import label, unit

#: Runs are unsteady when the slowest is below this share of the fastest. Ten runs of one
#: configuration with a 7 % run-to-run spread span about 0.8 of the fastest; 0.7 is five
#: such spreads apart.
UNSTEADY_SHARE = 0.7


@dataclass(frozen=True)
class Unsteady:
    """Runs of one configuration too far apart for one steady host."""

    metric: str
    slowest: float
    fastest: float
    #: 1-based numbers of the runs below :data:`UNSTEADY_SHARE` of the fastest.
    slow_runs: tuple[int, ...]
    runs: int

    def text(self, *, simulated: bool = False) -> str:
        """The warning ``measure`` prints, in the metric's words and unit; on a simulated
        testbed the spread is the model's noise (``--noise``), not a host's."""
        numbers = [str(n) for n in self.slow_runs]
        which = numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " and " + numbers[-1]
        head = (f"unsteady runs: {label(self.metric)} ranged from {self.slowest:.3g} to {self.fastest:.3g} "
                f"{unit(self.metric)} over "
                f"{self.runs} runs (run{'s' if len(numbers) > 1 else ''} {which} under "
                f"{UNSTEADY_SHARE:.0%} of the fastest), far more than a steady host's run-to-run noise")
        if simulated:
            return head + ": the simulated noise (--noise) is that large."
        return (head + ". Something else slowed the host during some runs (other load; on a virtual machine, "
                "its host), so the mean mixes two conditions. Measure again when the host is quiet, or compare "
                "configurations in alternating rounds rather than one after another.")


def unsteady_runs(samples: Sequence[Mapping[str, float]], metric: str = "throughput_gbps",
                  share: float = UNSTEADY_SHARE) -> Unsteady | None:
    """The runs' spread in ``metric`` when the slowest is below ``share`` of the fastest;
    ``None`` for steady runs, fewer than two runs with the metric, or a fastest run of 0."""
    values = [float(s[metric]) for s in samples if metric in s]
    if len(values) < 2:
        return None
    fastest = max(values)
    if fastest <= 0 or min(values) >= share * fastest:
        return None
    slow = tuple(i + 1 for i, v in enumerate(values) if v < share * fastest)
    return Unsteady(metric, min(values), fastest, slow, len(values))
