package hostsock_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// A client that sends its first frame in the same write as the upgrade request (so that
// net/http has read it ahead when the socket is hijacked onto smaller buffers) is served:
// the init frame is not lost.
func TestInitSentWithUpgradeRequest(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	u, err := url.Parse(e.hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))

	payload, err := proto.EncodeToServer(initMsg("pool"), 7)
	if err != nil {
		t.Fatal(err)
	}
	req := "GET /runners/connect?" + query("default", "k").Encode() + " HTTP/1.1\r\n" +
		"Host: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
		"Sec-WebSocket-Protocol: rivet\r\n\r\n"
	if _, err := nc.Write(append([]byte(req), maskedFrame(payload)...)); err != nil {
		t.Fatal(err)
	}

	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	b := readFrame(t, br)
	m, err := proto.DecodeToClient(b, 7)
	if err != nil {
		t.Fatal(err)
	}
	if init, ok := m.(proto.ToClientInit); !ok || init.RunnerID == "" {
		t.Fatalf("first message %#v, want ToClientInit", m)
	}
}

// maskedFrame is a final binary client frame (RFC 6455 §5.2) holding p.
func maskedFrame(p []byte) []byte {
	f := []byte{0x82}
	switch {
	case len(p) < 126:
		f = append(f, 0x80|byte(len(p)))
	default:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(len(p)))
	}
	key := []byte{1, 2, 3, 4}
	f = append(f, key...)
	for i, c := range p {
		f = append(f, c^key[i%4])
	}
	return f
}

// readFrame reads one unmasked server frame and returns its payload.
func readFrame(t *testing.T, br *bufio.Reader) []byte {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		t.Fatal(err)
	}
	if h[0] != 0x82 {
		t.Fatalf("frame header %x, want a final binary frame", h)
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			t.Fatal(err)
		}
		n = int(binary.BigEndian.Uint16(l[:]))
	case 127:
		t.Fatal("unexpected 64-bit frame length")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		t.Fatal(err)
	}
	return b
}
