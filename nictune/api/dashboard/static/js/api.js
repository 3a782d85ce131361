// Calls to the nictune REST API with the user's bearer token, and the job event stream.

import {SseParser} from "./sse.js";

const TOKEN_KEY = "nictune.token";

/** The token the user entered in this tab ("" when none). */
export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

/** Keep `token` for this tab (an empty token forgets it). */
export function setToken(token) {
  const clean = (token || "").trim().replace(/^bearer\s+/i, "");
  if (clean) sessionStorage.setItem(TOKEN_KEY, clean);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** An HTTP error of the API, with its JSON error body when it had one. */
export class ApiError extends Error {
  constructor(status, body, path) {
    super((body && body.message) || `HTTP ${status} from ${path}`);
    this.status = status;
    this.body = body;
    this.path = path;
  }

  /** True when the route itself does not exist on this server (not a missing job). */
  get noEndpoint() {
    return this.status === 404 && /no such endpoint/.test(this.message);
  }
}

/** What to tell the user about an error, in one sentence or two. */
export function explain(err) {
  if (err instanceof ApiError) {
    if (err.status === 401) {
      return getToken()
        ? `The token was refused (${err.message}). Enter another token above.`
        : "The dashboard needs a token: enter one above (create it with: nictune token create --role read --name NAME).";
    }
    if (err.status === 403) return `This token may not do that: ${err.message}`;
    if (err.status === 503) return `The service is unavailable: ${err.message}`;
    return err.message;
  }
  if (err && err.name === "AbortError") return "";
  return `Cannot reach the service: ${err && err.message ? err.message : err}`;
}

/** Listeners of authentication failures (the page shows a banner). */
const authListeners = new Set();

/** Call `fn(err)` on every 401/403; returns a function that removes it. */
export function onAuthProblem(fn) {
  authListeners.add(fn);
  return () => authListeners.delete(fn);
}

/** An API URL, relative to the page, so the service can sit behind a path prefix. */
export function apiUrl(path, params) {
  const url = new URL(path.replace(/^\//, ""), document.baseURI);
  for (const [key, value] of Object.entries(params || {})) {
    if (value === null || value === undefined || value === "") continue;
    if (Array.isArray(value)) value.forEach((v) => url.searchParams.append(key, v));
    else url.searchParams.set(key, value);
  }
  return url;
}

function headers(extra) {
  const out = {Accept: "application/json", ...extra};
  const token = getToken();
  if (token) out.Authorization = `Bearer ${token}`;
  return out;
}

async function failure(response, path) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const err = new ApiError(response.status, body, path);
  if (response.status === 401 || response.status === 403) authListeners.forEach((fn) => fn(err));
  return err;
}

/**
 * Call the API; resolves to the JSON body (or the Response when `raw`).
 * @param {string} path e.g. "/v1/jobs"
 * @param {{method?: string, params?: object, body?: any, signal?: AbortSignal, raw?: boolean}} options
 */
export async function api(path, {method = "GET", params, body, signal, raw = false} = {}) {
  const init = {method, headers: headers(body === undefined ? {} : {"Content-Type": "application/json"}),
                signal, cache: "no-store"};
  if (body !== undefined) init.body = JSON.stringify(body);
  // A read the service refuses for a moment (429: this token has too many requests in
  // progress, e.g. from several tabs) is tried again after its Retry-After, a few times.
  // Only reads: a refused submission is shown, never sent twice.
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(apiUrl(path, params), init);
    if (response.status === 429 && method === "GET" && attempt < MAX_RETRIES_429 && !signal?.aborted) {
      await sleep(retryAfterMs(response), signal);
      continue;
    }
    if (!response.ok) throw await failure(response, path);
    return raw ? response : response.json();
  }
}

/** Reads retried after a 429 before the error is shown. */
const MAX_RETRIES_429 = 5;

/** A 429's `Retry-After` (seconds) in milliseconds, 1 s when it has none, at most 30 s. */
function retryAfterMs(response) {
  const seconds = Number(response.headers.get("Retry-After"));
  return Math.min(Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000, 30000);
}

/** Every item of a paginated list (follows `next` until the last page or `max` items). */
export async function allItems(path, params, {signal, max = 100000} = {}) {
  const items = [];
  let offset = 0;
  for (;;) {
    const page = await api(path, {params: {...params, offset, limit: 1000}, signal});
    items.push(...page.items);
    offset += page.items.length;
    if (!page.next || page.items.length === 0 || items.length >= max) return items;
  }
}

/**
 * Follow a job's server-sent events until the job ends or `signal` aborts.
 * Reconnects (with ?after=<last trial>) when the server closes the stream early.
 * @param {number} jobId
 * @param {{after?: number, signal: AbortSignal, onEvent: (type: string, data: any, id: string|null) => void,
 *          onStatus?: (status: string) => void}} options
 * @returns {Promise<void>} resolves after the `end` event (or the abort)
 */
export async function followEvents(jobId, {after = -1, signal, onEvent, onStatus = () => {}}) {
  let last = after;
  let delay = 1000;
  while (!signal.aborted) {
    let ended = false;
    try {
      onStatus("connecting");
      const response = await fetch(apiUrl(`/v1/jobs/${jobId}/events`, {after: last}), {
        headers: headers({Accept: "text/event-stream"}), signal, cache: "no-store"});
      if (!response.ok) throw await failure(response, `/v1/jobs/${jobId}/events`);
      onStatus("live");
      const parser = new SseParser((event) => {
        let data = null;
        try {
          data = JSON.parse(event.data);
        } catch {
          data = event.data;
        }
        if (event.type === "trial" && event.id !== null && /^\d+$/.test(event.id)) last = Number(event.id);
        if (event.type === "end") ended = true;
        onEvent(event.type, data, event.id);
      });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        parser.push(decoder.decode(value, {stream: true}));
        delay = 1000;
      }
      parser.push(decoder.decode());
      parser.end();
      if (parser.retry !== null) delay = parser.retry;
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && err.status !== 503 && err.status !== 429) {
        onStatus("error", err);
        throw err;
      }
      onStatus("retrying", err);
      // 429: the token (or the service) has every event stream it may have open; try again
      // after a while rather than give up on following the job.
      delay = err instanceof ApiError && err.status === 429 ? Math.max(delay, 10000) : Math.min(delay * 2, 15000);
    }
    if (ended) {
      onStatus("ended");
      return;
    }
    await sleep(delay, signal);
  }
}

/** Wait `ms` milliseconds (resolves early when `signal` aborts). */
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    if (signal) signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, {once: true});
  });
}

/** Download an API resource as a file (with the Authorization header, so not a plain link). */
export async function download(path, params) {
  const response = await api(path, {params, raw: true});
  const disposition = response.headers.get("Content-Disposition") || "";
  const match = /filename="([^"]+)"/.exec(disposition);
  const name = match ? match[1] : path.split("/").pop();
  const blob = await response.blob();
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  return name;
}
