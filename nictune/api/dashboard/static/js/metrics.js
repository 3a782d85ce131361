// Metrics as nictune defines them (nictune/metrics.py DEFINITIONS, served in the page's meta):
// every metric the page shows takes its label and unit from here.

import {meta} from "./meta.js";

/** The definition {label, unit, heading, description, better, per_run} of metric `name`
 *  (its name as label when this server does not know it). */
export function metricDef(name) {
  const found = (meta().metrics || {})[name];
  return found && typeof found === "object"
    ? found : {label: name, unit: "", heading: name, description: "", better: null, per_run: false};
}

/** "throughput (Gbit/s)": a column header or an axis title. */
export function metricHeading(name) {
  return metricDef(name).heading;
}

/** `names` in nictune's order (the definitions' order), unknown names last, alphabetically. */
export function metricOrder(names) {
  const known = Object.keys(meta().metrics || {});
  return [...names].sort((a, b) => {
    const ia = known.indexOf(a), ib = known.indexOf(b);
    return (ia < 0 ? 1e9 : ia) - (ib < 0 ? 1e9 : ib) || a.localeCompare(b);
  });
}

/** The drop counters (qdisc, ring, backlog, socket drops per run), in nictune's order. */
export function dropMetrics() {
  return Object.keys(meta().metrics || {}).filter((name) => name.endsWith("_drops"));
}
