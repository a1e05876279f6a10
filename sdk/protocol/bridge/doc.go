// Package bridge translates between the runner protocol (v7, sdk/protocol/runner) and the
// envoy protocol (v8, sdk/protocol/envoy) where their messages mean the same thing: actor
// commands and events, acknowledgements, KV requests and responses, and tunnel messages.
//
// It lets one implementation of each of these serve both kinds of host: the engine's
// envoy socket hands envoy events and KV requests to the lifecycle and KV code written
// for runners, and sdk/runner speaks the envoy protocol by translating at its socket.
// Fields the runner protocol lacks are dropped going to it (the envoy's actor generation
// on a request, abort reasons) and given their neutral value coming from it.
package bridge
