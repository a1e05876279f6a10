// The namespace-wide pages: runner configs (with their pool errors), namespaces and
// datacenters.
import { api, query, namespace } from "./api.js";
import { el, table, when, Pager } from "./dom.js";

export async function renderRunnerConfigs(view) {
  const page = await api("/runner-configs" + query({ namespace: namespace(), limit: 100 }));
  const rows = [];
  for (const [name, cfg] of Object.entries(page.runner_configs || {}).sort()) {
    for (const [dc, c] of Object.entries(cfg.datacenters || {})) rows.push({ name, dc, c });
  }
  view.replaceChildren(
    el("h2", {}, "Runner configs"),
    table("runner-configs", ["Pool", "Datacenter", "Kind", "Settings", "Pool error"], rows, ({ name, dc, c }) => {
      const kind = c.serverless ? "serverless" : "normal";
      const settings = c.serverless
        ? c.serverless.url + " · " + c.serverless.slots_per_runner + " slots/runner · runners " + c.serverless.min_runners + "–" + c.serverless.max_runners
        : "drain on upgrade: " + (c.normal && c.normal.drain_on_version_upgrade ? "yes" : "no");
      const err = c.runner_pool_error ? el("code", { class: "error pool-error" }, JSON.stringify(c.runner_pool_error)) : "none";
      return [name, dc, kind, settings, err];
    }),
  );
}

let nsPager = null;

export async function renderNamespaces(view) {
  nsPager = Pager.for(nsPager, "namespaces");
  const page = await api("/namespaces" + query({ limit: 50, cursor: nsPager.cursor }));
  view.replaceChildren(
    el("h2", {}, "Namespaces"),
    table("namespaces", ["Name", "Display name", "ID", "Created"], page.namespaces, (n) => [
      n.name, n.display_name, el("span", { class: "id" }, n.namespace_id), when(n.create_ts)]),
    nsPager.controls(page.pagination && page.pagination.cursor),
  );
}

export async function renderDatacenters(view) {
  const page = await api("/datacenters");
  view.replaceChildren(
    el("h2", {}, "Datacenters"),
    table("datacenters", ["Label", "Name", "Public URL"], page.datacenters, (d) => [d.label, d.name, d.url]),
  );
}
