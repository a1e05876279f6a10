// Command berth runs the berth engine and talks to a running one.
//
// `berth start` loads the configuration (files, BERTH__section__key environment variables,
// flags), opens the store and serves the public API on the guard port and api-peer on its
// own port until SIGINT or SIGTERM. The other commands are clients of a running engine's
// public API, one command for each of its endpoints (namespaces, runners, envoys, actors,
// runner configs, datacenters, health), or work on the configuration (config validate,
// config print), the tokens file (tokens) or the store (export, import); `berth completion`
// prints shell completion scripts.
//
// Exit status: 0 on success, 1 on an error, 2 on a usage error (unknown command or flag,
// missing or extra arguments).
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/berthhq/berth/pkg/apihttp"
)

// Set at build time with -ldflags "-X main.version=... -X main.gitSHA=... -X main.buildTimestamp=...".
// gitSHA and buildTimestamp fall back to the VCS stamp Go records, when there is one.
var (
	version        = "dev"
	gitSHA         = ""
	buildTimestamp = ""
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, environ: os.Environ()})
	stop()
	os.Exit(code)
}

// buildInfo describes this binary for /health, /metadata and `berth version`.
func buildInfo() apihttp.BuildInfo {
	b := apihttp.BuildInfo{Version: version, GitSHA: gitSHA, BuildTimestamp: buildTimestamp, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.GitSHA == "":
				b.GitSHA = s.Value
			case s.Key == "vcs.time" && b.BuildTimestamp == "":
				b.BuildTimestamp = s.Value
			}
		}
	}
	if b.GitSHA == "" {
		b.GitSHA = "unknown"
	}
	if b.BuildTimestamp == "" {
		b.BuildTimestamp = "unknown"
	}
	return b
}
