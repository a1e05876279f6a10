// Package pegboard drives the control plane's lifecycles over the store: actors (Actors:
// transitions and their effects, timers, pending queues), runners (Runners: drains, lost
// runners) and envoys (Envoys: stopping, evictions, expiry). Every fact lives in the store
// (ops), so any node, or a restarted one, carries on; docs/design.md ("Lifecycle") has
// the whole picture.
package pegboard
