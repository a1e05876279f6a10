package engine

import (
	"io"
	"net/http"
	"time"
)

// Limits of finishBody: how much of a request body its handler left unread is read and
// thrown away, and for how long.
const (
	maxUnreadBody   = 64 << 20
	unreadBodyLimit = 10 * time.Second
)

// finishBody serves h, then reads and discards what h left of the request body (at most
// maxUnreadBody bytes, for at most unreadBodyLimit). A client still sending a body the
// engine refused (a 405, a 413, a bad request) then reads its answer: without this the
// server closes a connection with unread data, the kernel resets it, and the client, busy
// writing, gets ECONNRESET instead of the answer. A body beyond the bounds still ends in a
// closed connection, as it must.
func finishBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := r.Body
		h.ServeHTTP(w, r)
		if body == nil || body == http.NoBody {
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyLimit))
		_, _ = io.CopyN(io.Discard, body, maxUnreadBody)
	})
}
