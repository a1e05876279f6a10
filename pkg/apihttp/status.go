package apihttp

import (
	"bufio"
	"net"
	"net/http"
)

// StatusRecorder is a ResponseWriter that remembers the status written through it. It
// passes flushing and hijacking through (and http.ResponseController reaches the writer
// beneath through Unwrap), so WebSocket upgrades and streamed responses work behind it.
type StatusRecorder struct {
	http.ResponseWriter
	status   int
	hijacked bool
}

// Status is the status written: 200 when a body was written first, 101 when the
// connection was hijacked, 0 when nothing was written.
func (w *StatusRecorder) Status() int {
	if w.status == 0 && w.hijacked {
		return http.StatusSwitchingProtocols
	}
	return w.status
}

func (w *StatusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *StatusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *StatusRecorder) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *StatusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, brw, err
}

// Unwrap lets http.ResponseController reach the writer beneath.
func (w *StatusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
