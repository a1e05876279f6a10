package runnerconfig

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/rerr"
)

// Entry is one stored runner config: the config of a runner name (a pool)
// in one namespace of this datacenter.
type Entry struct {
	Name   string
	Config keys.RunnerConfig
	// ProtocolVersion is the pool's envoy protocol version, once an envoy or
	// the serverless endpoint reported one; nil before.
	ProtocolVersion *uint16
	// PoolError is the pool's runner_pool_error while it has one (JSON), else nil.
	PoolError json.RawMessage
}

// MaxNameLen bounds a runner name: the envoy protocol's bound on pool names
// (pegboard-envoy), so that every pool an envoy can join can have a config.
const MaxNameLen = 128

// CheckName reports why name cannot be a runner name, as api.bad_request
// naming field: it must be 1 to MaxNameLen bytes of UTF-8 without control
// characters or '/'. (Rivet does not check runner names. berth keeps '/' out
// because the name is a URL path segment that api-public forwards to every
// datacenter.)
func CheckName(field, name string) error {
	switch {
	case name == "":
		return rerr.BadRequest(field, "must not be empty")
	case len(name) > MaxNameLen:
		return rerr.BadRequest(field, "longer than "+strconv.Itoa(MaxNameLen)+" bytes")
	case !utf8.ValidString(name):
		return rerr.BadRequest(field, "not valid UTF-8")
	case strings.ContainsFunc(name, func(r rune) bool { return r == '/' || unicode.IsControl(r) }):
		return rerr.BadRequest(field, "must not contain '/' or control characters")
	}
	return nil
}
