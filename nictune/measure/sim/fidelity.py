"""What makes a short simulated run differ from a full one: more noise, a ramp, a warm-up.

The model's figures (:mod:`nictune.measure.sim.model`) are those of a run of
:data:`REFERENCE_S` seconds, the workload's default; a run of another duration differs in
two ways, so that short runs first (``optimize --short-run``) can be measured on the model:

* **noise**: part of a run's variance is run-to-run (where the scheduler puts the flows,
  the machine's other load) and does not shrink with a longer run; the rest averages out
  as ``1 / duration``. The coefficient of variation of a run of ``d`` seconds is
  ``cv * sqrt(PERSISTENT_SHARE + (1 - PERSISTENT_SHARE) * REFERENCE_S / d)``.
* **bias**: after a configuration is applied the flow ramps up (TCP's slow start and
  receive-buffer autotuning; for UDP a shorter warm-up of caches and queues): its rate is
  ``r * (1 - a * exp(-t / T))`` at ``t`` seconds. iperf3 leaves the first ``omit_s``
  seconds out, so a run measures the mean of that curve over ``[omit, omit + d]``:
  ``r * (1 - a * T / d * (exp(-omit / T) - exp(-(omit + d) / T)))``. The figures are
  relative to a run of :data:`REFERENCE_S` seconds with the same warm-up, so a run of the
  default duration reads exactly what the model says.

The constants are calibrated on real veth runs of 1, 2, 4 and 10 seconds
(``bench/fidelity_calibrate.py``; figures and date in ``bench/data/fidelity/README.md``).
"""

from __future__ import annotations

import math

#: The duration the model's figures stand for (the workloads' default).
REFERENCE_S = 10.0
#: Share of a reference run's variance that a longer run does not average out.
PERSISTENT_SHARE = 0.5
#: Ramp after an apply: (amplitude ``a``, time constant ``T`` in seconds) per protocol.
RAMP: dict[str, tuple[float, float]] = {"tcp": (0.6, 0.6), "udp": (0.25, 0.4)}


def noise_factor(duration_s: float) -> float:
    """How much noisier (> 1) or steadier (< 1) a run of ``duration_s`` is than a reference run."""
    if duration_s == REFERENCE_S:
        return 1.0
    return math.sqrt(PERSISTENT_SHARE + (1.0 - PERSISTENT_SHARE) * REFERENCE_S / duration_s)


def _ramp_mean(protocol: str, duration_s: float, omit_s: float) -> float:
    a, tau = RAMP.get(protocol, RAMP["udp"])
    lost = a * tau / duration_s * (math.exp(-omit_s / tau) - math.exp(-(omit_s + duration_s) / tau))
    return 1.0 - lost


def rate_factor(protocol: str, duration_s: float, omit_s: float) -> float:
    """The share of the reference run's rate a run of ``duration_s`` (after ``omit_s`` of
    warm-up left out) measures: below 1 for a short run that still sees the ramp."""
    if duration_s == REFERENCE_S:
        return 1.0
    return _ramp_mean(protocol, duration_s, omit_s) / _ramp_mean(protocol, REFERENCE_S, omit_s)
