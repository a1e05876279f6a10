// Command berth runs the berth engine and talks to a running one.
//
// `berth start` loads the configuration (files, BERTH__section__key environment variables,
// flags), opens the store and serves the public API on the guard port and api-peer on its
// own port until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/engine/config"
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
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "berth:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		usage()
		return errors.New("missing command")
	}
	switch args[0] {
	case "start":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return start(ctx, args[1:], os.Environ())
	case "version":
		fmt.Println("berth", version)
		return nil
	case "help", "-h", "--help":
		usage()
		return nil
	}
	usage()
	return fmt.Errorf("unknown command %q", args[0])
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: berth <command> [flags]

commands:
  start     run the engine (berth start -h for flags)
  version   print the version
`)
}

// repeated collects every use of a repeatable flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// start runs the engine until ctx ends. environ is the environment (os.Environ form).
func start(ctx context.Context, args, environ []string) error {
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	var files repeated
	fs.Var(&files, "config", "config file, JSON (.json) or YAML (.yaml, .yml); repeat to merge several, later ones win")
	listen := fs.String("listen", "", "guard and public API address, host:port (overrides guard.host and guard.port; default :6420)")
	db := fs.String("db", "", "store URL: file://PATH, mem://, postgres://..., fdb://CLUSTER_FILE (overrides database.url; default file://data/berth)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: berth start [flags]

Configuration comes from the defaults, then each --config file in order, then environment
variables BERTH__section__key (e.g. BERTH__auth__admin_token, BERTH__api_peer__port), then
these flags. Unknown keys and bad values stop the engine before it starts.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("start: unexpected arguments %q", strings.Join(fs.Args(), " "))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("start: --log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	var overrides []config.Override
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["listen"] {
		host, port, err := net.SplitHostPort(*listen)
		if err != nil {
			return fmt.Errorf("start: --listen %q: want host:port or :port: %w", *listen, err)
		}
		overrides = append(overrides,
			config.Override{Path: "guard.host", Value: host, Source: "flag --listen"},
			config.Override{Path: "guard.port", Value: port, Source: "flag --listen"})
	}
	if set["db"] {
		overrides = append(overrides, config.Override{Path: "database.url", Value: *db, Source: "flag --db"})
	}
	cfg, err := config.Load(config.Sources{Files: files, Environ: environ, Overrides: overrides})
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	return engine.Run(ctx, engine.Options{Config: cfg, Build: buildInfo(), Log: log})
}

// buildInfo describes this binary for /health and /metadata.
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
