// #/jobs/ID: one job, live. State and progress (from the event stream), the convergence chart,
// the sortable trials table, default vs best, and the export downloads.

import {ApiError, allItems, api, download, explain, followEvents} from "../api.js";
import {changesCell} from "../changes.js";
import {drawConvergence} from "../chart.js";
import {duration, fill, h, num, s, simBadge, stateBadge, testbedLabel, val, when} from "../dom.js";
import {formatInterval} from "../format.js";
import {drawFrontCard} from "../front.js";
import {better, directionText, objectiveNamed, objectiveValue, scoreOf} from "../goal.js";
import {metricDef, metricHeading, metricOrder} from "../metrics.js";
import {SortableTable} from "../table.js";
import {trialColumns} from "../trials.js";

const FINAL = new Set(["completed", "failed", "cancelled"]);

const EXPORTS = [
  {format: "json", label: "JSON", what: "the configuration with its metrics"},
  {format: "sysctl", label: "sysctl drop-in", what: "for /etc/sysctl.d/"},
  {format: "tuned", label: "TuneD profile", what: "tuned.conf: install as /etc/tuned/<profile>/tuned.conf"},
  {format: "script", label: "apply script", what: "ip/ethtool settings, idempotent"},
  {format: "script", part: "rollback", label: "rollback script", what: "puts the recorded values back"},
];

const LIVE_TEXT = {connecting: "connecting…", live: "live", retrying: "reconnecting…", ended: "ended",
                   error: "not connected", idle: "not running"};

/** What the job's trials cost: "200 trials (190 measured, 10 from the cache) · 240 benchmark runs". */
function ranText(job) {
  const p = job.progress;
  const parts = [`${p.done} trial${p.done === 1 ? "" : "s"} (${p.measured} measured, ${p.cached} from the cache` +
                 `${p.failed ? `, ${p.failed} failed` : ""})`];
  if (job.runs !== null && job.runs !== undefined) parts.push(`${job.runs} benchmark run${job.runs === 1 ? "" : "s"}`);
  if (job.short_runs) parts.push(`${job.short_runs.runs} short run${job.short_runs.runs === 1 ? "" : "s"}`);
  return parts.join(" · ");
}

/** How many runs a configuration gets: adaptive with racing, always `repeats` without. */
function repeatsText(job) {
  if (!job.racing || job.repeats === 1) return `${job.repeats} run${job.repeats === 1 ? "" : "s"} per configuration`;
  return `racing: each configuration run once, the best again, the recommended one up to ${job.repeats} times`;
}

function change(base, value) {
  if (typeof base !== "number" || typeof value !== "number" || !Number.isFinite(base) || !Number.isFinite(value) || base === 0) return null;
  return ((value - base) / Math.abs(base)) * 100;
}

/** Render job `jobId` into `root`; the stream and the timers stop when `ctx.signal` aborts. */
export function render(root, ctx, jobId) {
  const signal = ctx.signal;
  const st = {job: null, objective: null, defaults: null, trials: new Map(), running: null, live: "connecting",
              showKnobs: false, lastRefresh: 0};

  // ------------------------------------------------------------------ layout
  const title = h("h1", {}, `Job #${jobId} `);
  const badges = h("span", {class: "badges", id: "job-badges"});
  const simBanner = h("p", {class: "sim-banner", id: "sim-banner", hidden: true});
  const facts = h("dl", {class: "facts", id: "job-facts"});
  const message = h("p", {class: "status error", id: "job-error", hidden: true});
  const bar = h("progress", {id: "job-progress", max: 1, value: 0});
  const progressText = h("span", {id: "progress-text", class: "progress-text"});
  const eta = h("span", {id: "eta", class: "muted"});
  const live = h("span", {id: "live", class: "live", "data-live": "connecting"}, LIVE_TEXT.connecting);
  const bestBox = h("div", {id: "best-so-far", class: "best-box"});
  const cancelButton = h("button", {type: "button", id: "cancel", class: "danger", hidden: true, onclick: cancel}, "Cancel job");
  const chart = s("svg", {id: "convergence", class: "convergence", "aria-label": "convergence chart"});
  const compareBox = h("div", {id: "default-vs-best"});
  const baselinesBox = h("div", {id: "baselines"});
  const frontCard = h("section", {class: "card", id: "front-card", hidden: true});
  const front = {svg: s("svg", {id: "pareto", class: "convergence", "aria-label": "Pareto front chart"}),
                 info: h("p", {class: "muted", id: "front-info"}), table: h("div", {id: "front-table"})};
  const knobToggle = h("input", {type: "checkbox", id: "show-knobs", onchange: (e) => { st.showKnobs = e.target.checked; drawTrials(); }});
  const trialsInfo = h("p", {class: "muted", id: "trials-info"});
  const table = new SortableTable([{key: "number", label: "#", value: (t) => t.number}],
                                  {sortKey: "number", pageSize: 50, className: "trials", empty: "No finished trial yet.",
                                   rowClass: (t) => rowClass(t)});
  table.element.id = "trials";
  const exportStatus = h("p", {class: "muted", id: "export-status"});
  const exportButtons = h("div", {class: "buttons", id: "export-buttons"});
  const cliBox = h("pre", {class: "cli", id: "export-cli"});

  fill(root,
    h("section", {class: "card"},
      h("div", {class: "card-head"}, h("div", {}, title, badges), h("div", {}, cancelButton)),
      simBanner, message, facts),
    // A multi-objective job's front comes first: it is the job's answer.
    fill(frontCard, h("h2", {}, "Pareto front"), front.info, front.table, h("div", {class: "chart-wrap"}, front.svg)),
    h("section", {class: "card"},
      h("div", {class: "card-head"}, h("h2", {}, "Progress"), live),
      h("div", {class: "progress-row"}, bar, progressText, eta), bestBox),
    h("section", {class: "card"},
      h("div", {class: "card-head"}, h("h2", {}, "Convergence"), h("span", {class: "muted", id: "chart-caption"})),
      h("div", {class: "chart-wrap"}, chart)),
    h("section", {class: "card"}, h("h2", {}, "Default vs best"), compareBox),
    h("section", {class: "card"}, h("h2", {}, "Against the default and the stock profiles"), baselinesBox),
    h("section", {class: "card"},
      h("div", {class: "card-head"}, h("h2", {}, "Trials"),
        h("label", {class: "filter"}, knobToggle, " show every column (timing, each knob)")),
      trialsInfo, table.element),
    h("section", {class: "card"}, h("h2", {}, "Export the best configuration"), exportButtons, exportStatus,
      h("details", {}, h("summary", {}, "…or with the command line"), cliBox)));

  // ------------------------------------------------------------------ data
  function showError(err) {
    // 401 and 403 are shown by the page's banner (app.js), once.
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return;
    const text = explain(err);
    if (!text) return;
    message.hidden = false;
    message.textContent = text;
  }

  function addTrial(trial) {
    if (trial.state === "running") {
      st.running = trial;
      return;
    }
    if (st.running && st.running.number === trial.number) st.running = null;
    const known = st.trials.get(trial.number);
    // An event lacks the spread and start time a page has: keep them.
    st.trials.set(trial.number, known ? {...known, ...trial} : trial);
  }

  function ordered() {
    return [...st.trials.values()].sort((a, b) => a.number - b.number);
  }

  function defaultTrial() {
    if (!st.defaults) return null;
    const measured = ordered().find((t) => t.state === "completed" && t.config_hash === st.defaults.config_hash &&
                                           t.metrics && Object.keys(t.metrics).length);
    if (measured) return measured;
    return st.defaults.trial ? {...st.defaults.trial, config: st.defaults.config, config_hash: st.defaults.config_hash} : null;
  }

  /** A finished job's recommendation (best lower confidence bound, as the CLI prints it), or null. */
  function recommendation() {
    const rec = st.job && st.job.recommendation;
    return rec && rec.number !== null && rec.number !== undefined ? rec : null;
  }

  function bestTrial() {
    const rec = recommendation();
    if (rec) {
      const t = st.trials.get(rec.number);
      if (t && t.state === "completed") return t;
      if (st.job.best && st.job.best.number === rec.number) return {...st.job.best, state: "completed"};
    }
    let best = null, bestScore = null;
    for (const t of ordered()) {
      if (t.state !== "completed") continue;
      const score = scoreOf(t, st.objective);
      if (score && better(score, bestScore)) {
        best = t;
        bestScore = score;
      }
    }
    if (!best && st.job && st.job.best) return {...st.job.best, state: "completed"};
    return best;
  }

  // The best and default trial numbers, worked out once per redraw of the table.
  const marks = {best: null, def: null};

  function rowClass(t) {
    return [t.state === "failed" ? "failed" : "", marks.best === t.number ? "is-best" : "",
            marks.def === t.number ? "is-default" : "", frontNumbers().has(t.number) ? "on-front" : ""]
      .filter(Boolean).join(" ");
  }

  /** Trial numbers on the job's Pareto front (the API gives it once a multi-objective job ends). */
  function frontNumbers() {
    return new Set(((st.job && st.job.front) || []).map((f) => f.number));
  }

  async function refreshJob() {
    st.lastRefresh = Date.now();
    try {
      st.job = await api(`/v1/jobs/${jobId}`, {signal});
      message.hidden = true;
    } catch (err) {
      if (!signal.aborted) showError(err);
      return;
    }
    if (!st.objective || !st.defaults) st.objective = objectiveNamed(st.job.objectives[0]);
    drawHeader();
    drawProgress();
  }

  async function loadDefaults() {
    try {
      st.defaults = await api(`/v1/jobs/${jobId}/default`, {signal});
      st.objective = st.defaults.objective;
    } catch (err) {
      // An older server without the endpoint, or a space it cannot read: no default known.
      if (!(err instanceof ApiError) || err.status === 401 || err.status === 403) throw err;
      st.defaults = null;
    }
  }

  // ------------------------------------------------------------------ drawing
  function drawHeader() {
    const job = st.job;
    fill(badges, stateBadge(job.state), job.cancel_requested ? h("span", {class: "badge state-cancelling"}, "cancelling") : null,
      job.simulated ? simBadge(job.note) : null);
    simBanner.hidden = !job.simulated;
    simBanner.textContent = job.simulated
      ? `Simulated testbed ${job.testbed}: every figure on this page comes from a model, not from hardware.` : "";
    const params = Object.entries(job.engine_params || {}).map(([k, v]) => `${k}=${v}`).join(", ");
    const rows = [
      ["Testbed", testbedLabel(job.testbed, job.simulated, job.note)],
      ["Workload", job.workload], ["Search space", job.space],
      ["Objective", job.objectives.map((o) => `${objectiveNamed(o).label} (${directionText(objectiveNamed(o))})`).join("; ")],
      ["Constraints", job.constraints.length ? job.constraints.join(", ") : "none"],
      ["Engine", params ? `${job.engine} (${params})` : job.engine],
      ["Budget", `${job.budget} trials, seed ${job.seed}`], ["Repeats", repeatsText(job)], ["Ran", ranText(job)],
      ["Created", when(job.created_at)], ["Started", when(job.started_at)], ["Finished", when(job.finished_at)],
    ];
    if (job.error) rows.push(["Error", h("span", {class: "error"}, job.error)]);
    for (const notice of job.notices || []) rows.push(["Note", notice]);
    fill(facts, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
    cancelButton.hidden = FINAL.has(job.state) || job.cancel_requested;
  }

  function drawProgress() {
    const job = st.job;
    if (!job) return;
    const done = job.progress.done;
    const budget = job.progress.budget;
    bar.max = Math.max(budget, 1);
    bar.value = Math.min(done, budget);
    bar.dataset.done = String(done);
    const p = job.progress;
    progressText.textContent = `${done} / ${budget} trials (${Math.round((done / Math.max(budget, 1)) * 100)} %)` +
      ` · measured ${p.measured} · from cache ${p.cached} · failed ${p.failed}` +
      (st.running || p.running ? ` · trial ${st.running ? st.running.number : done} in flight` : "") +
      (job.engine_done_at !== null && job.engine_done_at !== undefined
        ? ` · the engine had nothing left to propose after ${job.engine_done_at} trials`
        : job.stop_text && job.stop_reason !== "budget" ? ` · ${job.stop_text}` : "");
    if (job.state === "running" && job.eta_s !== null && job.eta_s !== undefined) eta.textContent = `about ${duration(job.eta_s)} left`;
    else if (job.state === "pending") eta.textContent = job.queue_position ? `waiting for the testbed (#${job.queue_position} in queue)` : "waiting to start";
    else if (job.state === "waiting") eta.textContent = job.waiting_for || `waiting for a worker on ${job.testbed}`;
    else if (job.state === "interrupted") eta.textContent = "interrupted: resumes when the service restarts";
    else eta.textContent = "";
    const best = bestTrial();
    const unit = st.objective.unit;
    if (!best) {
      fill(bestBox, h("span", {class: "muted"}, "No completed trial yet."));
      return;
    }
    const rec = recommendation();
    const value = objectiveValue(st.objective, best.metrics);
    const def = defaultTrial();
    const base = def ? objectiveValue(st.objective, def.metrics) : null;
    const pct = change(base, value);
    const cv = job.noise && job.noise.objective ? job.noise.objective.cv : null;
    const shown = rec && rec.mean !== null && rec.high !== null
      ? `${formatInterval(rec.mean, (rec.high - rec.low) / 2)} ${unit}` : `${num(value)} ${unit}`;
    fill(bestBox,
      h("span", {class: "best-label"}, rec ? "Recommended: " : "Best so far: "),
      h("strong", {id: "best-value"}, shown),
      rec ? h("span", {class: "muted", id: "best-interval"},
        ` (n=${rec.n}, ${Math.round(rec.confidence * 100)}% CI; the best lower confidence bound)`) : null,
      ` ${st.objective.label} — trial ${best.number}: `,
      changesCell(best.config, best.config_hash, st.defaults),
      best.score && best.score.feasible === false ? h("span", {class: "badge warn"}, "breaks a constraint") : null,
      pct !== null ? h("span", {class: "muted"}, ` (${pct >= 0 ? "+" : ""}${pct.toFixed(1)} % vs the default, ${directionText(st.objective)})`) : null,
      cv !== null && cv !== undefined ? h("div", {class: "muted", id: "noise"},
        `Testbed noise: ${(cv * 100).toFixed(1)} % coefficient of variation, estimated from the repeats.`) : null);
  }

  function drawChart() {
    const obj = st.objective;
    const trials = ordered();
    const points = trials.map((t) => {
      const y = t.state === "completed" ? objectiveValue(obj, t.metrics) : null;
      const feasible = !t.score || t.score.feasible !== false;
      const what = t.state === "failed" ? `failed: ${t.error || "no metrics"}` : `${num(y)} ${obj.unit}${feasible ? "" : " (breaks a constraint)"}`;
      return {x: t.number, y, feasible, failed: t.state === "failed", title: `trial ${t.number} (${t.source}): ${what}`};
    });
    const best = [];
    let top = null;
    for (const t of trials) {
      if (t.state !== "completed") continue;
      const score = scoreOf(t, obj);
      if (score && better(score, top)) {
        top = score;
        const y = objectiveValue(obj, t.metrics);
        if (y !== null && Number.isFinite(y)) best.push({x: t.number, y});
      }
    }
    const def = defaultTrial();
    const defaultValue = def ? objectiveValue(obj, def.metrics) : null;
    drawConvergence(chart, {points, best, defaultValue, defaultTrial: def ? def.number : null,
                            budget: st.job ? st.job.budget : trials.length, label: obj.label, unit: obj.unit,
                            direction: obj.direction, constrained: Boolean(st.job && st.job.constraints.length)});
    document.getElementById("chart-caption").textContent =
      `${obj.label} of each trial in ${obj.unit} (${directionText(obj)})` +
      (st.job && st.job.objectives.length > 1 ? ` — the first of ${st.job.objectives.length} objectives; the Pareto front above shows them together` : "") +
      (st.job && st.job.simulated ? " — simulated (a model)" : "");
  }

  function drawCompare() {
    const obj = st.objective;
    const best = bestTrial();
    const def = defaultTrial();
    if (!st.defaults && !best) {
      fill(compareBox, h("p", {class: "muted"}, "Nothing to compare yet."));
      return;
    }
    const defConfig = st.defaults ? st.defaults.config : (def ? def.config : {});
    const bestConfig = best ? best.config || {} : {};
    const units = st.defaults ? st.defaults.units || {} : {};
    const head = h("tr", {}, h("th", {}, ""),
      h("th", {}, "Default", h("div", {class: "sub"}, def ? `trial ${def.number}` : "not measured in this job")),
      h("th", {}, recommendation() ? "Recommended" : "Best", h("div", {class: "sub"}, best ? `trial ${best.number}` : "no completed trial yet")),
      h("th", {class: "num"}, "Change"));
    const rows = [];
    const section = (text) => rows.push(h("tr", {class: "section"}, h("th", {colspan: 4}, text)));
    section(`Objective (${directionText(obj)})`);
    const dv = def ? objectiveValue(obj, def.metrics) : null;
    const bv = best ? objectiveValue(obj, best.metrics) : null;
    const pct = change(dv, bv);
    const good = pct === null ? "" : (obj.direction === "minimize" ? pct < 0 : pct > 0) ? "good" : pct === 0 ? "" : "bad";
    rows.push(h("tr", {class: "objective"}, h("th", {}, `${obj.label} (${obj.unit})`), h("td", {class: "num"}, num(dv)),
      h("td", {class: "num"}, num(bv)), h("td", {class: ["num", good]}, pct === null ? "–" : `${pct >= 0 ? "+" : ""}${pct.toFixed(1)} %`)));
    const metricNames = metricOrder(new Set([...Object.keys(def ? def.metrics || {} : {}), ...Object.keys(best ? best.metrics || {} : {})]));
    if (metricNames.length) section("Metrics (mean over the repeats)");
    for (const m of metricNames) {
      const a = def ? def.metrics[m] : null, b = best ? best.metrics[m] : null;
      const c = change(a, b);
      rows.push(h("tr", {}, h("th", {title: metricDef(m).description || m}, metricDef(m).heading), h("td", {class: "num"}, num(a)),
        h("td", {class: "num"}, num(b)), h("td", {class: "num"}, c === null ? "–" : `${c >= 0 ? "+" : ""}${c.toFixed(1)} %`)));
    }
    const knobs = [...new Set([...Object.keys(defConfig), ...Object.keys(bestConfig)])];
    if (knobs.length) section("Settings (changed ones highlighted)");
    for (const k of knobs) {
      const a = k in defConfig ? defConfig[k] : null, b = k in bestConfig ? bestConfig[k] : null;
      const changed = best && JSON.stringify(a) !== JSON.stringify(b);
      const unit = units[k] ? ` ${units[k]}` : "";
      rows.push(h("tr", {class: changed ? "changed" : null}, h("th", {}, h("code", {}, k)),
        h("td", {}, a === null ? "(inactive)" : `${val(a)}${unit}`),
        h("td", {}, !best ? "–" : b === null ? "(inactive)" : `${val(b)}${unit}`),
        h("td", {class: "num"}, changed ? "changed" : "")));
    }
    fill(compareBox, h("div", {class: "scroll"}, h("table", {class: "compare"}, h("thead", {}, head), h("tbody", {}, rows))),
      st.defaults ? null : h("p", {class: "muted"}, "This server does not report the job's default configuration (no /default endpoint)."));
  }

  /** The recommendation against the default and each stock profile (the API's `baselines`,
   *  computed by the server as the CLI and the report show it). */
  function drawBaselines() {
    const cmp = st.job && st.job.baselines;
    if (!cmp) {
      fill(baselinesBox, h("p", {class: "muted"}, "Nothing to compare yet (no completed trial)."));
      return;
    }
    const obj = cmp.objective;
    const iv = (e) => e.interval && e.interval.low !== null && e.interval.high !== null && e.interval.high > e.interval.low
      ? formatInterval(e.value, (e.interval.high - e.interval.low) / 2) : num(e.value);
    const head = h("tr", {}, h("th", {}, "Configuration"), h("th", {class: "num"}, "Trial"),
      h("th", {class: "num"}, `${obj.label} (${obj.unit})`), ...cmp.metrics.map((m) => h("th", {class: "num wrap"}, metricHeading(m))),
      h("th", {class: "num"}, "Recommended vs it"));
    const rec = cmp.recommendation;
    const rows = [h("tr", {class: "objective", "data-name": "recommendation"}, h("th", {}, "Recommendation"),
      h("td", {class: "num"}, String(rec.number)), h("td", {class: "num"}, iv(rec)),
      ...cmp.metrics.map((m) => h("td", {class: "num"}, num(rec.metrics[m]))), h("td", {}, ""))];
    for (const b of cmp.baselines) {
      const label = h("th", {title: b.description || "", class: "wrap"}, b.name, b.stock ? h("span", {class: "badge"}, "stock") : null,
        b.not_expressed && b.not_expressed.length ? h("div", {class: "sub"}, `cannot express here: ${b.not_expressed.join("; ")}`) : null);
      if (b.state !== "completed") {
        rows.push(h("tr", {"data-name": b.name, "data-state": b.state}, label,
          h("td", {class: "num"}, b.number === null ? "–" : String(b.number)),
          h("td", {colspan: cmp.metrics.length + 2, class: "bad"}, b.state + (b.error ? `: ${b.error}` : ""))));
        continue;
      }
      const pct = b.change_pct;
      rows.push(h("tr", {"data-name": b.name, "data-state": b.state}, label,
        h("td", {class: "num"}, b.number === null ? "history" : String(b.number)), h("td", {class: "num"}, iv(b)),
        ...cmp.metrics.map((m) => h("td", {class: "num"}, num(b.metrics[m]))),
        h("td", {class: ["num", b.better === true ? "good" : b.better === false ? "bad" : ""]},
          pct === null ? "–" : `${pct >= 0 ? "+" : ""}${pct.toFixed(1)} %`)));
    }
    fill(baselinesBox, h("div", {class: "scroll"}, h("table", {class: "compare"}, h("thead", {}, head), h("tbody", {}, rows))),
      h("p", {class: "muted"}, `${directionText(obj)}; stock profiles are what users would otherwise apply (TuneD, ESnet), ` +
        "in this space's knobs" + (st.job.simulated ? " — simulated (a model)" : "")));
  }

  function drawParetoFront() {
    const job = st.job;
    frontCard.hidden = !job || job.objectives.length < 2;
    if (frontCard.hidden) return;
    const rec = recommendation();
    drawFrontCard(front, {job, objectives: job.objectives.map(objectiveNamed), defaultTrial: defaultTrial(),
                          trials: ordered().filter((t) => t.state === "completed" && t.metrics),
                          defaults: st.defaults, recommended: rec ? rec.number : null});
  }

  function drawTrials() {
    const trials = ordered();
    const best = bestTrial();
    const def = defaultTrial();
    marks.best = best ? best.number : null;
    marks.def = def ? def.number : null;
    const job = st.job;
    table.columns = trialColumns(trials, {
      objectives: job.objectives.map((name, i) => (i === 0 ? st.objective : objectiveNamed(name))),
      constrained: job.constraints.length > 0, defaults: st.defaults, showAll: st.showKnobs});
    if (!table.columns.some((c) => c.key === table.sortKey)) table.sortKey = "number";
    table.setRows(trials);
    const failed = trials.filter((t) => t.state === "failed").length;
    trialsInfo.textContent = `${trials.length} finished trial${trials.length === 1 ? "" : "s"}` +
      (failed ? `, ${failed} failed` : "") + " · click a column header to sort · ★ the job's objective" +
      " · highlighted: best (green), default (blue)" + (frontNumbers().size ? ", on the Pareto front (yellow-green)" : "");
  }

  function drawExports() {
    const best = bestTrial();
    fill(exportButtons, EXPORTS.map((e) => h("button", {
      type: "button", disabled: !best, title: e.what, "data-format": e.format,
      onclick: () => saveExport(e),
    }, e.label)));
    if (!best) exportStatus.textContent = "Exports become available once a trial has completed.";
    else if (!exportStatus.dataset.used) exportStatus.textContent = `Exports the best trial so far (trial ${best.number}).` +
      (st.job && st.job.simulated ? " Simulated: measure on your hosts before relying on these settings." : "");
    cliBox.textContent = ["tuned", "sysctl", "script", "json"].map((f) => `nictune export ${jobId} --format ${f}`).join("\n");
  }

  async function saveExport(e) {
    exportStatus.dataset.used = "1";
    exportStatus.className = "muted";
    exportStatus.textContent = `Preparing ${e.label}…`;
    try {
      const name = await download(`/v1/jobs/${jobId}/export`, {format: e.format, part: e.part});
      exportStatus.textContent = `Saved ${name}.`;
    } catch (err) {
      exportStatus.className = "error";
      exportStatus.textContent = err instanceof ApiError && err.noEndpoint
        ? "This server has no export endpoint: use the commands below." : explain(err);
    }
  }

  async function cancel() {
    if (!window.confirm(`Cancel job #${jobId}? A running trial finishes (and its settings are restored) first.`)) return;
    try {
      st.job = await api(`/v1/jobs/${jobId}/cancel`, {method: "POST", signal});
      drawHeader();
      drawProgress();
    } catch (err) {
      showError(err);
    }
  }

  function redrawAll() {
    if (!st.job) return;
    drawProgress();
    drawChart();
    drawCompare();
    drawBaselines();
    drawParetoFront();
    drawTrials();
    drawExports();
  }

  let scheduled = null;
  function schedule() {
    if (scheduled !== null) return;
    // Big jobs redraw less often: thousands of dots and rows are not free.
    const delay = 120 + Math.min(st.trials.size / 10, 1000);
    scheduled = setTimeout(() => { scheduled = null; if (!signal.aborted) redrawAll(); }, delay);
  }
  signal.addEventListener("abort", () => clearTimeout(scheduled));

  function setLive(status) {
    st.live = status;
    live.dataset.live = status;
    live.textContent = LIVE_TEXT[status] || status;
  }

  function onEvent(type, data) {
    if (type === "trial") {
      addTrial(data);
      if (st.job && data.progress) {
        const p = st.job.progress;
        if (data.progress.done > p.done) {
          p.done = data.progress.done;
          p.fraction = Math.min(p.done / Math.max(p.budget, 1), 1);
        }
      }
      if (st.job && st.job.state === "pending") st.job.state = "running";
      if (Date.now() - st.lastRefresh > 3000) refreshJob();
      schedule();
    } else if (type === "state" || type === "end") {
      refreshJob().then(() => {
        if (type === "end") loadDefaults().catch(() => {}).then(schedule);
        else schedule();
      });
    }
  }

  // ------------------------------------------------------------------ start
  async function start() {
    await refreshJob();
    if (!st.job) {
      setLive("error");
      return;
    }
    try {
      const [, trials] = await Promise.all([loadDefaults(), allItems(`/v1/jobs/${jobId}/trials`, {sort: "number"}, {signal})]);
      trials.forEach(addTrial);
    } catch (err) {
      if (!signal.aborted) showError(err);
      return;
    }
    redrawAll();
    if (FINAL.has(st.job.state)) {
      setLive("ended");
      return;
    }
    const finished = ordered();
    const after = finished.length ? finished.at(-1).number : -1;
    const poll = setInterval(() => { if (!FINAL.has(st.job.state) && Date.now() - st.lastRefresh > 4000) refreshJob(); }, 4000);
    signal.addEventListener("abort", () => clearInterval(poll));
    try {
      await followEvents(jobId, {after, signal, onEvent, onStatus: setLive});
    } catch (err) {
      if (!signal.aborted) showError(err);
    } finally {
      clearInterval(poll);
    }
  }

  start();
}
