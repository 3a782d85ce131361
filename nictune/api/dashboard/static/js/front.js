// A multi-objective job's Pareto front, shown first on its page: a table of the front (each
// objective in its unit, what each member changed, the recommended member marked) and the
// scatter of every trial with the front, the recommendation and the default marked.

import {changesCell} from "./changes.js";
import {drawFront} from "./chart.js";
import {fill, h, num} from "./dom.js";
import {directionText, objectiveValue} from "./goal.js";

const axisTitle = (o) => `${o.label} (${o.unit})`;

/**
 * @param {{svg: SVGSVGElement, info: HTMLElement, table: HTMLElement}} where
 * @param {{job: any, objectives: any[], trials: any[], defaults: any, defaultTrial: any, recommended: number|null}} data
 *        (`defaults`: the job's GET /v1/jobs/ID/default, or null)
 */
export function drawFrontCard(where, data) {
  const {job, objectives: objs, recommended} = data;
  const onFront = new Set((job.front || []).map((f) => f.number));
  const known = job.front !== null && job.front !== undefined;
  const constrained = job.constraints.length > 0;
  const point = (metrics) => [objectiveValue(objs[0], metrics), objectiveValue(objs[1], metrics)];
  const describe = (x, y) => `${num(x)} ${objs[0].unit}, ${num(y)} ${objs[1].unit}`;
  const def = data.defaultTrial;
  const [dx, dy] = def ? point(def.metrics) : [null, null];
  drawFront(where.svg, {
    xLabel: axisTitle(objs[0]), yLabel: axisTitle(objs[1]), constrained,
    points: data.trials.map((t) => {
      const [x, y] = point(t.metrics);
      return {x, y, number: t.number, front: onFront.has(t.number), recommended: t.number === recommended,
              feasible: !t.score || t.score.feasible !== false, title: `trial ${t.number}: ${describe(x, y)}`};
    }),
    defaultPoint: def ? {x: dx, y: dy, title: `default configuration (trial ${def.number ?? "-"}): ${describe(dx, dy)}`} : null,
  });
  where.info.textContent = known
    ? `${onFront.size} configuration${onFront.size === 1 ? "" : "s"} that no other trial beats on every objective` +
      ` (${objs.map((o) => `${o.label}: ${directionText(o)}`).join("; ")})` +
      (recommended !== null ? `; ★ the recommended one (best lower confidence bound of ${objs[0].label})` : "") +
      (objs.length > 2 ? ` (the chart shows the first two of ${objs.length} objectives)` : "") +
      (job.simulated ? " — simulated (a model)" : "") + "."
    : "The front is worked out when the job ends; until then the chart shows every trial.";
  if (!known) {
    fill(where.table);
    return;
  }
  const rows = [...job.front].sort((a, b) => (objectiveValue(objs[0], a.metrics) ?? 0) - (objectiveValue(objs[0], b.metrics) ?? 0));
  const configs = new Map(data.trials.map((t) => [t.number, t.config]));
  fill(where.table, h("table", {class: "front"},
    h("thead", {}, h("tr", {}, h("th", {class: "num"}, "#"),
      objs.map((o) => h("th", {class: "num wrap", title: directionText(o)}, `${o.label} (${o.unit})`)),
      constrained ? h("th", {}, "Feasible") : null, h("th", {class: "wrap"}, "Changed (vs default)"))),
    h("tbody", {}, rows.map((f) => h("tr", {"data-trial": f.number, class: f.number === recommended ? "recommended" : null},
      h("td", {class: "num"}, f.number === recommended ? h("span", {title: "recommended"}, "★ ") : null, String(f.number)),
      objs.map((o) => h("td", {class: "num"}, num(objectiveValue(o, f.metrics)))),
      constrained ? h("td", {}, f.feasible ? "yes" : "no") : null,
      h("td", {class: "wrap"}, configs.has(f.number)
        ? changesCell(configs.get(f.number), f.config_hash, data.defaults) : changesCell({}, f.config_hash, null)))))));
}
