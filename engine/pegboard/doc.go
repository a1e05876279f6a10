// Package pegboard runs the runner lifecycle of the control plane: drains
// (a runner's ToServerStopping, an operator's drain, a version-upgrade
// drain) converge on one idempotent Drain, and a loop stops runners that
// went silent or drained for too long. Every fact lives in the store
// (ops/runner), so any node, or a restarted one, carries on.
package pegboard
