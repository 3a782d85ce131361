"""``build_report``: a job's figures as PNG files and one self-contained HTML page.

The page embeds every figure as a base64 ``data:`` URI and carries its own CSS, so it
opens from a file with no network; the PNGs are also written next to it for reuse.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine as DbEngine

from nictune import __version__, metrics
from nictune.errors import InvalidInputError
from nictune.formatting import format_number
from nictune.jobs.baselines import comparison_rows
from nictune.jobs.stopping import format_duration
from nictune.report import figures
from nictune.report.axes import default_label, objective_heading
from nictune.report.data import SIMULATED_NOTE, JobData, TrialData, gain, human_time, load_job
from nictune.report.importance import Importance, knob_importance
from nictune.report.ofat import ofat_rounds

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Rounds of a one-factor job that get a figure each (later rounds are usually short).
MAX_OFAT_ROUNDS = 4
#: What every caption says of its axes (figures.axes.axis_scale).
_LOG_NOTE = "An axis is logarithmic where its values span more than 100x."


@dataclass
class Section:
    """One figure of the report."""

    name: str
    title: str
    caption: str
    png: bytes


@dataclass
class Report:
    """What :func:`build_report` wrote.

    Attributes:
        html: the HTML page.
        figures: figure name -> PNG file.
        notes: things the reader should know (figures left out and why).
        simulated: the job ran on a simulated testbed (a model).
    """

    html: Path
    figures: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    simulated: bool = False


#: Told each stage of :func:`build_report` as it starts (``"drawing figure convergence"``).
Progress = Callable[[str], None]


def _silent(stage: str) -> None:
    """The default :data:`Progress`: nobody is told."""


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(value: float) -> str:
    return format_number(value)


def _cell(trial: TrialData | None, name: str) -> str:
    if trial is None or name not in trial.metrics:
        return "-"
    text = _num(trial.metrics[name])
    sp = trial.spread.get(name)
    if sp and sp.get("max") != sp.get("min"):
        text += f" <span class=rng>[{_num(sp['min'])} .. {_num(sp['max'])}]</span>"
    return text


def _table(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<table class=kv>{body}</table>"


def _figures(job: JobData, importance: Importance, notes: list[str], progress: Progress) -> list[Section]:
    sections: list[Section] = []
    sim = " Simulated testbed: a model, not hardware." if job.simulated else ""

    def add(name: str, title: str, caption: str, draw: Callable[[], Figure | None], why_not: str) -> None:
        progress(f"drawing figure {name}")
        fig = draw()
        if fig is None:
            notes.append(f"no {title.lower()} figure: {why_not}")
            return
        sections.append(Section(name, title, caption + sim, _png(fig)))

    o = job.objective
    crosses = "; crosses break a constraint" if job.goal.constraints else ""
    panels = ("One panel per objective: " + ", ".join(objective_heading(x) for x in job.goal.objectives) + ". "
              if job.pareto else "")
    add("convergence", "Convergence",
        f"{panels}The {'objective' if job.pareto else o.label} of every completed trial (grey{crosses}), "
        "the best so far (red line), the default configuration (blue diamond, dashed) and the recommendation "
        f"(red star). {_LOG_NOTE}",
        lambda: figures.convergence(job), "no completed trial")
    zeros = figures.zero_metrics(job)
    zero_note = (" Zero for both, so not drawn: " + ", ".join(metrics.heading(m) for m in zeros) + "."
                 if zeros else "")
    add("default_vs_best", "Default vs recommended",
        "Every metric of the default and the recommended configuration: mean over the repeats, "
        f"min..max as error bars, each repeat as a dot. {_LOG_NOTE}{zero_note}",
        lambda: figures.default_vs_best(job), "no completed trial")
    if importance.scores:
        add("importance", "Knob importance",
            f"{importance.method}, {importance.trials} trials: the share of the variance of the "
            f"{o.label} each knob explains. Computed from this job's trials, which the engine chose "
            "unevenly: a knob the search settled early can look less important than it is.",
            lambda: figures.importance_bars(job, importance), "")
    else:
        notes.append(f"no knob importance figure: {importance.reason}")
    knobs = figures.effect_knobs(job, importance)
    add("knob_effects", "Per-knob effect",
        f"{o.label} of every trial against the value of "
        + ("each important knob" if importance.scores else "each knob the recommended configuration changed")
        + f" (bar: median; diamond: default; star: recommended). {_LOG_NOTE}",
        lambda: figures.knob_effects(job, knobs), "no knob to show")
    if len(job.goal.objectives) >= 2:
        o2 = job.goal.objectives[1]
        add("pareto", "Pareto front",
            f"Every completed trial by {objective_heading(o)} and {objective_heading(o2)}; the front is "
            f"joined in red, the recommendation is the red star, the default the blue diamond. {_LOG_NOTE}",
            lambda: figures.pareto(job), "no trial with both objectives measured")
    if job.info.get("engine") == "ofat":
        rounds = [r for r in ofat_rounds(job) if len(r.profiles) >= 2]
        if not rounds:
            notes.append("no one-factor profile figure: no round measured a center and a change of it")
        for rnd in rounds[:MAX_OFAT_ROUNDS]:
            add(f"ofat_profiles_round{rnd.index + 1}", f"One-factor profiles, round {rnd.index + 1}",
                "As in the 40 GbE study: each profile is one one-factor change of the round's center "
                f"(red); min, median and max over the repeats; loss below (on a log axis a loss of 0 is drawn "
                f"at {figures.LOSS_FLOOR:g} %). {_LOG_NOTE}",
                partial(figures.ofat_profiles, job, rnd), "")
        if len(rounds) > MAX_OFAT_ROUNDS:
            notes.append(f"one-factor rounds after {MAX_OFAT_ROUNDS} are not drawn ({len(rounds)} rounds)")
    return sections


def _job_rows(job: JobData) -> list[tuple[str, str]]:
    i = job.info
    objectives = ", ".join(
        f"{o.name}: {objective_heading(o)}, {'maximise' if o.direction == 'maximize' else 'minimise'}"
        for o in job.goal.objectives)
    testbed = _e(i["testbed"])
    if job.simulated:
        testbed += " <strong class=simtag>simulated (a model, not hardware)</strong>"
    params = json.dumps(i.get("engine_params") or {}, sort_keys=True)
    repeats = int(i["repeats"])
    plural = "" if repeats == 1 else "s"
    # With racing, a configuration gets a second run only while it could be the best.
    runs_each = (f"up to {repeats} run{plural} each (adaptive repeats)" if i.get("racing")
                 else f"{repeats} run{plural} each")
    runs_total = f"; {i['runs']} benchmark runs" if i.get("runs") else ""
    done = i.get("engine_done_at")
    stopped = f"; the engine had nothing left to propose after {done}" if done is not None else ""
    # Why the job stopped (nictune.jobs.stopping), with the rules it had; older jobs: none stored.
    rules = [f"time limit {format_duration(float(i['time_limit_s']))}" if i.get("time_limit_s") else "",
             f"patience {i['patience']}" if i.get("patience") else ""]
    rules_text = ", ".join(r for r in rules if r) or "none but the budget"
    stop_row = [("stopped", _e(f"{i.get('stop_text') or '-'} [{i['stop_reason']}]; stopping rules: {rules_text}"))
                ] if i.get("stop_reason") else []
    return [
        ("job", _e(f"{i['job_id']} ({i['state']})")),
        ("testbed", testbed),
        ("workload", _e(i["workload"])),
        ("search space", _e(i["space"])),
        ("objective", _e(objectives)),
        ("constraints", _e(", ".join(i["constraints"]) or "none")),
        ("engine", _e(f"{i['engine']} {params}" if params != "{}" else i["engine"])),
        ("budget", _e(f"{i['budget']} trials, {runs_each}, seed {i['seed']}")),
        ("trials", _e(f"{i['trials']} ({i['measured']} measured, {i['cached']} from the cache, "
                      f"{i['failed']} failed{runs_total}){stopped}")),
        *stop_row,
        ("created / finished", _e(f"{human_time(i.get('created_at'))} / {human_time(i.get('finished_at'))}")),
    ]


def _metric_rows(job: JobData, best: TrialData, default: TrialData | None) -> str:
    names = [m for m in metrics.DEFINITIONS if m in best.metrics] + sorted(set(best.metrics) - set(metrics.DEFINITIONS))
    rows = "".join(f"<tr><td>{_e(metrics.heading(m))}</td><td>{_cell(default, m)}</td><td>{_cell(best, m)}</td></tr>"
                   for m in names)
    dname = default_label(default) if default else "default (not measured)"
    return (f"<h3>Metrics: mean [min .. max] over the repeats</h3><table class=grid><tr><th>metric</th>"
            f"<th>{_e(dname)}</th><th>recommended (trial {best.number})</th></tr>{rows}</table>")


def _config_rows(job: JobData, best: TrialData) -> str:
    default_cfg = job.space.default().as_dict()
    rows = []
    for name, knob in job.space.knobs.items():
        b, d = best.config.get(name), default_cfg.get(name)
        shown_b = "(inactive)" if name not in best.config else _e(b)
        shown_d = "(inactive)" if name not in default_cfg else _e(d)
        rows.append(f"<tr class={'chg' if b != d else 'same'}><td>{_e(name)}</td><td>{shown_b}</td>"
                    f"<td>{shown_d}</td><td>{_e(knob.unit)}</td><td>{_e(knob.family.value)}</td></tr>")
    return ("<h3>Configuration (changed knobs highlighted)</h3><table class=grid><tr><th>knob</th>"
            "<th>recommended</th><th>default</th><th>unit</th><th>family</th></tr>" + "".join(rows) + "</table>")


def _best_html(job: JobData) -> str:
    best, default = job.best, job.baseline
    if best is None:
        return "<p>No trial completed: nothing to report.</p>"
    g = gain(job, best)
    parts = [f"<p class=gain>{_e(g['text'])}</p>"]
    if not best.feasible:
        parts.append("<p class=warn>No trial met every constraint; this one breaks them the least.</p>")
    parts.append(_table([
        ("trial", _e(best.number)),
        ("changes from the default", _e(job.changes(best))),
        ("configuration hash", f"<code>{_e(best.config_hash)}</code>"),
        *[(objective_heading(o), _e(_num(job.value(best.metrics, o)))) for o in job.goal.objectives],
        ("meets the constraints", "yes" if best.feasible else "no"),
    ]))
    parts.append(_metric_rows(job, best, default))
    parts.append(_config_rows(job, best))
    return "".join(parts)


def _front_rows(job: JobData, front: list[TrialData]) -> list[tuple[TrialData, str, str]]:
    """(trial, role, row class) of each member of ``front``, then the default and the
    recommendation when they are not on it."""
    best, default = job.best, job.baseline

    def role(t: TrialData) -> tuple[str, str]:
        if best is not None and t.config_hash == best.config_hash:
            return "&#9733; recommended", "rec"
        if default is not None and t.config_hash == default.config_hash:
            return _e(default_label(default).split(" (")[0]), "dflt"
        return "", "front"

    rows = [(t, *role(t)) for t in front]
    shown = {t.config_hash for t in front}
    for extra in (default, best):
        if extra is not None and extra.completed and extra.config_hash not in shown:
            text, cls = role(extra)
            where = ", measured by earlier jobs" if extra.source == "history" else ""
            rows.append((extra, f"{text} (not on the front{where})", cls))
            shown.add(extra.config_hash)
    return rows


def _front_html(job: JobData, figure: Section | None) -> str:
    """A Pareto job's front: one row per member (its objectives and what it changed), the
    recommendation marked, the default below for comparison; then the figure."""
    front = job.front()
    if not front:
        return "<p>No trial is on the front (no trial completed with every objective measured).</p>"
    constrained = bool(job.goal.constraints)
    head = "".join(f"<th>{_e(objective_heading(o, better=True))}</th>" for o in job.goal.objectives)
    ok_head = "<th>meets the constraints</th>" if constrained else ""
    rows = _front_rows(job, front)
    body = "".join(
        f"<tr class={cls}><td>{role}</td><td>{t.number if t.number >= 0 else '-'}</td>"
        + "".join(f"<td>{_e(_num(job.value(t.metrics, o)))}</td>" for o in job.goal.objectives)
        + (f"<td>{'yes' if t.feasible else 'no'}</td>" if constrained else "")
        + f"<td>{_e(job.changes(t))}</td></tr>"
        for t, role, cls in rows)
    intro = (f"<p>{len(front)} configurations are on the front: none is better than another in every objective. "
             f"The recommendation is the one with the best {_e(job.objective.label)} (the first objective); "
             f"export another with <code>nictune export {job.job_id} --trial N</code>.</p>")
    table = (f"<table class=grid id=front-table><tr><th></th><th>trial</th>{head}{ok_head}"
             f"<th>changes from the default</th></tr>{body}</table>")
    return intro + table + (_figure_html(figure, titled=False) if figure is not None else "")


def _baselines_html(job: JobData) -> str:
    """The recommendation against the default and each stock profile (``job_report``'s
    ``baselines``), with what each stock profile comes from and cannot express here."""
    comparison = job.info.get("baselines")
    if not comparison:
        return "<p>Nothing to compare: no trial completed.</p>"
    obj, metrics = comparison["objective"], comparison["metrics"]
    conf = (comparison["recommendation"].get("interval") or {}).get("confidence") or 0.9
    head = "".join(f"<th>{_e(c)}</th>" for c in ("configuration", "trial", f"{obj['label']} ({obj['unit']}, "
                                                 f"{conf:.0%} CI)", *metrics, "recommendation vs it", "note"))
    body = "".join("<tr>" + "".join(f"<td>{_e(r[c])}</td>" for c in ("name", "trial", "objective", *metrics,
                                                                      "vs", "note")) + "</tr>"
                   for r in comparison_rows(comparison))
    sources = "".join(
        f"<li><strong>{_e(b['name'])}</strong>: {_e(b.get('description') or '')} Source: "
        + ", ".join(f"<code>{_e(src)}</code>" for src in b.get("source") or [])
        + (f". Not expressed in space {_e(job.info['space'])}: {_e('; '.join(b['not_expressed']))}"
           if b.get("not_expressed") else "") + ".</li>"
        for b in comparison["baselines"] if b.get("stock"))
    sim = " Simulated testbed: figures of a model, not hardware." if job.simulated else ""
    return (f"<p>The recommendation's {_e(obj['label'])} ({_e(obj['direction'])}) against what an untuned host "
            f"has and what users would otherwise apply, each measured in this job.{_e(sim)}</p>"
            f"<table class=grid><tr>{head}</tr>{body}</table>"
            + (f"<p>Stock profiles, in this space's knobs:</p><ul>{sources}</ul>" if sources else ""))


def _importance_html(importance: Importance, figure: Section | None) -> str:
    if not importance.scores:
        return f"<p>Not computed: {_e(importance.reason)}.</p>"
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(_num(v))}</td></tr>" for k, v in importance.scores.items())
    # The figure's caption says how the shares were computed; without it, a sentence does.
    out = (_figure_html(figure, titled=False) if figure is not None
           else f"<p>{_e(importance.method)}, over {importance.trials} trials.</p>")
    out += f"<table class=grid><tr><th>knob</th><th>share of the variance</th></tr>{rows}</table>"
    if importance.excluded:
        items = "".join(f"<li>{_e(k)}: {_e(v)}</li>" for k, v in importance.excluded.items())
        out += f"<p>Left out:</p><ul>{items}</ul>"
    return out


def _figure_html(s: Section, titled: bool = True) -> str:
    title = f"<h3>{_e(s.title)}</h3>" if titled else ""
    return (f"<figure id={_e(s.name)}>{title}<img alt=\"{_e(s.title)}\" "
            f"src=\"data:image/png;base64,{base64.b64encode(s.png).decode('ascii')}\">"
            f"<figcaption>{_e(s.caption)}</figcaption></figure>")


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.4}
h1{margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
.sim{background:#fff3cd;border:1px solid #e0b000;padding:.6em 1em;border-radius:4px}
.simtag{color:#a00}.warn{color:#a00}.gain{font-size:1.1em;font-weight:600}
table{border-collapse:collapse;margin:.5em 0}th,td{padding:.2em .7em;text-align:left;vertical-align:top}
table.kv th{color:#555;font-weight:600}table.grid td,table.grid th{border:1px solid #ddd}
tr.chg td{background:#fde2e2}tr.rec td{background:#fde2e2;font-weight:600}
tr.dflt td{color:#555}.rng{color:#777;font-size:.85em}
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #eee}figcaption{color:#444;font-size:.9em}
code{font-size:.85em}footer{margin-top:2em;color:#777;font-size:.85em}
"""


def render_html(job: JobData, sections: list[Section], importance: Importance, notes: list[str]) -> str:
    """The report page (figures inline as ``data:`` URIs)."""
    jid = job.job_id
    sim = (f"<p class=sim><strong>Simulated testbed (a model, not hardware).</strong> {_e(job.info['testbed'])}: "
           f"{_e(SIMULATED_NOTE)}. Measure on your hosts before relying on them.</p>") if job.simulated else ""
    placed = {s.name: s for s in sections if s.name in ("pareto", "importance")}
    figs = "".join(_figure_html(s) for s in sections if s.name not in placed)
    front = (f"<h2 id=front>Pareto front</h2>\n{_front_html(job, placed.get('pareto'))}\n" if job.pareto else "")
    best_title = (f"Recommended configuration: the best {job.objective.label} (the first objective)" if job.pareto
                  else "Best configuration")
    note_html = "".join(f"<li>{_e(n)}</li>" for n in notes)
    exports = "".join(f"<li><code>nictune export {jid} --format {f}</code></li>"
                      for f in ("tuned", "sysctl", "script", "json"))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = f"nictune report: job {jid}" + (" (simulated)" if job.simulated else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{_e(title)}</title><style>{_CSS}</style></head>
<body>
<h1>{_e(title)}</h1>
{sim}
<h2>Job</h2>
{_table(_job_rows(job))}
{front}<h2 id=best>{_e(best_title)}</h2>
{_best_html(job)}
<h2 id=baselines>Against the default and the stock profiles</h2>
{_baselines_html(job)}
<h2>Figures</h2>
{figs or '<p>No figures: no trial completed.</p>'}
<h2 id=importance>Knob importance</h2>
{_importance_html(importance, placed.get('importance'))}
<h2>Notes</h2>
<ul>{note_html or '<li>none</li>'}</ul>
<p>Apply the recommended configuration elsewhere:</p><ul>{exports}</ul>
<footer>Generated by nictune {_e(__version__)} on {_e(when)}.</footer>
</body></html>
"""


def build_report(dbe: DbEngine, job_id: int, out_dir: Path, progress: Progress | None = None) -> Report:
    """Write ``report.html`` and one PNG per figure of job ``job_id`` into ``out_dir``.

    ``progress`` is told each stage as it starts (loading the job, each figure, writing the
    files), for a display or a log.

    Raises:
        NotFoundError: there is no such job.
        InvalidInputError: ``out_dir`` cannot be created or written.
        StorageError: the database failed.
    """
    say = progress or _silent
    say("loading the job")
    job = load_job(dbe, job_id)
    say("computing knob importance")
    importance = knob_importance(job)
    notes: list[str] = [str(n) for n in job.info.get("notices") or []]  # what the job itself said
    sections = _figures(job, importance, notes, say)
    page = render_html(job, sections, importance, notes)
    say(f"writing report.html and {len(sections)} PNG files to {out_dir}")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        written: dict[str, Path] = {}
        for s in sections:
            path = out_dir / f"{s.name}.png"
            path.write_bytes(s.png)
            written[s.name] = path
        html_path = out_dir / "report.html"
        html_path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot write the report to {out_dir}: {exc.strerror or exc}",
                                field="out", allowed="a writable directory") from None
    return Report(html=html_path, figures=written, notes=notes, simulated=job.simulated)


__all__ = ["Progress", "Report", "build_report", "render_html"]
