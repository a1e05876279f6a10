// The rivetkit 2.3.19 app of the side-by-side SQLite benchmark (tests/rivetkit23,
// BenchmarkRivetkit23SideBySide): one envoy of pool "default" against the engine at
// BERTH_ENDPOINT, the same app for berth and for the Rivet engine. Needs Node 22 and
// RIVET_RUN_SERVICES=0.
//
// Actors:
//   counter  state {count}; get() returns it (no write: a plain action round trip)
//   rows     its own SQLite database (rivetkit/db) with one table:
//              insert(body) inserts one row (one page commit through the engine) and returns
//                {id, commitNs, commits}: the time the VFS spent waiting on the engine for
//                the commit(s) this insert made, and how many (from the database's native
//                metrics, measured in the actor)
//              count() reads the row count (a read; pages come from the actor's page cache)
//              vfs() returns the database's native metrics
//              goToSleep()
//
// Commands on stdin, one per line: "metrics" answers with one "metrics" event whose body is
// the sum and count lines of the registry's Prometheus histogram of the envoy client's SQLite
// request durations (envoy_client_sqlite_request_total_duration_seconds, by kind).
//
// One JSON object per line on stdout for each event ("ev" names it): ready, wake, sleep,
// metrics, error. rivetkit's own log goes to stderr.
import { createInterface } from "node:readline";
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
	actions: {
		get: (c) => c.state.count,
	},
});

const vfs = (c) => c.db.nativeMetrics?.() ?? null;

const rows = actor({
	db: db({
		onMigrate: async (database) => {
			await database.execute("CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)");
		},
	}),
	onWake: (c) => emit("wake", { actor: "rows", actorId: c.actorId }),
	onSleep: (c) => emit("sleep", { actor: "rows", actorId: c.actorId }),
	actions: {
		insert: async (c, body) => {
			const before = vfs(c);
			const res = await c.db.execute("INSERT INTO rows (body) VALUES (?) RETURNING id", body);
			const after = vfs(c);
			const out = { id: res[0].id, commitNs: -1, commits: -1 };
			if (before && after) {
				out.commitNs = after.transportNs - before.transportNs;
				out.commits = after.commitCount - before.commitCount;
			}
			return out;
		},
		count: async (c) => (await c.db.execute("SELECT count(*) AS n FROM rows"))[0].n,
		vfs: (c) => vfs(c),
		goToSleep: (c) => {
			c.sleep();
			return true;
		},
	},
});

process.on("unhandledRejection", (err) => emit("error", { message: `unhandled rejection: ${err?.stack ?? err}` }));

const registry = setup({
	use: { counter, rows },
	endpoint,
	envoy: { poolName: process.env.RIVET_POOL ?? "default", envoyKey: process.env.RIVET_ENVOY_KEY },
});

// The envoy client's time from sending a SQLite request to the engine until its answer, by
// kind (commit, get_pages): the sum and count series of the histogram.
const sqliteRequestSeries = /^\w*envoy_client_sqlite_request_total_duration_seconds_(sum|count)\{/;

createInterface({ input: process.stdin }).on("line", async (line) => {
	if (line.trim() !== "metrics") return;
	try {
		const res = await registry.routes.prometheusMetrics();
		const lines = (await res.text()).split("\n").filter((l) => sqliteRequestSeries.test(l));
		emit("metrics", { status: res.status, body: lines.join("\n") });
	} catch (err) {
		emit("error", { message: `metrics: ${err?.stack ?? err}` });
	}
});

registry.startAndWait().then(
	() => emit("ready"),
	(err) => {
		emit("error", { message: `start: ${err?.stack ?? err}` });
		process.exit(1);
	},
);
