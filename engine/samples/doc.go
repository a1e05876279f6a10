// Package samples keeps a short in-memory history of this node's metrics for the
// inspector's charts: every Interval it reads the engine's Prometheus registry in process
// (actors by state, actors created and woken, gateway latency) and, through a callback, the
// slots of the hosts it can see, into a bounded ring. Nothing is stored; a restart starts
// the history again (docs/ui.md, "Charts").
package samples
