// Probes an engine's serverless runner-config API with a fixed list of requests and prints
// each answer: what PUT /runner-configs/{name} accepts in a `serverless` config and how it
// rejects bad values, what GET /runner-configs lists, DELETE, refresh-metadata and
// serverless-health-check. Run it against the reference engine and against berth, and
// compare the lines (docs/serverless.md was written from the reference's). Plain node.
//
// Configuration, from the environment:
//   ENGINE_URL    the engine's public URL, required
//   ENGINE_TOKEN  its admin token, if it has one
//   NAMESPACE     default "default"
//   DATACENTER    the datacenter's name, default "default"
//   FAKE_URL      the pool url of a running serverless-fake.mjs (http://H:P/api/rivet);
//                 without it the cases that need an endpoint answering are left out. The
//                 probe changes the fake's behaviours through its /_fake/mode.
//   PROBE_ONLY    a regular expression: run only the cases whose name matches
//
// Pools are named probe-<case>; the probe deletes those it created.
//
// One JSON object per line on stdout: {case, method, path, body?, status, answer, ms}, where
// answer is the parsed JSON answer (or {text} when it is not JSON); "ev":"error" lines for
// the probe's own failures.
import net from "node:net";

const engine = process.env.ENGINE_URL;
if (!engine) {
	process.stdout.write(JSON.stringify({ ev: "error", message: "ENGINE_URL is not set" }) + "\n");
	process.exit(2);
}
const token = process.env.ENGINE_TOKEN;
const ns = process.env.NAMESPACE ?? "default";
const dc = process.env.DATACENTER ?? "default";
const fake = process.env.FAKE_URL;
const only = process.env.PROBE_ONLY ? new RegExp(process.env.PROBE_ONLY) : null;

async function call(method, path, body) {
	const headers = {};
	if (token) headers.authorization = `Bearer ${token}`;
	let payload;
	if (body !== undefined) {
		headers["content-type"] = "application/json";
		payload = typeof body === "string" ? body : JSON.stringify(body);
	}
	const t = performance.now();
	const res = await fetch(engine.replace(/\/+$/, "") + path, { method, headers, body: payload });
	const text = await res.text();
	let answer;
	try {
		answer = JSON.parse(text);
	} catch {
		answer = { text };
	}
	return { status: res.status, answer, ms: Math.round(performance.now() - t) };
}

async function record(name, method, path, body) {
	const r = await call(method, path, body);
	process.stdout.write(JSON.stringify({ case: name, method, path, body, ...r }) + "\n");
	return r;
}

const q = `namespace=${encodeURIComponent(ns)}`;
const pool = (name) => `probe-${name}`;
// put writes config to pool probe-<name>; the case is named label (default: name).
const put = (name, config, label = name) => [label, "PUT", `/runner-configs/${pool(name)}?${q}`, { datacenters: { [dc]: config } }];
const url = fake ?? "http://127.0.0.1:9/api/rivet";
const sl = (extra = {}) => ({ serverless: { url, request_lifespan: 3600, ...extra } });

// A loopback port nothing listens on, for "connection refused".
async function closedPort() {
	const s = net.createServer();
	await new Promise((r) => s.listen(0, "127.0.0.1", r));
	const { port } = s.address();
	await new Promise((r) => s.close(r));
	return port;
}
const refused = `http://127.0.0.1:${await closedPort()}/api/rivet`;

async function setFake(m) {
	if (!fake) return;
	const u = new URL(fake);
	await fetch(`${u.origin}/_fake/mode`, { method: "POST", body: JSON.stringify(m) });
}

const headers17 = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`x-h${i}`, "v"]));
const headers16 = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`x-h${i}`, "v"]));

// Each case: [name, method, path, body] or a function run in order (for sequences).
const cases = [
	// Accepted shapes, and what GET shows for them.
	put("minimal", sl()),
	["minimal-get", "GET", `/runner-configs?${q}&runner_name=${pool("minimal")}`],
	put("full", sl({
		headers: { "x-secret": "s3cr3t", authorization: "Bearer abc" },
		max_concurrent_actors: 7, drain_grace_period: 30, slots_per_runner: 2, min_runners: 1, max_runners: 3,
		runners_margin: 1, metadata_poll_interval: 6000, drain_on_version_upgrade: false,
		actor_eviction_delay: 1, actor_eviction_period: 2, actor_eviction_rate: 0.5,
	})),
	["full-get", "GET", `/runner-configs?${q}&runner_name=${pool("full")}`],
	["full-get-serverless", "GET", `/runner-configs?${q}&variant=serverless&runner_name=${pool("full")}`],
	["full-get-normal", "GET", `/runner-configs?${q}&variant=normal&runner_name=${pool("full")}`],
	put("root-metadata", { ...sl(), metadata: { a: 1 }, drain_on_version_upgrade: false }),
	["root-metadata-get", "GET", `/runner-configs?${q}&runner_name=${pool("root-metadata")}`],
	put("max-runners-only", sl({ max_runners: 5 })),
	["max-runners-only-get", "GET", `/runner-configs?${q}&runner_name=${pool("max-runners-only")}`],
	put("min-gt-max", sl({ min_runners: 5, max_runners: 1 })),
	put("zeros", sl({ max_runners: 0, max_concurrent_actors: 0, drain_grace_period: 0, metadata_poll_interval: 0, runners_margin: 0 })),
	["zeros-get", "GET", `/runner-configs?${q}&runner_name=${pool("zeros")}`],
	put("lifespan-1801", { serverless: { url, request_lifespan: 1801 } }),
	put("headers-16", sl({ headers: headers16 })),
	put("header-upper", sl({ headers: { "X-Upper": "V" } })),
	["header-upper-get", "GET", `/runner-configs?${q}&runner_name=${pool("header-upper")}`],
	put("url-trailing-slash", sl({ url: `${url}/` })),
	put("url-https", sl({ url: "https://127.0.0.1:9/api/rivet" })),
	put("url-userinfo", sl({ url: "http://u:p@127.0.0.1:9/x" })),
	put("url-query", sl({ url: "http://127.0.0.1:9/x?a=1" })),
	put("url-hostname", sl({ url: "http://example.invalid/x" })),
	put("url-private", sl({ url: "http://10.0.0.1/x" })),
	put("url-linklocal", sl({ url: "http://169.254.169.254/x" })),
	put("url-ipv6", sl({ url: "http://[::1]:9/x" })),
	put("normal", { normal: {} }),
	put("normal", sl(), "normal-to-serverless"),
	put("normal", sl(), "serverless-same-again"),
	put("normal", sl({ url: `${url}?changed=1` }), "serverless-url-changed"),

	// Rejected by deserialization (api.bad_request).
	put("empty", { serverless: {} }),
	put("no-lifespan", { serverless: { url } }),
	put("no-url", { serverless: { request_lifespan: 3600 } }),
	put("lifespan-negative", { serverless: { url, request_lifespan: -1 } }),
	put("lifespan-float", { serverless: { url, request_lifespan: 1.5 } }),
	put("lifespan-string", { serverless: { url, request_lifespan: "3600" } }),
	put("lifespan-huge", { serverless: { url, request_lifespan: 4294967296 } }),
	put("url-number", { serverless: { url: 5, request_lifespan: 3600 } }),
	put("slots-negative", sl({ slots_per_runner: -1 })),
	put("min-negative", sl({ min_runners: -1 })),
	put("max-negative", sl({ max_runners: -1 })),
	put("margin-negative", sl({ runners_margin: -1 })),
	put("mca-negative", sl({ max_concurrent_actors: -1 })),
	put("poll-negative", sl({ metadata_poll_interval: -1 })),
	put("drain-negative", sl({ drain_grace_period: -1 })),
	put("header-number", sl({ headers: { "x-a": 1 } })),
	put("headers-array", sl({ headers: ["x-a"] })),
	put("headers-null", sl({ headers: null })),
	put("unknown-field", sl({ bogus: 1 })),
	put("unknown-dc-field", { ...sl(), bogus: 1 }),
	put("both-kinds", { ...sl(), normal: {} }),
	put("no-kind", {}),
	["unknown-body-field", "PUT", `/runner-configs/${pool("ubf")}?${q}`, { datacenters: { [dc]: sl() }, bogus: 1 }],
	["not-json", "PUT", `/runner-configs/${pool("nj")}?${q}`, "{"],
	["unknown-dc", "PUT", `/runner-configs/${pool("udc")}?${q}`, { datacenters: { nowhere: sl() } }],
	["no-namespace", "PUT", `/runner-configs/${pool("nons")}`, { datacenters: { [dc]: sl() } }],
	["unknown-namespace", "PUT", `/runner-configs/${pool("uns")}?namespace=nope-ns`, { datacenters: { [dc]: sl() } }],

	// Rejected by validation (runner_config.invalid).
	put("url-empty", sl({ url: "" })),
	put("url-relative", sl({ url: "not a url" })),
	put("url-ftp", sl({ url: "ftp://127.0.0.1/x" })),
	put("url-no-host", sl({ url: "http://" })),
	put("url-bad-port", sl({ url: "http://127.0.0.1:99999/x" })),
	put("lifespan-0", { serverless: { url, request_lifespan: 0 } }),
	put("lifespan-1800", { serverless: { url, request_lifespan: 1800 } }),
	put("drain-eq-lifespan", sl({ request_lifespan: 60, drain_grace_period: 60 })),
	put("drain-over-stop-threshold", sl({ request_lifespan: 4000, drain_grace_period: 1801 })),
	put("slots-0", sl({ slots_per_runner: 0 })),
	put("headers-17", sl({ headers: headers17 })),
	put("header-name-long", sl({ headers: { ["x-" + "a".repeat(127)]: "v" } })),
	put("header-name-128", sl({ headers: { ["x-" + "a".repeat(126)]: "v" } })),
	put("header-name-space", sl({ headers: { "bad name": "v" } })),
	put("header-name-empty", sl({ headers: { "": "v" } })),
	put("header-value-long", sl({ headers: { "x-a": "v".repeat(4097) } })),
	put("header-value-4096", sl({ headers: { "x-a": "v".repeat(4096) } })),
	put("header-value-newline", sl({ headers: { "x-a": "a\nb" } })),

	// Listing.
	["list-variant-bogus", "GET", `/runner-configs?${q}&variant=bogus`],
	["list-no-namespace", "GET", `/runner-configs`],

	// Refresh metadata.
	async () => setFake({ metadata: "ok" }),
	["refresh-ok", "POST", `/runner-configs/${pool("minimal")}/refresh-metadata?${q}`, {}],
	async () => setFake({ metadata: "status:500:boom" }),
	["refresh-500", "POST", `/runner-configs/${pool("minimal")}/refresh-metadata?${q}`, {}],
	async () => setFake({ metadata: "text" }),
	["refresh-text", "POST", `/runner-configs/${pool("minimal")}/refresh-metadata?${q}`, {}],
	async () => setFake({ metadata: "ok", envoyProtocol: 99 }),
	["refresh-protocol-99", "POST", `/runner-configs/${pool("minimal")}/refresh-metadata?${q}`, {}],
	async () => setFake({ metadata: "ok", envoyProtocol: 8 }),
	["refresh-missing", "POST", `/runner-configs/${pool("missing")}/refresh-metadata?${q}`, {}],
	put("refresh-normal", { normal: {} }, "refresh-normal-put"),
	["refresh-normal", "POST", `/runner-configs/${pool("refresh-normal")}/refresh-metadata?${q}`, {}],
	["refresh-no-body", "POST", `/runner-configs/${pool("minimal")}/refresh-metadata?${q}`],
	["refresh-bogus-body", "POST", `/runner-configs/${pool("minimal")}/refresh-metadata?${q}`, { bogus: 1 }],

	// Health check.
	async () => setFake({ metadata: "ok" }),
	["health-ok", "POST", `/runner-configs/serverless-health-check?${q}`, { url, headers: { "x-a": "b" } }],
	["health-no-headers", "POST", `/runner-configs/serverless-health-check?${q}`, { url }],
	async () => setFake({ metadata: "status:500:boom" }),
	["health-500", "POST", `/runner-configs/serverless-health-check?${q}`, { url }],
	async () => setFake({ metadata: "status:404" }),
	["health-404", "POST", `/runner-configs/serverless-health-check?${q}`, { url }],
	async () => setFake({ metadata: "text" }),
	["health-text", "POST", `/runner-configs/serverless-health-check?${q}`, { url }],
	async () => setFake({ metadata: "schema" }),
	["health-schema", "POST", `/runner-configs/serverless-health-check?${q}`, { url }],
	async () => setFake({ metadata: "ok", envoyProtocol: 99 }),
	["health-protocol-99", "POST", `/runner-configs/serverless-health-check?${q}`, { url }],
	async () => setFake({ metadata: "ok", envoyProtocol: 8, version: "  " }),
	["health-blank-version", "POST", `/runner-configs/serverless-health-check?${q}`, { url }],
	async () => setFake({ metadata: "reset", version: "2.3.19" }),
	["health-reset", "POST", `/runner-configs/serverless-health-check?${q}`, { url }],
	async () => setFake({ metadata: "hang" }),
	["health-hang", "POST", `/runner-configs/serverless-health-check?${q}`, { url }],
	async () => setFake({ metadata: "ok" }),
	["health-refused", "POST", `/runner-configs/serverless-health-check?${q}`, { url: refused }],
	["health-bad-url", "POST", `/runner-configs/serverless-health-check?${q}`, { url: "not a url" }],
	["health-empty-url", "POST", `/runner-configs/serverless-health-check?${q}`, { url: "" }],
	["health-ftp-url", "POST", `/runner-configs/serverless-health-check?${q}`, { url: "ftp://127.0.0.1/x" }],
	["health-bad-header", "POST", `/runner-configs/serverless-health-check?${q}`, { url, headers: { "bad name": "v" } }],
	["health-header-number", "POST", `/runner-configs/serverless-health-check?${q}`, { url, headers: { "x-a": 1 } }],
	["health-unknown-field", "POST", `/runner-configs/serverless-health-check?${q}`, { url, bogus: 1 }],
	["health-no-url", "POST", `/runner-configs/serverless-health-check?${q}`, {}],
	["health-no-namespace", "POST", `/runner-configs/serverless-health-check`, { url }],

	// Delete.
	["delete-minimal", "DELETE", `/runner-configs/${pool("minimal")}?${q}`],
	["delete-again", "DELETE", `/runner-configs/${pool("minimal")}?${q}`],
	["delete-missing", "DELETE", `/runner-configs/${pool("never")}?${q}`],
	["after-delete-get", "GET", `/runner-configs?${q}&runner_name=${pool("minimal")}`],
	["empty-datacenters", "PUT", `/runner-configs/${pool("full")}?${q}`, { datacenters: {} }],
	["empty-datacenters-get", "GET", `/runner-configs?${q}&runner_name=${pool("full")}`],
];

const needsFake = /^(refresh-|health-)/;
const created = new Set();
for (const c of cases) {
	if (typeof c === "function") {
		await c();
		continue;
	}
	const [name, method, path, body] = c;
	if (only && !only.test(name)) continue;
	if (!fake && needsFake.test(name) && name !== "health-refused") continue;
	try {
		const r = await record(name, method, path, body);
		const m = /^\/runner-configs\/(probe-[^/?]+)\?/.exec(path);
		if (method === "PUT" && m && r.status === 200) created.add(m[1]);
	} catch (err) {
		process.stdout.write(JSON.stringify({ ev: "error", case: name, message: String(err) }) + "\n");
	}
}
for (const name of created) await call("DELETE", `/runner-configs/${name}?${q}`);
