package runner

import (
	"errors"
	"fmt"

	"github.com/berthhq/berth/sdk/bare"
)

// Protocol versions this package speaks. A WebSocket frame carries one bare ToServer or ToClient
// value with no version prefix: the version is negotiated in the connect URL
// (protocol_version=N), and both sides encode every frame in it.
//
// They differ in two places only (diff schema/v5.bare, v6.bare and v7.bare):
//   - v5: ProtocolMetadata has only RunnerLostThreshold; v6 and v7 add ActorStopThreshold and
//     ServerlessDrainGracePeriod.
//   - v7 inserts KvDeleteRangeRequest before KvDropRequest in KvRequestData, which renumbers
//     KvDropRequest; v5 and v6 have no KvDeleteRangeRequest.
const (
	Version5 = 5
	Version6 = 6
	Version7 = 7

	MinVersion    = Version5
	LatestVersion = Version7
)

// EncodeError describes a value the schema cannot carry: a nil union member, an unknown enum
// value, a duplicate map key, a string that is not UTF-8, or a member the version lacks.
type EncodeError struct{ Msg string }

func (e *EncodeError) Error() string { return "runner protocol: cannot encode: " + e.Msg }

// UnsupportedVersionError reports a protocol version outside MinVersion..LatestVersion.
type UnsupportedVersionError struct{ Version int }

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("runner protocol: unsupported version %d (want %d to %d)", e.Version, MinVersion, LatestVersion)
}

func checkVersion(v int) error {
	if v < MinVersion || v > LatestVersion {
		return &UnsupportedVersionError{v}
	}
	return nil
}

// writerErr returns the first error of w as an *EncodeError.
func writerErr(w *bare.Writer) error {
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

// EncodeToServer encodes one ToServer frame at the given protocol version.
func EncodeToServer(m ToServer, version int) ([]byte, error) {
	var w bare.Writer
	if err := AppendToServer(&w, m, version); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// EncodeToClient encodes one ToClient frame at the given protocol version.
func EncodeToClient(m ToClient, version int) ([]byte, error) {
	var w bare.Writer
	if err := AppendToClient(&w, m, version); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// AppendToServer writes m to w at the given protocol version. On error w may hold a partial
// message; Reset it before reuse.
func AppendToServer(w *bare.Writer, m ToServer, version int) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	writeToServer(w, m, version)
	return writerErr(w)
}

// AppendToClient writes m to w at the given protocol version. On error w may hold a partial
// message; Reset it before reuse.
func AppendToClient(w *bare.Writer, m ToClient, version int) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	writeToClient(w, m, version)
	return writerErr(w)
}

// DecodeToServer decodes one ToServer frame of the given protocol version. The frame must hold
// exactly one message. Every malformed input gives a *bare.DecodeError naming the offset
// (an unknown union tag names the offset of the tag); an unsupported version gives an
// *UnsupportedVersionError. Byte fields of the result alias b.
func DecodeToServer(b []byte, version int) (ToServer, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var r bare.Reader
	r.Reset(b)
	m := readToServer(&r, version)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeToClient decodes one ToClient frame of the given protocol version, as DecodeToServer.
func DecodeToClient(b []byte, version int) (ToClient, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var r bare.Reader
	r.Reset(b)
	m := readToClient(&r, version)
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// ReadToServer reads one ToServer message of the given version from r (which must be a
// supported version; DecodeToServer checks it). On error it returns nil and r.Err() is set.
func ReadToServer(r *bare.Reader, version int) ToServer {
	if m := readToServer(r, version); r.Err() == nil {
		return m
	}
	return nil
}

// ReadToClient reads one ToClient message of the given version from r, as ReadToServer.
func ReadToClient(r *bare.Reader, version int) ToClient {
	if m := readToClient(r, version); r.Err() == nil {
		return m
	}
	return nil
}

// EncodeServerlessInit encodes the serverless SSE init payload: the protocol version as a u16
// little-endian prefix, then the ToServerlessServer union holding m. The caller base64-encodes
// it for the SSE data line.
func EncodeServerlessInit(m ToServerlessServerInit, version int) ([]byte, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var w bare.Writer
	w.U16(uint16(version))
	writeToServerlessServer(&w, m)
	if err := writerErr(&w); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// DecodeServerlessInit decodes the serverless SSE init payload (after base64): the u16
// little-endian protocol version, then a ToServerlessServer. It returns the version too.
func DecodeServerlessInit(b []byte) (ToServerlessServerInit, int, error) {
	var r bare.Reader
	r.Reset(b)
	version := int(r.U16())
	if r.Err() == nil {
		if err := checkVersion(version); err != nil {
			return ToServerlessServerInit{}, 0, err
		}
	}
	m, _ := readToServerlessServer(&r).(ToServerlessServerInit)
	if err := r.Done(); err != nil {
		return ToServerlessServerInit{}, 0, err
	}
	return m, version, nil
}
