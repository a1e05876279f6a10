package wsconn

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
)

// HijackBufferSize is the size of a socket's read buffer and of its write buffer.
// net/http gives a hijacked connection a 4 KiB reader and a 4 KiB writer, which the
// WebSocket keeps for the socket's life: 40 MiB for 5,000 idle runners. Runner and envoy
// frames are mostly tens of bytes; bufio passes larger reads and writes straight through.
const HijackBufferSize = 512

// SmallBuffers is a ResponseWriter whose Hijack hands out HijackBufferSize buffers in place
// of net/http's, which are dropped. With MaxFrame set, what the client sends is read through
// a frameGuard first: a frame no client may send, or one over MaxFrame bytes, ends the socket
// with ws.protocol_error or ws.message_too_big.
//
// With QuickAck set, every read of the connection is followed by a TCP_QUICKACK, so that
// what the client sent is acknowledged at once (see quickAckConn).
type SmallBuffers struct {
	http.ResponseWriter
	MaxFrame uint64
	QuickAck bool
}

func (w SmallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w SmallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = nc.Close()
		return nil, nil, err
	}
	if w.QuickAck {
		nc = withQuickAck(nc)
	}
	var ahead []byte // bytes the client sent past the request
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		ahead = bytes.Clone(b)
	}
	bw := bufio.NewWriterSize(nc, HijackBufferSize)
	if w.MaxFrame > 0 {
		// Everything the client sends, what was read ahead too, goes through the guard: the
		// WebSocket library reads from the connection handed out (it re-seats its reader on
		// the connection behind what is buffered, and nothing is).
		in := io.Reader(nc)
		if len(ahead) > 0 {
			in = io.MultiReader(bytes.NewReader(ahead), nc)
		}
		gc := guardedConn{Conn: nc, r: newFrameGuard(in, w.MaxFrame)}
		return gc, bufio.NewReadWriter(bufio.NewReaderSize(gc, HijackBufferSize), bw), nil
	}
	if len(ahead) == 0 {
		return nc, bufio.NewReadWriter(bufio.NewReaderSize(nc, HijackBufferSize), bw), nil
	}
	// The new reader starts with the bytes read ahead in its buffer, where the library
	// looks for them.
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(ahead), nc), max(HijackBufferSize, len(ahead)))
	if _, err := br.Peek(len(ahead)); err != nil {
		_ = nc.Close()
		return nil, nil, err
	}
	return nc, bufio.NewReadWriter(br, bw), nil
}

// guardedConn is a connection whose reads go through a frameGuard.
type guardedConn struct {
	net.Conn
	r *frameGuard
}

func (c guardedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
