// berth inspector: a hash-routed page (#/actors, #/actor/<id>, #/runners, …). Each page
// module exports render(view, params) and reads the engine through api.js.
import { api, namespace } from "./api.js";
import * as actors from "./actors.js";
import * as hosts from "./hosts.js";
import * as host from "./host.js";
import * as cluster from "./cluster.js";
import { renderCharts } from "./charts.js";
import { stop as stopLiveRequests } from "./requests.js";

const routes = {
  actors: actors.renderList,
  actor: actors.renderActor,
  runners: hosts.renderRunners,
  envoys: hosts.renderEnvoys,
  runner: host.renderRunner,
  envoy: host.renderEnvoy,
  "runner-configs": cluster.renderRunnerConfigs,
  namespaces: cluster.renderNamespaces,
  datacenters: cluster.renderDatacenters,
  charts: renderCharts,
};

// route parses location.hash: "#/actor/<id>?a=b" is {page: "actor", arg: "<id>", params}.
function route() {
  const [path, q] = location.hash.replace(/^#\/?/, "").split("?");
  const [page, ...rest] = path.split("/");
  return { page: routes[page] ? page : "actors", arg: decodeURIComponent(rest.join("/")), params: new URLSearchParams(q || "") };
}

const status = (msg, cls) => {
  const s = document.querySelector("#status");
  s.textContent = msg;
  s.className = cls;
};

let renders = 0; // the number of the latest show: an older one that finishes later is dropped

// show renders the current route into #view; a failure shows its message. The page is built
// off-screen and shown whole, so a slower earlier render never overwrites a newer one.
export async function show() {
  const mine = ++renders;
  const hash = location.hash;
  const r = route();
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.page === r.page || a.dataset.page === r.page + "s");
  const view = document.querySelector("#view");
  stopLiveRequests(); // the actor page starts it again
  const page = document.createElement("div");
  try {
    await routes[r.page](page, r.arg, r.params);
    if (mine !== renders) return;
    view.dataset.page = r.page;
    view.dataset.hash = hash; // what was shown: a test waits for it after changing the hash
    view.replaceChildren(...page.childNodes);
    status("updated " + new Date().toLocaleTimeString(), "muted");
  } catch (err) {
    if (mine !== renders) return;
    view.dataset.hash = hash;
    status(String(err.message || err), "error");
  }
}

// loadNamespaces fills the header's selector (the first 100 namespaces; a namespace past
// them can be named in the URL).
async function loadNamespaces() {
  const page = await api("/namespaces?limit=100");
  const names = page.namespaces.map((n) => n.name);
  let ns = namespace();
  if (!names.includes(ns)) ns = names.includes("default") ? "default" : names[0] || "";
  localStorage.setItem("berth.namespace", ns);
  document.querySelector("#namespace").replaceChildren(...names.map((n) => new Option(n, n, false, n === ns)));
}

document.querySelector("#namespace").addEventListener("change", (e) => {
  localStorage.setItem("berth.namespace", e.target.value);
  show();
});
window.addEventListener("hashchange", show);
loadNamespaces().then(show, (err) => status(String(err.message || err), "error"));
