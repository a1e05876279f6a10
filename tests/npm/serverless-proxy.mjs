// A recording HTTP proxy for learning and testing the serverless protocol: put it between
// an engine and a serverless app (register the pool's url on the proxy), or between a host
// and the engine (make the engine's public URL the proxy). It forwards every request to
// UPSTREAM unchanged, streaming both ways with no buffering, and logs each request, the
// response head and every piece of a streamed body as it arrives, with timestamps.
// WebSocket upgrades are forwarded as raw bytes (their request head is logged, not their
// frames). Plain node: no packages are needed, except to decode protocol bodies (below).
//
// Configuration, from the environment:
//   UPSTREAM       where to forward, http://HOST:PORT (a path prefix is kept), required
//   PROXY_HOST     where to listen, default 127.0.0.1
//   PROXY_PORT     default 0: any free port, the "listening" event says which
//   PROXY_DECODE   default 1: decode what the serverless protocol carries, with the codecs
//                  of tests/npm: the body of POST …/start (u16 LE envoy protocol version,
//                  then a ToEnvoy message, @rivetkit/engine-envoy-protocol) and the data of
//                  SSE "message" events (base64 of a ToServerlessServer with its embedded
//                  version, @rivetkit/engine-runner-protocol); 0 logs bytes only
//   PROXY_MAX_LOG  bytes of each body or chunk kept in the log (text or hex), default 4096
//
// One JSON object per line on stdout, "ev" naming it; every event has t (milliseconds since
// the proxy started, 0.1 ms resolution) and ts (epoch milliseconds). Requests are numbered
// (id) in arrival order.
//   listening  {port, upstream}
//   request    {id, method, url, headers, bytes, text|hex, decoded?}  the whole request body
//              has arrived (it was forwarded as it came)
//   response   {id, status, headers, ms}          the upstream's response head; ms since the
//                                                 request arrived
//   chunk      {id, bytes, text|hex}              a piece of the response body, as it came
//   sse        {id, event, data, decoded?}        a complete server-sent event in that body
//   end        {id, bytes, ms}                    the upstream ended the response
//   abort      {id, by, bytes, ms}                the connection closed before the response
//                                                 ended: by "client" (the caller went away)
//                                                 or "upstream"
//   upstream_error {id, message, ms}              the upstream refused or failed; the caller
//                                                 gets 502 {"proxy_error": message}
//   upgrade    {id, url, headers}                 a WebSocket upgrade, then piped raw
//   upgraded   {id, status, ms}                   the upstream's answer to it
//   ws_close   {id, by, ms, up, down}             the piped connection closed; bytes each way
//   error      {message}
import http from "node:http";
import net from "node:net";

const t0 = performance.now();
const now = () => ({ t: Math.round((performance.now() - t0) * 10) / 10, ts: Date.now() });
const emit = (ev, fields = {}) =>
	process.stdout.write(JSON.stringify({ ev, ...now(), ...fields }, jsonReplacer) + "\n");

function jsonReplacer(_k, v) {
	if (typeof v === "bigint") return v.toString();
	if (v instanceof ArrayBuffer) return { hex: Buffer.from(v).toString("hex") };
	if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return { hex: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex") };
	if (v instanceof Map) return Object.fromEntries(v);
	return v;
}

if (!process.env.UPSTREAM) {
	emit("error", { message: "UPSTREAM is not set" });
	process.exit(2);
}
const upstream = new URL(process.env.UPSTREAM);
const upstreamPrefix = upstream.pathname.replace(/\/+$/, "");
const maxLog = Number(process.env.PROXY_MAX_LOG ?? 4096);
const decode = process.env.PROXY_DECODE !== "0";

// The codecs are optional: without tests/npm's node_modules the proxy logs bytes only.
let envoyProto = null;
let runnerProto = null;
if (decode) {
	envoyProto = await import("@rivetkit/engine-envoy-protocol").catch(() => null);
	runnerProto = await import("@rivetkit/engine-runner-protocol").catch(() => null);
}

// body renders bytes for the log: text if they are printable UTF-8, hex otherwise.
function body(buf) {
	const part = buf.subarray(0, maxLog);
	const text = part.toString("utf8");
	const printable = !/[\u0000-\u0008\u000e-\u001f\ufffd]/.test(text);
	const out = printable ? { text } : { hex: part.toString("hex") };
	if (buf.length > maxLog) out.truncated = true;
	return out;
}

// decodeStart decodes a serverless start body: u16 LE protocol version, then ToEnvoy.
function decodeStart(buf) {
	if (!envoyProto || buf.length < 2) return undefined;
	const version = buf.readUInt16LE(0);
	if (version !== envoyProto.VERSION) return { version, note: `codec speaks v${envoyProto.VERSION} only` };
	try {
		const rest = buf.subarray(2);
		return { version, message: envoyProto.decodeToEnvoy(new Uint8Array(rest.buffer, rest.byteOffset, rest.length)) };
	} catch (err) {
		return { version, error: String(err) };
	}
}

// decodeSseMessage decodes the data of an SSE "message" event of the runner protocol: base64
// of a ToServerlessServer with its u16 LE version in front.
function decodeSseMessage(data) {
	if (!runnerProto) return undefined;
	try {
		const buf = Buffer.from(data, "base64");
		const version = buf.readUInt16LE(0);
		const rest = buf.subarray(2);
		return { version, message: runnerProto.decodeToServerlessServer(new Uint8Array(rest.buffer, rest.byteOffset, rest.length)) };
	} catch (err) {
		return { error: String(err) };
	}
}

// SseParser splits a text/event-stream body into events (WHATWG rules: fields per line,
// an empty line dispatches; "event" defaults to "message").
class SseParser {
	constructor(onEvent) {
		this.buf = "";
		this.onEvent = onEvent;
		this.reset();
	}
	reset() {
		this.event = "";
		this.data = [];
		this.id = undefined;
		this.seen = false;
	}
	push(text) {
		this.buf += text;
		let i;
		while ((i = this.buf.search(/\r\n|\r|\n/)) >= 0) {
			const line = this.buf.slice(0, i);
			this.buf = this.buf.slice(i + (this.buf.startsWith("\r\n", i) ? 2 : 1));
			if (line === "") {
				if (this.seen) this.onEvent({ event: this.event || "message", data: this.data.join("\n"), id: this.id });
				this.reset();
				continue;
			}
			if (line.startsWith(":")) {
				this.onEvent({ comment: line.slice(1) });
				continue;
			}
			const c = line.indexOf(":");
			const field = c < 0 ? line : line.slice(0, c);
			let value = c < 0 ? "" : line.slice(c + 1);
			if (value.startsWith(" ")) value = value.slice(1);
			this.seen = true;
			if (field === "event") this.event = value;
			else if (field === "data") this.data.push(value);
			else if (field === "id") this.id = value;
		}
	}
}

let nextId = 0;
const agent = new http.Agent({ keepAlive: true });

const server = http.createServer((req, res) => {
	const id = ++nextId;
	const start = performance.now();
	const ms = () => Math.round(performance.now() - start);
	const reqChunks = [];
	let resBytes = 0;
	let ended = false;

	const up = http.request(
		{
			host: upstream.hostname,
			port: upstream.port || 80,
			method: req.method,
			path: upstreamPrefix + req.url,
			headers: req.headers,
			agent,
		},
		(upRes) => {
			emit("response", { id, status: upRes.statusCode, headers: upRes.headers, ms: ms() });
			res.writeHead(upRes.statusCode, upRes.rawHeaders);
			res.flushHeaders();
			const sse = /text\/event-stream/.test(upRes.headers["content-type"] ?? "")
				? new SseParser((e) => {
						if (e.comment !== undefined) return emit("sse", { id, comment: e.comment });
						const out = { id, event: e.event, data: e.data };
						if (e.id !== undefined) out.lastEventId = e.id;
						if (decode && e.event === "message" && e.data) out.decoded = decodeSseMessage(e.data);
						emit("sse", out);
					})
				: null;
			upRes.on("data", (chunk) => {
				resBytes += chunk.length;
				emit("chunk", { id, bytes: chunk.length, ...body(chunk) });
				sse?.push(chunk.toString("utf8"));
				res.write(chunk);
			});
			upRes.on("end", () => {
				ended = true;
				emit("end", { id, bytes: resBytes, ms: ms() });
				res.end();
			});
			upRes.on("error", () => {});
			upRes.on("close", () => {
				if (!ended) {
					ended = true;
					emit("abort", { id, by: res.destroyed ? "client" : "upstream", bytes: resBytes, ms: ms() });
					res.destroy();
				}
			});
		},
	);
	up.on("error", (err) => {
		if (ended) return;
		if (!res.headersSent) {
			ended = true;
			emit("upstream_error", { id, message: err.message, code: err.code, ms: ms() });
			res.writeHead(502, { "content-type": "application/json" }).end(JSON.stringify({ proxy_error: err.message }));
		}
	});
	res.on("close", () => {
		if (!ended) {
			ended = true;
			emit("abort", { id, by: "client", bytes: resBytes, ms: ms() });
			up.destroy();
		}
	});
	req.on("data", (chunk) => {
		reqChunks.push(chunk);
		up.write(chunk);
	});
	req.on("end", () => {
		const buf = Buffer.concat(reqChunks);
		const out = { id, method: req.method, url: req.url, headers: req.headers, bytes: buf.length, ...body(buf) };
		if (decode && req.method === "POST" && /\/start(\?|$)/.test(req.url) && buf.length) out.decoded = decodeStart(buf);
		emit("request", out);
		up.end();
	});
});

server.on("connection", (s) => s.setNoDelay(true));

server.on("upgrade", (req, socket, head) => {
	const id = ++nextId;
	const start = performance.now();
	const ms = () => Math.round(performance.now() - start);
	emit("upgrade", { id, url: req.url, headers: req.headers });
	const up = net.connect(Number(upstream.port || 80), upstream.hostname);
	up.setNoDelay(true);
	socket.setNoDelay(true);
	let upBytes = 0;
	let downBytes = 0;
	let answered = false;
	let closed = false;
	const close = (by) => {
		if (closed) return;
		closed = true;
		emit("ws_close", { id, by, ms: ms(), up: upBytes, down: downBytes });
		socket.destroy();
		up.destroy();
	};
	up.on("connect", () => {
		const lines = [`${req.method} ${upstreamPrefix + req.url} HTTP/${req.httpVersion}`];
		for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
		up.write(lines.join("\r\n") + "\r\n\r\n");
		if (head?.length) up.write(head);
	});
	up.on("data", (d) => {
		if (!answered) {
			answered = true;
			const status = Number(/^HTTP\/\S+ (\d+)/.exec(d.toString("latin1"))?.[1]);
			emit("upgraded", { id, status, ms: ms() });
		}
		downBytes += d.length;
		socket.write(d);
	});
	socket.on("data", (d) => {
		upBytes += d.length;
		up.write(d);
	});
	up.on("error", (err) => emit("error", { message: `upgrade ${id} upstream: ${err.message}` }));
	socket.on("error", () => {});
	up.on("close", () => close("upstream"));
	socket.on("close", () => close("client"));
});

server.listen(Number(process.env.PROXY_PORT ?? 0), process.env.PROXY_HOST ?? "127.0.0.1", () => {
	emit("listening", { port: server.address().port, upstream: upstream.href });
});
