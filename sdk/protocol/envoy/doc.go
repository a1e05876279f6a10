// Package envoy is the Rivet envoy protocol (v8, BARE over WebSocket): one Go type per message,
// EncodeToRivet/DecodeToRivet and EncodeToEnvoy/DecodeToEnvoy, and the engine-internal unions
// of the same schema (ToEnvoyConn, ToGateway, ToOutbound, ActorCommandKeyData).
package envoy
