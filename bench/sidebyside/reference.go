package sidebyside

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The reference engine: the Rivet engine's release binary as npm ships it.
const (
	RefVersion = "2.3.19"
	RefPackage = "@rivetkit/engine-cli-linux-x64-musl@" + RefVersion
)

// ReferenceBinary returns the rivet-engine binary: BERTH_RIVET_ENGINE when set, else the one
// in the user's cache directory (berth/rivet-engine-2.3.19), installed there with npm if
// missing (97 MB; logf reports that). The error says how to provide it otherwise.
func ReferenceBinary(logf func(format string, args ...any)) (string, error) {
	if p := os.Getenv("BERTH_RIVET_ENGINE"); p != "" {
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the Rivet engine (%v); set BERTH_RIVET_ENGINE", err)
	}
	dir := filepath.Join(cache, "berth", "rivet-engine-"+RefVersion)
	bin := filepath.Join(dir, "node_modules", "@rivetkit", "engine-cli-linux-x64-musl", "rivet-engine")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	logf("installing %s (97 MB) into %s", RefPackage, dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot install the Rivet engine: %w", err)
	}
	cmd := exec.Command("npm", "install", "--prefix", dir, "--no-save", "--no-audit", "--no-fund", RefPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot install the Rivet engine (%v): %s; set BERTH_RIVET_ENGINE", err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("npm installed %s but %s is missing", RefPackage, bin)
	}
	return bin, nil
}

// ReferenceCommand writes the reference engine's configuration into dir, which also becomes
// its home and data folder, and returns the command that starts it on loopback: guard (the
// public API and the gateway), api-peer and metrics on the given ports. As
// docs/benchmarks.md says, RUST_BACKTRACE is unset (with it the gateway is several times
// slower), workflow load shedding is off (it sheds work once the whole machine is above 70%
// CPU, which a benchmark on a shared machine reaches) and telemetry is off; no RIVET_*
// variable of the caller's environment is passed on. Each extra map adds top-level sections of the
// configuration (auth, pegboard, database, …), replacing those of the same name.
func ReferenceCommand(bin, dir string, guard, peer, metrics int, extra ...map[string]any) (*exec.Cmd, error) {
	cfg := map[string]any{
		// The datacenter's URLs are the ports it listens on: the reference sends its public
		// URL to serverless endpoints (x-rivet-endpoint), which rivetkit checks.
		"topology": map[string]any{"datacenter_label": 1, "datacenters": map[string]any{
			"default": map[string]any{"datacenter_label": 1, "is_leader": true,
				"public_url": fmt.Sprintf("http://127.0.0.1:%d", guard), "peer_url": fmt.Sprintf("http://127.0.0.1:%d", peer)},
		}},
		"guard":    map[string]any{"host": "127.0.0.1", "port": guard},
		"api_peer": map[string]any{"host": "127.0.0.1", "port": peer},
		"metrics":  map[string]any{"host": "127.0.0.1", "port": metrics},
		"runtime":  map[string]any{"worker_load_shedding_curve": [][2]int{{100000, 1000}, {100001, 999}}},
	}
	for _, m := range extra {
		maps.Copy(cfg, m)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "rivet.json")
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", config, "start")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RUST_BACKTRACE=") && !strings.HasPrefix(kv, "RIVET_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+dir, "XDG_DATA_HOME="+dir, "RIVET__TELEMETRY__ENABLED=false")
	cmd.Dir = dir
	return cmd, nil
}
