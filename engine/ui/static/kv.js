// The actor page's KV section: entries in key order, a page at a time, searched by prefix
// (typed as text or hex), keys and values shown as UTF-8 text or hex.
import { ui, query } from "./api.js";
import { el, table, when, Pager } from "./dom.js";

const fromB64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const toB64 = (bytes) => btoa(String.fromCharCode(...bytes));
const hex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(" ");

// utf8 is bytes as text, or null when they are not valid UTF-8 or hold control characters
// other than tab and newlines (then shown as hex).
function utf8(bytes) {
  try {
    const t = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(t) ? null : t;
  } catch {
    return null;
  }
}

// show renders bytes in the chosen view: "hex", or "text" falling back to hex for binary.
function show(bytes, view) {
  const t = view === "text" ? utf8(bytes) : null;
  return t === null ? el("code", { class: "hex" }, hex(bytes)) : el("code", { class: "utf8" }, t);
}

// parsePrefix reads the search box: text as UTF-8, or hex digits (spaces allowed) in hex mode.
function parsePrefix(s, mode) {
  if (mode !== "hex") return new TextEncoder().encode(s);
  const digits = s.replace(/\s+/g, "");
  if (!/^([0-9a-fA-F]{2})*$/.test(digits)) throw new Error("the prefix is not hex bytes");
  return Uint8Array.from(digits.match(/../g) || [], (h) => parseInt(h, 16));
}

let pager = null;

// section renders the KV entries of actor aid with the route's params (kv_prefix, kv_mode,
// kv_view).
export async function section(aid, params) {
  const mode = params.get("kv_mode") || "text";
  const view = params.get("kv_view") || "text";
  const prefixText = params.get("kv_prefix") || "";
  const prefix = parsePrefix(prefixText, mode);
  pager = Pager.for(pager, aid + "|" + mode + "|" + prefixText);
  const page = await ui("actor-kv" + query({ actor_id: aid, prefix: prefix.length ? toB64(prefix) : "", cursor: pager.cursor, limit: 50 }));

  const form = el("form", { id: "kv-search", class: "filters" },
    el("label", {}, "Prefix ", el("input", { name: "kv_prefix", value: prefixText, placeholder: mode === "hex" ? "hex, e.g. 00 ff" : "text" })),
    el("select", { name: "kv_mode" }, ["text", "hex"].map((m) => el("option", { value: m, selected: m === mode }, "prefix as " + m))),
    el("select", { name: "kv_view" }, ["text", "hex"].map((v) => el("option", { value: v, selected: v === view }, v === "text" ? "show UTF-8 (hex if binary)" : "show hex"))),
    el("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const p = new URLSearchParams(location.hash.split("?")[1] || "");
    for (const [k, v] of new FormData(form)) p.set(k, v);
    location.hash = location.hash.split("?")[0] + "?" + p;
  });
  form.querySelector("select[name=kv_view]").addEventListener("change", () => form.requestSubmit());
  return el("section", { id: "kv" },
    el("h3", {}, "KV entries"), form,
    table("kv-entries", ["Key", "Value", "Size", "Updated"], page.entries, (e) => [
      show(fromB64(e.key), view), show(fromB64(e.value), view),
      e.value_size + " B" + (e.truncated ? " (first " + fromB64(e.value).length + " shown)" : ""), when(e.update_ts),
    ]),
    pager.controls(page.cursor),
  );
}

