// The convergence chart: the objective of every trial, the best so far, and the default's value,
// drawn as inline SVG (no chart library).

import {num, s} from "./dom.js";

const WIDTH = 860;
const HEIGHT = 340;
const PAD = {left: 70, right: 20, top: 34, bottom: 44};

/** About `count` round tick values covering [lo, hi]. */
export function ticks(lo, hi, count = 6) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (hi === lo) return [lo];
  const raw = (hi - lo) / Math.max(count - 1, 1);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((m) => m >= raw) || 10 * mag;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** [lo, hi] around `values` with a margin (from 0 when every value is positive and near it). */
function paddedRange(values) {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (lo === hi) {
    const pad = Math.abs(lo) * 0.05 || 1;
    lo -= pad;
    hi += pad;
  } else {
    const pad = (hi - lo) * 0.06;
    lo -= pad;
    hi += pad;
  }
  if (lo < 0 && Math.min(...values) >= 0) lo = 0;
  return [lo, hi];
}

/** Grid lines, tick labels, both axes and their labels in the plot area of WIDTH x HEIGHT. */
function drawAxes(svg, {X, Y, xTicks, yTicks, xText = num, xLabel, yLabel}) {
  const left = PAD.left, right = WIDTH - PAD.right, top = PAD.top, bottom = HEIGHT - PAD.bottom;
  const grid = s("g", {class: "grid"});
  for (const t of yTicks) {
    grid.append(s("line", {x1: left, x2: right, y1: Y(t), y2: Y(t)}),
      s("text", {x: left - 8, y: Y(t) + 4, "text-anchor": "end", class: "tick"}, num(t)));
  }
  for (const t of xTicks) {
    grid.append(s("line", {x1: X(t), x2: X(t), y1: bottom, y2: bottom + 5, class: "xtick"}),
      s("text", {x: X(t), y: bottom + 19, "text-anchor": "middle", class: "tick"}, xText(t)));
  }
  svg.append(grid,
    s("line", {x1: left, x2: right, y1: bottom, y2: bottom, class: "axis"}),
    s("line", {x1: left, x2: left, y1: top, y2: bottom, class: "axis"}),
    s("text", {x: (left + right) / 2, y: HEIGHT - 6, "text-anchor": "middle", class: "axis-label"}, xLabel),
    s("text", {x: 14, y: (top + bottom) / 2, "text-anchor": "middle", class: "axis-label",
               transform: `rotate(-90 14 ${(top + bottom) / 2})`}, yLabel));
}

/**
 * Draw (or redraw) the chart into `svg`.
 * @param {SVGSVGElement} svg
 * @param {{points: {x: number, y: number|null, feasible: boolean, failed: boolean, title: string}[],
 *          best: {x: number, y: number}[], defaultValue: number|null, defaultTrial: number|null,
 *          budget: number, label: string, unit: string, direction: string}} data
 */
export function drawConvergence(svg, data) {
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
  svg.setAttribute("role", "img");
  const drawn = data.points.filter((p) => p.y !== null && Number.isFinite(p.y));
  svg.dataset.points = String(drawn.length);
  svg.dataset.best = String(data.best.length);
  const title = `${data.label} per trial (${data.unit}), ${data.direction === "minimize" ? "lower" : "higher"} is better`;
  svg.append(s("title", {}, title));

  const ys = drawn.map((p) => p.y);
  if (data.defaultValue !== null && Number.isFinite(data.defaultValue)) ys.push(data.defaultValue);
  if (ys.length === 0) {
    svg.append(s("text", {x: WIDTH / 2, y: HEIGHT / 2, class: "chart-empty", "text-anchor": "middle"},
      "No completed trial yet: the chart fills in as trials finish."));
    return;
  }
  const [lo, hi] = paddedRange(ys);
  const xmax = Math.max(data.budget - 1, ...data.points.map((p) => p.x), 1);
  const left = PAD.left, right = WIDTH - PAD.right, top = PAD.top, bottom = HEIGHT - PAD.bottom;
  const X = (x) => left + (x / xmax) * (right - left);
  const Y = (y) => bottom - ((y - lo) / (hi - lo)) * (bottom - top);

  drawAxes(svg, {X, Y, yTicks: ticks(lo, hi).filter((t) => t >= lo && t <= hi),
                 xTicks: ticks(0, xmax, 8).filter((t) => t === Math.round(t)), xText: String,
                 xLabel: "trial", yLabel: `${data.label} (${data.unit})`});

  // The default's value: a dashed reference line.
  if (data.defaultValue !== null && Number.isFinite(data.defaultValue)) {
    const y = Y(data.defaultValue);
    svg.append(s("g", {class: "default-ref"},
      s("line", {x1: left, x2: right, y1: y, y2: y, class: "default-line"}),
      s("text", {x: right - 4, y: y - 5, "text-anchor": "end", class: "default-text"},
        `default ${num(data.defaultValue)}${data.defaultTrial !== null ? ` (trial ${data.defaultTrial})` : ""}`)));
  }

  // Best so far: a step line.
  if (data.best.length) {
    let d = "";
    data.best.forEach((p, i) => {
      d += i === 0 ? `M${X(p.x)},${Y(p.y)}` : `H${X(p.x)}V${Y(p.y)}`;
    });
    d += `H${X(Math.max(data.points.length ? Math.max(...data.points.map((p) => p.x)) : 0, data.best.at(-1).x))}`;
    svg.append(s("path", {d, class: "best-line"}));
  }

  // One dot per trial; failed trials as a cross on the axis.
  const dots = s("g", {class: "points"});
  for (const p of data.points) {
    if (p.failed || p.y === null || !Number.isFinite(p.y)) {
      const x = X(p.x), y = bottom - 6;
      dots.append(s("path", {d: `M${x - 3},${y - 3}L${x + 3},${y + 3}M${x - 3},${y + 3}L${x + 3},${y - 3}`,
                             class: "pt-failed"}, s("title", {}, p.title)));
      continue;
    }
    dots.append(s("circle", {cx: X(p.x), cy: Y(p.y), r: 3.4, class: p.feasible ? "pt" : "pt infeasible"},
      s("title", {}, p.title)));
  }
  svg.append(dots);

  // Legend.
  const legend = s("g", {class: "legend", transform: `translate(${left},14)`});
  legend.append(
    s("circle", {cx: 5, cy: 0, r: 3.4, class: "pt"}), s("text", {x: 13, y: 4}, "trial"),
    s("circle", {cx: 60, cy: 0, r: 3.4, class: "pt infeasible"}), s("text", {x: 68, y: 4}, "breaks a constraint"),
    s("line", {x1: 200, x2: 222, y1: 0, y2: 0, class: "best-line"}), s("text", {x: 228, y: 4}, "best so far"),
    s("line", {x1: 316, x2: 338, y1: 0, y2: 0, class: "default-line"}),
    s("text", {x: 344, y: 4}, data.defaultValue !== null && Number.isFinite(data.defaultValue)
      ? "default configuration" : "default configuration (not measured in this job)"));
  svg.append(legend);
}

/**
 * A two-objective job's trials in the plane of its first two objectives, the Pareto front
 * highlighted and joined in order of the first objective.
 * @param {SVGSVGElement} svg
 * @param {{points: {x: number, y: number, front: boolean, feasible: boolean, title: string}[],
 *          xLabel: string, yLabel: string}} data
 */
export function drawFront(svg, data) {
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
  svg.setAttribute("role", "img");
  const drawn = data.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  const front = drawn.filter((p) => p.front).sort((a, b) => a.x - b.x || a.y - b.y);
  svg.dataset.points = String(drawn.length);
  svg.dataset.front = String(front.length);
  svg.append(s("title", {}, `${data.yLabel} against ${data.xLabel}: every trial, the Pareto front highlighted`));
  if (drawn.length === 0) {
    svg.append(s("text", {x: WIDTH / 2, y: HEIGHT / 2, class: "chart-empty", "text-anchor": "middle"},
      "No completed trial yet."));
    return;
  }
  const [xlo, xhi] = paddedRange(drawn.map((p) => p.x));
  const [ylo, yhi] = paddedRange(drawn.map((p) => p.y));
  const left = PAD.left, right = WIDTH - PAD.right, top = PAD.top, bottom = HEIGHT - PAD.bottom;
  const X = (x) => left + ((x - xlo) / (xhi - xlo)) * (right - left);
  const Y = (y) => bottom - ((y - ylo) / (yhi - ylo)) * (bottom - top);
  drawAxes(svg, {X, Y, xTicks: ticks(xlo, xhi, 8).filter((t) => t >= xlo && t <= xhi),
                 yTicks: ticks(ylo, yhi).filter((t) => t >= ylo && t <= yhi),
                 xLabel: data.xLabel, yLabel: data.yLabel});
  if (front.length > 1) {
    svg.append(s("path", {d: front.map((p, i) => `${i ? "L" : "M"}${X(p.x)},${Y(p.y)}`).join(""), class: "front-line"}));
  }
  const dots = s("g", {class: "points"});
  for (const p of [...drawn.filter((q) => !q.front), ...front]) {  // the front on top
    dots.append(s("circle", {cx: X(p.x), cy: Y(p.y), r: p.front ? 4.6 : 3.2,
                             class: ["pt", p.front ? "on-front" : "", p.feasible ? "" : "infeasible"]},
      s("title", {}, p.title)));
  }
  svg.append(dots);
  const legend = s("g", {class: "legend", transform: `translate(${left},14)`});
  legend.append(
    s("circle", {cx: 5, cy: 0, r: 3.2, class: "pt"}), s("text", {x: 13, y: 4}, "trial"),
    s("circle", {cx: 60, cy: 0, r: 4.6, class: "pt on-front"}), s("text", {x: 68, y: 4}, "on the Pareto front"),
    s("circle", {cx: 200, cy: 0, r: 3.2, class: "pt infeasible"}), s("text", {x: 208, y: 4}, "breaks a constraint"));
  svg.append(legend);
}
