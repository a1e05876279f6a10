// Package envoy is the Rivet envoy protocol (v8, BARE over WebSocket): one Go type per message,
// EncodeToRivet/DecodeToRivet and EncodeToEnvoy/DecodeToEnvoy, and the engine-internal unions
// of the same schema (ToEnvoyConn, ToGateway, ToOutbound, ActorCommandKeyData).
//
// The message types and their codecs (messages_gen.go) are generated from schema/v8.bare by
// sdk/internal/baregen; protocol.go holds the hand-written entry points. After editing the
// schema, run go generate; TestGeneratedCode fails while messages_gen.go is stale.
//
// Optional values: a pointer (nil = absent) for scalars, strings and structs; for optional<data>,
// the optional map of ToRivetMetadata and the optional parameter lists of SQLite statements, a
// nil slice is absent and a non-nil slice (even empty) is present. Decoders return non-nil
// empty slices for present empty values, so decode/encode round trips keep the difference. A
// map<str><…> is a slice of entries (Header, ActorName) in wire order.
package envoy

//go:generate go run ../../internal/baregen/cmd/baregen -package envoy -o messages_gen.go 8=schema/v8.bare
