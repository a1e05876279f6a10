// Line charts drawn as inline SVG (no library): time on x, values on y, a line per series.
import { el } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
const W = 640, H = 180, L = 48, R = 8, T = 8, B = 22; // size and margins
const COLORS = ["#3b82f6", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

function svg(tag, attrs, ...children) {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  n.append(...children);
  return n;
}

const fmt = (v) => (v >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(v >= 10 ? 1 : 2));
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });

// lineChart is a figure titled title: series is [{name, points: [[ts, value|null], …]}]
// (a null value breaks the line), unit follows the values on the y axis. Each series is a
// polyline with data-series set to its name.
export function lineChart(id, title, series, unit) {
  const pts = series.flatMap((s) => s.points.filter((p) => p[1] !== null && p[1] !== undefined));
  const t0 = Math.min(...pts.map((p) => p[0])), t1 = Math.max(...pts.map((p) => p[0]));
  const top = (Math.max(0, ...pts.map((p) => p[1])) || 1) * 1.1;
  const x = (t) => L + (t1 > t0 ? ((t - t0) / (t1 - t0)) * (W - L - R) : (W - L - R) / 2);
  const y = (v) => T + (1 - v / top) * (H - T - B);
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": title });
  for (const f of [0, 0.5, 1]) {
    chart.append(svg("line", { x1: L, x2: W - R, y1: y(top * f), y2: y(top * f), class: "grid" }),
      svg("text", { x: L - 4, y: y(top * f) + 4, "text-anchor": "end", class: "axis" }, fmt(top * f) + (unit ? " " + unit : "")));
  }
  if (pts.length) {
    chart.append(svg("text", { x: L, y: H - 6, class: "axis" }, clock(t0)),
      svg("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "axis" }, clock(t1)));
  }
  const legend = el("div", { class: "legend" });
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    // Split at nulls: each run of values is a polyline.
    const runs = [[]];
    for (const [t, v] of s.points) {
      if (v === null || v === undefined) runs.push([]);
      else runs[runs.length - 1].push(x(t).toFixed(1) + "," + y(v).toFixed(1));
    }
    for (const run of runs.filter((r) => r.length)) {
      chart.append(svg(run.length === 1 ? "circle" : "polyline", run.length === 1
        ? { cx: run[0].split(",")[0], cy: run[0].split(",")[1], r: 2.5, fill: color, "data-series": s.name }
        : { points: run.join(" "), fill: "none", stroke: color, "stroke-width": 2, "data-series": s.name }));
    }
    const last = [...s.points].reverse().find((p) => p[1] !== null && p[1] !== undefined);
    legend.append(el("span", { "data-series": s.name }, el("i", { class: "swatch", style: "background:" + color }), s.name + (last ? " " + fmt(last[1]) + (unit ? " " + unit : "") : "")));
  });
  return el("figure", { id, class: "chart" }, el("figcaption", {}, title), chart, legend,
    pts.length ? null : el("p", { class: "muted empty" }, "no samples yet"));
}
