// Package guard is the routing policy of the ingress on the guard port: Rivet's routing
// order (the /gateway path forms, the runner and envoy sockets, x-rivet-target and
// rivet_target.* targets, then the public API), and the actor gateway, which finds the actor
// (by id, by rvt-* query, or by x-rivet-actor / rivet_actor.*), wakes it, waits until it is
// ready and tunnels HTTP and WebSockets to it through its runner's socket
// (docs/gateway.md). Request bodies over Options.StreamBody (1 MiB) stream to envoys in
// chunks and streamed responses are flushed as they come (stream.go); a streamed request is
// not retried once its body was read past what the gateway kept. The generic execution
// (retries, limits, route cache) is guard/core.
package guard
