package guard

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/rerr"
)

// rvtPrefix marks the query parameters that route a /gateway request; they are removed
// before the request reaches the actor.
const rvtPrefix = "rvt-"

// Query methods.
const (
	MethodGet         = "get"
	MethodGetOrCreate = "getOrCreate"
)

// Query is a /gateway/{name}/...?rvt-... request: which actor it names, by key, and the path
// the actor sees (docs/gateway.md, "Query routing").
type Query struct {
	Namespace string
	Method    string // MethodGet or MethodGetOrCreate
	Name      string
	// Key is rvt-key split at commas after decoding; missing or empty is no components.
	Key []string
	// The rest is for getOrCreate only.
	Pool        string // rvt-pool, else rvt-runner
	Input       []byte // rvt-input decoded: one CBOR data item, or nil
	Region      string // rvt-region: a datacenter name, or "" for the local one
	CrashPolicy string // rvt-crash-policy, default sleep

	Token         string // rvt-token; not checked (as in Rivet OSS)
	SkipReadyWait bool   // rvt-skip-ready-wait
	// Path is "/" + the rest after the name segment, plus "?" and the actor's own query
	// parameters byte-exact (every rvt-* and empty one removed), if any are left.
	Path string
}

// SerializedKey is the engine's key string for q.Key, as rivetkit writes it: components
// joined with "/", "\" and "/" escaped with "\", an empty component written "\0", and no
// components at all written "/".
func (q Query) SerializedKey() string {
	if len(q.Key) == 0 {
		return "/"
	}
	var b strings.Builder
	for i, part := range q.Key {
		if i > 0 {
			b.WriteByte('/')
		}
		if part == "" {
			b.WriteString(`\0`)
			continue
		}
		for j := 0; j < len(part); j++ {
			if part[j] == '\\' || part[j] == '/' {
				b.WriteByte('\\')
			}
			b.WriteByte(part[j])
		}
	}
	return b.String()
}

// splitTarget splits a raw request target into its path and query, dropping a #fragment.
func splitTarget(raw string) (path, query string, hasQuery bool) {
	if i := strings.IndexByte(raw, '#'); i >= 0 {
		raw = raw[:i]
	}
	path, query, hasQuery = strings.Cut(raw, "?")
	return path, query, hasQuery
}

// isGatewayBase reports whether the path (without query) is a gateway path: its first
// non-empty segment is "gateway" and it has no "//".
func isGatewayBase(path string) bool {
	if strings.Contains(path, "//") {
		return false
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return first == "gateway"
}

// hasRvtParam reports whether any raw query parameter's key starts with rvt-.
func hasRvtParam(rawQuery string) bool {
	for part := range strings.SplitSeq(rawQuery, "&") {
		key, _, _ := strings.Cut(part, "=")
		if strings.HasPrefix(key, rvtPrefix) {
			return true
		}
	}
	return false
}

// ParseQuery parses the query form /gateway/{name}[/{rest}]?rvt-namespace=…&rvt-method=…
// from the raw path and raw query, with every rule and error of Rivet's parser.
// ok is false when the request is not in that form (not a gateway path, or no rvt-*
// parameter); then the direct form applies. Errors are the guard.query_* codes.
func ParseQuery(rawPath, rawQuery string) (q Query, ok bool, err error) {
	if !isGatewayBase(rawPath) || !hasRvtParam(rawQuery) {
		return Query{}, false, nil
	}
	params, err := rvtParams(rawQuery)
	if err != nil {
		return Query{}, true, err
	}
	rest := strings.TrimPrefix(rawPath, "/")
	rest = strings.TrimPrefix(rest, "gateway")
	rest = strings.TrimPrefix(rest, "/")
	seg, tail, _ := strings.Cut(rest, "/")
	if seg == "" {
		return Query{}, true, rerr.New("guard", "query_empty_actor_name")
	}
	if strings.Contains(seg, "@") {
		return Query{}, true, rerr.New("guard", "query_path_token_syntax")
	}
	name, valid := percentDecode(seg)
	if !valid {
		return Query{}, true, rerr.New("guard", "query_invalid_percent_encoding", "name", "name")
	}
	if name == "" {
		return Query{}, true, rerr.New("guard", "query_empty_actor_name")
	}
	q, err = buildQuery(params)
	if err != nil {
		return Query{}, true, err
	}
	q.Name = name
	q.Path = "/" + tail
	if actorQuery := stripRvtParams(rawQuery); actorQuery != "" {
		q.Path += "?" + actorQuery
	}
	return q, true, nil
}

type rvtParam struct{ key, value string }

// rvtParams returns the rvt-* parameters in order, values form-decoded ("+" is a space,
// then percent-decoding); a value that does not decode to UTF-8 is
// guard.query_invalid_percent_encoding naming the parameter.
func rvtParams(rawQuery string) ([]rvtParam, error) {
	var out []rvtParam
	for part := range strings.SplitSeq(rawQuery, "&") {
		key, raw, _ := strings.Cut(part, "=")
		if !strings.HasPrefix(key, rvtPrefix) {
			continue
		}
		v, ok := percentDecode(strings.ReplaceAll(raw, "+", " "))
		if !ok {
			return nil, rerr.New("guard", "query_invalid_percent_encoding", "name", key)
		}
		out = append(out, rvtParam{key: key, value: v})
	}
	return out, nil
}

// stripRvtParams is the raw query without its rvt-* and empty parameters, the others kept
// byte-exact and in order.
func stripRvtParams(rawQuery string) string {
	var kept []string
	for part := range strings.SplitSeq(rawQuery, "&") {
		key, _, _ := strings.Cut(part, "=")
		if part == "" || strings.HasPrefix(key, rvtPrefix) {
			continue
		}
		kept = append(kept, part)
	}
	return strings.Join(kept, "&")
}

// percentDecode decodes %XX escapes as Rust's urlencoding::decode does: a "%" not followed
// by two hex digits stays as it is; the result must be UTF-8.
func percentDecode(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, utf8.ValidString(s)
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b), utf8.Valid(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// rvtFields are the known parameters (after the prefix), for the unknown-field message.
const rvtFields = "`namespace`, `method`, `runner`, `pool`, `key`, `input`, `region`, `crash-policy`, `token`, `skip-ready-wait`"

// buildQuery checks the rvt-* parameters: each at most once, all known, namespace and method
// present, and the method's rules.
func buildQuery(params []rvtParam) (Query, error) {
	vals := make(map[string]string, len(params))
	for _, p := range params {
		field := strings.TrimPrefix(p.key, rvtPrefix)
		if _, dup := vals[field]; dup {
			return Query{}, rerr.New("guard", "query_duplicate_param", "name", p.key)
		}
		switch field {
		case "namespace", "method", "runner", "pool", "key", "input", "region", "crash-policy", "token", "skip-ready-wait":
		default:
			return Query{}, invalidParams("unknown field `" + field + "`, expected one of " + rvtFields)
		}
		vals[field] = p.value
	}
	var q Query
	var has bool
	if q.Namespace, has = vals["namespace"]; !has {
		return Query{}, invalidParams("missing field `namespace`")
	}
	if q.Method, has = vals["method"]; !has {
		return Query{}, invalidParams("missing field `method`")
	}
	if v, has := vals["skip-ready-wait"]; has {
		switch v {
		case "true", "1":
			q.SkipReadyWait = true
		case "false", "0":
		default:
			return Query{}, invalidParams("invalid skip-ready-wait " + quote(v) + ", expected true, false, 1 or 0")
		}
	}
	q.Token = vals["token"]
	if k := vals["key"]; k != "" {
		q.Key = strings.Split(k, ",")
	}
	switch q.Method {
	case MethodGet:
		for _, f := range []string{"input", "region", "crash-policy", "runner"} {
			if _, has := vals[f]; has {
				return Query{}, rerr.New("guard", "query_get_disallowed_params")
			}
		}
	case MethodGetOrCreate:
		var hasPool, hasRunner bool
		q.Pool, hasPool = vals["pool"]
		if !hasPool {
			if q.Pool, hasRunner = vals["runner"]; !hasRunner {
				return Query{}, rerr.New("guard", "query_missing_pool")
			}
		}
		if in, has := vals["input"]; has {
			b, err := decodeQueryInput(in)
			if err != nil {
				return Query{}, err
			}
			q.Input = b
		}
		q.Region = vals["region"]
		q.CrashPolicy = actor.CrashSleep
		if cp, has := vals["crash-policy"]; has {
			switch cp {
			case actor.CrashRestart, actor.CrashSleep, actor.CrashDestroy:
				q.CrashPolicy = cp
			default:
				return Query{}, invalidParams("unknown crash policy: " + cp + ", expected restart, sleep, or destroy")
			}
		}
	default:
		return Query{}, invalidParams("unknown method: " + q.Method + ", expected get or getOrCreate")
	}
	return q, nil
}

func invalidParams(detail string) *rerr.Error {
	return rerr.New("guard", "query_invalid_params", "detail", detail)
}

func quote(s string) string { return "'" + s + "'" }

// decodeQueryInput decodes rvt-input: base64url without padding (strict: no other byte,
// canonical trailing bits) that decodes to one well-formed CBOR data item.
func decodeQueryInput(v string) ([]byte, error) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return nil, rerr.New("guard", "query_invalid_base64_input")
		}
	}
	if len(v)%4 == 1 {
		return nil, rerr.New("guard", "query_invalid_base64_input")
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(v)
	if err != nil {
		return nil, rerr.New("guard", "query_invalid_base64_input")
	}
	if err := validCBOR(b); err != nil {
		return nil, rerr.New("guard", "query_invalid_cbor_input", "detail", err.Error())
	}
	return b, nil
}
