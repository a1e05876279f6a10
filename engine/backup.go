package engine

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/berthhq/berth/pkg/udb/transfer"
)

// BackupPath is the api-peer route of an online backup: GET streams the whole key space in
// berth export's format (pkg/udb/transfer), read at one read version while the store's MVCC
// window allows (docs/udb.md, "Export and import"). It needs the admin token when one is
// set, like POST /shutdown. berth import restores the stream.
const BackupPath = "/backup"

// backup serves GET /backup. A failure once the stream has begun aborts the connection,
// so the client sees a cut stream (which berth import refuses) rather than a clean end.
func (e *Engine) backup(token string, w http.ResponseWriter, r *http.Request) {
	if token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"group":"api","code":"unauthorized","message":"GET /backup needs the admin token.","metadata":null}`))
			return
		}
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Allow", http.MethodGet)
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte(`{"group":"api","code":"method_not_allowed","message":"Use GET.","metadata":null}`))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="berth-backup.bin"`)
	st, err := transfer.Export(r.Context(), e.db, w, transfer.Options{})
	if err != nil {
		e.log.Warn("backup failed", "error", err, "keys", st.Keys)
		panic(http.ErrAbortHandler)
	}
	e.log.Info("backup done", "keys", st.Keys, "bytes", st.Bytes)
}
