// The dashboard's entry point: the token box, the hash router (#/jobs, #/jobs/ID, #/history).

import {api, explain, getToken, onAuthProblem, setToken} from "./api.js";
import {fill, h} from "./dom.js";
import {meta} from "./meta.js";
import * as historyView from "./views/history.js";
import * as jobView from "./views/job.js";
import * as jobsView from "./views/jobs.js";

const view = document.getElementById("view");
const notice = document.getElementById("notice");
const loginForm = document.getElementById("login");
const tokenInput = document.getElementById("token-input");
const loginState = document.getElementById("login-state");
let current = null;

function showNotice(text, kind = "error") {
  notice.hidden = !text;
  notice.className = `notice ${kind}`;
  notice.textContent = text || "";
}

function drawLoginState() {
  const has = Boolean(getToken());
  loginState.textContent = has ? "token set for this tab" : "no token";
  loginState.dataset.token = has ? "yes" : "no";
  document.getElementById("logout").hidden = !has;
  tokenInput.placeholder = has ? "replace the token" : "paste a bearer token";
}

/** Show the view the URL fragment names; the previous view's stream and timers stop. */
function route() {
  if (current) current.abort();
  current = new AbortController();
  const ctx = {signal: current.signal};
  const hash = location.hash || "#/jobs";
  let match;
  let section = "jobs";
  fill(view);
  if ((match = /^#\/jobs\/(\d+)\/?$/.exec(hash))) {
    document.title = `Job #${match[1]} · nictune`;
    jobView.render(view, ctx, Number(match[1]));
  } else if (/^#\/history\/?$/.test(hash)) {
    section = "history";
    document.title = "History · nictune";
    historyView.render(view, ctx);
  } else if (/^#\/?(jobs\/?)?$/.test(hash)) {
    document.title = "Jobs · nictune";
    jobsView.render(view, ctx);
  } else {
    section = "";
    fill(view, h("section", {class: "card"}, h("h1", {}, "No such page"),
      h("p", {}, "Try ", h("a", {href: "#/jobs"}, "the job list"), " or ", h("a", {href: "#/history"}, "the history"), ".")));
  }
  for (const link of document.querySelectorAll("nav a[data-nav]")) {
    link.classList.toggle("active", link.dataset.nav === section);
  }
}

loginForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const typed = tokenInput.value.trim();
  if (!typed) {
    showNotice("Paste a token first (create one with: nictune token create --role read --name NAME).");
    return;
  }
  setToken(typed);
  tokenInput.value = "";
  drawLoginState();
  try {
    await api("/v1/jobs", {params: {limit: 1}});
    showNotice("Token accepted.", "ok");
    setTimeout(() => { if (notice.classList.contains("ok")) showNotice(""); }, 2500);
  } catch (err) {
    showNotice(explain(err));
  }
  route();
});

document.getElementById("logout").addEventListener("click", () => {
  setToken("");
  drawLoginState();
  showNotice("Token forgotten.", "ok");
  route();
});

onAuthProblem((err) => {
  showNotice(explain(err));
  if (err.status === 401) tokenInput.focus();
});

window.addEventListener("hashchange", () => {
  if (!notice.classList.contains("ok")) showNotice("");
  route();
});

document.getElementById("version").textContent = meta().version ? `v${meta().version}` : "";
drawLoginState();
if (!getToken()) showNotice("Enter a bearer token above to see the jobs (nictune token create --role read --name NAME).", "info");
route();
