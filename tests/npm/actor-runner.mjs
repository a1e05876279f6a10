// A runner built on the unmodified npm package @rivetkit/engine-runner 2.2.1 that hosts the
// "probe" actor of the berth actor tests (tests/actors). tests/actors/gorunner is the same
// runner written with the Go SDK: both take the same environment and commands, emit the same
// events and serve the same routes, so one test body runs against either.
//
// Environment:
//   BERTH_ENDPOINT   engine URL (http://127.0.0.1:PORT), required
//   BERTH_NAMESPACE  namespace, default "default"
//   RUNNER_NAME      runner name (the pool), default "actors"
//   RUNNER_SLOTS     total slots, default 10
//
// Events, one JSON object per line on stdout, "ev" naming each:
//   key          {runnerKey}
//   connected    {runnerId}: onConnected (after each ToClientInit)
//   disconnected {code, reason}
//   shutdown     {}
//   started      {}: runner.start() resolved
//   actorStart   {actorId, generation, name, key, input (base64 or null)}: a start began
//   actorStop    {actorId, generation}: a stop began (the engine's stop, a drain, a loss)
//   stopHeld     {actorId, generation}: that stop waits for release-stops
//   done         {command}
//   error        {message}
//
// Commands, one per line on stdin:
//   hold-stops     from now on every stop waits (before the runner reports it) until...
//   release-stops  ...this: held stops finish, and stops no longer wait
//   stop           runner.shutdown(false): ToServerStopping, actors stopped, close 1000
// The process exits when stdin ends.
//
// The probe actor. Its input, if any, is JSON: {"crashBelowGen": n} makes every start of a
// generation below n fail (a crash). HTTP routes through the gateway:
//   GET  /state          {actorId, generation, runnerId}
//   POST /sleep          asks the engine to sleep the actor (ActorIntentSleep)
//   POST /destroy        asks the engine to destroy it (ActorIntentStop)
//   POST /alarm?in=MS    sets the alarm MS ms from now; {alarmTs}
//   POST /kv             one KV call, JSON (keys and values are UTF-8 strings):
//                          {op:"get", keys}                → {values: [string|null]}
//                          {op:"list", prefix?|start,end,exclusive?, reverse?, limit?}
//                                                          → {entries: [[key, value]]}
//                          {op:"put", entries: [[k, v]]}   → {}
//                          {op:"delete", keys}             → {}
//                          {op:"deleteRange", start, end}  → {}
//                          {op:"drop"}                     → {}
//                        a refused call is 422 {error}.
import { Runner } from "@rivetkit/engine-runner";
import { emit, serveCommands } from "./commands.mjs";


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

const enc = new TextEncoder();
const dec = new TextDecoder();
const bytes = (s) => enc.encode(s);
const text = (b) => dec.decode(b);

let holding = false;
let held = []; // resolvers of the stops that wait

const json = (status, body) =>
	new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

async function kv(actorId, req) {
	switch (req.op) {
		case "get": {
			const values = await runner.kvGet(actorId, req.keys.map(bytes));
			return { values: values.map((v) => (v === null ? null : text(v))) };
		}
		case "list": {
			const opts = { reverse: req.reverse ?? false, limit: req.limit ?? undefined };
			let entries;
			if (req.prefix !== undefined) entries = await runner.kvListPrefix(actorId, bytes(req.prefix), opts);
			else if (req.start !== undefined)
				entries = await runner.kvListRange(actorId, bytes(req.start), bytes(req.end), req.exclusive ?? false, opts);
			else entries = await runner.kvListAll(actorId, opts);
			return { entries: entries.map(([k, v]) => [text(k), text(v)]) };
		}
		case "put":
			await runner.kvPut(actorId, req.entries.map(([k, v]) => [bytes(k), bytes(v)]));
			return {};
		case "delete":
			await runner.kvDelete(actorId, req.keys.map(bytes));
			return {};
		case "deleteRange":
			await runner.kvDeleteRange(actorId, bytes(req.start), bytes(req.end));
			return {};
		case "drop":
			await runner.kvDrop(actorId);
			return {};
	}
	throw new Error(`unknown op ${req.op}`);
}

const runner = new Runner({
	logger,
	endpoint,
	namespace: process.env.BERTH_NAMESPACE ?? "default",
	runnerName: process.env.RUNNER_NAME ?? "actors",
	version: 1,
	totalSlots: Number(process.env.RUNNER_SLOTS ?? 10),
	metadata: {},
	prepopulateActorNames: { probe: { metadata: {} } },
	noAutoShutdown: true,
	onConnected: () => emit("connected", { runnerId: runner.runnerId }),
	onDisconnected: (code, reason) => emit("disconnected", { code, reason: String(reason) }),
	onShutdown: () => emit("shutdown"),
	onActorStart: async (actorId, generation, config) => {
		const input = config.input ? Buffer.from(config.input) : null;
		emit("actorStart", { actorId, generation, name: config.name, key: config.key ?? null, input: input ? input.toString("base64") : null });
		const opts = input ? JSON.parse(input.toString("utf8")) : {};
		if (generation < (opts.crashBelowGen ?? 0)) throw new Error(`probe: generation ${generation} crashes on start`);
	},
	onActorStop: async (actorId, generation) => {
		emit("actorStop", { actorId, generation });
		if (holding) {
			emit("stopHeld", { actorId, generation });
			await new Promise((resolve) => held.push(resolve));
		}
	},
	fetch: async (_runner, actorId, _gatewayId, _requestId, request) => {
		const generation = runner.getActor(actorId)?.generation ?? null;
		const url = new URL(request.url);
		const route = `${request.method} ${url.pathname}`;
		switch (route) {
			case "GET /state":
				return json(200, { actorId, generation, runnerId: runner.runnerId });
			case "POST /sleep":
				setTimeout(() => runner.sleepActor(actorId), 0); // after the answer is sent
				return json(200, {});
			case "POST /destroy":
				setTimeout(() => runner.destroyActor(actorId), 0);
				return json(200, {});
			case "POST /alarm": {
				const alarmTs = Date.now() + Number(url.searchParams.get("in"));
				runner.setAlarm(actorId, alarmTs);
				return json(200, { alarmTs });
			}
			case "POST /kv":
				try {
					return json(200, await kv(actorId, await request.json()));
				} catch (err) {
					return json(422, { error: String(err?.message ?? err) });
				}
		}
		return json(404, { error: `no route ${route}` });
	},
	websocket: async () => {},
	hibernatableWebSocket: { canHibernate: () => false },
});

emit("key", { runnerKey: new URL(runner.pegboardUrl).searchParams.get("runner_key") });

const commands = {
	"hold-stops": () => {
		holding = true;
	},
	"release-stops": () => {
		holding = false;
		for (const resolve of held.splice(0)) resolve();
	},
	stop: () => runner.shutdown(false),
};

serveCommands(commands);

try {
	await runner.start();
	emit("started");
} catch (err) {
	emit("error", { message: `start: ${err?.stack ?? err}` });
}
