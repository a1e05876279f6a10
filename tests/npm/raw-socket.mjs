// One raw runner socket, driven line by line, for the berth conformance tests (tests/runner):
// it opens a WebSocket with the `ws` package (the client @rivetkit/engine-runner uses on Node 20)
// and encodes and decodes frames with the official codec @rivetkit/engine-runner-protocol 2.2.1.
//
// Usage: node raw-socket.mjs URL [SUBPROTOCOL...]   (subprotocols default to "rivet")
//
// Events, one JSON object per line on stdout, with "ev" naming it:
//   open     {protocol}: the socket opened; protocol is the one the server chose
//   message  {tag, runnerId?, runnerLostThreshold?, actorStopThreshold?, ts?}: a decoded frame
//   undecodable {hex}: a frame the codec rejects
//   close    {code, reason}
//   http     {status, body}: the server refused the upgrade
//   error    {message}
//   sent     {what}: a command's frame went out
//
// Commands, one JSON object per line on stdin:
//   {"init": {"name": N, "version": V, "totalSlots": S}}   send ToServerInit
//   {"stopping": true}                                     send ToServerStopping
//   {"text": "..."}                                        send a text frame
//   {"hex": "ff01"}                                        send these bytes as a binary frame
// Pings are answered with a pong as a runner does. The process exits after the socket closes,
// or when stdin ends.
import { WebSocket } from "ws";
import * as proto from "@rivetkit/engine-runner-protocol";
import { createInterface } from "node:readline";

const emit = (ev, fields = {}) => process.stdout.write(JSON.stringify({ ev, ...fields }) + "\n");

const [url, ...protocols] = process.argv.slice(2);
if (!url) {
	emit("error", { message: "usage: raw-socket.mjs URL [SUBPROTOCOL...]" });
	process.exit(2);
}
const ws = new WebSocket(url, protocols.length ? protocols : ["rivet"]);

// Commands that arrive before the socket opens wait for it.
let pending = [];
ws.on("open", () => {
	emit("open", { protocol: ws.protocol });
	const queued = pending;
	pending = null;
	queued.forEach(run);
});
ws.on("message", (data, isBinary) => {
	if (!isBinary) {
		emit("message", { tag: "text", text: data.toString() });
		return;
	}
	let msg;
	try {
		msg = proto.decodeToClient(new Uint8Array(data));
	} catch {
		emit("undecodable", { hex: Buffer.from(data).toString("hex") });
		return;
	}
	const out = { tag: msg.tag };
	if (msg.tag === "ToClientInit") {
		out.runnerId = msg.val.runnerId;
		out.runnerLostThreshold = Number(msg.val.metadata.runnerLostThreshold);
		out.actorStopThreshold = Number(msg.val.metadata.actorStopThreshold);
	}
	if (msg.tag === "ToClientPing") {
		out.ts = Number(msg.val.ts);
		ws.send(proto.encodeToServer({ tag: "ToServerPong", val: { ts: msg.val.ts } }));
	}
	emit("message", out);
});
ws.on("close", (code, reason) => {
	emit("close", { code, reason: reason.toString() });
	process.exit(0);
});
ws.on("error", (err) => emit("error", { message: err.message }));
ws.on("unexpected-response", (_req, res) => {
	let body = "";
	res.on("data", (chunk) => (body += chunk));
	res.on("end", () => {
		emit("http", { status: res.statusCode, body });
		process.exit(0);
	});
});

const send = (what, frame) => {
	ws.send(frame);
	emit("sent", { what });
};

// run sends what one command line asks for.
function run(line) {
	let cmd;
	try {
		cmd = JSON.parse(line);
	} catch (err) {
		emit("error", { message: `bad command ${JSON.stringify(line)}: ${err.message}` });
		return;
	}
	if (cmd.init) {
		const { name, version = 1, totalSlots = 1 } = cmd.init;
		send("init", proto.encodeToServer({
			tag: "ToServerInit",
			val: { name, version, totalSlots, prepopulateActorNames: null, metadata: null },
		}));
	} else if (cmd.stopping) {
		send("stopping", proto.encodeToServer({ tag: "ToServerStopping", val: null }));
	} else if (typeof cmd.text === "string") {
		send("text", cmd.text);
	} else if (typeof cmd.hex === "string") {
		send("hex", Buffer.from(cmd.hex, "hex"));
	} else {
		emit("error", { message: `unknown command ${line}` });
	}
}

createInterface({ input: process.stdin })
	.on("line", (line) => {
		if (!line.trim()) return;
		if (pending) pending.push(line);
		else run(line);
	})
	.on("close", () => process.exit(0));
