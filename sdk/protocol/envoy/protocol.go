package envoy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/berthhq/berth/sdk/bare"
)

// Protocol versions this package speaks. A WebSocket frame carries one bare ToRivet or ToEnvoy
// value with no version prefix: the version is negotiated in the connect URL
// (protocol_version=N). The schema is @rivetkit/engine-envoy-protocol 2.3.19 (VERSION = 8);
// earlier envoy versions are not implemented, so every function here refuses any other
// version with an *UnsupportedVersionError.
const (
	Version8 = 8

	MinVersion    = Version8
	LatestVersion = Version8
)

// EncodeError describes a value the schema cannot carry: a nil union member, an unknown enum
// value, a duplicate map key or a string that is not UTF-8.
type EncodeError struct{ Msg string }

func (e *EncodeError) Error() string { return "envoy protocol: cannot encode: " + e.Msg }

// UnsupportedVersionError reports a protocol version outside MinVersion..LatestVersion.
type UnsupportedVersionError struct{ Version int }

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("envoy protocol: unsupported version %d (want %d to %d)", e.Version, MinVersion, LatestVersion)
}

func checkVersion(v int) error {
	if v < MinVersion || v > LatestVersion {
		return &UnsupportedVersionError{v}
	}
	return nil
}

// appendMessage writes one top-level value with write at the given version. On error w may
// hold a partial message.
func appendMessage[T any](w *bare.Writer, version int, m T, write func(*bare.Writer, T)) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	write(w, m)
	err := w.Err()
	if err == nil {
		return nil
	}
	var be *bare.EncodeError
	if errors.As(err, &be) {
		return &EncodeError{be.Msg}
	}
	return err
}

func encodeMessage[T any](version int, m T, write func(*bare.Writer, T)) ([]byte, error) {
	var w bare.Writer
	if err := appendMessage(&w, version, m, write); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// EncodeToRivet encodes one ToRivet frame (envoy to engine) at the given protocol version.
func EncodeToRivet(m ToRivet, version int) ([]byte, error) {
	return encodeMessage(version, m, writeToRivet)
}

// AppendToRivet writes m to w at the given protocol version. On error w may hold a partial
// message; Reset it before reuse.
func AppendToRivet(w *bare.Writer, m ToRivet, version int) error {
	return appendMessage(w, version, m, writeToRivet)
}

// EncodeToEnvoy encodes one ToEnvoy frame (engine to envoy) at the given protocol version.
func EncodeToEnvoy(m ToEnvoy, version int) ([]byte, error) {
	return encodeMessage(version, m, writeToEnvoy)
}

// AppendToEnvoy writes m to w at the given protocol version, as AppendToRivet.
func AppendToEnvoy(w *bare.Writer, m ToEnvoy, version int) error {
	return appendMessage(w, version, m, writeToEnvoy)
}

// EncodeToEnvoyConn encodes one engine-internal ToEnvoyConn message.
func EncodeToEnvoyConn(m ToEnvoyConn, version int) ([]byte, error) {
	return encodeMessage(version, m, writeToEnvoyConn)
}

// EncodeToGateway encodes one engine-internal ToGateway message.
func EncodeToGateway(m ToGateway, version int) ([]byte, error) {
	return encodeMessage(version, m, writeToGateway)
}

// EncodeToOutbound encodes one ToOutbound message.
func EncodeToOutbound(m ToOutbound, version int) ([]byte, error) {
	return encodeMessage(version, m, writeToOutbound)
}

// EncodeActorCommandKeyData encodes a command as the schema's top-level ActorCommandKeyData
// (the Command union alone), the form in which the engine stores an actor's commands.
func EncodeActorCommandKeyData(c Command, version int) ([]byte, error) {
	return encodeMessage(version, c, writeCommand)
}

// DecodeToRivet decodes one ToRivet frame (envoy to engine) of the given protocol version. The
// frame must hold exactly one message. Every malformed input gives a *bare.DecodeError naming
// the offset (an unknown union tag or enum value names the offset where it starts); an
// unsupported version gives an *UnsupportedVersionError. Byte fields of the result alias b.
func DecodeToRivet(b []byte, version int) (ToRivet, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var r bare.Reader // on the stack: read functions do not keep it
	r.Reset(b)
	m := readToRivet(&r)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeToEnvoy decodes one ToEnvoy frame (engine to envoy), as DecodeToRivet.
func DecodeToEnvoy(b []byte, version int) (ToEnvoy, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var r bare.Reader // on the stack: read functions do not keep it
	r.Reset(b)
	m := readToEnvoy(&r)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeToEnvoyConn decodes one engine-internal ToEnvoyConn message, as DecodeToRivet.
func DecodeToEnvoyConn(b []byte, version int) (ToEnvoyConn, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var r bare.Reader // on the stack: read functions do not keep it
	r.Reset(b)
	m := readToEnvoyConn(&r)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeToGateway decodes one engine-internal ToGateway message, as DecodeToRivet.
func DecodeToGateway(b []byte, version int) (ToGateway, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var r bare.Reader // on the stack: read functions do not keep it
	r.Reset(b)
	m := readToGateway(&r)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeToOutbound decodes one ToOutbound message, as DecodeToRivet.
func DecodeToOutbound(b []byte, version int) (ToOutbound, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var r bare.Reader // on the stack: read functions do not keep it
	r.Reset(b)
	m := readToOutbound(&r)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeActorCommandKeyData decodes a stored command (the schema's ActorCommandKeyData), as
// DecodeToRivet.
func DecodeActorCommandKeyData(b []byte, version int) (Command, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var r bare.Reader // on the stack: read functions do not keep it
	r.Reset(b)
	m := readCommand(&r)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// ReadToRivet reads one ToRivet message of the given version from r (which must be a supported
// version; DecodeToRivet checks it). On error it returns nil and r.Err() is set.
func ReadToRivet(r *bare.Reader, _ int) ToRivet {
	if m := readToRivet(r); r.Err() == nil {
		return m
	}
	return nil
}

// ReadToEnvoy reads one ToEnvoy message of the given version from r, as ReadToRivet.
func ReadToEnvoy(r *bare.Reader, _ int) ToEnvoy {
	if m := readToEnvoy(r); r.Err() == nil {
		return m
	}
	return nil
}

// SqliteFloat returns the SqliteValueFloat of f.
func SqliteFloat(f float64) SqliteValueFloat {
	var v SqliteValueFloat
	binary.BigEndian.PutUint64(v.Value[:], math.Float64bits(f))
	return v
}

// Float64 returns the number v holds.
func (v SqliteValueFloat) Float64() float64 {
	return math.Float64frombits(binary.BigEndian.Uint64(v.Value[:]))
}
