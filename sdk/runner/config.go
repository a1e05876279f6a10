package runner

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// Defaults of the reference client (docs/runner-sdk.md).
const (
	DefaultBackoffInitial       = time.Second
	DefaultBackoffMax           = 30 * time.Second
	DefaultShutdownTimeout      = 120 * time.Second
	DefaultShutdownPollInterval = 100 * time.Millisecond
	DefaultCommandAckInterval   = 5 * time.Minute
	// DefaultHandshakeTimeout bounds the dial and the wait for ToClientInit (berth's; the
	// reference client has none, the engine itself waits 5 s for ToServerInit).
	DefaultHandshakeTimeout = 15 * time.Second
	// DefaultPingTimeout is how long a socket may stay silent: the engine pings every 3 s and
	// drops a runner after 15 s without a pong (berth's; the reference client has none).
	DefaultPingTimeout = 30 * time.Second
	// DefaultKVTimeout is how long a KV request may wait for its answer, counted from the
	// call, queued or sent (the reference client's 30 s).
	DefaultKVTimeout = 30 * time.Second
)

// Limits the engine enforces at registration, checked here so that a bad value fails New
// instead of every connection attempt.
const (
	MaxNameLen      = 128     // runner name, bytes
	MaxKeyLen       = 512     // runner key, bytes
	MaxMetadataLen  = 1 << 20 // runner metadata, bytes; also all prepopulated actor names' metadata together
	MaxActorNameLen = 128     // a prepopulated actor name, bytes
	MaxActorNames   = 1024    // prepopulated actor names
)

// maxFrame bounds one incoming frame: the guard's 32 MiB WebSocket message limit
// (docs/protocol.md, "Framing"). The library's default (32 KiB) is far too small for commands
// carrying actor input.
const maxFrame = 32 << 20

// Config configures a Runner. Endpoint, Namespace, Name and TotalSlots are required; zero
// values of the rest mean the defaults.
type Config struct {
	// Endpoint is the engine's public URL (http, https, ws or wss), e.g. http://127.0.0.1:6420.
	// The runner connects to {Endpoint}/runners/connect.
	Endpoint string
	// Namespace is the namespace name, e.g. "default".
	Namespace string
	// Name is the runner name: the pool actors are placed on (runner_name_selector).
	Name string
	// Key identifies this runner process to the engine: reconnects with the same key keep the
	// runner id, and a second connection with it evicts the first. Default: a random UUIDv4
	// drawn by New, as the reference client does per instance.
	Key string
	// Version is the application version, used by drain-on-version-upgrade.
	Version uint32
	// TotalSlots is how many actors this runner hosts at most; at least 1.
	TotalSlots uint32
	// Token is the engine's admin token or a runner (or admin) token of Namespace, sent as
	// the rivet_token.<token> subprotocol; empty for an engine without auth.
	Token string
	// Metadata is a JSON object stored with the runner (GET /runners); nil for none.
	Metadata json.RawMessage
	// PrepopulateActorNames maps actor names to their metadata (a JSON object, or nil for {}),
	// listed by GET /actors/names before any actor of that name exists.
	PrepopulateActorNames map[string]json.RawMessage
	// ProtocolVersion is the runner protocol version, 5 to 7; default 7. With Envoy it must
	// be 0 or 7 (the envoy protocol is version 8).
	ProtocolVersion int
	// Envoy connects as an envoy (/envoys/connect, envoy protocol v8) instead of a runner:
	// Name is the envoy's pool, Key its envoy key (3 to 128 of [A-Za-z0-9_-], not starting
	// or ending with '-'), and TotalSlots is not sent (envoys have no slot limit). The
	// runner's API, hooks and actors are the same; RunnerID reports the envoy key.
	Envoy bool
	// Logger receives the runner's logs; default slog.Default().
	Logger *slog.Logger
	// HTTPClient dials the socket (TLS settings, proxies); default: a client of the runner's
	// own, whose idle connections are closed when the runner stops. Its Timeout, if any,
	// bounds each dial.
	HTTPClient *http.Client

	// Hooks are called as the connection and the runner change; all optional.
	Hooks Hooks

	// Actors makes the runner host actors: the engine's start command for an actor named n
	// calls Actors[n]() for a new instance (see Actor). Their names are added to
	// PrepopulateActorNames. With Actors set, the runner owns Hooks.OnCommands,
	// Hooks.OnForceStopActors and Hooks.ActiveActors, which must be nil. An actor whose
	// name is not here fails to start (Stopped with code ERROR, so its crash policy applies).
	Actors map[string]func() Actor

	// Timings. Zero means the default; tests shorten them.
	BackoffInitial       time.Duration // first reconnect wait, 1 s
	BackoffMax           time.Duration // cap on the reconnect wait before jitter, 30 s
	HandshakeTimeout     time.Duration // dial plus ToClientInit, 15 s
	PingTimeout          time.Duration // socket silence before it is dropped, 30 s
	ShutdownTimeout      time.Duration // graceful shutdown's wait for actors, 120 s
	ShutdownPollInterval time.Duration // how often that wait checks ActiveActors, 100 ms
	CommandAckInterval   time.Duration // how often received commands are acknowledged, 5 min
	KVTimeout            time.Duration // how long a KV request waits for its answer, 30 s
}

// Hooks are the runner's callbacks. They run one at a time, in the order of the events, on a
// goroutine of the runner (ActiveActors excepted, see there). A hook may call SendEvents and
// the accessors; it must not wait for Shutdown (start a goroutine instead), since Shutdown
// waits for the hooks.
type Hooks struct {
	// OnConnected is called after every ToClientInit, with the runner id, once the unacked
	// events have been queued for sending.
	OnConnected func(runnerID string)
	// OnDisconnected is called when a socket that had completed init ends, with the reason
	// (a *CloseError when the engine closed it). Failed connection attempts are only logged.
	OnDisconnected func(err error)
	// OnCommands delivers the engine's commands (start or stop an actor) in the order
	// received. After a reconnect the engine sends again every command not yet acknowledged.
	OnCommands func(cmds []proto.CommandWrapper)
	// OnForceStopActors asks the host to stop every local actor without reporting to the
	// engine, which has already given them away: see ForceStopReason.
	OnForceStopActors func(reason ForceStopReason)
	// OnShutdown is called once, last, when the runner stops for good: reason is nil after
	// Shutdown, a *CloseError for eviction, or why Start failed.
	OnShutdown func(reason error)
	// ActiveActors reports how many actors the host still runs; graceful shutdown waits for
	// 0. It is called from Shutdown's goroutine and must be safe for concurrent use. Nil
	// means none.
	ActiveActors func() int
}

// ForceStopReason says why OnForceStopActors is called.
type ForceStopReason int

const (
	// RunnerLost: the runner stayed disconnected longer than the engine's
	// runnerLostThreshold, after which the engine reschedules its actors elsewhere.
	RunnerLost ForceStopReason = iota + 1
	// RunnerIDChanged: a reconnect brought a new runner id; the old runner expired.
	RunnerIDChanged
)

func (r ForceStopReason) String() string {
	switch r {
	case RunnerLost:
		return "runner_lost"
	case RunnerIDChanged:
		return "runner_id_changed"
	}
	return "ForceStopReason(" + strconv.Itoa(int(r)) + ")"
}

// ConfigError is one invalid Config field. New returns all of them, joined.
type ConfigError struct {
	Field  string // the Config field, e.g. "TotalSlots"
	Value  any    // the value given
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("runner: config %s = %s: %s", e.Field, preview(e.Value), e.Reason)
}

func preview(v any) string {
	s := fmt.Sprintf("%#v", v)
	if b, ok := v.(json.RawMessage); ok {
		s = strconv.Quote(string(b))
	}
	if len(s) > 64 {
		cut := 61
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// withDefaults returns c with the zero values filled, and the connect URL without its query.
// Every violation is reported, each naming its field.
func (c Config) withDefaults() (Config, *url.URL, error) {
	var errs []error
	bad := func(field string, v any, reason string) {
		errs = append(errs, &ConfigError{Field: field, Value: v, Reason: reason})
	}

	u, err := connectURL(c.Endpoint)
	if err != nil {
		bad("Endpoint", c.Endpoint, err.Error())
	}
	if c.Namespace == "" {
		bad("Namespace", c.Namespace, "required")
	} else if !utf8.ValidString(c.Namespace) {
		bad("Namespace", c.Namespace, "not valid UTF-8")
	}
	checkText := func(field, v string, max int) {
		switch {
		case v == "":
			bad(field, v, "required")
		case len(v) > max:
			bad(field, v, "longer than "+strconv.Itoa(max)+" bytes")
		case !utf8.ValidString(v):
			bad(field, v, "not valid UTF-8")
		}
	}
	checkText("Name", c.Name, MaxNameLen)
	if c.Key == "" {
		c.Key = newUUID()
	}
	checkText("Key", c.Key, MaxKeyLen)
	if c.TotalSlots == 0 {
		bad("TotalSlots", c.TotalSlots, "must be at least 1")
	}
	if c.Token != "" && !isToken(c.Token) {
		bad("Token", "(hidden)", "contains characters a WebSocket subprotocol cannot carry (it must be an HTTP token)")
	}
	if c.Metadata != nil {
		if err := checkObject(c.Metadata, MaxMetadataLen); err != "" {
			bad("Metadata", c.Metadata, err)
		}
	}
	if len(c.Actors) > 0 {
		names := make(map[string]json.RawMessage, len(c.PrepopulateActorNames)+len(c.Actors))
		for name, md := range c.PrepopulateActorNames {
			names[name] = md
		}
		for _, name := range sortedKeys(c.Actors) {
			field := "Actors[" + strconv.Quote(name) + "]"
			switch {
			case name == "" || !utf8.ValidString(name):
				bad(field, name, "actor name must be non-empty UTF-8")
				continue
			case len(name) > MaxActorNameLen:
				bad(field, name, "actor name longer than "+strconv.Itoa(MaxActorNameLen)+" bytes")
				continue
			case c.Actors[name] == nil:
				bad(field, "(nil)", "no factory")
			}
			if _, ok := names[name]; !ok {
				names[name] = nil
			}
		}
		c.PrepopulateActorNames = names
		for _, h := range []struct {
			field string
			set   bool
		}{
			{"Hooks.OnCommands", c.Hooks.OnCommands != nil},
			{"Hooks.OnForceStopActors", c.Hooks.OnForceStopActors != nil},
			{"Hooks.ActiveActors", c.Hooks.ActiveActors != nil},
		} {
			if h.set {
				bad(h.field, "(set)", "must be nil when Actors is set: the runner hosts the actors")
			}
		}
	}
	if n := len(c.PrepopulateActorNames); n > MaxActorNames {
		bad("PrepopulateActorNames", "("+strconv.Itoa(n)+" names)", "more than "+strconv.Itoa(MaxActorNames)+" names")
	}
	size := 0
	for _, name := range sortedKeys(c.PrepopulateActorNames) {
		md := c.PrepopulateActorNames[name]
		field := "PrepopulateActorNames[" + strconv.Quote(name) + "]"
		switch {
		case name == "" || !utf8.ValidString(name):
			bad(field, name, "actor name must be non-empty UTF-8")
		case len(name) > MaxActorNameLen:
			bad(field, name, "actor name longer than "+strconv.Itoa(MaxActorNameLen)+" bytes")
		}
		if md != nil {
			size += len(md)
			if err := checkObject(md, MaxMetadataLen); err != "" {
				bad(field, md, err)
			}
		}
	}
	if size > MaxMetadataLen {
		bad("PrepopulateActorNames", "("+strconv.Itoa(size)+" bytes of metadata)", "metadata larger than "+strconv.Itoa(MaxMetadataLen)+" bytes in all")
	}
	if c.Envoy {
		if c.ProtocolVersion != 0 && c.ProtocolVersion != proto.LatestVersion {
			bad("ProtocolVersion", c.ProtocolVersion, "an envoy speaks envoy protocol 8; leave ProtocolVersion 0")
		}
		if !isEnvoyKey(c.Key) {
			bad("Key", c.Key, "an envoy key is 3 to 128 of [A-Za-z0-9_-], not starting or ending with '-'")
		}
	}
	switch {
	case c.ProtocolVersion == 0:
		c.ProtocolVersion = proto.LatestVersion
	case c.ProtocolVersion < proto.MinVersion || c.ProtocolVersion > proto.LatestVersion:
		bad("ProtocolVersion", c.ProtocolVersion,
			fmt.Sprintf("unsupported; want %d to %d", proto.MinVersion, proto.LatestVersion))
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}

	for _, d := range []struct {
		field string
		v     *time.Duration
		def   time.Duration
	}{
		{"BackoffInitial", &c.BackoffInitial, DefaultBackoffInitial},
		{"BackoffMax", &c.BackoffMax, DefaultBackoffMax},
		{"HandshakeTimeout", &c.HandshakeTimeout, DefaultHandshakeTimeout},
		{"PingTimeout", &c.PingTimeout, DefaultPingTimeout},
		{"ShutdownTimeout", &c.ShutdownTimeout, DefaultShutdownTimeout},
		{"ShutdownPollInterval", &c.ShutdownPollInterval, DefaultShutdownPollInterval},
		{"CommandAckInterval", &c.CommandAckInterval, DefaultCommandAckInterval},
		{"KVTimeout", &c.KVTimeout, DefaultKVTimeout},
	} {
		switch {
		case *d.v < 0:
			bad(d.field, *d.v, "must not be negative")
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if c.BackoffInitial > 0 && c.BackoffMax > 0 && c.BackoffMax < c.BackoffInitial {
		bad("BackoffMax", c.BackoffMax, "less than BackoffInitial ("+c.BackoffInitial.String()+")")
	}
	if len(errs) > 0 {
		return Config{}, nil, errors.Join(errs...)
	}
	return c, u, nil
}

// connectURL turns the endpoint into the socket URL {endpoint}/runners/connect, as the
// reference client: http→ws, https→wss, a trailing slash trimmed.
func connectURL(endpoint string) (*url.URL, error) {
	if endpoint == "" {
		return nil, errors.New("required")
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return nil, errors.New("scheme must be http, https, ws or wss")
	}
	switch {
	case u.Host == "":
		return nil, errors.New("no host")
	case u.User != nil:
		return nil, errors.New("must not carry user info; use Token")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, errors.New("must not have a query or fragment")
	}
	return u, nil
}

// checkObject returns why md is not a JSON object of at most max bytes, or "".
func checkObject(md json.RawMessage, max int) string {
	if len(md) > max {
		return "larger than " + strconv.Itoa(max) + " bytes"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(md, &obj); err != nil || obj == nil {
		return "not a JSON object"
	}
	return ""
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2), as a subprotocol must be.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// newUUID returns a random UUIDv4 in its text form.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// isEnvoyKey reports whether k is a valid envoy key (the engine's rule).
func isEnvoyKey(k string) bool {
	if len(k) < 3 || len(k) > 128 || k[0] == '-' || k[len(k)-1] == '-' {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
