// One runner's or envoy's page: its fields and drain state, its slots over time (from the
// charts' samples), and the actors placed on it.
import { api, ui, query, namespace } from "./api.js";
import { el, badge, link, table, kv, ago, when } from "./dom.js";
import { hostState } from "./hosts.js";
import { drainButton, drainEnvoyButton } from "./actions.js";
import { lineChart } from "./svg.js";

// slotsChart draws the host named sampleId in the samples: used slots, and the total for a
// runner. With the samples unreadable (a namespace token) it says why.
async function slotsChart(sampleId, withTotal) {
  let body;
  try {
    body = await ui("samples");
  } catch (err) {
    return el("p", { class: "muted", id: "slots-chart" }, "Slots over time: " + (err.message || err));
  }
  const pick = (s, k) => (s.hosts && s.hosts[sampleId] ? s.hosts[sampleId][k] : null);
  const series = [{ name: "used", points: body.samples.map((s) => [s.ts, pick(s, "used")]) }];
  if (withTotal) series.push({ name: "total", points: body.samples.map((s) => [s.ts, pick(s, "total")]) });
  return lineChart("slots-chart", "Slots over time", series, "");
}

// actorsTable lists the host's actors, each linked to its page.
async function actorsTable(q) {
  const out = await ui("host-actors" + query(q));
  return [
    table("host-actors", ["Name", "Key", "State", "Generation", "ID"], out.actors,
      (a) => [a.name, a.key, badge(a.state), a.generation, link("/actor/" + a.actor_id, a.actor_id, "id")]),
    out.more ? el("p", { class: "muted" }, "The first " + out.actors.length + " shown.") : "",
  ];
}

export async function renderRunner(view, rid) {
  const page = await api("/runners" + query({ namespace: namespace(), runner_id: rid, include_stopped: true }));
  const r = page.runners[0];
  if (!r) throw new Error("runner " + rid + " not found in namespace " + namespace());
  const state = hostState(r);
  view.replaceChildren(
    el("h2", {}, "Runner " + r.key),
    state === "active" ? el("div", { class: "actions" }, drainButton(r)) : null,
    kv("host-fields", [["Pool", r.name], ["Key", r.key], ["ID", el("span", { class: "id" }, r.runner_id)], ["State", badge(state)],
      ["Slots", r.remaining_slots + " free of " + r.total_slots], ["Last ping", ago(r.last_ping_ts)], ["RTT", r.last_rtt + " ms"],
      ["Drain", r.drain_ts ? "since " + when(r.drain_ts) : "no"], ["Stopped", when(r.stop_ts)], ["Version", r.version],
      ["Datacenter", r.datacenter], ["Created", when(r.create_ts)]]),
    await slotsChart(r.runner_id, true),
    el("h3", {}, "Actors"), ...(await actorsTable({ runner_id: r.runner_id })),
  );
}

export async function renderEnvoy(view, key) {
  const page = await api("/envoys" + query({ namespace: namespace(), envoy_key: key }));
  const e = page.envoys[0];
  if (!e) throw new Error("envoy " + key + " not found in namespace " + namespace());
  view.replaceChildren(
    el("h2", {}, "Envoy " + e.envoy_key),
    hostState(e) === "active" ? el("div", { class: "actions" }, drainEnvoyButton(e)) : null,
    kv("host-fields", [["Pool", e.pool_name], ["Key", e.envoy_key], ["State", badge(hostState(e))], ["Actors", e.slots],
      ["Last ping", ago(e.last_ping_ts)], ["RTT", e.last_rtt + " ms"], ["Drain", e.stop_ts ? "since " + when(e.stop_ts) : "no"],
      ["Version", e.version], ["Datacenter", e.datacenter], ["Created", when(e.create_ts)]]),
    await slotsChart(e.namespace_id + "/" + e.envoy_key, false),
    el("h3", {}, "Actors"), ...(await actorsTable({ namespace: namespace(), envoy_key: e.envoy_key })),
  );
}
