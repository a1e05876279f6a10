package rerr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/berthhq/berth/pkg/rerr/internal/tmpl"
)

// maxParse bounds the body Parse reads; an error body is small.
const maxParse = 1 << 20

// Parse decodes an error response body {"group","code","message","metadata"?} received from
// another berth (api-peer) or a Rivet engine, so it can be re-emitted unchanged: the message
// is kept as sent, and status (the response's HTTP status) becomes Status; a status outside
// 400–599 is replaced by the catalog's for that code, or 500. group and code must
// be catalog tokens (a-z, 0-9, _) but need not be in this node's catalog. A body that is not
// such an object is an error (the caller typically answers datacenter.unreachable). Parse
// never panics.
func Parse(status int, body []byte) (*Error, error) {
	if len(body) > maxParse {
		return nil, fmt.Errorf("rerr: error body is %d bytes, more than %d", len(body), maxParse)
	}
	var w struct {
		Group    *string         `json:"group"`
		Code     *string         `json:"code"`
		Message  *string         `json:"message"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("rerr: error body is not a JSON object: %w", err)
	}
	switch {
	case w.Group == nil || w.Code == nil || w.Message == nil:
		return nil, fmt.Errorf("rerr: error body lacks group, code or message")
	case !tmpl.IsToken(*w.Group) || !tmpl.IsToken(*w.Code):
		return nil, fmt.Errorf("rerr: error body has a malformed group.code %.64q", *w.Group+"."+*w.Code)
	}
	e := &Error{Group: *w.Group, Code: *w.Code, Message: *w.Message, Status: status}
	if md := bytes.TrimSpace(w.Metadata); len(md) > 0 && !bytes.Equal(md, []byte("null")) {
		if md[0] != '{' {
			return nil, fmt.Errorf("rerr: error metadata is not a JSON object")
		}
		d := json.NewDecoder(bytes.NewReader(md))
		d.UseNumber() // keep numbers exactly as sent
		if err := d.Decode(&e.Metadata); err != nil {
			return nil, fmt.Errorf("rerr: error metadata: %w", err)
		}
		if len(e.Metadata) == 0 {
			e.Metadata = nil
		}
	}
	if status < 400 || status > 599 {
		e.Status = http.StatusInternalServerError
		if ent, ok := Lookup(e.Group, e.Code); ok {
			e.Status = ent.Status
		}
	}
	return e, nil
}
