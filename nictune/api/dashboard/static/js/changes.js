// A configuration shown by what it changed: the knobs whose value differs from the default
// configuration of the job's space (GET /v1/jobs/ID/default), "mtu=9000 rx_ring=4096".

import {h} from "./dom.js";

/** A knob's value as a person types it: 9000, 0.5, on, timer. */
export function knobText(value) {
  if (value === null || value === undefined) return "(inactive)";
  if (typeof value === "boolean") return value ? "on" : "off";
  if (Array.isArray(value)) return value.map(knobText).join(",");
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The knobs of `config` that differ from the default configuration, in the space's order;
 * knobs active in the default but inactive in `config` are `gone`.
 * @param {Record<string, any>} config
 * @param {{config: Record<string, any>, knobs?: string[]}} base the job's default (GET /v1/jobs/ID/default)
 * @returns {{set: {knob: string, value: any}[], gone: string[]}}
 */
export function changedKnobs(config, base) {
  const set = [], gone = [];
  const cfg = config || {}, def = base.config || {};
  for (const knob of new Set([...(base.knobs || []), ...Object.keys(def), ...Object.keys(cfg)])) {
    if (!(knob in cfg)) {
      if (knob in def) gone.push(knob);
    } else if (!(knob in def) || !same(cfg[knob], def[knob])) {
      set.push({knob, value: cfg[knob]});
    }
  }
  return {set, gone};
}

/** "mtu=9000 rx_ring=4096" ("" when nothing changed). */
export function changesText(config, base) {
  return changedKnobs(config, base).set.map((c) => `${c.knob}=${knobText(c.value)}`).join(" ");
}

/**
 * A cell with what a configuration changed; the hash (and the knobs it leaves inactive) in its
 * tooltip. Without the job's default (an older server, or not loaded yet) it shows the hash.
 * @param {Record<string, any>} config
 * @param {string} hash the configuration's hash
 * @param {{config: Record<string, any>, units?: Record<string, string>, knobs?: string[]}|null} base
 *        the job's default configuration (GET /v1/jobs/ID/default)
 */
export function changesCell(config, hash, base) {
  const title = `configuration ${hash || ""}`;
  if (!base) return h("code", {class: "hash", title}, hash ? hash.slice(0, 12) : "-");
  const {set, gone} = changedKnobs(config, base);
  if (!set.length && !gone.length) return h("span", {class: "changes default-config", title}, "default configuration");
  const units = base.units || {};
  const lines = set.map((c) => `${c.knob} = ${knobText(c.value)}${units[c.knob] ? ` ${units[c.knob]}` : ""}` +
                               ` (default ${knobText(base.config[c.knob])})`);
  if (gone.length) lines.push(`inactive here: ${gone.join(", ")}`);
  return h("span", {class: "changes", title: [title, ...lines].join("\n")},
    set.map((c, i) => [i ? " " : null, h("span", {class: "chg"}, h("span", {class: "k"}, c.knob), "=", knobText(c.value))]));
}
