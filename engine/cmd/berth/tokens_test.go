package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/pkg/auth"
)

// A token made by `berth tokens create` works against a running engine at once, with its
// role's rights only; `tokens revoke` ends it without a restart.
func TestTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.json")
	r := ok(t, nil, "tokens", "create", "--file", file, "-n", "default", "--role", "read", "--id", "dash")
	readTok := strings.TrimSpace(r.out)
	if !strings.HasPrefix(readTok, auth.TokenPrefix) || !strings.Contains(r.err, "shown this once") {
		t.Fatalf("tokens create: stdout %q, stderr %q", r.out, r.err)
	}
	url := startEngineWith(t, func(c *config.Config) { c.Auth.AdminToken, c.Auth.TokensFile = "admin", file })
	env := []string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=" + readTok}

	// The read token lists, and cannot create.
	ok(t, env, "namespaces", "list")
	if r := berth(t, env, "namespaces", "create", "x"); r.code != 1 || !strings.Contains(r.err, "api.forbidden") {
		t.Errorf("create with a read token: exit %d, %q", r.code, r.err)
	}

	// A second token is added while the engine runs, and listed without its secret.
	r = ok(t, nil, "tokens", "create", "--file", file, "-n", "default", "--role", "admin", "--expires-in", "1h")
	adminTok := strings.TrimSpace(r.out)
	list := ok(t, nil, "tokens", "list", "--file", file).out
	if strings.Count(list, "\n") != 3 || !strings.Contains(list, "dash") || strings.Contains(list, readTok) || strings.Contains(list, adminTok) {
		t.Errorf("tokens list:\n%s", list)
	}
	if r := berth(t, nil, "tokens", "create", "--file", file, "-n", "default", "--role", "read", "--id", "dash"); r.code != 1 || !strings.Contains(r.err, "appears twice") {
		t.Errorf("a duplicate id: exit %d, %q", r.code, r.err)
	}
	if r := berth(t, nil, "tokens", "create", "--file", file, "-n", "default", "--role", "root"); r.code != 2 {
		t.Errorf("a bad role: exit %d, %q", r.code, r.err)
	}
	adminEnv := []string{"BERTH_ENDPOINT=" + url, "BERTH_TOKEN=" + adminTok}
	eventually(t, "the new token accepted", func() bool { return berth(t, adminEnv, "namespaces", "list").code == 0 })

	// Revoked, the read token is refused without a restart.
	ok(t, nil, "tokens", "revoke", "--file", file, "dash")
	eventually(t, "the revoked token refused", func() bool {
		r := berth(t, env, "namespaces", "list")
		return r.code == 1 && strings.Contains(r.err, "api.forbidden")
	})
	if r := berth(t, nil, "tokens", "revoke", "--file", file, "dash"); r.code != 1 || !strings.Contains(r.err, `no token "dash"`) {
		t.Errorf("revoking twice: exit %d, %q", r.code, r.err)
	}
}

// eventually polls cond, as an outside observer of the engine would, until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within %v", what, waitFor)
		}
		time.Sleep(100 * time.Millisecond) // the engine looks at the file at most once a second
	}
}
