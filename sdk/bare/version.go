package bare

import "encoding/binary"

// Versioned BARE is berth's framing for stored values (and Rivet's for the serverless init
// payload): a 2-byte little-endian schema version, then the BARE body of that version. A value
// type keeps every version it has ever written, so old records decode after an upgrade; a
// decoder reads the version first and dispatches on it, and an unknown version is corrupt data.
// WebSocket frames of the runner protocol carry no such prefix (their version is negotiated in
// the URL).

// AppendVersion appends the 2-byte little-endian version prefix of a versioned BARE value to dst.
func AppendVersion(dst []byte, v uint16) []byte {
	return binary.LittleEndian.AppendUint16(dst, v)
}

// ReadVersion reads the 2-byte little-endian version prefix of a versioned BARE value. Like
// every read it returns 0 after an error. berth numbers versions from 1, so a decoder can treat
// 0 (and any version it does not know) as corrupt data.
func ReadVersion(r *Reader) uint16 { return r.U16() }
