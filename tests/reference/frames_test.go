package reference

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

func init() {
	register(scenario{name: "socket_frames", doc: "frames no WebSocket client may send, on a runner socket", run: socketFrames})
}

// socketFrames: frames no WebSocket client may send, on a runner socket: what closes it.
func socketFrames(s *Session) {
	masked := func(opcode byte, payload []byte) []byte { return frame(0x80|opcode, payload, true) }
	for _, c := range []struct {
		name string
		// frames is what the client sends after the handshake; halfClose ends its side.
		frames    []byte
		halfClose bool
	}{
		{"an unmasked frame", frame(0x82, []byte{1, 2, 3}, false), false},
		{"a frame cut short", masked(0x2, make([]byte, 1000))[:20], true},
		{"a reserved bit", frame(0xC2, []byte{1}, true), false},
		{"an unknown opcode", masked(0x3, []byte{1}), false},
		{"a fragmented ping", frame(0x09, []byte{1}, true), false},
		{"a 2^62-byte frame", hugeFrameHeader(), false},
		{"a text frame first", masked(0x1, []byte("hello")), false},
		{"a binary frame that is not an init", masked(0x2, []byte{0xff, 0xff, 0xff}), false},
	} {
		s.Record(c.name, rawSocket(s, "/runners/connect?protocol_version=7&namespace={ns}&runner_key=raw", c.frames, c.halfClose))
	}
}

// frame encodes one WebSocket frame: the first byte (FIN, RSV, opcode) as given, the
// payload masked with a fixed key when mask is set.
func frame(first byte, payload []byte, mask bool) []byte {
	b := []byte{first}
	maskBit := byte(0)
	if mask {
		maskBit = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, maskBit|byte(n))
	case n < 1<<16:
		b = append(b, maskBit|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, maskBit|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if !mask {
		return append(b, payload...)
	}
	key := [4]byte{1, 2, 3, 4}
	b = append(b, key[:]...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// hugeFrameHeader is the header of a masked binary frame announcing 2^62 bytes.
func hugeFrameHeader() []byte {
	b := []byte{0x82, 0x80 | 127}
	b = binary.BigEndian.AppendUint64(b, 1<<62)
	return append(b, 1, 2, 3, 4)
}

// rawSocket opens a WebSocket by hand on the target's guard port (with the target's token),
// writes frames and reports how the server ends the socket: its close code and reason, or
// how the connection ended without one.
func rawSocket(s *Session, path string, frames []byte, halfClose bool) map[string]any {
	s.T.Helper()
	u, err := url.Parse(s.Target.URL)
	if err != nil {
		s.T.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		s.T.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	protocols := "rivet"
	if s.Target.Token != "" {
		protocols += ", rivet_token." + s.Target.Token
	}
	req := "GET " + strings.ReplaceAll(path, "{ns}", url.QueryEscape(s.NS)) + " HTTP/1.1\r\nHost: " + u.Host +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
		"Sec-WebSocket-Protocol: " + protocols + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		s.T.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return map[string]any{"handshake": "no answer"}
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return map[string]any{"handshake": resp.StatusCode}
	}
	if _, err := c.Write(frames); err != nil {
		return map[string]any{"write": "failed"}
	}
	if halfClose {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	for {
		first, payload, err := readServerFrame(br)
		switch {
		case err != nil:
			return map[string]any{"ended": "without a close frame"}
		case first&0x0f == 0x8:
			out := map[string]any{"close": nil, "reason": ""}
			if len(payload) >= 2 {
				out["close"] = int(binary.BigEndian.Uint16(payload))
				out["reason"] = string(payload[2:])
			}
			return out
		}
		// A ping or another message before the close: read on.
	}
}

// readServerFrame reads one unmasked server frame (at most 1 MiB of payload).
func readServerFrame(br *bufio.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	if n > 1<<20 {
		return 0, nil, fmt.Errorf("a %d-byte server frame", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(br, b)
	return h[0], b, err
}
