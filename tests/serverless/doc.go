// Package serverless tests serverless runner configs end to end: a berth process, the fake
// endpoint of tests/npm/serverless-fake.mjs and the unmodified rivetkit apps of
// tests/npm/serverless-app.mjs (2.2.1) and tests/npm23/serverless-app.mjs (2.3.19), all on
// loopback, which the engine is configured to allow (pegboard.serverless.allowed_cidrs).
package serverless
