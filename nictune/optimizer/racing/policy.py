"""Adaptive repeats (racing): spend measurements only where they can change the answer.

Pure logic, no testbed and no database: the job loop keeps the samples of every
configuration (one metrics dict per measurement) and asks a :class:`RacingPolicy` what to
do next. The procedure of a job (racing deferred to the end of the search):

1. Every new configuration is measured once.
2. After the last trial, :meth:`RacingPolicy.finalists` names the ``final_race`` best
   configurations (:meth:`RacingPolicy.recommend` order) that have a single measurement;
   each is measured once more: a configuration that was lucky once has to confirm it, and
   a clearly worse one gets no repeat.
3. :meth:`RacingPolicy.race_step` says what to measure next until the race is decided:
   the recommended configuration until it has ``max_repeats`` runs, then any other
   configuration that could still be better (:meth:`RacingPolicy.challengers`) once more;
   the recommendation may move on the way, and the race goes on until the configuration it
   recommends has its runs and nothing else could beat it, or ``race_cap`` measurements
   were spent (then :meth:`RacingPolicy.final_choice` recommends among the configurations
   measured ``max_repeats`` times, and the job says that the cap ended the race).
4. :meth:`RacingPolicy.recommend` picks, among the configurations feasible on their means,
   the one with the best *lower confidence bound* of the objective discounted by the chance
   that a constraint fails, and
   :meth:`RacingPolicy.summary` gives its mean with the interval for the output.

Why at the end: racing after every configuration (:meth:`RacingPolicy.decide`, the
procedure before 2026-11-23)
spent about a quarter of a 50-measurement budget on repeats of configurations that tied
with the incumbent, and those measurements found more as new configurations (figures in the
README, "Benchmarks").

The statistics (pooled noise, intervals, the chance that constraints hold) are
:mod:`~nictune.optimizer.racing.stats`'s, the texts :mod:`~nictune.optimizer.racing.display`'s.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nictune.optimizer.objectives import Goal
from nictune.optimizer.racing import display
from nictune.optimizer.racing.stats import OBJECTIVE, Noise, RaceStatistics, Samples

Decision = Literal["again", "incumbent", "stop", "done"]


@dataclass(frozen=True)
class RacingPolicy:
    """Decides repeats, eliminations and the recommendation. See the module docstring.

    Attributes:
        goal: the job's objectives and constraints (the first objective is raced).
        max_repeats: most measurements of one configuration (and how often the incumbent is
            measured in all by the end of the job).
        confidence: level of the intervals shown, of the recommendation's lower bound and of
            "clearly better".
        race_confidence: level of the test "could it still be the best?": a challenger whose
            difference to the incumbent is below 0 at this level stops (0.1: about an eighth
            of a standard error, so a challenger is repeated only while its mean is about as
            good as the incumbent's or better). Measured on bench/engines.py against 0.5
            (3% noise, budget 50 measurements, bayes): on linux-nic, where many challengers
            tie with the incumbent, 1.45 instead of 1.68 measurements per configuration, the
            saved ones going to new configurations (recommendation within 2% of the optimum
            in 8/20 seeds instead of 6/20: within seed noise); no change beyond seed noise
            elsewhere.
        prior_cv: relative noise assumed before repeats tell otherwise.
        prior_dof: weight of ``prior_cv``, in degrees of freedom.
        tolerance: relative difference not worth measuring for (0.005: half a percent).
        min_incumbent_repeats: samples a configuration needs before it counts as clearly
            better than the incumbent.
        final_race: configurations measured once more at the end of a job (step 2 of the
            module docstring); a job takes :meth:`final_race_for` its budget. Measured with
            ``bench.engines.run_nictune`` (bayes, 3% noise, budget 50 measurements, linux-nic
            seeds 0-199, recommendation within 2% of the optimum): 2 finalists 80%, 3 79%, 4
            76.5%; 3 without the final repeat (``max_repeats`` 2) 82%: all within the seed
            noise (about 4 points), so 3 (the default), which lets the second and third best
            overturn a lucky first.
        race_cap: most measurements the race spends after the finalists' (:meth:`race_step`);
            a race cut short there recommends among the configurations measured
            ``max_repeats`` times (:meth:`final_choice`) and the job says so.
    """

    goal: Goal
    max_repeats: int = 3
    confidence: float = 0.9
    race_confidence: float = 0.1
    prior_cv: float = 0.05
    prior_dof: float = 2.0
    tolerance: float = 0.0
    min_incumbent_repeats: int = 2
    final_race: int = 3
    race_cap: int = 12

    def __post_init__(self) -> None:
        if self.max_repeats < 1:
            raise ValueError("max_repeats must be at least 1")
        if not (0.0 < self.confidence < 1.0 and 0.0 < self.race_confidence < 1.0):
            raise ValueError("confidence and race_confidence must be in (0, 1)")
        if self.final_race < 0 or self.race_cap < 0:
            raise ValueError("final_race and race_cap must be >= 0")
        if self.prior_cv < 0 or self.prior_dof <= 0 or self.tolerance < 0:
            raise ValueError("prior_cv and tolerance must be >= 0, prior_dof > 0")

    @functools.cached_property
    def stats(self) -> RaceStatistics:
        """The statistics at this policy's level and noise prior (what it decides on)."""
        return RaceStatistics(self.goal, self.confidence, self.prior_cv, self.prior_dof)

    # -------------------------------------------------------------- decisions
    def decide(self, trials: Mapping[str, Samples], challenger: str, incumbent: str | None) -> Decision:
        """What to do after a measurement of ``challenger`` when racing after every
        configuration (not what a job does: see the module docstring; the bench's
        ``bayes-race-each`` contender does it): ``"again"``, ``"incumbent"`` (measure the
        incumbent first), ``"stop"`` (clearly worse) or ``"done"``.

        Args:
            trials: every configuration's samples so far, by key (e.g. the config hash).
            challenger: the key of the configuration just measured.
            incumbent: the key of the current recommendation (:meth:`recommend` before the
                challenger was measured), or ``None`` for the first configuration.
        """
        mine = trials.get(challenger, ())
        n = len(mine)
        if n == 0:
            return "again"
        if incumbent is None or incumbent == challenger or incumbent not in trials:
            return "done"
        st = self.stats
        noise = st.noise(trials)
        feasible = st.feasibility(mine, noise)
        if feasible == "no":
            return "stop"
        theirs = trials[incumbent]
        inc_feasible = st.score(theirs).feasible
        if not inc_feasible:
            # No feasible incumbent yet: anything feasible on its mean is progress.
            if st.score(mine) > st.score(theirs):
                return "done" if n >= self.min_incumbent_repeats or n >= self.max_repeats else "again"
            return "stop" if feasible == "yes" or n >= self.max_repeats else "again"
        low, _ = st.difference(mine, theirs, noise, self.confidence)
        _, high = st.difference(mine, theirs, noise, self.race_confidence)
        margin = self.tolerance * abs(st.objective_interval(theirs, noise).mean)
        if high < margin:
            return "stop"  # clearly worse (or not worth a tolerance more)
        if n >= self.max_repeats:
            return "done"
        if low > 0 and feasible == "yes":
            return "done" if n >= self.min_incumbent_repeats else "again"
        m = len(theirs)
        if m < n and m < self.max_repeats:
            return "incumbent"
        return "again"

    def recommend(self, trials: Mapping[str, Samples]) -> str | None:
        """The configuration to recommend: among the ones feasible on their means, the best
        lower confidence bound of the objective discounted by the chance that a constraint
        fails (:meth:`feasible_probability` ``p``: the bound less ``(1 - p)`` times its size,
        i.e. ``p`` times it for a positive objective, as if a broken constraint were worth
        nothing); when none is feasible, the smallest mean violation. First key wins a tie;
        ``None`` when nothing was measured.

        Why a discount and not "surely feasible first" (the rule before 2026-11-28): loss
        noise is relative, so only a configuration without any loss is ever surely within a
        loss limit, and on a real veth pair (udp-jumbo, loss <= 0.1 %, budget 30, seed 3) that
        rule recommended 2.70 Gbit/s with no loss over 10.2 Gbit/s at 0.050 % (3 runs each).
        A configuration at the edge still gives way to a safe one about as fast: 8.0 Gbit/s at
        0.098 % (p about 0.5) ranks below 7.6 at 0.04 %.
        """
        st = self.stats
        noise = st.noise(trials)
        best: tuple[tuple[int, float, float], str] | None = None
        for key, samples in trials.items():
            if not samples:
                continue
            score = st.score(samples)
            if score.feasible:
                iv = st.objective_interval(samples, noise)
                p = st.feasible_probability(samples, noise)
                rank = (1, iv.low - (1.0 - p) * abs(iv.low), iv.mean)
            else:
                rank = (0, -score.violation, score.value)
            if any(math.isnan(r) for r in rank[1:]):
                continue
            if best is None or rank > best[0]:
                best = (rank, key)
        return best[1] if best else None

    @staticmethod
    def final_race_for(budget: int) -> int:
        """The size of the final race (``final_race``) of a job of ``budget`` trials: one
        finalist per 20 trials, at least 1 and at most 3.

        A small budget is better spent on new configurations than on finalists' repeats.
        Measured with ``bench/engines.py`` (development split, bayes, budgets counted in
        measurements, the race inside them), median simple regret at budgets 20/30/60:
        synthetic family 10.63/4.65/2.22 % with 3 finalists at every budget, 9.66/3.94/2.40 %
        with 1, 10.08/4.36/2.40 % with 2; sim family 0.00 % everywhere, mean regret at 60
        0.15 % (3), 0.16 % (1), 0.06 % (2). On the test split the rule against 3 finalists
        was within the seed noise (synthetic 10.72 vs 11.21 % at 20, 6.86 vs 6.49 % at 30):
        it is kept for the race measurements it saves a small job.
        """
        return max(1, min(3, budget // 20))

    def finalists(self, trials: Mapping[str, Samples]) -> list[str]:
        """The configurations to measure once more at the end of a job: of the ``final_race``
        best (:meth:`recommend` order), the ones with a single measurement (the rest were
        repeated already, e.g. cached ones or a resumed job's). None when ``max_repeats`` is 1."""
        if self.max_repeats < 2:
            return []
        rest = {key: samples for key, samples in trials.items() if samples}
        best: list[str] = []
        while rest and len(best) < self.final_race:
            key = self.recommend(rest)
            if key is None:
                break
            best.append(key)
            del rest[key]
        return [key for key in best if len(trials[key]) == 1]

    def final_repeats(self, trials: Mapping[str, Samples], incumbent: str | None) -> int:
        """How many more times to measure the incumbent before the job ends."""
        if incumbent is None or incumbent not in trials:
            return 0
        return max(0, self.max_repeats - len(trials[incumbent]))

    def challengers(self, trials: Mapping[str, Samples], incumbent: str) -> list[str]:
        """Configurations with fewer than ``max_repeats`` runs that could still be better than
        ``incumbent``: feasible on their mean (when the incumbent is), not surely infeasible,
        and their difference to it not below 0 at ``race_confidence`` (about as good or better
        on the mean); the most promising (highest mean) first."""
        if incumbent not in trials:
            return []
        st = self.stats
        noise = st.noise(trials)
        theirs = trials[incumbent]
        inc_feasible = st.score(theirs).feasible
        found: list[tuple[float, str]] = []
        for key, samples in trials.items():
            if key == incumbent or not samples or len(samples) >= self.max_repeats:
                continue
            score = st.score(samples)
            if not inc_feasible or not score.feasible or st.feasibility(samples, noise) == "no":
                continue
            _, high = st.difference(samples, theirs, noise, self.race_confidence)
            if high >= 0:
                found.append((score.value, key))
        return [key for _, key in sorted(found, key=lambda t: -t[0])]

    def race_step(self, trials: Mapping[str, Samples]) -> tuple[str, int] | None:
        """What the final race measures next, as ``(key, times)``: the recommended configuration
        until it has ``max_repeats`` runs, then the most promising of its :meth:`challengers`
        once; ``None`` when the race is decided (the recommendation has its runs and nothing
        else could be better). Each step measures a configuration with fewer than
        ``max_repeats`` runs, so the race ends."""
        incumbent = self.recommend(trials)
        if incumbent is None:
            return None
        missing = self.final_repeats(trials, incumbent)
        if missing > 0:
            return incumbent, missing
        rivals = self.challengers(trials, incumbent)
        return (rivals[0], 1) if rivals else None

    def final_choice(self, trials: Mapping[str, Samples], decided: bool) -> str | None:
        """The recommendation at the end of the race: :meth:`recommend`; when the race was cut
        short (its cap, or a budget) before it was decided, the best of the configurations that
        have their ``max_repeats`` runs (if any has), never one measured fewer times."""
        if decided:
            return self.recommend(trials)
        complete = {key: samples for key, samples in trials.items() if len(samples) >= self.max_repeats}
        return self.recommend(complete) or self.recommend(trials)

    def aggregate_key(self, metrics: Mapping[str, float], n: int,
                      noise: Mapping[str, Noise]) -> tuple[int, float, float]:
        """Sort key (bigger is better) of a configuration known by the mean ``metrics`` of its
        ``n`` measurements (the history's ranking across jobs): feasible on its mean first, by
        the objective's lower confidence bound (so one lucky run does not outrank the same mean
        confirmed three times), then by the mean; infeasible ones by least violation.

        Raises:
            MeasurementError: a metric the goal needs is missing.
        """
        score = self.goal.score(metrics)
        if not score.feasible:
            return (0, -score.violation, score.value)
        # mean_interval(...).low without building the interval: this runs for every
        # configuration of a context (tens of thousands).
        v, nz = score.value, noise[OBJECTIVE]
        if not math.isfinite(v) or n < 1:
            return (1, v, v)
        return (1, v - self.stats.half_width(v, n, nz), v)

    def summary(self, trials: Mapping[str, Samples], key: str) -> dict[str, Any]:
        """Plain data for the output: mean metrics, the objective's interval, feasibility
        (:func:`display.summary <nictune.optimizer.racing.display.summary>`)."""
        st = self.stats
        noise = st.noise(trials)
        samples = trials[key]
        shown = st.shown(st.objective_interval(samples, noise))
        return display.summary(self.goal.objective, Goal.mean_metrics(samples), shown,
                               st.feasibility(samples, noise), st.score(samples))

    def noise_report(self, trials: Mapping[str, Samples]) -> dict[str, dict[str, float]]:
        """The pooled noise estimate to store with the job (``cv``, ``dof``, ``measured_dof``)."""
        return display.noise_report(self.stats.noise(trials))
