// The actor page's live request log: the gateway's HTTP requests to the actor, pushed by
// the engine as Server-Sent Events while the page is open (nothing is polled or kept).
import { el, when, text } from "./dom.js";

const MAX_ROWS = 200; // rows kept on the page, newest first
let source = null;

// stop closes the stream of the previous actor page, if any.
export function stop() {
  if (source) source.close();
  source = null;
}

export function section(aid) {
  stop();
  const tbody = el("tbody", {}, el("tr", { class: "placeholder" }, el("td", { class: "empty", colSpan: 5 }, "waiting for requests…")));
  const state = el("span", { class: "muted live-state" }, "connecting");
  const out = el("section", { id: "requests", "data-state": "connecting" },
    el("h3", {}, "Live requests ", state),
    el("table", { id: "live-requests" },
      el("thead", {}, el("tr", {}, ["Time", "Method", "Path", "Status", "Latency"].map((t) => el("th", {}, t)))), tbody));
  const setState = (s) => {
    out.dataset.state = s;
    state.textContent = s;
  };
  source = new EventSource("/ui/actor-requests?actor_id=" + encodeURIComponent(aid));
  source.addEventListener("ready", () => setState("live"));
  source.addEventListener("error", () => setState("reconnecting"));
  source.addEventListener("dropped", (e) => setState("live (" + JSON.parse(e.data).count + " missed)"));
  source.addEventListener("request", (e) => {
    const r = JSON.parse(e.data);
    tbody.querySelector("tr.placeholder")?.remove();
    tbody.prepend(el("tr", { class: r.status >= 500 ? "error" : "" },
      el("td", {}, text(when(r.ts))), el("td", {}, r.method), el("td", { class: "mono" }, r.path),
      el("td", {}, String(r.status)), el("td", {}, r.latency_ms.toFixed(1) + " ms")));
    while (tbody.children.length > MAX_ROWS) tbody.lastChild.remove();
  });
  return out;
}
