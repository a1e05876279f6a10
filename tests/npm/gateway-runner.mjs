// An echo runner built on the unmodified npm package @rivetkit/engine-runner 2.2.1, driven by
// the berth gateway tests (tests/gateway). Its actors answer every HTTP request through the
// gateway with a JSON echo of it, and echo WebSocket messages back.
//
// Configuration, from the environment:
//   BERTH_ENDPOINT   engine URL (http://127.0.0.1:PORT), required
//   BERTH_NAMESPACE  namespace, default "default"
//   RUNNER_NAME      runner name (pool), default "echo"
//   RUNNER_SLOTS     total slots, default 10
//   RUNNER_TOKEN     the token it connects with (rivet_token.<token>), default none
//
// HTTP, on any actor:
//   /sleep   answers "sleeping", then runner.sleepActor (the actor goes to sleep)
//   /upload  reads the body as it streams in: 200 JSON {chunks (reads of the body stream),
//            bytes, sha256 (hex)}; a body that fails (the gateway's abort) emits
//            uploadAborted {actorId, bytes}
//   /download?mb=N  N MiB of the pattern byte((i·31) mod 251) (runner 2.2.1 sends a response
//            whole, in one message)
//   other    200 JSON {actorId, generation, runnerId, method, path (pathname + search, as
//            received), headers (object), body (base64)} with header x-echo: 1
// WebSocket: every message is sent back as it came (text or binary).
//
// Every event is one JSON object per line on stdout, with "ev" naming it:
//   connected   {runnerId}        onConnected
//   actorStart  {actorId, generation, name, key, input (base64 or null)}
//   actorStop   {actorId, generation}
//   wsOpen      {actorId, path}   a WebSocket reached an actor
//   error       {message}
// The runner's own log lines (info and above) go to stderr. The process exits when stdin ends.
import { Runner } from "@rivetkit/engine-runner";
import { createHash } from "node:crypto";
import { createInterface } from "node:readline";

const emit = (ev, fields = {}) => process.stdout.write(JSON.stringify({ ev, ...fields }) + "\n");

const endpoint = process.env.BERTH_ENDPOINT;
if (!endpoint) {
	emit("error", { message: "BERTH_ENDPOINT is not set" });
	process.exit(2);
}

const logger = {
	child() {
		return logger;
	},
	...Object.fromEntries(
		["trace", "debug", "info", "warn", "error", "fatal"].map((level) => [
			level,
			(obj, msg) => {
				if (level === "trace" || level === "debug") return;
				const rec = typeof obj === "string" ? { msg: obj } : { ...obj, msg: obj?.msg ?? msg };
				process.stderr.write(`${level} ${JSON.stringify(rec, (_k, v) => (typeof v === "bigint" ? String(v) : v))}\n`);
			},
		]),
	),
};

const generations = new Map();

const runner = new Runner({
	logger,
	endpoint,
	token: process.env.RUNNER_TOKEN || undefined,
	namespace: process.env.BERTH_NAMESPACE ?? "default",
	runnerName: process.env.RUNNER_NAME ?? "echo",
	version: 1,
	totalSlots: Number(process.env.RUNNER_SLOTS ?? 10),
	metadata: {},
	prepopulateActorNames: { echo: { metadata: {} } },
	noAutoShutdown: true,
	onConnected: () => emit("connected", { runnerId: runner.runnerId }),
	onDisconnected: () => {},
	onShutdown: () => {},
	onActorStart: async (actorId, generation, config) => {
		generations.set(actorId, generation);
		emit("actorStart", {
			actorId,
			generation,
			name: config.name,
			key: config.key ?? null,
			input: config.input ? Buffer.from(config.input).toString("base64") : null,
		});
	},
	onActorStop: async (actorId, generation) => emit("actorStop", { actorId, generation }),
	fetch: async (_runner, actorId, _gatewayId, _requestId, request) => {
		const url = new URL(request.url);
		if (url.pathname === "/upload") {
			const hash = createHash("sha256");
			let chunks = 0;
			let bytes = 0;
			try {
				if (request.body) {
					for await (const chunk of request.body) {
						chunks++;
						bytes += chunk.byteLength;
						hash.update(chunk);
					}
				}
			} catch (err) {
				emit("uploadAborted", { actorId, bytes, message: String(err?.message ?? err) });
				throw err;
			}
			return new Response(JSON.stringify({ chunks, bytes, sha256: hash.digest("hex") }), {
				status: 200,
				headers: { "content-type": "application/json" },
			});
		}
		if (url.pathname === "/download") {
			const n = Number(url.searchParams.get("mb") ?? "1") * 1024 * 1024;
			const b = new Uint8Array(n);
			for (let i = 0; i < n; i++) b[i] = (i * 31) % 251;
			return new Response(b, { status: 200, headers: { "content-type": "application/octet-stream" } });
		}
		if (url.pathname === "/sleep") {
			setTimeout(() => runner.sleepActor(actorId), 10);
			return new Response("sleeping");
		}
		const body = Buffer.from(await request.arrayBuffer()).toString("base64");
		// request.url is absolute; the path as the actor received it is everything after the
		// origin, which new URL() would normalise, so it is cut from the string instead.
		const path = request.url.slice(url.origin.length);
		return new Response(
			JSON.stringify({
				actorId,
				generation: generations.get(actorId) ?? null,
				runnerId: runner.runnerId,
				method: request.method,
				path,
				headers: Object.fromEntries(request.headers),
				body,
			}),
			{ status: 200, headers: { "content-type": "application/json", "x-echo": "1" } },
		);
	},
	websocket: async (_runner, actorId, ws, _gatewayId, _requestId, _request, path) => {
		emit("wsOpen", { actorId, path });
		ws.addEventListener("message", (ev) => ws.send(ev.data));
	},
	hibernatableWebSocket: { canHibernate: () => false },
});

createInterface({ input: process.stdin }).on("close", () => process.exit(0));
process.on("unhandledRejection", (err) => emit("error", { message: `unhandled rejection: ${err?.stack ?? err}` }));

try {
	await runner.start();
} catch (err) {
	emit("error", { message: `start: ${err?.stack ?? err}` });
}
