package wsconn

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/berthhq/berth/pkg/rerr"
)

// MaxFrame is the largest WebSocket frame a runner or envoy may send (Rivet's
// guard.websocket_max_frame_size, 32 MiB): a larger one ends the socket with
// ws.message_too_big. A message over a socket's own payload limit, within this, is that
// socket's ws.invalid_packet, as on Rivet.
const MaxFrame = 32 << 20

// frameGuard reads a client's WebSocket stream ahead of the WebSocket library and stops it
// at the first frame no client may send (RFC 6455 §5): an unmasked frame, reserved bits
// (no extension is negotiated), an unknown opcode, a fragmented or oversized control frame,
// a frame longer than max, or a stream that ends inside a frame. Its error, which the
// library's read then returns, is ws.protocol_error (close 1002) or ws.message_too_big
// (1009): the socket server closes with it, where the library alone would end the socket
// with its own wording or wait for a frame's announced bytes that never come.
type frameGuard struct {
	r   io.Reader
	max uint64

	head    [14]byte // the header being read
	have    int      // bytes of it read so far
	payload uint64   // payload bytes of the current frame still to pass through
	err     error    // the violation, returned once the bytes before it are read
}

func newFrameGuard(r io.Reader, max uint64) *frameGuard { return &frameGuard{r: r, max: max} }

func (g *frameGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	for i := 0; i < n; {
		if g.payload > 0 {
			skip := min(g.payload, uint64(n-i))
			g.payload -= skip
			i += int(skip)
			continue
		}
		g.head[g.have] = p[i]
		g.have++
		i++
		done, violation := g.header()
		if violation != nil {
			// The bytes before this frame's header go through (a header begun in an
			// earlier read has gone through in part); then the error.
			g.err = violation
			return max(i-g.have, 0), nil
		}
		if done {
			g.have = 0
		}
	}
	if errors.Is(err, io.EOF) && (g.have > 0 || g.payload > 0) {
		g.err = rerr.WSProtocolError().WithCause(errors.New("the stream ended inside a frame"))
		return n, g.err
	}
	return n, err
}

// header checks the header read so far: done once it is whole (g.payload then holds its
// payload's length), or the violation.
func (g *frameGuard) header() (done bool, violation error) {
	h := g.head[:g.have]
	if len(h) < 2 {
		return false, nil
	}
	fin, rsv, opcode := h[0]&0x80 != 0, h[0]&0x70, h[0]&0x0f
	masked, short := h[1]&0x80 != 0, uint64(h[1]&0x7f)
	control := opcode >= 0x8
	switch {
	case rsv != 0:
		return false, protocolError("reserved bits set")
	case opcode > 0x2 && opcode < 0x8 || opcode > 0xa:
		return false, protocolError("unknown opcode")
	case !masked:
		return false, protocolError("an unmasked frame from the client")
	case control && !fin:
		return false, protocolError("a fragmented control frame")
	case control && short > 125:
		return false, protocolError("a control frame over 125 bytes")
	}
	lenBytes := map[uint64]int{126: 2, 127: 8}[short]
	if len(h) < 2+lenBytes+4 {
		return false, nil
	}
	length := short
	switch lenBytes {
	case 2:
		length = uint64(binary.BigEndian.Uint16(h[2:4]))
	case 8:
		length = binary.BigEndian.Uint64(h[2:10])
	}
	if length > g.max {
		return false, rerr.WSMessageTooBig().WithCause(errors.New("a frame over the limit"))
	}
	g.payload = length
	return true, nil
}

func protocolError(what string) error {
	return rerr.WSProtocolError().WithCause(errors.New(what))
}
