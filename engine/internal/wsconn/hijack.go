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
// of net/http's, which are dropped.
type SmallBuffers struct{ http.ResponseWriter }

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
	n := brw.Reader.Buffered()
	if n == 0 {
		return nc, bufio.NewReadWriter(bufio.NewReaderSize(nc, HijackBufferSize), bufio.NewWriterSize(nc, HijackBufferSize)), nil
	}
	// Bytes the client sent past the request: the new reader starts with them in its
	// buffer, where the WebSocket library looks for them (it re-seats its reader on the
	// connection behind what is buffered).
	ahead, _ := brw.Reader.Peek(n)
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(ahead)), nc), max(HijackBufferSize, n))
	if _, err := br.Peek(n); err != nil {
		_ = nc.Close()
		return nil, nil, err
	}
	return nc, bufio.NewReadWriter(br, bufio.NewWriterSize(nc, HijackBufferSize)), nil
}
