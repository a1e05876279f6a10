// Measures how long an actor of a serverless pool takes to answer its first request: the
// scale-from-zero figure. For each round it creates a new actor of the pool and calls one of
// its actions through the gateway, and reports the time to the first 200. Two ways:
//   TIMING_MODE=query  (default) one gateway request with query routing
//                      (rvt-method=getOrCreate&rvt-runner=POOL&rvt-key=…): the engine
//                      creates the actor, starts it through the pool's endpoint and
//                      answers, as the rivetkit client does
//   TIMING_MODE=create POST /actors, then the action by actor id as soon as it returns
// A request that does not answer 200 is retried (the actor is still starting) until
// TIMING_DEADLINE_MS. Plain node: works against any engine and any rivetkit app exposing
// an action that takes one number (rivetkit's counter.increment in serverless-app.mjs).
//
// Configuration, from the environment:
//   ENGINE_URL         the engine's public URL, required
//   ENGINE_TOKEN       token for POST /actors (and sent to the gateway), if any
//   NAMESPACE          default "default"
//   POOL               the serverless pool (runner name), required
//   ACTOR_NAME         default "counter"; ACTION default "increment" (called with [1])
//   ROUNDS             default 5; PAUSE_MS between rounds, default 0
//   CONCURRENCY        actors created at once per round, default 1 (each one timed)
//   KEY_PREFIX         default "timing-<epoch ms>"
//   TIMING_MODE        query | create
//   TIMING_DEADLINE_MS default 60000
//   DESTROY            1: destroy each actor once it answered (so a warm host's slot is
//                      free again for the next round; TIMING_MODE=create only)
//
// One JSON object per line on stdout: {ev:"round", round, i, key, ms, attempts, status,
// createMs?} per actor, then {ev:"summary", n, min, median, p90, max} (ms);
// {ev:"error", …} for an actor that never answered.
const engine = process.env.ENGINE_URL?.replace(/\/+$/, "");
const pool = process.env.POOL;
if (!engine || !pool) {
	process.stdout.write(JSON.stringify({ ev: "error", message: "ENGINE_URL and POOL are required" }) + "\n");
	process.exit(2);
}
const token = process.env.ENGINE_TOKEN;
const ns = process.env.NAMESPACE ?? "default";
const name = process.env.ACTOR_NAME ?? "counter";
const action = process.env.ACTION ?? "increment";
const rounds = Number(process.env.ROUNDS ?? 5);
const pause = Number(process.env.PAUSE_MS ?? 0);
const concurrency = Number(process.env.CONCURRENCY ?? 1);
const prefix = process.env.KEY_PREFIX ?? `timing-${Date.now()}`;
const mode = process.env.TIMING_MODE ?? "query";
const deadlineMs = Number(process.env.TIMING_DEADLINE_MS ?? 60000);
const destroy = process.env.DESTROY === "1";

const emit = (ev, fields) => process.stdout.write(JSON.stringify({ ev, ...fields }) + "\n");
const auth = token ? { authorization: `Bearer ${token}`, "x-rivet-token": token } : {};

async function callAction(url) {
	const res = await fetch(url, {
		method: "POST",
		headers: { "content-type": "application/json", "x-rivet-encoding": "json", ...auth },
		body: JSON.stringify({ args: [1] }),
	});
	const text = await res.text();
	return { status: res.status, text };
}

async function one(round, i) {
	const key = `${prefix}-${round}-${i}`;
	const t0 = performance.now();
	let url;
	let createMs;
	let actorId;
	if (mode === "create") {
		const res = await fetch(`${engine}/actors?namespace=${encodeURIComponent(ns)}`, {
			method: "POST",
			headers: { "content-type": "application/json", ...auth },
			body: JSON.stringify({ name, key, runner_name_selector: pool, crash_policy: "sleep" }),
		});
		const body = await res.json();
		createMs = Math.round(performance.now() - t0);
		if (!res.ok) return emit("error", { round, i, key, status: res.status, body });
		actorId = body.actor.actor_id;
		url = `${engine}/gateway/${actorId}/action/${action}`;
	} else {
		const q = new URLSearchParams({ "rvt-namespace": ns, "rvt-method": "getOrCreate", "rvt-runner": pool, "rvt-key": key, "rvt-crash-policy": "sleep" });
		url = `${engine}/gateway/${name}/action/${action}?${q}`;
	}
	let attempts = 0;
	let last;
	while (performance.now() - t0 < deadlineMs) {
		attempts++;
		try {
			last = await callAction(url);
		} catch (err) {
			last = { status: 0, text: String(err) };
		}
		if (last.status === 200) {
			const ms = Math.round((performance.now() - t0) * 10) / 10;
			emit("round", { round, i, key, ms, attempts, status: 200, createMs });
			if (destroy && actorId) {
				await fetch(`${engine}/actors/${actorId}?namespace=${encodeURIComponent(ns)}`, { method: "DELETE", headers: auth });
			}
			return ms;
		}
		await new Promise((r) => setTimeout(r, 50)); // retry interval while the actor starts
	}
	emit("error", { round, i, key, attempts, status: last?.status, body: last?.text?.slice(0, 500) });
	return null;
}

const all = [];
for (let round = 1; round <= rounds; round++) {
	const got = await Promise.all(Array.from({ length: concurrency }, (_, i) => one(round, i)));
	all.push(...got.filter((x) => x !== null));
	if (pause && round < rounds) await new Promise((r) => setTimeout(r, pause));
}
all.sort((a, b) => a - b);
const pick = (q) => all[Math.min(all.length - 1, Math.floor(q * all.length))];
emit("summary", { n: all.length, min: all[0], median: pick(0.5), p90: pick(0.9), max: all[all.length - 1] });
