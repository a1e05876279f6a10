// Package storecost measures what each user operation costs the store: BenchmarkStoreCost
// runs an engine in process on a counted store (pkg/udb/udbcount over the embedded store,
// and over PostgreSQL when BERTH_TEST_POSTGRES_URL is set) with Go SDK runners, and reports
// per operation the udb transactions, commits, reads, keys read, writes, conflict ranges
// and bytes: create, get-or-create, wake, sleep, destroy, a gateway request to a running
// actor, a list page, and a runner's and an envoy's ping. The engine's periodic loops (the
// scans for lost hosts and due timers, the node lease, the census, serverless polling) are
// told apart by their stack and left out; what an operation causes later (the runner's
// events, the actor's placement) is counted once the store is quiet again. docs/scaling.md
// holds the figures and what they project for FoundationDB.
package storecost
