// #/history: the best configurations ever measured, per testbed and workload, across jobs.

import {allItems, api, explain} from "../api.js";
import {changesText} from "../changes.js";
import {fill, h, num, shortHash, simBadge, testbedLabel, val, when} from "../dom.js";
import {formatInterval} from "../format.js";
import {directionText, objectiveNamed} from "../goal.js";
import {meta} from "../meta.js";
import {SortableTable} from "../table.js";

const settings = {objective: "throughput", top: 10, constraints: ""};

/** The default configuration of each job's space (GET /v1/jobs/ID/default), asked once per job. */
const jobDefaults = new Map();

function defaultsOf(jobId, signal) {
  if (!jobDefaults.has(jobId)) {
    jobDefaults.set(jobId, api(`/v1/jobs/${jobId}/default`, {signal}).catch(() => {
      jobDefaults.delete(jobId);
      return null;
    }));
  }
  return jobDefaults.get(jobId);
}

/** What the configuration changed (against the default of its first job's space), every knob when opened. */
function configCell(item, defaults) {
  const changed = defaults ? changesText(item.config, defaults) : null;
  return h("details", {class: "config"},
    h("summary", {title: `configuration ${item.config_hash}`},
      changed === null ? shortHash(item.config_hash) : h("span", {class: "changes"}, changed || "default configuration")),
    h("dl", {class: "kv"}, Object.entries(item.config).map(([k, v]) => [h("dt", {}, k), h("dd", {}, val(v))])));
}

/** The end of the interval the ranking uses: the lower bound when higher is better, else the upper. */
export function rankingBound(direction) {
  return direction === "minimize"
    ? {key: "high", word: "upper", order: "lowest first"} : {key: "low", word: "lower", order: "highest first"};
}

/** "mean ± half-width" of an item's interval (the mean alone when there is none). */
function intervalText(item) {
  const iv = item.interval || {};
  if (iv.low == null || iv.high == null) return num(item.objective_value);
  return formatInterval(item.objective_value, (iv.high - iv.low) / 2);
}

function bestTable(best, defaults) {
  const unit = best.unit;
  const bound = rankingBound(best.direction);
  const columns = [
    {key: "rank", label: "Rank", numeric: true, value: (i) => i.rank},
    {key: "value", label: `${objectiveNamed(best.objective).label} (${unit}, 90% CI)`, numeric: true, wrap: true,
     title: `mean ± half the 90% confidence interval; ${directionText({direction: best.direction})}`,
     value: (i) => i.objective_value, cell: (i) => intervalText(i)},
    {key: "bound", label: `${bound.word} bound (${unit}): ranked by`, numeric: true, wrap: true,
     title: `the ${bound.word} end of the 90% confidence interval, what the ranking orders by (${bound.order})`,
     value: (i) => (i.interval || {})[bound.key] ?? null, cell: (i) => num((i.interval || {})[bound.key])},
    best.constraints.length
      ? {key: "feasible", label: "Feasible", value: (i) => i.feasible, cell: (i) => (i.feasible ? "yes" : "no")} : null,
    {key: "measurements", label: "Measurements", numeric: true, value: (i) => i.measurements},
    {key: "trials", label: "Trials", numeric: true, value: (i) => i.trials},
    {key: "jobs", label: "Jobs", value: (i) => i.jobs.join(","),
     cell: (i) => h("span", {}, i.jobs.map((id, n) => [n ? ", " : "", h("a", {href: `#/jobs/${id}`}, `#${id}`)]))},
    {key: "last", label: "Last measured", value: (i) => i.last_measured_at, cell: (i) => when(i.last_measured_at)},
    {key: "config", label: "Changed (vs default)", wrap: true, value: (i) => i.config_hash,
     cell: (i) => configCell(i, defaults.get(i.rank))},
  ].filter(Boolean);
  const table = new SortableTable(columns, {sortKey: "rank", pageSize: 100, className: "best",
                                            empty: "No measurement answers this objective here yet."});
  table.setRows(best.items);
  return table.element;
}

/** Render the history into `root`. */
export function render(root, ctx) {
  const signal = ctx.signal;
  const objective = h("select", {id: "history-objective"},
    (meta().objectives || []).map((o) => h("option", {value: o.name, selected: o.name === settings.objective},
      `${o.label} (${o.unit})`)));
  const top = h("select", {id: "history-top"}, [3, 5, 10, 20, 50].map((n) => h("option", {value: n, selected: n === settings.top}, `top ${n}`)));
  const constraints = h("input", {id: "history-constraints", type: "text", size: 28, value: settings.constraints,
                                  placeholder: "e.g. loss_pct <= 0.1, cpu_rx_pct < 150"});
  const status = h("p", {class: "status muted", id: "history-status"}, "Loading the history…");
  const body = h("div", {id: "history"});
  const form = h("form", {class: "controls", onsubmit: (e) => {
    e.preventDefault();
    settings.objective = objective.value;
    settings.top = Number(top.value);
    settings.constraints = constraints.value;
    load();
  }}, h("label", {}, "Best by ", objective), " ", top, " ",
  h("label", {}, "constraints ", constraints), " ", h("button", {type: "submit"}, "Show"));
  fill(root, h("section", {class: "card"},
    h("div", {class: "card-head"}, h("h1", {}, "History: best configurations"), form),
    h("p", {class: "muted", id: "history-ranking"}, "Every configuration's measurements on the testbed under the " +
      "workload, across jobs, give the objective's mean and its 90% confidence interval. Configurations whose mean " +
      "meets the constraints come first, ranked by the interval's conservative end: the lower confidence bound " +
      "when higher is better, the upper one when lower is better (as a job picks its recommendation), so one lucky " +
      "run does not outrank a mean confirmed by repeats."), status), body);

  async function load() {
    status.className = "status muted";
    status.textContent = "Loading the history…";
    fill(body);
    const wanted = settings.constraints.split(",").map((c) => c.trim()).filter(Boolean);
    let testbeds, jobs;
    try {
      [testbeds, jobs] = await Promise.all([api("/v1/testbeds", {signal}), allItems("/v1/jobs", {}, {signal, max: 10000})]);
    } catch (err) {
      if (signal.aborted) return;
      status.className = "status error";
      status.textContent = explain(err);
      return;
    }
    // Which workloads each testbed has results for (from its jobs).
    const pairs = new Map();
    for (const job of jobs) {
      if (!pairs.has(job.testbed)) pairs.set(job.testbed, new Set());
      if (job.progress.done > 0) pairs.get(job.testbed).add(job.workload);
    }
    const stored = [...testbeds.stored].sort((a, b) => a.name.localeCompare(b.name));
    const sections = [];
    let failures = 0;
    for (const bed of stored) {
      const workloads = [...(pairs.get(bed.name) || [])].sort();
      const section = h("section", {class: "card testbed-card", "data-testbed": bed.name},
        h("div", {class: "card-head"}, h("h2", {}, testbedLabel(bed.name, bed.simulated)),
          h("span", {class: "muted"}, `${bed.jobs} job${bed.jobs === 1 ? "" : "s"}`)),
        bed.simulated ? h("p", {class: "sim-banner"}, "Simulated testbed: these figures come from a model, not from hardware.") : null,
        h("details", {class: "fingerprint"}, h("summary", {}, "fingerprint"),
          h("dl", {class: "kv"}, Object.entries(bed.fingerprint || {}).map(([k, v]) => [h("dt", {}, k), h("dd", {}, val(v))]))));
      if (!workloads.length) section.append(h("p", {class: "muted"}, "No finished trial on this testbed yet."));
      sections.push(section);
      for (const workload of workloads) {
        const slot = h("div", {class: "workload", "data-workload": workload}, h("h3", {}, `workload ${workload}`),
          h("p", {class: "muted"}, "loading…"));
        section.append(slot);
        api("/v1/history/best", {params: {testbed: bed.name, workload, objective: settings.objective, top: settings.top,
                                          constraint: wanted}, signal})
          .then(async (best) => {
            const defaults = new Map(await Promise.all(best.items.map(
              async (i) => [i.rank, i.jobs.length ? await defaultsOf(i.jobs[0], signal) : null])));
            fill(slot, h("h3", {}, `workload ${workload}`, best.simulated ? [" ", simBadge(best.note)] : null),
              h("p", {class: "muted"}, `${objectiveNamed(best.objective).label} in ${best.unit}, ${directionText({direction: best.direction})}` +
                (best.constraints.length ? `; constraints: ${best.constraints.join(", ")}` : "")),
              bestTable(best, defaults));
          })
          .catch((err) => {
            if (signal.aborted) return;
            failures++;
            fill(slot, h("h3", {}, `workload ${workload}`), h("p", {class: "error"}, explain(err)));
          });
      }
    }
    fill(body, sections.length ? sections : h("section", {class: "card"}, h("p", {class: "muted"}, "The history is empty: no job has run yet.")));
    status.textContent = `${stored.length} testbed${stored.length === 1 ? "" : "s"} with results` + (failures ? `, ${failures} failed to load` : "");
  }

  load();
}
