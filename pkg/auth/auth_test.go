package auth

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

// clock is a settable time for the tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func writeTokens(t *testing.T, path string, entries ...Entry) {
	t.Helper()
	if err := WriteFile(path, File{Tokens: entries}); err != nil {
		t.Fatal(err)
	}
}

func code(err *rerr.Error) string {
	if err == nil {
		return "ok"
	}
	return err.Key()
}

func TestAuthenticate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	runnerTok, readTok, oldTok := NewToken(), NewToken(), NewToken()
	clk := &clock{t: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	expiry := clk.t.Add(time.Hour)
	writeTokens(t, path,
		Entry{ID: "ci-runner", Namespace: "prod", Role: RoleRunner, SHA256: Hash(runnerTok)},
		Entry{ID: "dash", Namespace: "prod", Role: RoleRead, SHA256: Hash(readTok)},
		Entry{ID: "old", Namespace: "prod", Role: RoleAdmin, SHA256: Hash(oldTok), ExpiresAt: &expiry},
	)
	a, err := New(Options{AdminToken: "admin", TokensFile: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token string
		want  Grant
		err   string
	}{
		{"", Grant{}, "api.unauthorized"},
		{"admin", Everything, "ok"},
		{"admin ", Grant{}, "api.forbidden"},
		{runnerTok, Grant{Role: RoleRunner, Namespace: "prod", TokenID: "ci-runner"}, "ok"},
		{readTok, Grant{Role: RoleRead, Namespace: "prod", TokenID: "dash"}, "ok"},
		{oldTok, Grant{Role: RoleAdmin, Namespace: "prod", TokenID: "old"}, "ok"},
		{Hash(runnerTok), Grant{}, "api.forbidden"}, // the hash is not the token
		{NewToken(), Grant{}, "api.forbidden"},
	} {
		g, err := a.Authenticate(tc.token)
		if code(err) != tc.err || g != tc.want {
			t.Errorf("Authenticate(%.12q) = %+v, %s; want %+v, %s", tc.token, g, code(err), tc.want, tc.err)
		}
	}

	// An expired token is refused.
	clk.add(time.Hour)
	if _, err := a.Authenticate(oldTok); code(err) != "api.forbidden" {
		t.Errorf("expired token: %s", code(err))
	}

	// Rotation: the file is rewritten; the change is seen at the next look (at most once a
	// second), without a new Authenticator.
	newTok := NewToken()
	writeTokens(t, path, Entry{ID: "ci-runner-2", Namespace: "prod", Role: RoleRunner, SHA256: Hash(newTok)})
	clk.add(recheck)
	if _, err := a.Authenticate(runnerTok); code(err) != "api.forbidden" {
		t.Errorf("revoked token: %s", code(err))
	}
	if g, err := a.Authenticate(newTok); err != nil || g.TokenID != "ci-runner-2" {
		t.Errorf("new token: %+v %s", g, code(err))
	}

	// A broken file keeps the tokens in force.
	if err := os.WriteFile(path, []byte(`{"tokens": [{"id": "x"`), 0o600); err != nil {
		t.Fatal(err)
	}
	clk.add(recheck)
	if _, err := a.Authenticate(newTok); err != nil {
		t.Errorf("after a broken edit: %s", code(err))
	}
}

func TestAuthOff(t *testing.T) {
	var nilAuth *Authenticator
	for _, a := range []*Authenticator{nilAuth, Admin("")} {
		if g, err := a.Authenticate(""); err != nil || g != Everything || a.Enabled() {
			t.Errorf("auth off: %+v %s enabled %v", g, code(err), a.Enabled())
		}
	}
}

func TestNewRefusesABadFile(t *testing.T) {
	dir := t.TempDir()
	good := Hash("x")
	for name, body := range map[string]string{
		"missing":        "",
		"not JSON":       "tokens",
		"unknown field":  `{"tokens": [], "extra": 1}`,
		"bad id":         `{"tokens": [{"id": "a b", "namespace": "n", "role": "read", "sha256": "` + good + `"}]}`,
		"bad role":       `{"tokens": [{"id": "a", "namespace": "n", "role": "root", "sha256": "` + good + `"}]}`,
		"no namespace":   `{"tokens": [{"id": "a", "namespace": "", "role": "read", "sha256": "` + good + `"}]}`,
		"short hash":     `{"tokens": [{"id": "a", "namespace": "n", "role": "read", "sha256": "abc"}]}`,
		"duplicate id":   `{"tokens": [{"id": "a", "namespace": "n", "role": "read", "sha256": "` + good + `"}, {"id": "a", "namespace": "n", "role": "read", "sha256": "` + Hash("y") + `"}]}`,
		"duplicate hash": `{"tokens": [{"id": "a", "namespace": "n", "role": "read", "sha256": "` + good + `"}, {"id": "b", "namespace": "n", "role": "read", "sha256": "` + good + `"}]}`,
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if body != "" {
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := New(Options{AdminToken: "admin", TokensFile: path}); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestGrantPolicy(t *testing.T) {
	read := Grant{Role: RoleRead, Namespace: "a"}
	runner := Grant{Role: RoleRunner, Namespace: "a"}
	admin := Grant{Role: RoleAdmin, Namespace: "a"}
	for _, tc := range []struct {
		what string
		err  *rerr.Error
		want bool
	}{
		{"admin token, any call", Everything.AllowAPI(http.MethodDelete), true},
		{"admin token, any host", Everything.AllowHost("b"), true},
		{"admin token, global", Everything.AllowGlobal(), true},
		{"read GET", read.AllowAPI(http.MethodGet), true},
		{"read HEAD", read.AllowAPI(http.MethodHead), true},
		{"read POST", read.AllowAPI(http.MethodPost), false},
		{"read host", read.AllowHost("a"), false},
		{"runner GET", runner.AllowAPI(http.MethodGet), false},
		{"runner host", runner.AllowHost("a"), true},
		{"runner host elsewhere", runner.AllowHost("b"), false},
		{"namespace admin PUT", admin.AllowAPI(http.MethodPut), true},
		{"namespace admin host", admin.AllowHost("a"), true},
		{"namespace admin global", admin.AllowGlobal(), false},
	} {
		if (tc.err == nil) != tc.want {
			t.Errorf("%s: %v", tc.what, tc.err)
		}
	}
}

func TestNewToken(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b || !strings.HasPrefix(a, TokenPrefix) || len(a) != len(TokenPrefix)+43 {
		t.Errorf("NewToken: %q, %q", a, b)
	}
	if strings.ContainsAny(a, "+/= ") {
		t.Errorf("%q is not usable in a WebSocket subprotocol", a)
	}
}

// ParseFile never panics, and what it accepts passes Check and survives a write and a read.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(`{"tokens": []}`))
	f.Add([]byte(`{"tokens": [{"id": "a", "namespace": "n", "role": "read", "sha256": "` + Hash("x") + `", "expires_at": "2027-01-01T00:00:00Z"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseFile(data)
		if err != nil {
			return
		}
		if err := file.Check(); err != nil {
			t.Fatalf("accepted, then Check: %v", err)
		}
		path := filepath.Join(t.TempDir(), "tokens.json")
		if err := WriteFile(path, file); err != nil {
			t.Fatal(err)
		}
		again, err := ReadFile(path)
		if err != nil || len(again.Tokens) != len(file.Tokens) {
			t.Fatalf("written and read again: %v, %d tokens of %d", err, len(again.Tokens), len(file.Tokens))
		}
	})
}
