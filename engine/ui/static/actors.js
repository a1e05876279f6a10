// The actors pages: the list (search by name, key or ids; filter by state and pool; cursor
// pages) and one actor's page.
import { api, ui, query, namespace } from "./api.js";
import { el, badge, link, table, kv, when, ago, Pager } from "./dom.js";
import * as kvSection from "./kv.js";
import * as sqliteSection from "./sqlite.js";
import * as requestsSection from "./requests.js";
import { actorButtons, createButton } from "./actions.js";

const PAGE = 50; // rows a page shows (at least, when a filter skips rows)
const SCAN = 1000; // actors a filtered page reads at most before it stops looking

export const STATES = ["pending", "starting", "running", "stopping", "sleeping", "rescheduling", "destroyed"];

// derivedState reads a state from the public actor object, for actors of other datacenters
// (/ui/actor-states answers for this one's).
export function derivedState(a) {
  if (a.destroy_ts) return "destroyed";
  if (a.connectable_ts) return "running";
  if (a.sleep_ts) return "sleeping";
  if (a.reschedule_ts) return "rescheduling";
  if (a.pending_allocation_ts) return "pending";
  return "starting";
}

// withStates adds state and generation to each actor: this datacenter's from the store,
// others' derived from the timestamps.
export async function withStates(actors) {
  const states = {};
  for (let i = 0; i < actors.length; i += 200) {
    const ids = actors.slice(i, i + 200).map((a) => a.actor_id).join(",");
    Object.assign(states, await ui("actor-states?actor_ids=" + ids));
  }
  return actors.map((a) => {
    const st = states[a.actor_id];
    return { ...a, state: st ? st.state : derivedState(a), generation: st ? st.generation : null };
  });
}

// fetchPage reads one page of actors from cursor on. With a state or pool filter it reads
// API pages until PAGE actors match or SCAN were read, so a rare state does not give empty
// pages, and memory stays bounded however many actors there are.
async function fetchPage(search, filter, cursor) {
  const filtered = filter.state || filter.pool;
  const out = [];
  let scanned = 0;
  for (;;) {
    const limit = filtered ? 100 : PAGE;
    const page = await api("/actors" + query({ ...search, namespace: namespace(), limit, cursor }));
    const rows = await withStates(page.actors);
    scanned += rows.length;
    out.push(...rows.filter((a) => (!filter.state || a.state === filter.state) && (!filter.pool || a.runner_name_selector === filter.pool)));
    cursor = page.actors.length < limit ? null : page.pagination.cursor; // a short page is the last
    if (!filtered || !cursor || out.length >= PAGE || scanned >= SCAN) return { rows: out, next: cursor, scanned };
  }
}

let pager = null;

// renderList shows #/actors?name=&key=&actor_id=&state=&pool=&include_destroyed=1.
export async function renderList(view, _arg, params) {
  const ns = namespace();
  const names = Object.keys((await api("/actors/names" + query({ namespace: ns, limit: 100 }))).names || {}).sort();
  const p = Object.fromEntries(params);
  const ids = (p.actor_id || "").split(/[\s,]+/).filter(Boolean);
  const name = p.name || (ids.length ? "" : names[0] || "");
  const search = ids.length ? { actor_id: ids } : { name, key: p.key, include_destroyed: p.include_destroyed === "1" };
  const filter = { state: p.state || "", pool: p.pool || "" };

  const form = el("form", { id: "actor-search", class: "filters" },
    el("label", {}, "Name ", el("input", { name: "name", value: name, list: "actor-names", placeholder: "actor name" })),
    el("datalist", { id: "actor-names" }, names.map((n) => el("option", { value: n }))),
    el("label", {}, "Key ", el("input", { name: "key", value: p.key || "", placeholder: "exact key" })),
    el("label", {}, "IDs ", el("input", { name: "actor_id", value: ids.join(","), placeholder: "up to 32, comma-separated", size: 30 })),
    el("label", {}, "State ", el("select", { name: "state" }, el("option", { value: "" }, "any"), STATES.map((s) => el("option", { value: s, selected: s === filter.state }, s)))),
    el("label", {}, "Pool ", el("input", { name: "pool", value: filter.pool, placeholder: "runner pool", size: 12 })),
    el("label", {}, el("input", { type: "checkbox", name: "include_destroyed", value: "1", checked: p.include_destroyed === "1" }), " destroyed too"),
    el("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = {};
    for (const [k, v] of new FormData(form)) if (v) q[k] = v;
    location.hash = "#/actors" + query(q);
  });

  pager = Pager.for(pager, ns + "|" + params);
  const out = el("div", { id: "actors-page" });
  view.replaceChildren(el("h2", {}, "Actors ", createButton({ name })), form, out);
  if (!name && !ids.length) {
    out.append(el("p", { class: "muted empty" }, "No actors in namespace " + ns + " yet."));
    return;
  }
  const page = await fetchPage(search, filter, pager.cursor);
  const summary = filter.state || filter.pool ? page.rows.length + " matching of " + page.scanned + " read" : page.rows.length + " shown";
  out.append(
    table("actors", ["Name", "Key", "State", "Gen", "Pool", "Created", "Datacenter", "ID"], page.rows, (a) => [
      a.name, a.key, badge(a.state), a.generation, a.runner_name_selector, when(a.create_ts), a.datacenter,
      link("/actor/" + a.actor_id, a.actor_id, "id"),
    ]),
    pager.controls(page.next, summary),
  );
}

// renderActor shows #/actor/<id>: its fields, its host and alarm, its lifecycle timeline,
// its hibernating WebSockets, its KV entries and its SQLite tables (those of an actor of
// this datacenter).
export async function renderActor(view, aid, params) {
  const page = await api("/actors" + query({ namespace: namespace(), actor_id: aid }));
  if (!page.actors.length) {
    view.replaceChildren(el("h2", {}, "Actor " + aid), el("p", { class: "error" }, "No such actor in namespace " + namespace() + "."));
    return;
  }
  const [a] = await withStates(page.actors);
  let d = null;
  try {
    d = await ui("actor-detail?actor_id=" + encodeURIComponent(aid));
  } catch (err) {
    if (err.status !== 404) throw err; // 404: an actor of another datacenter
  }
  const host = !d ? null : d.runner_id ? link("/runners?all=1", "runner " + d.runner_id, "id") : d.envoy_key ? "envoy " + d.envoy_key : "not placed";
  const sections = [
    el("h2", {}, "Actor ", el("span", { class: "id" }, a.actor_id), " ", badge(a.state)),
    a.state === "destroyed" ? null : actorButtons(a),
    kv("actor-fields", [
      ["Name", a.name], ["Key", a.key], ["State", badge(a.state)], ["Generation", a.generation], ["Host", host],
      ["Pool", link("/runners?name=" + encodeURIComponent(a.runner_name_selector), a.runner_name_selector)],
      ["Crash policy", a.crash_policy], ["Datacenter", a.datacenter], ["Created", when(a.create_ts)],
      ["Started", when(a.start_ts)], ["Connectable", when(a.connectable_ts)], ["Pending since", when(a.pending_allocation_ts)],
      ["Sleeping since", when(a.sleep_ts)], ["Rescheduled at", when(a.reschedule_ts)], ["Destroyed", when(a.destroy_ts)],
      ["Alarm", d && d.alarm_ts ? when(d.alarm_ts) : "none"], ["Crashes (backoff)", d ? d.retry_count : null],
      ["Error", a.error ? el("code", { class: "error" }, JSON.stringify(a.error)) : null],
    ]),
  ];
  if (!d) {
    sections.push(el("p", { class: "muted" }, "This actor lives in datacenter " + a.datacenter + ": open its inspector there for its KV and WebSockets."));
  } else {
    sections.push(
      el("h3", {}, "Lifecycle (latest first)"),
      table("timeline", ["When", "Event", "Generation", "Host", "Detail"], [...d.history].reverse(), (ev) => [
        when(ev.ts), badge(ev.kind), ev.generation, ev.runner_id ? "runner " + ev.runner_id : ev.envoy_key ? "envoy " + ev.envoy_key : null,
        ev.error ? el("code", { class: "error" }, JSON.stringify(ev.error)) : ev.stop_reason ? "stop: " + ev.stop_reason : null]),
      el("h3", {}, "Hibernating WebSockets"),
      table("hibernating", ["Gateway", "Request", "Last keepalive"], d.hibernating, (h) => [
        el("span", { class: "id" }, h.gateway_id), el("span", { class: "id" }, h.request_id), ago(h.keepalive_ts)]),
      requestsSection.section(aid),
      await kvSection.section(aid, params),
      a.state === "destroyed" ? el("p", { class: "muted" }, "A destroyed actor has no SQLite database.") : await sqliteSection.section(aid, params),
    );
  }
  view.replaceChildren(...sections.filter(Boolean));
}
