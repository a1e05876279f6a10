// Package runner is the Rivet runner protocol (v5–v7, BARE over WebSocket): one Go type per
// message, EncodeToServer/DecodeToServer and EncodeToClient/DecodeToClient per protocol version.
//
// The message types and their codecs (messages_gen.go) are generated from the schemas in
// schema/ (one BARE schema file per protocol version) by sdk/internal/baregen; protocol.go holds
// the hand-written entry points. After editing a schema, run go generate; TestGeneratedCode fails
// while messages_gen.go is stale.
//
// Optional values: a pointer (nil = absent) for scalars and strings; for optional<data> and the
// optional map of ToServerInit, a nil slice is absent and a non-nil slice (even empty) is present.
// Decoders return non-nil empty slices for present empty values, so decode/encode round trips
// keep the difference. A map<str><…> is a slice of entries (Header, ActorName) in wire order.
package runner

//go:generate go run ../../internal/baregen/cmd/baregen -package runner -o messages_gen.go 5=schema/v5.bare 6=schema/v6.bare 7=schema/v7.bare
