"""Short runs first: when a short screening run earns a configuration its full-length run.

A new configuration is measured first with a short run (``short_s`` seconds instead of the
workload's ``full_s``). A short run differs from a full one in two ways, both estimated
from the job's own data:

* **noise**: fewer seconds average less of the flow's fluctuation, and a warm-up or ramp-up
  weighs more in a short run;
* **bias**: a short run may read systematically higher or lower (TCP's ramp-up, a warm-up
  transient, buffers that fill).

Both are measured on the pairs the job already has: every configuration that earned its full
run was also run short, so ``log(full / short)`` of each pair samples the bias (its mean) and
the noise (its spread). Before there are pairs, the prior assumes no bias and white-noise
scaling: a run of ``d`` seconds has relative noise ``cv_full * sqrt(full_s / d)``. The prior
weighs ``prior_dof`` degrees of freedom, the pairs one each.

The rule (:meth:`ShortRunRule.screen`): the short result, corrected for the bias, is the
centre of a one-sided Student-t bound at the stated ``risk``; the configuration earns its
full run when that bound reaches the incumbent's lower confidence bound (full runs only).
Under the estimated noise a configuration whose true value is at least the incumbent's lower
bound -- the optimum always is, unless the incumbent's bound is itself wrong -- is discarded
with probability at most ``risk``. ``bench/fidelity.py`` prints the rate at which discarded
configurations were in fact better than the incumbent.

Pure logic: the job loop (:mod:`nictune.jobs.evaluate`) measures and stores; this decides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nictune.optimizer.racing import t_quantile

#: The default chance of discarding a configuration at least as good as the incumbent.
DEFAULT_RISK = 0.05


@dataclass(frozen=True)
class Calibration:
    """How a short run relates to a full one, as estimated so far.

    Attributes:
        bias: full / short, the factor that turns a short result into a full one's estimate
            (on the oriented objective, geometric mean of the pairs shrunk towards 1).
        sigma: standard deviation of ``log(full / short)`` of one pair.
        dof: degrees of freedom behind ``sigma`` (the prior's plus the pairs').
        pairs: configurations measured at both fidelities that went into it.
    """

    bias: float
    sigma: float
    dof: float
    pairs: int

    def as_dict(self) -> dict[str, float | int]:
        return {"bias": round(self.bias, 4), "sigma": round(self.sigma, 4), "dof": round(self.dof, 1),
                "pairs": self.pairs}


@dataclass(frozen=True)
class Screen:
    """One screening decision."""

    promote: bool
    corrected: float  # the short result corrected for the bias (oriented objective)
    bound: float  # the optimistic bound that was compared (oriented)
    incumbent_low: float | None  # the incumbent's lower confidence bound (oriented); None: no incumbent

    def as_dict(self) -> dict[str, float | bool | None]:
        return {"promoted": self.promote, "corrected": _round(self.corrected), "bound": _round(self.bound),
                "incumbent_low": None if self.incumbent_low is None else _round(self.incumbent_low)}


@dataclass(frozen=True)
class ShortRunRule:
    """Decides, from a short run, whether a configuration earns its full-length run.

    Attributes:
        short_s: seconds of a short run.
        full_s: seconds of a full run (the workload's duration).
        risk: most probability, under the estimated noise, of discarding a configuration whose
            true value reaches the incumbent's lower confidence bound (one-sided).
        prior_dof: weight of the white-noise prior, in degrees of freedom.
    """

    short_s: float
    full_s: float
    risk: float = DEFAULT_RISK
    prior_dof: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.short_s < self.full_s:
            raise ValueError("a short run must be shorter than the full run and longer than 0 s")
        if not 0 < self.risk < 0.5:
            raise ValueError("risk must be in (0, 0.5)")

    def prior_sigma(self, full_cv: float) -> float:
        """The spread of ``log(full / short)`` before any pair: white-noise scaling of ``full_cv``."""
        short_cv = full_cv * math.sqrt(self.full_s / self.short_s)
        return math.sqrt(math.log1p(short_cv**2) + math.log1p(full_cv**2))

    def calibrate(self, pairs: Sequence[tuple[float, float]], full_cv: float) -> Calibration:
        """The bias and noise of a short run from ``pairs`` of (short, full mean) oriented objective
        values of the same configurations; pairs of mixed sign or a zero are left out."""
        logs = [math.log(full / short) for short, full in pairs
                if short * full > 0 and math.isfinite(short) and math.isfinite(full)]
        k = self.prior_dof
        mean = math.fsum(logs) / (len(logs) + k)  # shrunk towards "no bias"
        prior_var = self.prior_sigma(full_cv) ** 2
        spread = math.fsum((x - mean) ** 2 for x in logs)
        dof = k + len(logs)
        var = (k * prior_var + spread) / dof
        return Calibration(bias=math.exp(mean), sigma=math.sqrt(var), dof=dof, pairs=len(logs))

    def screen(self, short: float, incumbent_low: float | None, calibration: Calibration,
               within_sigma: float = 0.0) -> Screen:
        """Whether the configuration whose short run gave ``short`` (oriented objective, bigger
        is better) earns its full run against an incumbent with lower bound ``incumbent_low``.

        ``within_sigma`` is the relative noise the run's own intervals show (iperf3's
        per-interval figures): an unsteady short run is trusted less.
        """
        corrected = short * calibration.bias
        sigma = max(calibration.sigma, within_sigma)
        q = t_quantile(1.0 - 2.0 * self.risk, calibration.dof)
        # The optimistic end of the corrected value: further from 0 when it is a gain
        # (positive), closer to 0 when it is a cost (a minimised metric, oriented negative).
        bound = corrected * math.exp(q * sigma) if corrected > 0 else corrected * math.exp(-q * sigma)
        if incumbent_low is None or not math.isfinite(incumbent_low) or not math.isfinite(short):
            return Screen(True, corrected, bound, incumbent_low)
        return Screen(bound >= incumbent_low, corrected, bound, incumbent_low)


def interval_sigma(rates: Sequence[float]) -> float:
    """The relative noise of a run's mean from its per-interval rates (0 with fewer than 2):
    the coefficient of variation of the intervals over the square root of their number."""
    xs = [x for x in rates if math.isfinite(x)]
    if len(xs) < 2:
        return 0.0
    mean = math.fsum(xs) / len(xs)
    if mean <= 0:
        return 0.0
    var = math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1)
    return math.sqrt(var) / mean / math.sqrt(len(xs))


def _round(x: float) -> float:
    return float(f"{x:.6g}") if math.isfinite(x) else x
