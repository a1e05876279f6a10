// What tests/npm/serverless-app.mjs (rivetkit 2.2.1) and tests/npm23/serverless-app.mjs
// (rivetkit 2.3.19) share: the event log on stdout, the app's settings from the
// environment, the counter actor and the node HTTP server around rivetkit's serverless
// handler. It imports node's own modules only, so each app passes in its rivetkit's
// `actor`; the apps' headers document the settings and events.
import http from "node:http";
import { Readable } from "node:stream";

const t0 = performance.now();

// emit writes event ev as one JSON line on stdout ("t": milliseconds since the start).
export const emit = (ev, fields = {}) =>
	process.stdout.write(JSON.stringify({ ev, t: Math.round((performance.now() - t0) * 10) / 10, ...fields }) + "\n");

// settings reads APP_HOST, APP_PORT, APP_BASE_PATH, RIVET_NAMESPACE and RIVET_TOKEN; it
// exits with status 2 when RIVET_ENDPOINT, which both rivetkit versions need, is not set.
export function settings() {
	if (!process.env.RIVET_ENDPOINT) {
		emit("error", { message: "RIVET_ENDPOINT is not set" });
		process.exit(2);
	}
	process.on("unhandledRejection", (err) => emit("error", { message: `unhandled rejection: ${err?.stack ?? err}` }));
	return {
		host: process.env.APP_HOST ?? "127.0.0.1",
		port: Number(process.env.APP_PORT ?? 0),
		basePath: process.env.APP_BASE_PATH ?? "/api/rivet",
		endpoint: process.env.RIVET_ENDPOINT,
		namespace: process.env.RIVET_NAMESPACE ?? "default",
		token: process.env.RIVET_TOKEN,
	};
}

// counter is the apps' actor, built with their rivetkit's actor(): state {count};
// increment(x) adds x and returns the count; get(); goToSleep() asks to sleep.
export const counter = (actor) =>
	actor({
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

// serve answers every request with registry.handler from a node HTTP server on host:port,
// logging request, response, closed and error events; "listening" gives the pool's url.
export function serve(registry, { host, port, basePath }) {
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
}
