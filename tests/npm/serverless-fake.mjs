// A fake serverless endpoint for the failure paths of the serverless protocol: it answers
// the engine's GET {url}/metadata and {GET,POST} {url}/start the way it is told to, and
// starts no actor host. Its behaviour can be changed while it runs, so a test can make an
// endpoint fail, watch the engine report it, then make it recover. Plain node, no packages.
//
// Configuration, from the environment:
//   FAKE_HOST, FAKE_PORT  where to listen, default 127.0.0.1 and 0 (any free port; the
//                         "listening" event says which). The pool url is
//                         http://HOST:PORT/api/rivet (any path prefix works: the fake
//                         looks at the last path segment only)
//   FAKE_START            how /start answers, default "sse" (see below)
//   FAKE_METADATA         how /metadata answers, default "ok"
//   FAKE_VERSION          the rivetkit version /metadata reports, default "2.3.19"
//   FAKE_ENVOY_PROTOCOL   envoyProtocolVersion in /metadata, default 8; "none" leaves it out
//                         (the engine then treats the pool as a runner pool)
//   FAKE_ENVOY_VERSION    envoy.version in /metadata, default 1; "none" leaves envoy out
//   FAKE_RUNNER_VERSION   runner.version in /metadata, default: no runner field
//   FAKE_END_AFTER        ms before "end" ends the stream, default 500
//
// /start behaviours:
//   sse             200 text/event-stream, "event: ping" every second, never ends by itself
//   status:N[:body] answer status N with body (default "fake failure N")
//   redirect:N:URL  answer status N (a 3xx) with location URL
//   end             200 text/event-stream, one ping, then the stream ends (FAKE_END_AFTER)
//   stopping        200 text/event-stream, one ping, then "event: stopping" and the end
//   init            200 text/event-stream: a runner's init event (a message naming runner
//                   fake-runner-N), then "event: ping" every second (a runner pool's success)
//   invalid         200 text/event-stream, then an "event: message" whose data is not the
//                   base64 of a protocol message (what a runner's serverless start sends)
//   text            200 text/plain "not an event stream"
//   hang            never answers (the connection stays open)
//   reset           destroys the connection without answering
// /metadata behaviours:
//   ok              200 with rivetkit's metadata shape (actorNames, envoy, envoyProtocolVersion,
//                   runtime, version)
//   status:N[:body] answer status N with body
//   redirect:N:URL  as for /start
//   text            200 text/plain "not json"
//   schema          200 JSON with runtime "other"
//   hang, reset     as for /start
//
// Control (same port): POST /_fake/mode with a JSON body {start?, metadata?, version?,
// envoyProtocol?, envoyVersion?, runnerVersion?} changes the behaviours (answer {ok:true});
// GET /_fake/mode returns them.
//
// One JSON object per line on stdout ("ev" names it, t is ms since start, ts epoch ms):
//   listening {port, url}
//   request   {id, method, path, headers, bytes}   a /start or /metadata request
//   answered  {id, status, how}                    the behaviour it got
//   closed    {id, by, ms}                         its connection closed (by "client", the
//                                                  engine, or "fake")
//   mode      {…}                                  the behaviours changed
import http from "node:http";

const t0 = performance.now();
const emit = (ev, fields = {}) =>
	process.stdout.write(JSON.stringify({ ev, t: Math.round((performance.now() - t0) * 10) / 10, ts: Date.now(), ...fields }) + "\n");

const opt = (v) => (v === undefined || v === "none" ? null : v);
const mode = {
	start: process.env.FAKE_START ?? "sse",
	metadata: process.env.FAKE_METADATA ?? "ok",
	version: process.env.FAKE_VERSION ?? "2.3.19",
	envoyProtocol: process.env.FAKE_ENVOY_PROTOCOL === "none" ? null : Number(process.env.FAKE_ENVOY_PROTOCOL ?? 8),
	envoyVersion: process.env.FAKE_ENVOY_VERSION === "none" ? null : Number(process.env.FAKE_ENVOY_VERSION ?? 1),
	runnerVersion: opt(process.env.FAKE_RUNNER_VERSION) === null ? null : Number(process.env.FAKE_RUNNER_VERSION),
	endAfter: Number(process.env.FAKE_END_AFTER ?? 500),
};

const ping = "event: ping\ndata:\n\n";
let initCount = 0;

// redirect answers "redirect:N:URL".
function redirect(res, spec) {
	const [, n, ...rest] = spec.split(":");
	const code = Number(n);
	res.writeHead(code, { location: rest.join(":") }).end();
	return code;
}

// status answers "status:N[:body]".
function status(res, spec) {
	const [, n, ...rest] = spec.split(":");
	const code = Number(n);
	res.writeHead(code, { "content-type": "text/plain" }).end(rest.length ? rest.join(":") : `fake failure ${code}`);
	return code;
}

function sseHead(res) {
	res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
	res.flushHeaders();
}

function start(res, how) {
	if (how.startsWith("status:")) return status(res, how);
	if (how.startsWith("redirect:")) return redirect(res, how);
	switch (how) {
		case "sse": {
			sseHead(res);
			res.write(ping);
			const timer = setInterval(() => res.write(ping), 1000);
			res.on("close", () => clearInterval(timer));
			return 200;
		}
		case "end":
		case "stopping":
			sseHead(res);
			res.write(ping);
			setTimeout(() => {
				if (how === "stopping") res.write("event: stopping\ndata:\n\n");
				res.end();
			}, mode.endAfter);
			return 200;
		case "init": {
			// A runner pool's init event: base64(u16 LE version 7, ToServerlessServerInit
			// tag 0, runnerId as a length-prefixed string, runnerProtocolVersion u16 LE 7).
			const rid = Buffer.from(`fake-runner-${++initCount}`);
			const msg = Buffer.concat([Buffer.from([7, 0, 0, rid.length]), rid, Buffer.from([7, 0])]);
			sseHead(res);
			res.write(`data: ${msg.toString("base64")}\n\n`);
			res.write(ping);
			const timer = setInterval(() => res.write(ping), 1000);
			res.on("close", () => clearInterval(timer));
			return 200;
		}
		case "invalid":
			sseHead(res);
			res.write(ping);
			res.write("event: message\ndata: !!not-base64!!\n\n");
			return 200;
		case "text":
			res.writeHead(200, { "content-type": "text/plain" }).end("not an event stream");
			return 200;
		case "hang":
			return null;
		case "reset":
			res.socket.destroy();
			return null;
		default:
			res.writeHead(500).end(`unknown start behaviour ${how}`);
			return 500;
	}
}

function metadata(res, how) {
	if (how.startsWith("status:")) return status(res, how);
	if (how.startsWith("redirect:")) return redirect(res, how);
	const json = (v) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(v));
	switch (how) {
		case "ok": {
			const body = { actorNames: { counter: { metadata: {} } }, runtime: "rivetkit", version: mode.version };
			if (mode.envoyProtocol !== null) body.envoyProtocolVersion = mode.envoyProtocol;
			if (mode.envoyVersion !== null) body.envoy = { kind: { serverless: {} }, version: mode.envoyVersion };
			if (mode.runnerVersion !== null) body.runner = { kind: { serverless: {} }, version: mode.runnerVersion };
			json(body);
			return 200;
		}
		case "text":
			res.writeHead(200, { "content-type": "text/plain" }).end("not json");
			return 200;
		case "schema":
			json({ runtime: "other", version: "1.0.0" });
			return 200;
		case "hang":
			return null;
		case "reset":
			res.socket.destroy();
			return null;
		default:
			res.writeHead(500).end(`unknown metadata behaviour ${how}`);
			return 500;
	}
}

let nextId = 0;
const server = http.createServer((req, res) => {
	const path = new URL(req.url, "http://x").pathname;
	if (path === "/_fake/mode") {
		let raw = "";
		req.on("data", (d) => (raw += d));
		req.on("end", () => {
			if (req.method === "POST") {
				try {
					Object.assign(mode, JSON.parse(raw || "{}"));
				} catch (err) {
					res.writeHead(400).end(String(err));
					return;
				}
				emit("mode", mode);
				res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true }));
			} else {
				res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(mode));
			}
		});
		return;
	}
	const id = ++nextId;
	const t = performance.now();
	let bytes = 0;
	req.on("data", (d) => (bytes += d.length));
	req.on("end", () => {
		emit("request", { id, method: req.method, path: req.url, headers: req.headers, bytes });
		const last = path.replace(/\/+$/, "").split("/").pop();
		let how;
		let code;
		if (last === "start") {
			how = mode.start;
			code = start(res, how);
		} else if (last === "metadata") {
			how = mode.metadata;
			code = metadata(res, how);
		} else {
			how = "not_found";
			code = 404;
			res.writeHead(404).end("not found");
		}
		emit("answered", { id, status: code, how });
	});
	res.on("close", () => emit("closed", { id, by: res.writableFinished ? "fake" : "client", ms: Math.round(performance.now() - t) }));
});
server.on("connection", (s) => s.setNoDelay(true));
server.listen(Number(process.env.FAKE_PORT ?? 0), process.env.FAKE_HOST ?? "127.0.0.1", () => {
	const p = server.address().port;
	emit("listening", { port: p, url: `http://${process.env.FAKE_HOST ?? "127.0.0.1"}:${p}/api/rivet` });
});
