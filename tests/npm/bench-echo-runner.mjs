// The echo runner of the side-by-side benchmarks (tests/gatewaybench, bench/compare), built on
// the unmodified npm package @rivetkit/engine-runner 2.2.1: the same script runs against berth
// and against the Rivet engine. Its actors answer every HTTP request with 200 "ok" and send
// every WebSocket message back as it came.
//
// Configuration, from the environment:
//   BERTH_ENDPOINT   engine URL (http://127.0.0.1:PORT); without it no runner starts
//   BERTH_ENDPOINTS  comma-separated engine URLs (the nodes of one engine): the runners that
//                    `connect` starts take them in turn; default BERTH_ENDPOINT
//   BERTH_NAMESPACE  namespace, default "default"
//   RUNNER_NAME      runner name (pool), default "bench"
//   RUNNER_SLOTS     total slots of that runner, default 10
//   PLAIN_PORT       when set, also serve the same handlers from a plain node server on
//                    127.0.0.1:PLAIN_PORT (HTTP, and WebSocket on any path through the ws
//                    package), the baseline without an engine
//   RUNNER_LOG       "warn": give the runner a logger that writes its warn, error and fatal
//                    lines to stderr. Unset (the default), the runner has no logger, as the
//                    package has by default: with any logger, it formats every message it
//                    receives and sends as text for its debug lines, whatever the logger's
//                    level (the arguments are built before the call): about a sixth of the
//                    runner's CPU per gateway request here, for both engines alike.
//
// Every event is one JSON object per line on stdout, with "ev" naming it:
//   connecting  {name}          a runner started by `connect` is about to open its socket
//   connected   {runnerId, name} onConnected
//   actorStart  {actorId}       onActorStart
//   plain       {}              the plain server listens
//   error       {message}
// With RUNNER_LOG=warn, the runner's own log lines (warn and above) go to stderr.
//
// Commands, one per line on stdin:
//   connect NAME COUNT SLOTS [PARALLEL]
//        start COUNT more runners in pool NAME with SLOTS slots each, PARALLEL (default 1)
//        at a time: each batch starts once the previous one has connected
//   sleep ACTOR_ID
//        the runner hosting that actor asks the engine to sleep it (ActorIntentSleep)
// The process exits when stdin ends.
import { createServer } from "node:http";
import { createInterface } from "node:readline";
import { Runner } from "@rivetkit/engine-runner";
import { WebSocketServer } from "ws";

const emit = (ev, fields = {}) => process.stdout.write(JSON.stringify({ ev, ...fields }) + "\n");

const logger = {
	child() {
		return logger;
	},
	...Object.fromEntries(
		["trace", "debug", "info", "warn", "error", "fatal"].map((level) => [
			level,
			(obj, msg) => {
				if (level !== "warn" && level !== "error" && level !== "fatal") return;
				const rec = typeof obj === "string" ? { msg: obj } : { ...obj, msg: obj?.msg ?? msg };
				process.stderr.write(`${level} ${JSON.stringify(rec, (_k, v) => (typeof v === "bigint" ? String(v) : v))}\n`);
			},
		]),
	),
};

// hosts maps each started actor's id to its runner.
const hosts = new Map();

// endpoints are the engine URLs the runners that `connect` starts take in turn.
const endpoints = (process.env.BERTH_ENDPOINTS ?? process.env.BERTH_ENDPOINT ?? "").split(",").filter(Boolean);
let nextEndpoint = 0;

const commands = createInterface({ input: process.stdin });
commands.on("close", () => process.exit(0));
commands.on("line", async (line) => {
	const [cmd, name, count, slots, parallel = "1"] = line.trim().split(/\s+/);
	if (cmd === "sleep" && hosts.has(name)) {
		hosts.get(name).sleepActor(name);
		return;
	}
	if (cmd !== "connect" || !process.env.BERTH_ENDPOINT) {
		emit("error", { message: `unknown command ${JSON.stringify(line)}` });
		return;
	}
	for (let i = 0; i < Number(count); i += Number(parallel)) {
		const batch = [];
		for (let j = i; j < Math.min(Number(count), i + Number(parallel)); j++) {
			emit("connecting", { name });
			batch.push(startRunner(name, Number(slots), endpoints[nextEndpoint++ % endpoints.length]));
		}
		await Promise.all(batch);
	}
});
process.on("unhandledRejection", (err) => emit("error", { message: `unhandled rejection: ${err?.stack ?? err}` }));

if (process.env.PLAIN_PORT) {
	const server = createServer((_req, res) => {
		res.writeHead(200, { "content-type": "text/plain" });
		res.end("ok");
	});
	new WebSocketServer({ server }).on("connection", (ws) => {
		ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary }));
	});
	server.listen(Number(process.env.PLAIN_PORT), "127.0.0.1", () => emit("plain"));
}

// startRunner starts one echo runner in pool name on endpoint and resolves once it has
// connected.
function startRunner(name, slots, endpoint) {
	return new Promise((resolve) => {
		const runner = new Runner({
			logger: process.env.RUNNER_LOG === "warn" ? logger : undefined,
			endpoint,
			namespace: process.env.BERTH_NAMESPACE ?? "default",
			runnerName: name,
			version: 1,
			totalSlots: slots,
			metadata: {},
			prepopulateActorNames: { echo: { metadata: {} } },
			noAutoShutdown: true,
			onConnected: () => {
				emit("connected", { runnerId: runner.runnerId, name });
				resolve();
			},
			onDisconnected: () => {},
			onShutdown: () => {},
			onActorStart: async (actorId) => {
				hosts.set(actorId, runner);
				emit("actorStart", { actorId });
			},
			onActorStop: async (actorId) => {
				hosts.delete(actorId);
			},
			fetch: async () => new Response("ok", { status: 200, headers: { "content-type": "text/plain" } }),
			websocket: async (_runner, _actorId, ws) => {
				ws.addEventListener("message", (ev) => ws.send(ev.data));
			},
			hibernatableWebSocket: { canHibernate: () => false },
		});
		runner.start().catch((err) => {
			emit("error", { message: `start: ${err?.stack ?? err}` });
			resolve();
		});
	});
}

if (process.env.BERTH_ENDPOINT) {
	await startRunner(process.env.RUNNER_NAME ?? "bench", Number(process.env.RUNNER_SLOTS ?? 10), process.env.BERTH_ENDPOINT);
}
