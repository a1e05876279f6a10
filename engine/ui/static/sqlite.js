// The actor page's SQLite section: the tables of its database (envoy actors), and a table's
// rows a page at a time, read-only. Admin tokens only.
import { ui, query } from "./api.js";
import { el, table, text } from "./dom.js";

// withParams is the current route with params changed.
function withParams(changes) {
  const [path, q] = location.hash.split("?");
  const p = new URLSearchParams(q || "");
  for (const [k, v] of Object.entries(changes)) v === null ? p.delete(k) : p.set(k, v);
  return path + "?" + p;
}

// show is a cell as text: a cut text or a blob says so.
function show(v) {
  if (v === null) return el("span", { class: "muted" }, "NULL");
  if (typeof v !== "object") return text(v);
  if ("base64" in v) return el("code", { class: "hex" }, "blob " + v.size + " B" + (v.cut ? " (cut)" : ""));
  return v.text + "…";
}

export async function section(aid, params) {
  const name = params.get("sql_table") || "";
  const offset = Number(params.get("sql_offset") || 0);
  const out = el("section", { id: "sqlite" }, el("h3", {}, "SQLite (read-only)"));
  let page;
  try {
    page = await ui("actor-sqlite" + query({ actor_id: aid, table: name, offset: name ? offset : "", limit: 50 }));
  } catch (err) {
    out.append(el("p", { class: err.status === 403 ? "muted" : "error" }, err.status === 403 ? "Reading SQLite needs an admin token." : String(err.message)));
    return out;
  }
  if (!page.tables.length) {
    out.append(el("p", { class: "muted empty" }, "No SQLite database (runner actors have none; an envoy actor has one once it writes)."));
    return out;
  }
  out.append(el("nav", { id: "sqlite-tables", class: "tabs" }, page.tables.map((t) =>
    el("a", { href: withParams({ sql_table: t.name, sql_offset: null }), class: t.name === name ? "active" : "", title: t.sql }, t.name))));
  if (!name) return out;
  const prev = el("a", { class: "prev", href: withParams({ sql_offset: Math.max(0, offset - 50) }) }, "← Previous");
  const next = el("a", { class: "next", href: page.next === null ? null : withParams({ sql_offset: page.next }) }, "Next →");
  out.append(
    table("sqlite-rows", page.columns, page.rows, (row) => row.map(show)),
    el("div", { class: "pager" }, offset > 0 ? prev : "", el("span", { class: "muted page-no" }, "rows " + (offset + 1) + "–" + (offset + page.rows.length)), page.next === null ? "" : next),
  );
  return out;
}
