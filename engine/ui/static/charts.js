// The charts page: this node's metrics over the last hour, from /ui/samples (the engine
// samples its own metrics every few seconds; nothing external).
import { ui } from "./api.js";
import { el } from "./dom.js";
import { lineChart } from "./svg.js";

// series turns samples into one series per name that pick(sample) returns a value for.
function series(samples, names, pick) {
  return names.map((name) => ({ name, points: samples.map((s) => [s.ts, pick(s, name)]) }));
}

export async function renderCharts(view) {
  const body = await ui("samples");
  const s = body.samples;
  const states = [...new Set(s.flatMap((x) => Object.keys(x.actors)))].sort();
  const lat = (x, p) => (x.gateway_latency_ms ? x.gateway_latency_ms[p] : null);
  view.replaceChildren(
    el("h2", {}, "Charts"),
    el("p", { class: "muted" }, "Node " + body.node + ": a sample every " + body.interval_ms / 1000 + " s, the last " + s.length + " kept in memory (restarting the engine clears them)."),
    el("div", { class: "charts" },
      lineChart("chart-actors", "Actors by state", series(s, states, (x, n) => x.actors[n] ?? 0), ""),
      lineChart("chart-rates", "Creates and wakes per second", series(s, ["creates", "wakes"], (x, n) => (n === "creates" ? x.creates_per_sec : x.wakes_per_sec)), "/s"),
      lineChart("chart-latency", "Gateway latency percentiles", series(s, ["p50", "p90", "p99"], lat), "ms"),
    ),
  );
}
