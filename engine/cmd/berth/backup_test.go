package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/engine/config"
)

// startOn starts an engine with the admin token "tok" on the store url, and returns it.
func startOn(t *testing.T, url string) *engine.Engine {
	t.Helper()
	cfg := config.Default()
	cfg.Database.URL = url
	cfg.Auth.AdminToken = "tok"
	cfg.Guard.Host, cfg.Guard.Port = "127.0.0.1", 0
	cfg.APIPeer.Host, cfg.APIPeer.Port = "127.0.0.1", 0
	cfg.Metrics.Host, cfg.Metrics.Port = "127.0.0.1", 0
	e, err := engine.Start(context.Background(), engine.Options{Config: cfg, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func stop(t *testing.T, e *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Errorf("engine Shutdown: %v", err)
	}
}

// berth backup takes the store of a running engine (an embedded one, held open) through
// api-peer; berth import loads it into an empty store, and an engine started there finds
// the data.
func TestBackupRestore(t *testing.T) {
	dir := t.TempDir()
	e := startOn(t, "file://"+filepath.Join(dir, "live"))
	env := []string{"BERTH_ENDPOINT=http://" + e.PublicAddr().String(), "BERTH_TOKEN=tok"}
	ok(t, env, "namespaces", "create", "backed-up", "--display-name", "Backed Up")
	peer := "http://" + e.PeerAddr().String()
	file := filepath.Join(dir, "backup.bin")

	if r := berth(t, nil, "backup", "--endpoint", peer, "--out", file); r.code != 1 || !strings.Contains(r.err, "401 Unauthorized") {
		t.Errorf("backup without the token: exit %d, stderr %q", r.code, r.err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a refused backup left a file: %v", err)
	}
	r := ok(t, []string{"BERTH_TOKEN=tok"}, "backup", "--endpoint", peer, "--out", file)
	if !strings.Contains(r.err, "backed up ") {
		t.Errorf("backup stderr: %q", r.err)
	}
	// The engine keeps serving after the backup.
	ok(t, env, "namespaces", "get", "backed-up")
	stop(t, e)

	restored := "file://" + filepath.Join(dir, "restored")
	if r := ok(t, nil, "import", "--db", restored, "--in", file); !strings.Contains(r.err, "imported ") {
		t.Errorf("import stderr: %q", r.err)
	}
	e = startOn(t, restored)
	defer stop(t, e)
	env = []string{"BERTH_ENDPOINT=http://" + e.PublicAddr().String(), "BERTH_TOKEN=tok"}
	if r := ok(t, env, "namespaces", "get", "backed-up"); !strings.Contains(r.out, "Backed Up") {
		t.Errorf("the restored store: namespaces get: %q", r.out)
	}
}
