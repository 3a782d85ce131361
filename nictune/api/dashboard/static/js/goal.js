// Objectives and scores as nictune defines them (nictune/optimizer/objectives.py).

import {meta} from "./meta.js";

/** The objective description {name, metric, per, direction, label, unit} for `name`. */
export function objectiveNamed(name) {
  const found = (meta().objectives || []).find((o) => o.name === name);
  return found || {name, metric: name, per: null, direction: "maximize", label: name, unit: ""};
}

/** The objective in natural units from mean metrics (null when a metric is missing). */
export function objectiveValue(objective, metrics) {
  if (!metrics) return null;
  const top = metrics[objective.metric];
  if (top === null || top === undefined) return null;
  if (!objective.per) return top;
  const bottom = metrics[objective.per];
  if (bottom === null || bottom === undefined) return null;
  return bottom <= 0 ? Infinity : top / bottom;
}

/** A score {feasible, value, violation} from the API, or one made from the objective alone. */
export function scoreOf(trial, objective) {
  if (trial.score && trial.score.value !== null && trial.score.value !== undefined) return trial.score;
  const v = objectiveValue(objective, trial.metrics);
  if (v === null) return null;
  return {feasible: true, value: objective.direction === "minimize" ? -v : v, violation: 0};
}

/** True when score `a` ranks above score `b` (feasible first; then value; infeasible by less violation). */
export function better(a, b) {
  if (!a) return false;
  if (!b) return true;
  if (a.feasible !== b.feasible) return a.feasible;
  if (a.feasible) return a.value > b.value;
  if (a.violation !== b.violation) return (a.violation ?? Infinity) < (b.violation ?? Infinity);
  return a.value > b.value;
}

/** "higher is better" or "lower is better". */
export function directionText(objective) {
  return objective.direction === "minimize" ? "lower is better" : "higher is better";
}
