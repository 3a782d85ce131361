// The columns of a job's trials table: what each trial changed, the job's objectives, and the
// metrics the job measured, each headed by its label and unit (nictune/metrics.py). Columns no
// trial of the job has a value for are left out; the four drop counters share one column.

import {changesCell, knobText} from "./changes.js";
import {h, num, stateBadge, when} from "./dom.js";
import {directionText, objectiveValue} from "./goal.js";
import {dropMetrics, metricDef, metricHeading, metricOrder} from "./metrics.js";

const present = (v) => v !== null && v !== undefined && !(typeof v === "number" && Number.isNaN(v));

/** Metric names at least one trial has a value for. */
function measuredMetrics(trials) {
  const names = new Set();
  for (const t of trials) {
    for (const [m, v] of Object.entries(t.metrics || {})) if (present(v)) names.add(m);
  }
  return names;
}

/** "ring 12,305 backlog 63.0", one counter a line (the counters that are not zero), "0" when none dropped anything. */
function dropsCell(t, names) {
  const m = t.metrics || {};
  if (!names.some((n) => present(m[n]))) return "-";
  const nonzero = names.filter((n) => present(m[n]) && m[n] !== 0);
  if (!nonzero.length) return "0";
  return nonzero.map((n, i) => [i ? " " : null,
    h("span", {class: "drop"}, `${metricDef(n).label.replace(/ drops$/, "")} ${num(m[n])}`)]);
}

/** Receiver and sender figures of the same kind, shown as "receiver / sender" in one column. */
const PAIRS = [["cpu_rx_pct", "cpu_tx_pct"], ["rx_core_busy_pct", "tx_core_busy_pct"]];

function pairColumn(a, b) {
  const [da, db] = [metricDef(a), metricDef(b)];
  const unit = da.unit === db.unit ? ` (${da.unit})` : "";
  return {key: `m:${a}`, label: `${da.label} / ${db.label}${unit}`, numeric: true,
          title: `${da.heading}: ${da.description}\n${db.heading}: ${db.description}\nsorted by the first`,
          value: (t) => (t.metrics || {})[a] ?? null,
          cell: (t) => `${num((t.metrics || {})[a])} / ${num((t.metrics || {})[b])}`};
}

function dropsColumn(names) {
  const total = (t) => {
    const values = names.map((n) => (t.metrics || {})[n]).filter(present);
    return values.length ? values.reduce((a, b) => a + b, 0) : null;
  };
  return {key: "drops", label: "drops (per run)", numeric: true, wrap: true, value: total,
          cell: (t) => dropsCell(t, names),
          title: `${names.map((n) => `${metricDef(n).label}: ${metricDef(n).unit}, ${metricDef(n).description}`).join("\n")}` +
                 "\nsorted by their sum; counters that stayed at zero are not listed"};
}

/**
 * @param {any[]} trials
 * @param {{objectives: any[], constrained: boolean, defaults: any, showAll: boolean}} job
 *        (`defaults`: the job's GET /v1/jobs/ID/default, or null)
 * @returns {import("./table.js").Column[]}
 */
export function trialColumns(trials, job) {
  const measured = measuredMetrics(trials);
  const cols = [{key: "number", label: "#", numeric: true, value: (t) => t.number}];
  // Only when it tells something: a trial that failed, or one answered from the cache.
  if (trials.some((t) => t.state !== "completed" || t.source !== "measured")) {
    cols.push({key: "state", label: "State", value: (t) => `${t.state} ${t.source}`,
               title: "a trial's state when it did not complete; cache: answered from earlier measurements",
               cell: (t) => h("span", {}, t.state !== "completed" ? stateBadge(t.state) : null,
                 t.source === "cache" ? h("span", {class: "muted", title: "answered from the cache"}, "cache") : null)});
  }
  if (job.constrained) {
    cols.push({key: "feasible", label: "Feasible", value: (t) => (t.score ? t.score.feasible : null),
               cell: (t) => (t.score ? (t.score.feasible ? "yes" : "no") : "-")});
  }
  // The job's objectives first, in their own units (interrupts per GB, not per second).
  const own = new Set();
  job.objectives.forEach((obj, i) => {
    if (!obj.per) own.add(obj.metric);
    cols.push({key: obj.per ? `o:${obj.name}` : `m:${obj.metric}`, label: `${obj.label} (${obj.unit}) ★`,
               numeric: true, title: `objective${job.objectives.length > 1 ? ` ${i + 1}` : ""}: ${directionText(obj)}`,
               value: (t) => objectiveValue(obj, t.metrics), cell: (t) => num(objectiveValue(obj, t.metrics))});
  });
  const drops = dropMetrics().filter((m) => measured.has(m));
  const paired = new Map(PAIRS.filter(([a, b]) => measured.has(a) && measured.has(b) && !own.has(a) && !own.has(b))
    .flatMap(([a, b]) => [[a, b], [b, null]]));
  for (const m of metricOrder([...measured].filter((n) => !own.has(n) && !drops.includes(n)))) {
    if (paired.has(m)) {
      if (paired.get(m)) cols.push(pairColumn(m, paired.get(m)));
      continue;
    }
    const def = metricDef(m);
    cols.push({key: `m:${m}`, label: def.heading, numeric: true, title: def.description || m,
               value: (t) => (t.metrics || {})[m] ?? null, cell: (t) => num((t.metrics || {})[m])});
  }
  if (drops.length) cols.push(dropsColumn(drops));
  cols.push({key: "changes", label: "Changed (vs default)", wrap: true,
             title: "the knobs this configuration sets differently from the space's default; hover for the hash",
             value: (t) => t.config_hash, cell: (t) => changesCell(t.config, t.config_hash, job.defaults)});
  if (job.showAll) {
    cols.push({key: "seconds", label: "seconds", numeric: true, title: "wall-clock seconds the measurement took",
               value: (t) => t.seconds ?? null, cell: (t) => num(t.seconds)},
              {key: "finished", label: "Finished", value: (t) => t.finished_at, cell: (t) => when(t.finished_at)});
    const knobs = new Set(trials.flatMap((t) => Object.keys(t.config || {})));
    for (const k of [...knobs].sort()) {
      cols.push({key: `k:${k}`, label: k, value: (t) => (t.config || {})[k] ?? null, cell: (t) => knobText((t.config || {})[k])});
    }
  }
  if (trials.some((t) => t.error)) {
    cols.push({key: "error", label: "Error", wrap: true, value: (t) => t.error || null, cell: (t) => t.error || ""});
  }
  return cols;
}
