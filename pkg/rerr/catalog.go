package rerr

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/berthhq/berth/pkg/rerr/internal/tmpl"
)

// Entry is one catalog row: one code of catalog.yaml, whose header describes the fields.
type Entry struct {
	Group, Code string
	// Status is the HTTP status, chosen by HTTP meaning: 404 for a missing resource, 409 for a
	// conflict with current state, 400 for invalid input, 401/403 for a missing/wrong token,
	// 502/503/504 for upstream failure, unavailability and timeouts.
	Status int
	// Message is the plain client-facing text, without placeholders. For codes the Rivet
	// engine also has, Message (and Detail, where Rivet formats one) is Rivet's text, except
	// where Rivet's plain message is itself a template (guard.connection_error,
	// ws.no_runner_config); Details that name an id are berth's.
	Message string
	// Detail, if set, is the message used when every {placeholder} in it has a value in the
	// error's metadata.
	Detail string
	// Meta lists the metadata keys callers set for this code, in the order of its
	// constructor's parameters; every placeholder of Detail is one of them.
	Meta []string
	// Optional lists the keys of Meta a caller may leave out.
	Optional []string
	// Close is the WebSocket close code when this error ends a socket: 1000 (normal, the peer
	// must not reconnect), 1008 (policy), or 0 for the default, 1011 (error; the peer reconnects).
	Close int
	// Internal marks codes whose details are for operators only; Public hides them.
	Internal bool
}

//go:generate go run ./internal/gen

// Code names one catalog entry, a group.code pair. Its only values are the constants
// catalog_gen.go declares (CodeActorNotFound, ...); the zero Code names none. Match an error
// with Is(err, code) or by switching on CodeOf(err).
type Code uint16

// entry returns c's catalog row, or nil for the zero Code or a value outside the catalog.
func (c Code) entry() *Entry {
	if c == 0 || int(c) > len(catalog) {
		return nil
	}
	return &catalog[c-1]
}

// Key returns "group.code", the form used in the x-rivet-error header and in close reasons;
// "" for a Code outside the catalog.
func (c Code) Key() string {
	if e := c.entry(); e != nil {
		return e.Group + "." + e.Code
	}
	return ""
}

// String returns Key, or "rerr.Code(n)" for a Code outside the catalog.
func (c Code) String() string {
	if e := c.entry(); e != nil {
		return e.Group + "." + e.Code
	}
	return "rerr.Code(" + strconv.Itoa(int(c)) + ")"
}

// Entry returns c's catalog entry; ok is false for a Code outside the catalog.
func (c Code) Entry() (e Entry, ok bool) {
	if p := c.entry(); p != nil {
		return *p, true
	}
	return Entry{}, false
}

// ParseCode returns the Code of key "group.code" (as in an x-rivet-error header or a close
// reason received from a peer), or the zero Code if this node's catalog lacks it.
func ParseCode(key string) Code { return index[key] }

// index maps "group.code" to its Code. Built once; the generator and the catalog test check
// uniqueness.
var index = func() map[string]Code {
	m := make(map[string]Code, len(catalog))
	for i := range catalog {
		m[catalog[i].Group+"."+catalog[i].Code] = Code(i + 1)
	}
	return m
}()

// Lookup returns the catalog entry for group.code, for errors received from a peer; an error
// built here knows its Code.
func Lookup(group, code string) (Entry, bool) { return index[group+"."+code].Entry() }

// Entries returns a copy of the whole catalog, in catalog order.
func Entries() []Entry {
	out := make([]Entry, len(catalog))
	copy(out, catalog)
	return out
}

// render returns the entry's Detail filled from meta when every placeholder has a value,
// else its plain Message.
func (e *Entry) render(meta map[string]any) string {
	if e.Detail != "" {
		if s, ok := fill(e.Detail, meta); ok {
			return s
		}
	}
	return e.Message
}

// fill replaces each {name} in tpl (name made of a-z, 0-9 and _) with fmt.Sprint of meta[name];
// it reports false if a name has no value. Braces around anything else are literal text.
func fill(tpl string, meta map[string]any) (string, bool) {
	var b strings.Builder
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			b.WriteString(tpl)
			return b.String(), true
		}
		j := strings.IndexByte(tpl[i+1:], '}')
		if j < 0 || !tmpl.IsToken(tpl[i+1:i+1+j]) {
			b.WriteString(tpl[:i+1])
			tpl = tpl[i+1:]
			continue
		}
		v, ok := meta[tpl[i+1:i+1+j]]
		if !ok {
			return "", false
		}
		b.WriteString(tpl[:i])
		if s, isStr := v.(string); isStr {
			b.WriteString(s)
		} else {
			fmt.Fprint(&b, v)
		}
		tpl = tpl[i+2+j:]
	}
}
