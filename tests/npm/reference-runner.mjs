// The runner of the differential tests (tests/reference), built on the unmodified npm package
// @rivetkit/engine-runner 2.2.1: the same process runs against berth and against the Rivet
// engine, so what differs between the two transcripts is the engines' doing.
//
// Environment:
//   BERTH_ENDPOINT   engine URL (http://127.0.0.1:PORT), required
//   BERTH_NAMESPACE  namespace, default "default"
//   RUNNER_NAME      runner name (the pool), default "diff"
//   RUNNER_SLOTS     total slots, default 10
//   RUNNER_TOKEN     the token it connects with (rivet_token.<token>), default none
//
// HTTP, on any actor:
//   /sleep     answers 200 {}, then asks the engine to sleep the actor
//   /destroy   answers 200 {}, then asks the engine to destroy it
//   /status/N  answers status N with header x-actor: set and body "status N"
//   other      200 JSON {actorId, generation, runnerId, method, path (as received), headers,
//              body (UTF-8)} with header x-echo: 1
// WebSocket: every message is sent back as it came.
//
// Events, one JSON object per line on stdout, "ev" naming each:
//   connected    {runnerId}: after each ToClientInit
//   disconnected {code, reason}
//   actorStart   {actorId, generation, name, key}
//   actorStop    {actorId, generation}
//   wsOpen       {actorId, path}
//   done         {command}
//   error        {message}
//
// Commands, one per line on stdin:
//   stop   runner.shutdown(false): ToServerStopping, its actors stopped, close 1000
// The process exits when stdin ends.
import { Runner } from "@rivetkit/engine-runner";
import { emit, serveCommands } from "./commands.mjs";


const endpoint = process.env.BERTH_ENDPOINT;
if (!endpoint) {
	emit("error", { message: "BERTH_ENDPOINT is not set" });
	process.exit(2);
}

const generations = new Map();
const json = (status, body, headers = {}) =>
	new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

const runner = new Runner({
	endpoint,
	token: process.env.RUNNER_TOKEN || undefined,
	namespace: process.env.BERTH_NAMESPACE ?? "default",
	runnerName: process.env.RUNNER_NAME ?? "diff",
	version: 1,
	totalSlots: Number(process.env.RUNNER_SLOTS ?? 10),
	metadata: {},
	prepopulateActorNames: { diff: { metadata: {} } },
	noAutoShutdown: true,
	onConnected: () => emit("connected", { runnerId: runner.runnerId }),
	onDisconnected: (code, reason) => emit("disconnected", { code, reason: String(reason) }),
	onShutdown: () => {},
	onActorStart: async (actorId, generation, config) => {
		generations.set(actorId, generation);
		emit("actorStart", { actorId, generation, name: config.name, key: config.key ?? null });
	},
	onActorStop: async (actorId, generation) => emit("actorStop", { actorId, generation }),
	fetch: async (_runner, actorId, _gatewayId, _requestId, request) => {
		const url = new URL(request.url);
		if (url.pathname === "/sleep") {
			setTimeout(() => runner.sleepActor(actorId), 0);
			return json(200, {});
		}
		if (url.pathname === "/destroy") {
			setTimeout(() => runner.destroyActor(actorId), 0);
			return json(200, {});
		}
		const status = url.pathname.match(/^\/status\/(\d{3})$/);
		if (status) {
			return new Response(`status ${status[1]}`, { status: Number(status[1]), headers: { "x-actor": "set" } });
		}
		const body = await request.text();
		// request.url is absolute: the path as the actor received it is what follows the
		// origin (new URL() would normalise it).
		const path = request.url.slice(url.origin.length);
		return json(
			200,
			{
				actorId,
				generation: generations.get(actorId) ?? null,
				runnerId: runner.runnerId,
				method: request.method,
				path,
				headers: Object.fromEntries(request.headers),
				body,
			},
			{ "x-echo": "1" },
		);
	},
	websocket: async (_runner, actorId, ws, _gatewayId, _requestId, _request, path) => {
		emit("wsOpen", { actorId, path });
		ws.addEventListener("message", (ev) => ws.send(ev.data));
	},
	hibernatableWebSocket: { canHibernate: () => false },
});

const commands = { stop: () => runner.shutdown(false) };

serveCommands(commands);

try {
	await runner.start();
} catch (err) {
	emit("error", { message: `start: ${err?.stack ?? err}` });
}
