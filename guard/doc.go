// Package guard is the actor gateway of the ingress: it routes /gateway/{actor}/... HTTP
// requests and WebSockets to the actor through its runner's socket (engine/runnerws
// tunnels), waking the actor and waiting for it to be ready first (rivet-engine.md §5).
package guard
