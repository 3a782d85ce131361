// DOM building and formatting helpers. Every text goes through textContent (never innerHTML),
// so names and values from the API cannot inject markup.

import {formatNumber} from "./format.js";

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * Build an element: h("a", {href: "#/jobs", class: "x"}, "text", child, [more children]).
 * Attributes whose value is null, undefined or false are left out; "on<event>" attributes
 * become listeners; "dataset" takes an object.
 */
export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** The same for SVG elements. */
export function s(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

function build(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "class") {
      el.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace everything inside `el` with `children`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A number for people, exactly as the CLI prints it (js/format.js: the port of format_number). */
export function num(value) {
  return formatNumber(value);
}

/** A knob or config value: numbers via num(), lists joined, the rest as text. */
export function val(value) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number") return String(value);
  if (typeof value === "boolean") return value ? "on" : "off";
  if (Array.isArray(value)) return value.map(val).join(", ");
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** Seconds as "1 h 02 min", "3 min 05 s", "12 s". */
export function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  const t = Math.max(0, Math.round(seconds));
  const hh = Math.floor(t / 3600), mm = Math.floor((t % 3600) / 60), ss = t % 60;
  if (hh) return `${hh} h ${String(mm).padStart(2, "0")} min`;
  if (mm) return `${mm} min ${String(ss).padStart(2, "0")} s`;
  return `${ss} s`;
}

/** An ISO date-time in the browser's local time, "2024-12-02 10:00:01". */
export function when(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** The state of a job or trial as a coloured badge. */
export function stateBadge(state) {
  return h("span", {class: `badge state-${state}`, "data-state": state}, state);
}

/** The label every figure from a simulated testbed carries. */
export function simBadge(note) {
  return h("span", {class: "badge sim", title: note || "simulated testbed: figures come from a model, not from hardware"},
    "simulated (a model)");
}

/** A testbed name, with the simulated label when it is a model. */
export function testbedLabel(name, simulated, note) {
  return h("span", {class: "testbed"}, h("code", {}, name), simulated ? [" ", simBadge(note)] : null);
}

/** A <progress> with "done / budget" next to it. */
export function progressBar(done, budget, attrs = {}) {
  const max = Math.max(budget || 0, 1);
  return h("span", {class: "progress-wrap"},
    h("progress", {...attrs, max, value: Math.min(done || 0, max)}),
    h("span", {class: "progress-text"}, `${done || 0} / ${budget || 0}`));
}

/** The 12 first hex digits of a configuration hash, in <code>. */
export function shortHash(hash) {
  return h("code", {class: "hash", title: hash || ""}, hash ? hash.slice(0, 12) : "–");
}
