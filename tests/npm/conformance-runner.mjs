// A runner built on the unmodified npm package @rivetkit/engine-runner 2.2.1, driven by the
// berth conformance tests (tests/runner).
//
// Configuration, from the environment:
//   BERTH_ENDPOINT   engine URL (http://127.0.0.1:PORT), required
//   BERTH_NAMESPACE  namespace, default "default"
//   RUNNER_NAME      runner name (pool), default "conformance"
//   RUNNER_VERSION   app version, default 1
//   RUNNER_SLOTS     total slots, default 10
//   RUNNER_METADATA  runner metadata as JSON, default {}
//   RUNNER_TOKEN     token, sent as the subprotocol rivet_token.<token>; default none
//
// Every event is one JSON object per line on stdout, with "ev" naming it:
//   key           {runnerKey}: the runner_key this Runner connects with (random per instance)
//   init          {runnerId, runnerLostThreshold, actorStopThreshold, serverlessDrainGracePeriod}:
//                 the ToClientInit the runner received, as the runner logged it
//   ping          {ts}: a ToClientPing arrived (the runner answers it with a pong itself)
//   connected     {runnerId}: onConnected
//   disconnected  {code, reason}: onDisconnected
//   shutdown      {}: onShutdown
//   started       {}: runner.start() resolved
//   done          {command}: a command below finished
//   error         {message}: an unexpected exception
// The runner's own log lines go to stderr.
//
// Commands, one per line on stdin:
//   stop          runner.shutdown(false): ToServerStopping, wait for actors, close 1000
//   stop-now      runner.shutdown(true): close 1000 at once
//   send-stopping send ToServerStopping and nothing else, so that the engine ends the socket
// The process exits when stdin ends.
import { Runner } from "@rivetkit/engine-runner";
import { emit, serveCommands } from "./commands.mjs";

const num = (v) => (v === undefined || v === null ? null : Number(v));

const endpoint = process.env.BERTH_ENDPOINT;
if (!endpoint) {
	emit("error", { message: "BERTH_ENDPOINT is not set" });
	process.exit(2);
}

// A pino-shaped logger: it copies the runner's log to stderr and turns the two log records the
// tests need (the received init, each received ping) into events.
const logger = {
	child() {
		return logger;
	},
	...Object.fromEntries(
		["trace", "debug", "info", "warn", "error", "fatal"].map((level) => [
			level,
			(obj, msg) => {
				const rec = typeof obj === "string" ? { msg: obj } : { ...obj, msg: obj?.msg ?? msg };
				if (rec.msg === "received init" && rec.protocolMetadata) {
					const m = rec.protocolMetadata;
					emit("init", {
						runnerId: runner.runnerId,
						runnerLostThreshold: num(m.runnerLostThreshold),
						actorStopThreshold: num(m.actorStopThreshold),
						serverlessDrainGracePeriod: num(m.serverlessDrainGracePeriod),
					});
				}
				if (rec.msg === "received runner message" && typeof rec.data === "string") {
					const ping = /^ToClientPing\{ts: (-?\d+)/.exec(rec.data);
					if (ping) emit("ping", { ts: Number(ping[1]) });
				}
				if (level !== "trace" && level !== "debug") {
					process.stderr.write(`${level} ${JSON.stringify(rec, (_k, v) => (typeof v === "bigint" ? String(v) : v))}\n`);
				}
			},
		]),
	),
};

const runner = new Runner({
	logger,
	endpoint,
	token: process.env.RUNNER_TOKEN || undefined,
	namespace: process.env.BERTH_NAMESPACE ?? "default",
	runnerName: process.env.RUNNER_NAME ?? "conformance",
	version: Number(process.env.RUNNER_VERSION ?? 1),
	totalSlots: Number(process.env.RUNNER_SLOTS ?? 10),
	metadata: JSON.parse(process.env.RUNNER_METADATA ?? "{}"),
	prepopulateActorNames: { counter: { metadata: { kind: "test" } } },
	noAutoShutdown: true,
	onConnected: () => emit("connected", { runnerId: runner.runnerId }),
	onDisconnected: (code, reason) => emit("disconnected", { code, reason: String(reason) }),
	onShutdown: () => emit("shutdown"),
	onActorStart: async () => {},
	onActorStop: async () => {},
	fetch: async () => new Response("no actors here", { status: 404 }),
	websocket: async () => {},
	hibernatableWebSocket: { canHibernate: () => false },
});

emit("key", { runnerKey: new URL(runner.pegboardUrl).searchParams.get("runner_key") });

const commands = {
	stop: () => runner.shutdown(false),
	"stop-now": () => runner.shutdown(true),
	"send-stopping": () => runner.__sendToServer({ tag: "ToServerStopping", val: null }),
};

serveCommands(commands);

try {
	await runner.start();
	emit("started");
} catch (err) {
	emit("error", { message: `start: ${err?.stack ?? err}` });
}
