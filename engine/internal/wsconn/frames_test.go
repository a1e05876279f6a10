package wsconn

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"testing/iotest"

	"github.com/berthhq/berth/pkg/rerr"
)

// clientFrame encodes one frame as a client sends it: masked (unless unmasked), with the
// first byte (FIN, RSV, opcode) as given.
func clientFrame(first byte, payload []byte, unmasked bool) []byte {
	b := []byte{first}
	m := byte(0x80)
	if unmasked {
		m = 0
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, m|byte(n))
	case n < 1<<16:
		b = binary.BigEndian.AppendUint16(append(b, m|126), uint16(n))
	default:
		b = binary.BigEndian.AppendUint64(append(b, m|127), uint64(n))
	}
	if !unmasked {
		b = append(b, 9, 8, 7, 6)
	}
	return append(b, payload...) // the guard does not unmask: any bytes do
}

func TestFrameGuard(t *testing.T) {
	good := bytes.Join([][]byte{
		clientFrame(0x82, []byte("init"), false),
		clientFrame(0x02, bytes.Repeat([]byte("x"), 300), false), // a fragment
		clientFrame(0x89, []byte("ping"), false),                 // a control frame between fragments
		clientFrame(0x80, bytes.Repeat([]byte("y"), 70000), false),
		clientFrame(0x88, []byte{3, 232}, false),
	}, nil)
	long := binary.BigEndian.AppendUint64([]byte{0x82, 0x80 | 127}, 1<<62)
	for _, tc := range []struct {
		name   string
		stream []byte
		want   rerr.Code // the error, 0 for none
	}{
		{"good frames", good, 0},
		{"unmasked", append(clientFrame(0x82, []byte("a"), false), clientFrame(0x82, []byte("b"), true)...), rerr.CodeWSProtocolError},
		{"reserved bit", clientFrame(0xc2, []byte("a"), false), rerr.CodeWSProtocolError},
		{"unknown opcode", clientFrame(0x83, nil, false), rerr.CodeWSProtocolError},
		{"fragmented control", clientFrame(0x09, nil, false), rerr.CodeWSProtocolError},
		{"long control", clientFrame(0x89, make([]byte, 126), false), rerr.CodeWSProtocolError},
		{"over the limit", append(long, 1, 2, 3, 4), rerr.CodeWSMessageTooBig},
		{"ends in a header", good[:1], rerr.CodeWSProtocolError},
		{"ends in a payload", clientFrame(0x82, []byte("abcdef"), false)[:8], rerr.CodeWSProtocolError},
	} {
		for _, split := range []bool{false, true} {
			var r io.Reader = newFrameGuard(bytes.NewReader(tc.stream), 1<<20)
			if split {
				r = iotest.OneByteReader(r) // headers cut across reads
			}
			got, err := io.ReadAll(r)
			switch {
			case tc.want == 0 && (err != nil || !bytes.Equal(got, tc.stream)):
				t.Errorf("%s (split %v): read %d of %d bytes, %v", tc.name, split, len(got), len(tc.stream), err)
			case tc.want != 0 && !rerr.Is(err, tc.want):
				t.Errorf("%s (split %v): %v, want %s", tc.name, split, err, tc.want)
			case tc.want != 0 && !bytes.HasPrefix(tc.stream, got):
				t.Errorf("%s (split %v): passed bytes the stream does not start with", tc.name, split)
			}
		}
	}
	// The violating frame's header does not reach the library.
	g := newFrameGuard(bytes.NewReader(append(clientFrame(0x82, []byte("ok"), false), clientFrame(0x82, nil, true)...)), 1<<20)
	got, err := io.ReadAll(g)
	if want := clientFrame(0x82, []byte("ok"), false); !bytes.Equal(got, want) || !rerr.Is(err, rerr.CodeWSProtocolError) {
		t.Fatalf("read %x, %v; want %x then ws.protocol_error", got, err, want)
	}
}
