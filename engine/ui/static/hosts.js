// The runners and envoys pages: slots, ping, RTT, drain state; stopped and drained hosts
// behind a filter.
import { api, query, namespace } from "./api.js";
import { el, badge, link, table, ago, when, Pager } from "./dom.js";
import { drainButton, drainEnvoyButton } from "./actions.js";

// hostState names where a runner or envoy is.
export function hostState(h) {
  if (h.stop_ts) return "stopped";
  if (h.drain_ts) return "draining";
  return h.last_connected_ts ? "active" : "disconnected";
}

const pagers = {};

// hostList renders a list page of kind ("runners" or "envoys"): a pool filter, a
// "stopped and drained too" filter, and cursor pages.
async function hostList(view, params, kind, titles, cells) {
  const p = Object.fromEntries(params);
  const all = p.all === "1";
  const pager = (pagers[kind] = Pager.for(pagers[kind], namespace() + "|" + params));
  const form = el("form", { id: kind + "-filter", class: "filters" },
    el("label", {}, "Pool ", el("input", { name: "name", value: p.name || "", placeholder: "any pool" })),
    el("label", {}, el("input", { type: "checkbox", name: "all", value: "1", checked: all }), " stopped and drained too"),
    el("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = {};
    for (const [k, v] of new FormData(form)) if (v) q[k] = v;
    location.hash = "#/" + kind + query(q);
  });
  const page = await api("/" + kind + query({ namespace: namespace(), name: p.name, include_stopped: kind === "runners" && all, limit: 50, cursor: pager.cursor }));
  const rows = page[kind].filter((h) => all || hostState(h) === "active" || hostState(h) === "disconnected");
  const hidden = page[kind].length - rows.length;
  view.replaceChildren(
    el("h2", {}, kind === "runners" ? "Runners" : "Envoys"), form,
    table(kind, titles, rows, cells),
    pager.controls(page.pagination && page.pagination.cursor, hidden ? hidden + " stopped or drained hidden" : ""),
  );
}

export function renderRunners(view, _arg, params) {
  return hostList(view, params, "runners",
    ["Pool", "Key", "State", "Slots (free / total)", "Last ping", "RTT", "Version", "Datacenter", "Created", "ID", ""],
    (r) => [r.name, link("/runner/" + encodeURIComponent(r.runner_id), r.key, "host-link"), badge(hostState(r)), r.remaining_slots + " / " + r.total_slots, ago(r.last_ping_ts),
      r.last_rtt + " ms", r.version, r.datacenter, when(r.create_ts), el("span", { class: "id" }, r.runner_id),
      hostState(r) === "active" ? drainButton(r) : ""]);
}

export function renderEnvoys(view, _arg, params) {
  return hostList(view, params, "envoys",
    ["Pool", "Key", "State", "Slots", "Last ping", "RTT", "Version", "Datacenter", "Created", ""],
    (e) => [e.pool_name, link("/envoy/" + encodeURIComponent(e.envoy_key), e.envoy_key, "host-link"), badge(hostState(e)), e.slots, ago(e.last_ping_ts), e.last_rtt + " ms",
      e.version, e.datacenter, when(e.create_ts), hostState(e) === "active" ? drainEnvoyButton(e) : ""]);
}
