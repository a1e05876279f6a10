// Small DOM helpers shared by the pages.

// el makes an element: attrs are properties (class, id, onclick, …) or, with a "data-" or
// "aria-" prefix, attributes; children are nodes or text.
export function el(tag, attrs = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") n.className = v;
    else if (k.startsWith("data-") || k.startsWith("aria-") || k === "for" || k === "list") n.setAttribute(k, v);
    else n[k] = v;
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    n.append(c instanceof Node ? c : String(c));
  }
  return n;
}

// text is v as a cell's text, "—" when it is missing.
export const text = (v) => (v === null || v === undefined || v === "" ? "—" : String(v));

// badge shows a state.
export const badge = (state) => el("span", { class: "state state-" + state }, state);

// link is an in-page link to a route.
export const link = (route, label, cls) => el("a", { href: "#" + route, class: cls }, label);

// table renders rows under the given column titles; cells(row) returns one entry per column
// (a node or text). An empty list shows "none".
export function table(id, titles, rows, cells) {
  const body = rows.map((r) => el("tr", {}, cells(r).map((c) => el("td", {}, c instanceof Node ? c : text(c)))));
  if (body.length === 0) body.push(el("tr", {}, el("td", { class: "empty", colSpan: titles.length }, "none")));
  return el("table", { id }, el("thead", {}, el("tr", {}, titles.map((t) => el("th", {}, t)))), el("tbody", {}, body));
}

// kv renders a definition list of [label, value] pairs.
export function kv(id, pairs) {
  return el("dl", { id, class: "fields" }, pairs.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { "data-field": k }, v instanceof Node ? v : text(v))]));
}

export function ago(ms) {
  if (!ms) return null;
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return s.toFixed(1) + " s ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  return Math.round(s / 3600) + " h ago";
}

export const when = (ms) => (ms ? new Date(ms).toLocaleString() : null);

// rerender shows the current route again (app.js renders on hashchange).
export const rerender = () => window.dispatchEvent(new HashChangeEvent("hashchange"));

// Pager walks a cursor-paged list: it keeps the cursors of the pages already seen, so that
// Previous goes back without the API paging backwards. key names the list (its route and
// namespace): a pager of another key starts again at the first page.
export class Pager {
  constructor(key) {
    this.key = key;
    this.cursors = [null];
    this.next = null;
  }
  // for returns pager when it pages the list key, else a new pager for key.
  static for(pager, key) {
    return pager && pager.key === key ? pager : new Pager(key);
  }
  get cursor() {
    return this.cursors[this.cursors.length - 1];
  }
  // controls is the Previous/Next bar for the page just shown, whose next cursor is next.
  controls(next, summary) {
    this.next = next || null;
    const prev = el("button", { class: "prev", disabled: this.cursors.length === 1, onclick: () => { this.cursors.pop(); rerender(); } }, "← Previous");
    const more = el("button", { class: "next", disabled: !this.next, onclick: () => { this.cursors.push(this.next); rerender(); } }, "Next →");
    return el("div", { class: "pager" }, prev, el("span", { class: "muted page-no" }, "page " + this.cursors.length + (summary ? " · " + summary : "")), more);
  }
}
