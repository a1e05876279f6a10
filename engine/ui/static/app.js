// berth dashboard: reads the public API through /ui/api/ (the server sends the admin token
// the session proved; this script never sees it) and this datacenter's actor states through
// /ui/actor-states.
"use strict";

const $ = (sel) => document.querySelector(sel);
let namespace = localStorage.getItem("berth.namespace") || "";
let timer = null;

async function get(path) {
  const res = await fetch("/ui/api" + path, { credentials: "same-origin" });
  if (res.status === 401 || res.status === 403) {
    location.reload(); // the page answers with the login form
    throw new Error("not logged in");
  }
  if (!res.ok) throw new Error(path + ": " + res.status + " " + (await res.text()));
  return res.json();
}

// all follows a list's cursor, at most 10 pages.
async function all(path, field) {
  let out = [];
  let cursor = null;
  for (let i = 0; i < 10; i++) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await get(path + (cursor ? sep + "cursor=" + encodeURIComponent(cursor) : ""));
    const items = page[field];
    out = out.concat(Array.isArray(items) ? items : Object.keys(items || {}));
    cursor = page.pagination && page.pagination.cursor;
    if (!cursor) break;
  }
  return out;
}

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "—" : String(text);
  if (cls) td.className = cls;
  return td;
}

function stateCell(state) {
  const td = document.createElement("td");
  const span = document.createElement("span");
  span.className = "state state-" + state;
  span.textContent = state;
  td.appendChild(span);
  return td;
}

function fill(table, rows, cols) {
  const tbody = $(table + " tbody");
  const trs = rows.map((r) => {
    const tr = document.createElement("tr");
    for (const c of cols(r)) tr.appendChild(c);
    return tr;
  });
  if (trs.length === 0) {
    const tr = document.createElement("tr");
    const td = cell("none", "empty");
    td.colSpan = $(table + " thead tr").children.length;
    tr.appendChild(td);
    trs.push(tr);
  }
  tbody.replaceChildren(...trs);
}

function ago(ms) {
  if (!ms) return null;
  const s = Math.max(0, (Date.now() - ms) / 1000);
  return s < 60 ? s.toFixed(1) + " s ago" : Math.round(s / 60) + " min ago";
}

const when = (ms) => (ms ? new Date(ms).toLocaleString() : null);

function hostState(draining, lastConnected) {
  if (draining) return "draining";
  return lastConnected ? "active" : "disconnected";
}

// actorState derives a state from the public actor object, for actors of other datacenters.
function actorState(a) {
  if (a.destroy_ts) return "destroyed";
  if (a.connectable_ts) return "running";
  if (a.sleep_ts) return "sleeping";
  if (a.reschedule_ts) return "rescheduling";
  if (a.pending_allocation_ts) return "pending";
  return "starting";
}

async function refresh() {
  try {
    const namespaces = await all("/namespaces?limit=100", "namespaces");
    fill("#namespaces", namespaces, (n) => [cell(n.name), cell(n.display_name), cell(n.namespace_id, "id"), cell(when(n.create_ts))]);
    const sel = $("#namespace");
    if (!namespaces.some((n) => n.name === namespace)) namespace = namespaces.length ? namespaces[0].name : "";
    sel.replaceChildren(...namespaces.map((n) => new Option(n.name, n.name, false, n.name === namespace)));
    if (!namespace) return;
    const ns = "namespace=" + encodeURIComponent(namespace);

    const [runners, envoys, names] = await Promise.all([
      all("/runners?" + ns + "&limit=100", "runners"),
      all("/envoys?" + ns + "&limit=100", "envoys"),
      all("/actors/names?" + ns + "&limit=100", "names"),
    ]);
    fill("#runners", runners, (r) => [
      cell(r.name), cell(r.key), stateCell(r.stop_ts ? "stopped" : hostState(r.drain_ts, r.last_connected_ts)),
      cell(r.remaining_slots + " / " + r.total_slots), cell(ago(r.last_ping_ts)), cell(r.last_rtt + " ms"),
      cell(r.version), cell(r.datacenter), cell(r.runner_id, "id"),
    ]);
    fill("#envoys", envoys, (e) => [
      cell(e.pool_name), cell(e.envoy_key), stateCell(hostState(e.stop_ts, e.last_connected_ts)),
      cell(e.slots), cell(ago(e.last_ping_ts)), cell(e.last_rtt + " ms"), cell(e.version), cell(e.datacenter),
    ]);

    let actors = [];
    for (const name of names.sort()) {
      actors = actors.concat(await all("/actors?" + ns + "&name=" + encodeURIComponent(name) + "&limit=100", "actors"));
    }
    const states = {};
    for (let i = 0; i < actors.length; i += 200) {
      const ids = actors.slice(i, i + 200).map((a) => a.actor_id).join(",");
      const res = await fetch("/ui/actor-states?actor_ids=" + ids, { credentials: "same-origin" });
      if (res.ok) Object.assign(states, await res.json());
    }
    fill("#actors", actors, (a) => {
      const st = states[a.actor_id];
      return [
        cell(a.name), cell(a.key), stateCell(st ? st.state : actorState(a)), cell(st ? st.generation : null),
        cell(a.runner_name_selector), cell(when(a.create_ts)), cell(a.datacenter), cell(a.actor_id, "id"),
      ];
    });
    $("#status").textContent = "updated " + new Date().toLocaleTimeString();
    $("#status").className = "muted";
  } catch (err) {
    $("#status").textContent = String(err);
    $("#status").className = "error";
  }
}

function schedule() {
  clearInterval(timer);
  timer = $("#live").checked ? setInterval(refresh, 2000) : null;
}

document.addEventListener("DOMContentLoaded", () => {
  $("#namespace").addEventListener("change", (e) => {
    namespace = e.target.value;
    localStorage.setItem("berth.namespace", namespace);
    refresh();
  });
  $("#live").addEventListener("change", schedule);
  refresh();
  schedule();
});
