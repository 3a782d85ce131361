"""``build_report``: a job's figures as PNG files and one self-contained HTML page.

The page embeds every figure as a base64 ``data:`` URI and carries its own CSS, so it
opens from a file with no network; the PNGs are also written next to it for reuse. Its
markup is the Jinja2 template ``templates/report.html.j2`` (autoescaped, with
``templates/report.css``); this module gathers what the template shows.
"""

from __future__ import annotations

import base64
import functools
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import jinja2
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


def _num(value: float) -> str:
    return format_number(value)


class Row(NamedTuple):
    """A row of a key-value table: ``text`` in ``<code>`` when ``code``; followed by the
    simulated tag when ``simulated``."""

    key: str
    text: str
    code: bool = False
    simulated: bool = False


class Cell(NamedTuple):
    """A metric's mean and, when the repeats differ, their range (all formatted)."""

    text: str
    low: str | None = None
    high: str | None = None


def _cell(trial: TrialData | None, name: str) -> Cell:
    if trial is None or name not in trial.metrics:
        return Cell("-")
    sp = trial.spread.get(name)
    if sp and sp.get("max") != sp.get("min"):
        return Cell(_num(trial.metrics[name]), _num(sp["min"]), _num(sp["max"]))
    return Cell(_num(trial.metrics[name]))


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


def _job_rows(job: JobData) -> list[Row]:
    i = job.info
    objectives = ", ".join(
        f"{o.name}: {objective_heading(o)}, {'maximise' if o.direction == 'maximize' else 'minimise'}"
        for o in job.goal.objectives)
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
    stop_row = [Row("stopped", f"{i.get('stop_text') or '-'} [{i['stop_reason']}]; stopping rules: {rules_text}")
                ] if i.get("stop_reason") else []
    return [
        Row("job", f"{i['job_id']} ({i['state']})"),
        Row("testbed", str(i["testbed"]), simulated=job.simulated),
        Row("workload", str(i["workload"])),
        Row("search space", str(i["space"])),
        Row("objective", objectives),
        Row("constraints", ", ".join(i["constraints"]) or "none"),
        Row("engine", f"{i['engine']} {params}" if params != "{}" else str(i["engine"])),
        Row("budget", f"{i['budget']} trials, {runs_each}, seed {i['seed']}"),
        Row("trials", f"{i['trials']} ({i['measured']} measured, {i['cached']} from the cache, "
                      f"{i['failed']} failed{runs_total}){stopped}"),
        *stop_row,
        Row("created / finished", f"{human_time(i.get('created_at'))} / {human_time(i.get('finished_at'))}"),
    ]


def _best(job: JobData) -> dict[str, Any] | None:
    """The recommended configuration's section: its gain, key facts, metrics against the
    default's, and every knob's value in both. ``None`` when no trial completed."""
    best, default = job.best, job.baseline
    if best is None:
        return None
    names = [m for m in metrics.DEFINITIONS if m in best.metrics] + sorted(set(best.metrics) - set(metrics.DEFINITIONS))
    default_cfg = job.space.default().as_dict()
    knobs = []
    for name, knob in job.space.knobs.items():
        b, d = best.config.get(name), default_cfg.get(name)
        knobs.append({"name": name, "changed": b != d, "unit": knob.unit, "family": knob.family.value,
                      "best": "(inactive)" if name not in best.config else str(b),
                      "default": "(inactive)" if name not in default_cfg else str(d)})
    return {
        "gain": gain(job, best)["text"],
        "feasible": best.feasible,
        "rows": [
            Row("trial", str(best.number)),
            Row("changes from the default", job.changes(best)),
            Row("configuration hash", best.config_hash, code=True),
            *[Row(objective_heading(o), _num(job.value(best.metrics, o))) for o in job.goal.objectives],
            Row("meets the constraints", "yes" if best.feasible else "no"),
        ],
        "number": best.number,
        "default_name": default_label(default) if default else "default (not measured)",
        "metrics": [{"heading": metrics.heading(m), "default": _cell(default, m), "best": _cell(best, m)}
                    for m in names],
        "knobs": knobs,
    }


def _front_rows(job: JobData, front: list[TrialData]) -> list[dict[str, Any]]:
    """Each member of ``front`` (its role, objectives and changes), then the default and the
    recommendation when they are not on it."""
    best, default = job.best, job.baseline

    def row(t: TrialData, note: str = "") -> dict[str, Any]:
        recommended = best is not None and t.config_hash == best.config_hash
        is_default = not recommended and default is not None and t.config_hash == default.config_hash
        label = default_label(default).split(" (")[0] if is_default and default is not None else ""
        return {"recommended": recommended, "cls": "rec" if recommended else "dflt" if is_default else "front",
                "label": label, "note": note,
                "number": t.number if t.number >= 0 else "-", "feasible": t.feasible,
                "objectives": [_num(job.value(t.metrics, o)) for o in job.goal.objectives],
                "changes": job.changes(t)}

    rows = [row(t) for t in front]
    shown = {t.config_hash for t in front}
    for extra in (default, best):
        if extra is not None and extra.completed and extra.config_hash not in shown:
            where = ", measured by earlier jobs" if extra.source == "history" else ""
            rows.append(row(extra, f" (not on the front{where})"))
            shown.add(extra.config_hash)
    return rows


def _front(job: JobData, figure: Section | None) -> dict[str, Any] | None:
    """A Pareto job's front: one row per member, the recommendation marked, the default below
    for comparison; then the figure. ``None`` for a single-objective job."""
    if not job.pareto:
        return None
    front = job.front()
    return {"size": len(front), "rows": _front_rows(job, front) if front else [], "figure": figure,
            "constrained": bool(job.goal.constraints),
            "heads": [objective_heading(o, better=True) for o in job.goal.objectives]}


def _baselines(job: JobData) -> dict[str, Any] | None:
    """The recommendation against the default and each stock profile (``job_report``'s
    ``baselines``), with what each stock profile comes from and cannot express here."""
    comparison = job.info.get("baselines")
    if not comparison:
        return None
    obj, names = comparison["objective"], comparison["metrics"]
    conf = (comparison["recommendation"].get("interval") or {}).get("confidence") or 0.9
    columns = ("name", "trial", "objective", *names, "vs", "note")
    return {
        "label": obj["label"], "direction": obj["direction"],
        "heads": ["configuration", "trial", f"{obj['label']} ({obj['unit']}, {conf:.0%} CI)", *names,
                  "recommended vs it", "note"],
        "rows": [[r[c] for c in columns] for r in comparison_rows(comparison)],
        "stock": [{"name": b["name"], "description": b.get("description") or "", "source": b.get("source") or [],
                   "not_expressed": b.get("not_expressed") or []}
                  for b in comparison["baselines"] if b.get("stock")],
    }


#: The export formats the page lists, with their commands.
EXPORT_FORMATS = ("tuned", "sysctl", "script", "json")


@functools.cache
def _environment() -> jinja2.Environment:
    """The templates of ``nictune/report/templates`` (autoescaped; loaded once)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("nictune.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["num"] = _num
    env.filters["b64"] = lambda png: base64.b64encode(png).decode("ascii")
    return env


def render_html(job: JobData, sections: list[Section], importance: Importance, notes: list[str]) -> str:
    """The report page (figures inline as ``data:`` URIs), from ``templates/report.html.j2``."""
    placed = {s.name: s for s in sections if s.name in ("pareto", "importance")}
    return _environment().get_template("report.html.j2").render(
        title=f"nictune report: job {job.job_id}" + (" (simulated)" if job.simulated else ""),
        job_id=job.job_id,
        simulated=job.simulated,
        testbed=job.info["testbed"],
        simulated_note=SIMULATED_NOTE,
        space=job.info["space"],
        job_rows=_job_rows(job),
        front=_front(job, placed.get("pareto")),
        objective_label=job.objective.label,
        best_title=(f"Recommended configuration: the best {job.objective.label} (the first objective)"
                    if job.pareto else "Best configuration"),
        best=_best(job),
        baselines=_baselines(job),
        figures=[s for s in sections if s.name not in placed],
        importance=importance,
        importance_figure=placed.get("importance"),
        notes=notes,
        export_formats=EXPORT_FORMATS,
        version=__version__,
        when=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


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
