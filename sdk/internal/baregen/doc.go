// Package baregen generates Go types and their BARE codecs from schema files in the BARE schema
// language (draft-devault-bare), for berth's wire protocols. Command baregen (cmd/baregen) runs
// it from a //go:generate line; CheckGenerated runs that line in memory, so that a test fails
// while the generated file is stale. It uses the standard library only; the generated code
// calls the Reader and Writer of package bare, with no reflection.
//
// # Schema language
//
// A schema is a list of "type Name <type>" declarations (and the older "enum Name {…}"), with
// # comments. Types: uint, int, u8…u64, i8…i64, f32, f64, bool, str, data, data[N] (or the
// older data<N>), void, optional<T>, list<T>, list<T>[N], map<K><V>, struct {name: T …},
// union {A | B = 5 | C}, enum {A B = 3}, and user type names. Parse errors name the file and
// line.
//
// # Go mapping
//
//   - A user type becomes a Go type of the same name: struct → struct; union → an interface
//     with one unexported marker method, implemented by its members (which must be user
//     types); enum → an unsigned integer type with a constant per value (Name + value in
//     Go case: StopCode OK → StopCodeOK); void → struct{}; data[N] → [N]byte; list → slice.
//   - Field names become Go names: actorId → ActorID (the words ID, OK and SQL are spelled in
//     capitals).
//   - optional<T> is a pointer, except when T's Go type has nil (data, list, map, union): then
//     nil is absent and a present value is never nil (decoders return empty, not nil, slices).
//   - map<K><V> is a Go map (encoded in key order), or, with #go:entry, a slice of entries in
//     wire order (see below). Decoders reject duplicate keys, encoders too.
//   - The doc comment of a declaration (the # lines right above it), of a field or of an enum
//     value, and the comment at the end of a field's line, become Go comments.
//
// Codecs: for each type reachable from the roots (the types no other type uses), an unexported
// readT(r *bare.Reader) T and writeT(w *bare.Writer, T). Decoding errors are *bare.DecodeError
// at the offset of the offending value ("unknown Event tag 3", "unknown StopCode 2",
// "duplicate map key a"); encoding errors (a nil union, an unknown enum value, a duplicate key,
// a str that is not UTF-8) are recorded in the Writer (Writer.Err).
//
// # Directives
//
// A comment "#go:name argument" on the line of a declaration or field steers the Go mapping:
//
//   - #go:entry E, on a map field or declaration: the map is a []E. E is a struct declared in
//     the schema whose first field is the key and whose other fields are the value (the value
//     itself, or the fields of a struct value).
//   - #go:prefix P, on an enum: the constants are named P + value instead of Name + value.
//   - #go:type T, on an enum: its Go type is T instead of the smallest unsigned type that holds
//     its values.
//
// # Versions
//
// A protocol with several versions has one complete schema file per version, given as N=file
// in increasing order. The Go types are those of the latest version; between versions a struct
// may gain fields (each older version's fields are a subsequence of the latest's) and a union
// may gain, lose or renumber members. Any other change is an error. The codecs of the types
// this touches, and of the types that contain them, take the version (v int): a field is read
// and written only in the versions that have it, a member's tag is the one of the version, and
// encoding a member at a version without it is an error.
package baregen
