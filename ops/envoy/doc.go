// Package envoy holds the envoy operations: register with connection fencing, ping, drain,
// expire, get and list, keeping the active and load-balancer indexes in step.
package envoy
