"""The HTML report reads like one story: a Pareto job leads with its front, headings appear once,
timestamps are human, metrics carry labels and units, trials are shown by what they changed."""

from __future__ import annotations

import re

import pytest

from nictune import metrics
from nictune.formatting import format_number
from nictune.jobs.report import knob_changes
from nictune.report import Report, knob_importance, load_job, render_html
from nictune.report.axes import objective_heading
from nictune.report.data import human_time
from tests.report.conftest import Jobs

ISO_MICROSECONDS = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\.\d+")


def html_of(report: Report) -> str:
    return report.html.read_text(encoding="utf-8")


def test_a_pareto_report_leads_with_its_front_table_then_its_figure(jobs: Jobs, multi_report: Report) -> None:
    html = html_of(multi_report)
    job = load_job(jobs.engine, jobs.multi)
    front_at, table_at, figure_at = html.index("<h2 id=front>"), html.index("id=front-table"), html.index(
        "<figure id=pareto>")
    best_at = html.index("<h2 id=best>")
    assert front_at < table_at < figure_at < best_at < html.index("<h2>Figures</h2>")
    assert html.count("<figure id=pareto>") == 1  # in the front section only
    table = html[table_at:html.index("</table>", table_at)]
    for o in job.goal.objectives:
        assert objective_heading(o, better=True) in table, o.name
    members = job.front()
    assert members
    best = job.best
    assert best is not None
    for t in members:
        row = re.search(rf"<tr class=\w+><td>[^<]*</td><td>{t.number}</td>(.*?)</tr>", table)
        assert row, t.number
        cells = re.findall(r"<td>(.*?)</td>", row.group(1))
        assert cells[:2] == [format_number(job.value(t.metrics, o)) for o in job.goal.objectives]
        assert cells[-1] == job.changes(t).replace("&", "&amp;")
        assert (t.number == best.number) == ("&#9733; recommended" in row.group(0))
    assert "recommended" in html[best_at:html.index("</h2>", best_at)].lower()


def test_a_single_objective_report_has_no_front_section(ga_report: Report) -> None:
    html = html_of(ga_report)
    assert "<h2 id=front>" not in html and "<h2 id=best>Best configuration</h2>" in html


def test_knob_importance_heading_appears_exactly_once(ga_report: Report, multi_report: Report) -> None:
    for report in (ga_report, multi_report):
        html = html_of(report)
        assert len(re.findall(r"<h[1-6][^>]*>\s*Knob importance\s*</h[1-6]>", html)) == 1
        assert html.count("<figure id=importance>") == 1
        assert html.index("<h2 id=importance>") < html.index("<figure id=importance>")


def test_timestamps_are_human_without_microseconds(jobs: Jobs, ga_report: Report) -> None:
    html = html_of(ga_report)
    assert not ISO_MICROSECONDS.search(html)
    info = load_job(jobs.engine, jobs.ga).info
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", human_time(info["created_at"]))
    assert f"{human_time(info['created_at'])} / {human_time(info['finished_at'])}" in html
    assert human_time("2026-11-27T09:14:59.123456") == "2026-11-27 09:14 UTC"
    assert human_time("2026-11-27T10:14:00+01:00") == "2026-11-27 09:14 UTC"
    assert human_time(None) == "-"


@pytest.mark.slow
def test_metric_tables_show_labels_and_units_and_numbers_from_the_one_formatter(jobs: Jobs,
                                                                               ga_report: Report) -> None:
    html = html_of(ga_report)
    job = load_job(jobs.engine, jobs.ga)
    best = job.best
    assert best is not None
    for name, value in best.metrics.items():
        heading = metrics.heading(name)
        assert f"<td>{heading}</td>" in html.replace("&amp;", "&"), name
        assert f"<td>{name}</td>" not in html, name  # no code names in the metrics table
        assert format_number(value) in html, name
    # The importance shares go through the same formatter (they were printed with 3 decimals).
    for knob, share in knob_importance(job).scores.items():
        assert f"<tr><td>{knob}</td><td>{format_number(share)}</td></tr>" in html, knob


def test_the_recommendation_is_shown_by_what_it_changed(jobs: Jobs, ga_report: Report) -> None:
    html = html_of(ga_report)
    job = load_job(jobs.engine, jobs.ga)
    best = job.best
    assert best is not None
    changes = knob_changes(job.space, best.config)
    assert changes, "the GA's recommendation changes some knob"
    text = job.changes(best)
    assert text == ", ".join(f"{c['knob']}={c['best']}" if c["best"] is not None else f"{c['knob']} off"
                             for c in changes)
    assert f"<tr><th>changes from the default</th><td>{text}</td></tr>" in html


def test_captions_name_the_metrics_left_out_for_being_zero(jobs: Jobs, ga_report: Report) -> None:
    from nictune.report.figures import zero_metrics

    html = html_of(ga_report)
    zeros = zero_metrics(load_job(jobs.engine, jobs.ga))
    caption = re.search(r"<figure id=default_vs_best>.*?<figcaption>(.*?)</figcaption>", html, re.S)
    assert caption
    if zeros:
        assert "Zero for both, so not drawn: " + ", ".join(metrics.heading(m) for m in zeros) in caption.group(1)
    else:
        assert "Zero for both" not in caption.group(1)


def test_the_page_template_escapes_every_value(jobs: Jobs) -> None:
    job = load_job(jobs.engine, jobs.ga)
    page = render_html(job, [], knob_importance(job), ["<script>alert(1)</script> & more"])
    assert "<script" not in page
    assert "<li>&lt;script&gt;alert(1)&lt;/script&gt; &amp; more</li>" in page
    assert "<p>No figures: no trial completed.</p>" in page  # no sections given
