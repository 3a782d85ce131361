// The convergence chart: the objective of every trial, the best so far, and the default's value,
// drawn as inline SVG (no chart library).

import {num, s} from "./dom.js";

const WIDTH = 860;
const HEIGHT = 340;
const PAD = {left: 84, right: 20, top: 34, bottom: 44};

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

/** Above this ratio of the largest to the smallest value an axis is logarithmic (the figures do the same). */
export const LOG_RATIO = 100;

/** Whether `values` (finite ones) call for a log axis: all positive, spanning more than LOG_RATIO. */
export function wantsLog(values) {
  const finite = values.filter((v) => Number.isFinite(v));
  if (!finite.length || finite.some((v) => v <= 0)) return false;
  return Math.max(...finite) / Math.min(...finite) > LOG_RATIO;
}

/** A round tick value as text: 1,000, 250, 0.5, 1e-05 (not a measured number: no fixed decimals). */
function tickText(v) {
  if (v === 0) return "0";
  const abs = Math.abs(v);
  if (abs >= 1000) return Math.round(v).toLocaleString("en-US");
  if (abs < 1e-3) return v.toExponential(0);
  return String(Number(v.toPrecision(6)));
}

/**
 * An axis over `values` mapped onto [from, to] pixels: linear with a margin, or logarithmic
 * (whole decades, ticks at 1, 2, 5 x 10^k when few decades) when they span more than LOG_RATIO.
 * @returns {{log: boolean, at: (v: number) => number, ticks: number[]}}
 */
export function axisScale(values, from, to, count = 6) {
  if (wantsLog(values)) {
    const lo = Math.floor(Math.log10(Math.min(...values)));
    const hi = Math.ceil(Math.log10(Math.max(...values)));
    const steps = hi - lo <= 3 ? [1, 2, 5] : [1];
    const out = [];
    for (let e = lo; e <= hi; e++) for (const m of steps) if (e < hi || m === 1) out.push(Number((m * 10 ** e).toPrecision(12)));
    return {log: true, ticks: out, at: (v) => from + ((Math.log10(v) - lo) / (hi - lo)) * (to - from)};
  }
  const [lo, hi] = paddedRange(values);
  return {log: false, ticks: ticks(lo, hi, count).filter((t) => t >= lo && t <= hi),
          at: (v) => from + ((v - lo) / (hi - lo)) * (to - from)};
}

/** Grid lines, tick labels, both axes and their labels in the plot area of WIDTH x HEIGHT. */
function drawAxes(svg, {X, Y, xTicks, yTicks, xText = tickText, xLabel, yLabel}) {
  const left = PAD.left, right = WIDTH - PAD.right, top = PAD.top, bottom = HEIGHT - PAD.bottom;
  const grid = s("g", {class: "grid"});
  for (const t of yTicks) {
    grid.append(s("line", {x1: left, x2: right, y1: Y(t), y2: Y(t)}),
      s("text", {x: left - 8, y: Y(t) + 4, "text-anchor": "end", class: "tick"}, tickText(t)));
  }
  for (const t of xTicks) {
    grid.append(s("line", {x1: X(t), x2: X(t), y1: bottom, y2: bottom + 5, class: "xtick"}),
      s("text", {x: X(t), y: bottom + 19, "text-anchor": "middle", class: "tick"}, xText(t)));
  }
  svg.append(grid,
    s("line", {x1: left, x2: right, y1: bottom, y2: bottom, class: "axis"}),
    s("line", {x1: left, x2: left, y1: top, y2: bottom, class: "axis"}),
    s("text", {x: (left + right) / 2, y: HEIGHT - 6, "text-anchor": "middle", class: "axis-label"}, xLabel),
    s("text", {x: 13, y: (top + bottom) / 2, "text-anchor": "middle", class: "axis-label",
               transform: `rotate(-90 13 ${(top + bottom) / 2})`}, yLabel));
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
  const xmax = Math.max(data.budget - 1, ...data.points.map((p) => p.x), 1);
  const left = PAD.left, right = WIDTH - PAD.right, top = PAD.top, bottom = HEIGHT - PAD.bottom;
  const X = (x) => left + (x / xmax) * (right - left);
  const yScale = axisScale(ys, bottom, top);
  const Y = yScale.at;
  svg.dataset.yscale = yScale.log ? "log" : "linear";

  drawAxes(svg, {X, Y, yTicks: yScale.ticks,
                 xTicks: ticks(0, xmax, 8).filter((t) => t === Math.round(t)), xText: String,
                 xLabel: "trial", yLabel: `${data.label} (${data.unit})${yScale.log ? ", log scale" : ""}`});

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
    if (p.failed || p.y === null || !Number.isFinite(p.y) || (yScale.log && p.y <= 0)) {
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
  const entries = [
    [s("circle", {cx: 5, cy: 0, r: 3.4, class: "pt"}), "trial"],
    data.constrained ? [s("circle", {cx: 5, cy: 0, r: 3.4, class: "pt infeasible"}), "breaks a constraint"] : null,
    [s("line", {x1: 0, x2: 22, y1: 0, y2: 0, class: "best-line"}), "best so far"],
    [s("line", {x1: 0, x2: 22, y1: 0, y2: 0, class: "default-line"}),
     data.defaultValue !== null && Number.isFinite(data.defaultValue)
       ? "default configuration" : "default configuration (not measured in this job)"],
  ];
  svg.append(legendRow(left, entries));
}

/** A legend in one row at the top of the plot: [symbol, text] pairs, each about as wide as its text. */
function legendRow(left, entries) {
  const legend = s("g", {class: "legend", transform: `translate(${left},14)`});
  let x = 0;
  for (const entry of entries) {
    if (!entry) continue;
    const [symbol, text] = entry;
    const r = Number(symbol.getAttribute("r") || 4);
    const width = symbol.tagName === "line" ? 28 : symbol.tagName === "circle" ? 2 * r + 6 : 14;
    legend.append(s("g", {transform: `translate(${x},0)`}, symbol, s("text", {x: width, y: 4}, text)));
    x += width + text.length * 6.2 + 18;
  }
  return legend;
}

/**
 * A two-objective job's trials in the plane of its first two objectives: the Pareto front
 * highlighted and joined in order of the first objective, the recommended configuration and the
 * default marked; an axis is logarithmic when its values span more than LOG_RATIO.
 * @param {SVGSVGElement} svg
 * @param {{points: {x: number, y: number, front: boolean, feasible: boolean, recommended: boolean, title: string}[],
 *          defaultPoint: {x: number, y: number, title: string}|null, constrained: boolean,
 *          xLabel: string, yLabel: string}} data
 */
export function drawFront(svg, data) {
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
  svg.setAttribute("role", "img");
  const ok = (p) => p && Number.isFinite(p.x) && Number.isFinite(p.y);
  const drawn = data.points.filter(ok);
  const front = drawn.filter((p) => p.front).sort((a, b) => a.x - b.x || a.y - b.y);
  const def = ok(data.defaultPoint) ? data.defaultPoint : null;
  svg.dataset.points = String(drawn.length);
  svg.dataset.front = String(front.length);
  svg.append(s("title", {}, `${data.yLabel} against ${data.xLabel}: every trial, the Pareto front highlighted`));
  if (drawn.length === 0) {
    svg.append(s("text", {x: WIDTH / 2, y: HEIGHT / 2, class: "chart-empty", "text-anchor": "middle"},
      "No completed trial yet."));
    return;
  }
  const left = PAD.left, right = WIDTH - PAD.right, top = PAD.top, bottom = HEIGHT - PAD.bottom;
  const xs = [...drawn, ...(def ? [def] : [])].map((p) => p.x);
  const ys = [...drawn, ...(def ? [def] : [])].map((p) => p.y);
  const xScale = axisScale(xs, left, right, 8);
  const yScale = axisScale(ys, bottom, top);
  svg.dataset.xscale = xScale.log ? "log" : "linear";
  svg.dataset.yscale = yScale.log ? "log" : "linear";
  const X = xScale.at, Y = yScale.at;
  drawAxes(svg, {X, Y, xTicks: xScale.ticks, yTicks: yScale.ticks,
                 xLabel: `${data.xLabel}${xScale.log ? ", log scale" : ""}`,
                 yLabel: `${data.yLabel}${yScale.log ? ", log scale" : ""}`});
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
  const rec = drawn.find((p) => p.recommended);
  if (rec) {
    svg.append(s("g", {class: "recommended", "data-trial": rec.number},
      s("circle", {cx: X(rec.x), cy: Y(rec.y), r: 9, class: "rec-ring"}, s("title", {}, `recommended: ${rec.title}`)),
      s("text", {x: X(rec.x) + (X(rec.x) > right - 120 ? -12 : 12), y: Y(rec.y) - 10, class: "rec-text",
                 "text-anchor": X(rec.x) > right - 120 ? "end" : "start"}, "recommended")));
  }
  if (def) {
    const x = X(def.x), y = Y(def.y);
    svg.append(s("g", {class: "default-pt"},
      s("path", {d: `M${x},${y - 6}L${x + 6},${y}L${x},${y + 6}L${x - 6},${y}Z`, class: "default-mark"},
        s("title", {}, def.title)),
      s("text", {x: x + (x > right - 80 ? -9 : 9), y: y + 14, class: "default-text",
                 "text-anchor": x > right - 80 ? "end" : "start"}, "default")));
  }
  svg.append(legendRow(left, [
    [s("circle", {cx: 5, cy: 0, r: 3.2, class: "pt"}), "trial"],
    [s("circle", {cx: 5, cy: 0, r: 4.6, class: "pt on-front"}), "on the Pareto front"],
    rec ? [s("circle", {cx: 5, cy: 0, r: 6, class: "rec-ring"}), "recommended"] : null,
    def ? [s("path", {d: "M5,-5L10,0L5,5L0,0Z", class: "default-mark"}), "default configuration"] : null,
    data.constrained ? [s("circle", {cx: 5, cy: 0, r: 3.2, class: "pt infeasible"}), "breaks a constraint"] : null,
  ]));
}
