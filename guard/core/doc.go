// Package core is the generic execution of the ingress proxy: the retry policy and its
// classifier, per-client rate limits, body and message limits, and a route cache. It knows
// no actors; package guard holds the routing policy (docs/gateway.md).
package core
