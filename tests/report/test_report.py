"""``nictune report`` on finished simulated jobs: figures, numbers, honesty, no network."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import pytest
import typer
from PIL import Image
from typer.testing import CliRunner

from nictune.cli import export as export_cli
from nictune.cli import report as report_cli
from nictune.errors import InvalidInputError, NotFoundError
from nictune.jobs import JobRunner, JobSpec, create_job, job_report
from nictune.report import Report, build_report, knob_importance, load_job, ofat_rounds
from nictune.report.figures import fmt
from tests.report.conftest import Jobs

pytestmark = pytest.mark.slow  # its module fixtures run whole jobs


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_valid_png(data: bytes) -> None:
    assert data.startswith(PNG_SIGNATURE)
    with Image.open(io.BytesIO(data)) as img:
        img.verify()
    with Image.open(io.BytesIO(data)) as img:
        assert img.format == "PNG" and img.size[0] > 200 and img.size[1] > 200


def inline_figures(html: str) -> dict[str, bytes]:
    """figure id -> the PNG inlined in it."""
    found = re.findall(r'<figure id=([a-z0-9_]+)>.*?src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html, re.S)
    return {name: base64.b64decode(data) for name, data in found}


def test_report_has_every_figure_inline_and_as_valid_png_files(ga_report: Report) -> None:
    html = ga_report.html.read_text(encoding="utf-8")
    inline = inline_figures(html)
    expected = {"convergence", "default_vs_best", "importance", "knob_effects"}
    assert expected <= set(ga_report.figures)
    assert set(inline) == set(ga_report.figures)
    for name, path in ga_report.figures.items():
        assert path.parent == ga_report.html.parent
        assert_valid_png(path.read_bytes())
        assert inline[name] == path.read_bytes()
    # Each figure's alt text is one quoted attribute (it was alt='Default vs best' unquoted).
    from html.parser import HTMLParser

    alts: list[str | None] = []

    class Images(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "img":
                alts.append(dict(attrs).get("alt"))

    Images().feed(html)
    assert len(alts) == len(inline) and "Default vs recommended" in alts and not any("'" in (a or "'") for a in alts)


def test_single_objective_job_has_no_pareto_and_no_profile_figure(ga_report: Report) -> None:
    html = ga_report.html.read_text(encoding="utf-8")
    assert "pareto" not in ga_report.figures and "id=pareto" not in html
    assert not any(name.startswith("ofat_profiles") for name in ga_report.figures)


def test_report_shows_the_best_trial_numbers_and_configuration(jobs: Jobs, ga_report: Report) -> None:
    html = ga_report.html.read_text(encoding="utf-8")
    info = job_report(jobs.engine, jobs.ga)
    best, default = info["best"], info["default"]
    assert best is not None and default is not None
    assert best["config_hash"] in html
    assert f"recommended (trial {best['number']})" in html
    for metric in ("throughput_gbps", "loss_pct", "cpu_rx_pct", "interrupts_per_gb"):
        assert fmt(best["metrics"][metric]) in html, metric
        assert fmt(default["metrics"][metric]) in html, metric
    for knob, value in info["best_config"].items():
        assert re.search(rf"<td>{re.escape(knob)}</td><td>{re.escape(str(value))}</td>", html), knob
    gain = (best["metrics"]["throughput_gbps"] - default["metrics"]["throughput_gbps"]) \
        / default["metrics"]["throughput_gbps"] * 100
    assert f"{gain:+.1f}%" in html


def test_report_names_the_job_and_says_the_testbed_is_simulated(jobs: Jobs, ga_report: Report) -> None:
    html = ga_report.html.read_text(encoding="utf-8")
    assert ga_report.simulated
    for text in (f"nictune report: job {jobs.ga} (simulated)", "sim:benson-40g", "Simulated testbed",
                 "a model", "workload", "tcp", "throughput", "Gbit/s", "constraints", "engine", "ga",
                 "60 trials, 3 runs each, seed 7"):
        assert text in html, text


def test_report_says_how_repeats_were_spent_and_why_a_job_ended_early(jobs: Jobs, ofat_report: Report,
                                                                     tmp_path: Path) -> None:
    """With racing a configuration gets its repeats only while it could be the best (the report
    said "3 repeats each" of a job whose trials mostly ran once); a job whose engine ran out of
    configurations says after how many trials."""
    html = ofat_report.html.read_text(encoding="utf-8")
    info = job_report(jobs.engine, jobs.ofat)
    assert info["racing"] and info["runs"] > info["trials"]
    assert "50 trials, up to 3 runs each (adaptive repeats), seed 7" in html
    assert f"{info['runs']} benchmark runs" in html and "nothing left to propose" not in html
    small = create_job(jobs.engine, JobSpec(objectives=["packet-rate"], testbed="sim:ixgbe-10g", budget=20, seed=7,
                                            warm_start=False))
    JobRunner(jobs.engine).run(small)  # the ixgbe-numa space has 8 configurations
    report = build_report(jobs.engine, small, tmp_path / "small")
    assert "; the engine had nothing left to propose after 8" in report.html.read_text(encoding="utf-8")


def test_report_opens_without_network(ga_report: Report) -> None:
    html = ga_report.html.read_text(encoding="utf-8")
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "@import" not in html and "url(" not in html
    assert not re.search(r"<link\b", html, re.I)


def test_ofat_job_has_the_profile_figure(jobs: Jobs, ofat_report: Report) -> None:
    assert "ofat_profiles_round1" in ofat_report.figures
    assert_valid_png(ofat_report.figures["ofat_profiles_round1"].read_bytes())
    assert "ofat_profiles_round1" in inline_figures(ofat_report.html.read_text(encoding="utf-8"))
    assert "pareto" not in ofat_report.figures


def test_ofat_profiles_are_one_factor_changes_of_their_center(jobs: Jobs) -> None:
    job = load_job(jobs.engine, jobs.ofat)
    rounds = ofat_rounds(job)
    first = rounds[0]
    assert first.profiles[0].is_center and first.profiles[0].label == "baseline (center)"
    assert first.center == job.space.profile("baseline").as_dict()
    labels = [p.label for p in first.profiles]
    assert "mtu=1500" in labels and "default" in labels
    for prof in first.profiles[1:]:
        if prof.label in job.space.profile_names():
            continue  # a start configuration (the default, a stock profile), measured for reference
        changed = [k for k in job.space.knobs if prof.trial.config.get(k) != first.center.get(k)]
        roots = [k for k in changed if job.space.knobs[k].condition is None or
                 job.space.knobs[k].condition.knob not in changed]
        assert len(roots) == 1, (prof.label, changed)
        assert prof.label.startswith(roots[0] + "=")


def test_multi_objective_job_has_a_pareto_figure(multi_report: Report) -> None:
    assert "pareto" in multi_report.figures
    assert_valid_png(multi_report.figures["pareto"].read_bytes())


def test_importance_comes_from_optunas_fanova(jobs: Jobs) -> None:
    job = load_job(jobs.engine, jobs.ga)
    imp = knob_importance(job)
    assert "FanovaImportanceEvaluator" in imp.method
    assert imp.trials == len(job.completed) == 60
    assert set(imp.scores) <= set(job.space.knobs)
    assert sum(imp.scores.values()) == pytest.approx(1.0)
    assert list(imp.scores.values()) == sorted(imp.scores.values(), reverse=True)
    assert knob_importance(job).scores == imp.scores  # seeded: the same report every time


def test_report_of_an_unknown_job_is_an_input_error(jobs: Jobs, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        build_report(jobs.engine, 9999, tmp_path / "r")
    assert not (tmp_path / "r").exists()


def _app() -> typer.Typer:
    app = typer.Typer()
    report_cli.register(app)
    export_cli.register(app)
    return app


def test_cli_report_and_export_commands(jobs: Jobs, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "rep"
    res = runner.invoke(_app(), ["report", str(jobs.multi), "--out", str(out), "--db", jobs.url])
    assert res.exit_code == 0, res.output
    assert (out / "report.html").is_file() and (out / "pareto.png").is_file()
    assert "simulated" in res.output
    res = runner.invoke(_app(), ["export", str(jobs.ga), "--format", "json", "--out", "-", "--db", jobs.url])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["job_id"] == jobs.ga and doc["testbed"]["simulated"] is True
    res = runner.invoke(_app(), ["export", str(jobs.ga), "--format", "yaml", "--db", jobs.url])
    assert isinstance(res.exception, InvalidInputError)
    res = runner.invoke(_app(), ["export", str(jobs.ga), "--format", "json", "--trial", "999", "--db", jobs.url])
    assert isinstance(res.exception, InvalidInputError)


def test_a_job_without_completed_trials_still_gets_a_report_but_no_export(jobs: Jobs, tmp_path: Path) -> None:
    from nictune.export import load_source
    from nictune.jobs import JobSpec, create_job

    pending = create_job(jobs.engine, JobSpec(objectives=["throughput"], testbed="sim:benson-40g", budget=5, seed=1))
    report = build_report(jobs.engine, pending, tmp_path / "r")
    assert report.figures == {}
    html = report.html.read_text(encoding="utf-8")
    assert "No trial completed" in html and "no convergence figure" in html
    with pytest.raises(InvalidInputError, match="no completed trial"):
        load_source(jobs.engine, pending)
