// #/jobs: every job with its state and progress, newest first; refreshes while jobs run.

import {api, explain} from "../api.js";
import {fill, h, progressBar, stateBadge, testbedLabel, when} from "../dom.js";
import {objectiveNamed} from "../goal.js";
import {SortableTable} from "../table.js";

const ACTIVE = new Set(["pending", "running", "waiting", "interrupted"]);
const STATES = ["", "pending", "running", "waiting", "interrupted", "completed", "failed", "cancelled"];
const LIMIT = 50;

function stateCell(job) {
  const extra = job.cancel_requested ? " (cancelling)" : job.queue_position ? ` (#${job.queue_position} in queue)` : "";
  return h("span", {}, stateBadge(job.state), extra);
}

const COLUMNS = [
  {key: "id", label: "Job", numeric: true, value: (j) => j.id,
   cell: (j) => h("a", {href: `#/jobs/${j.id}`, class: "job-link"}, `#${j.id}`)},
  {key: "state", label: "State", wrap: true, value: (j) => j.state, cell: stateCell},
  {key: "progress", label: "Progress", value: (j) => j.progress.fraction,
   cell: (j) => progressBar(j.progress.done, j.progress.budget, {"aria-label": `job ${j.id} progress`})},
  {key: "testbed", label: "Testbed", value: (j) => j.testbed, cell: (j) => testbedLabel(j.testbed, j.simulated, j.note)},
  {key: "workload", label: "Workload", value: (j) => j.workload},
  {key: "objective", label: "Objective", wrap: true, value: (j) => j.objectives.join(", "),
   cell: (j) => h("span", {title: j.constraints.join(", ") || "no constraint"},
     j.objectives.map((o) => objectiveNamed(o).label).join(", "), j.constraints.length ? ` (+${j.constraints.length} constraint${j.constraints.length > 1 ? "s" : ""})` : "")},
  {key: "engine", label: "Engine", value: (j) => j.engine},
  {key: "failed", label: "Failed trials", numeric: true, value: (j) => j.progress.failed, cell: (j) => String(j.progress.failed)},
  {key: "created", label: "Created", wrap: true, value: (j) => j.created_at, cell: (j) => when(j.created_at)},
  {key: "finished", label: "Finished", wrap: true, value: (j) => j.finished_at, cell: (j) => when(j.finished_at)},
];

/** Render the job list into `root`; stops refreshing when `ctx.signal` aborts. */
export function render(root, ctx) {
  let offset = 0;
  let state = "";
  let timer = null;
  const status = h("p", {class: "status muted", id: "jobs-status"}, "Loading jobs…");
  const table = new SortableTable(COLUMNS, {sortKey: "id", descending: true, pageSize: LIMIT, className: "jobs",
                                            empty: "No job yet: submit one with nictune run or POST /v1/jobs."});
  const pager = h("div", {class: "pager"});
  const filter = h("select", {id: "state-filter", onchange: (e) => { state = e.target.value; offset = 0; load(); }},
    STATES.map((name) => h("option", {value: name}, name || "any state")));
  table.element.id = "jobs";
  fill(root, h("section", {class: "card"},
    h("div", {class: "card-head"}, h("h1", {}, "Jobs"), h("label", {class: "filter"}, "State ", filter)),
    status, table.element, pager));

  ctx.signal.addEventListener("abort", () => clearTimeout(timer));

  async function load() {
    clearTimeout(timer);
    let page;
    try {
      page = await api("/v1/jobs", {params: {limit: LIMIT, offset, state}, signal: ctx.signal});
    } catch (err) {
      if (ctx.signal.aborted) return;
      status.textContent = explain(err);
      status.className = "status error";
      timer = setTimeout(load, 10000);
      return;
    }
    if (ctx.signal.aborted) return;
    table.setRows(page.items);
    const running = page.items.filter((j) => ACTIVE.has(j.state)).length;
    status.className = "status muted";
    status.textContent = `${page.total} job${page.total === 1 ? "" : "s"}` +
      (running ? ` · ${running} active, refreshing every 2 s` : "");
    fill(pager,
      h("button", {type: "button", disabled: offset === 0, onclick: () => { offset = Math.max(0, offset - LIMIT); load(); }}, "‹ newer"),
      h("span", {}, ` ${page.total ? offset + 1 : 0}–${offset + page.items.length} of ${page.total} `),
      h("button", {type: "button", disabled: !page.next, onclick: () => { offset += LIMIT; load(); }}, "older ›"));
    timer = setTimeout(load, running ? 2000 : 10000);
  }

  load();
}
