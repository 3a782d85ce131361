"""The plain line of one trial: what a pipe, a CI log and the service's log show (the
service's log itself: tests/api/test_job_log.py; optimize in a pipe: tests/cli/test_piped_output.py)."""

from __future__ import annotations

import re
from typing import Any

from nictune.jobs import TrialEvent
from nictune.jobs.trial_log import MAX_KNOBS, LineContext, trial_line
from nictune.optimizer import Goal, Score
from nictune.search_spaces import Configuration, load_space

BENSON = load_space("benson-40g")
DEFAULT = BENSON.default().as_dict()
THROUGHPUT = LineContext(Goal.from_names("throughput"), BENSON)
LOSSLESS = LineContext(Goal.from_names("throughput", ["loss<=0.1"]), BENSON, simulated=True)
FIGURES = {"throughput_gbps": 39.6, "loss_pct": 0.0, "cpu_rx_pct": 141.8}


def config(**changes: Any) -> Configuration:
    return BENSON.configuration({**DEFAULT, **changes})


def event(cfg: Configuration, source: str = "measured", metrics: dict[str, float] | None = None, *,
          number: int = 4, best: int | None = 2, best_metrics: dict[str, float] | None = None,
          error: str | None = None, seconds: float | None = 31.42) -> TrialEvent:
    figures = FIGURES if metrics is None else metrics
    score = THROUGHPUT.goal.score(figures) if figures else Score.failed()
    return TrialEvent(1, number, 20, cfg, source, dict(figures), score, best,
                      dict(FIGURES if best_metrics is None and best is not None else best_metrics or {}),
                      error=error, seconds=seconds)


def test_a_measured_trial_names_its_progress_figures_best_and_changed_knobs() -> None:
    cfg = config(mtu=9000, rx_mode="watermark", watermark_frames=2)
    line = trial_line(event(cfg), THROUGHPUT)
    assert line == (f"[5/20] trial 4 {cfg.short_hash} measured 31.4 s | throughput 39.6 Gbit/s | "
                    "best trial 2: 39.6 Gbit/s | changes: rx_mode=watermark watermark_frames=2 mtu=9000")


def test_many_changed_knobs_are_cut_to_a_count() -> None:
    cfg = config(enable_sys_tune=True, high_rate_steer=True, rx_ring=4096, tx_ring=4096, pause=False, mtu=9000,
                 txqueuelen=10000, buffers="large", governor="performance")
    changes = trial_line(event(cfg), THROUGHPUT).split(" | changes: ")[1]
    assert changes.split()[:MAX_KNOBS] == ["enable_sys_tune=True", "high_rate_steer=True", "rx_ring=4096",
                                           "tx_ring=4096", "pause=False", "mtu=9000"]
    assert changes.endswith(" +3 more")


def test_the_default_configuration_changes_nothing() -> None:
    assert trial_line(event(config()), THROUGHPUT).endswith(" | changes: none (the default)")


def test_a_failed_trial_gives_its_error_on_the_same_line() -> None:
    line = trial_line(event(config(mtu=9000), "failed", {}, error="iperf3 exited 1:\nunable to connect\n",
                            seconds=12.0), THROUGHPUT)
    assert "\n" not in line
    assert " failed 12.0 s | error: iperf3 exited 1: unable to connect | best trial 2: 39.6 Gbit/s" in line


def test_a_cache_hit_says_so_with_its_lookup_time() -> None:
    line = trial_line(event(config(), "cache", seconds=0.0021), THROUGHPUT)
    assert re.match(r"\[5/20\] trial 4 [0-9a-f]{12} cache 0\.002 s \| throughput 39\.6 Gbit/s \|", line), line


def test_constraints_show_their_metric_what_breaks_and_no_best_before_one_holds() -> None:
    lossy = {"throughput_gbps": 6.981, "loss_pct": 0.226}
    line = trial_line(event(config(), metrics=lossy, number=0, best=None, seconds=None), LOSSLESS)
    assert line.startswith("[1/20] trial 0 ") and " measured (simulated) | " in line
    assert ("| throughput 6.981 Gbit/s, loss_pct 0.226 %, breaks loss_pct <= 0.1 "
            "| best: nothing meets the constraints yet |") in line
    without = trial_line(event(config(), "failed", {}, number=0, best=None), THROUGHPUT)
    assert "| best: none yet |" in without


def test_a_line_without_the_space_names_no_knobs() -> None:
    line = trial_line(event(config(mtu=9000)), LineContext(Goal.from_names("throughput"), None))
    assert line.endswith("| changes: unknown (space not known here)")



def test_a_short_run_says_whether_it_earned_its_full_run() -> None:
    """Short runs first (issue 29): the line says which trials stayed at their short run."""
    base = event(config(mtu=9000))
    base.short = {"duration_s": 2.0, "promoted": False}
    assert " measured [left at its 2 s short run] 31.4 s | " in trial_line(base, THROUGHPUT)
    base.short = {"duration_s": 2.0, "promoted": True}
    assert " measured [short 2 s -> full run] 31.4 s | " in trial_line(base, THROUGHPUT)
