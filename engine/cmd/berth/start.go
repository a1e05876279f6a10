package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/engine/internal/gcfloor"
	"github.com/berthhq/berth/engine/internal/textpages"
	"github.com/berthhq/berth/engine/telemetry"
)

// configFlags are the flags that say where the configuration comes from: berth start,
// berth config validate and berth config print take the same ones.
type configFlags struct {
	files    []string
	listen   string
	peer     string // --peer-listen
	metrics  string // --metrics-listen
	db       string
	logLevel string // berth start only
	// allowAnonymous serves other machines without an admin token (berth start only).
	allowAnonymous bool
}

func (f *configFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringArrayVar(&f.files, "config", nil, "config file, JSON (.json) or YAML (.yaml, .yml); repeat to merge several, later ones win")
	fs.StringVar(&f.listen, "listen", "", "guard and public API address, host:port (overrides guard.host and guard.port; default :6420)")
	fs.StringVar(&f.peer, "peer-listen", "", "api-peer address, host:port (overrides api_peer.host and api_peer.port; default :6421)")
	fs.StringVar(&f.metrics, "metrics-listen", "", "Prometheus metrics address, host:port (overrides metrics.host and metrics.port; default :6430)")
	fs.StringVar(&f.db, "db", "", "store URL: file://PATH, mem://, postgres://..., fdb://CLUSTER_FILE (overrides database.url; default file://data/berth)")
}

// load reads the defaults, the files, the environment and the flags, and validates.
func (f *configFlags) load(cmd *cobra.Command, environ []string) (*config.Config, error) {
	var overrides []config.Override
	for _, l := range listenFlags {
		if !cmd.Flags().Changed(l.flag) {
			continue
		}
		addr := l.value(f)
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: want host:port or :port: %w", l.flag, addr, err)
		}
		overrides = append(overrides,
			config.Override{Path: l.section + ".host", Value: host, Source: "flag --" + l.flag},
			config.Override{Path: l.section + ".port", Value: port, Source: "flag --" + l.flag})
	}
	if cmd.Flags().Changed("db") {
		overrides = append(overrides, config.Override{Path: "database.url", Value: f.db, Source: "flag --db"})
	}
	if f.allowAnonymous {
		overrides = append(overrides, config.Override{Path: "auth.allow_anonymous", Value: "true", Source: "flag --allow-anonymous"})
	}
	if cmd.Flags().Changed("log-level") {
		overrides = append(overrides, config.Override{Path: "log.level", Value: f.logLevel, Source: "flag --log-level"})
	}
	cfg, err := config.Load(config.Sources{Files: f.files, Environ: environ, Overrides: overrides})
	if err != nil {
		return nil, fmt.Errorf("configuration:\n%w", err)
	}
	return cfg, nil
}

// listenFlags are the flags that set a listener's address, with the configuration section
// they override.
var listenFlags = []struct {
	flag, section string
	value         func(*configFlags) string
}{
	{"listen", "guard", func(f *configFlags) string { return f.listen }},
	{"peer-listen", "api_peer", func(f *configFlags) string { return f.peer }},
	{"metrics-listen", "metrics", func(f *configFlags) string { return f.metrics }},
}

// explainListen rewrites a listener's bind failure to name the flag that changes its
// address besides the configuration keys: "the api-peer listener cannot bind
// 127.0.0.1:6421: address already in use; change it with --peer-listen or api_peer.port".
func explainListen(err error) error {
	var le *engine.ListenError
	if !errors.As(err, &le) {
		return err
	}
	for _, l := range listenFlags {
		if l.section == le.Key {
			return fmt.Errorf("the %s listener cannot bind %s: %s; change it with --%s or %s.port",
				le.Listener, le.Addr, le.Reason(), l.flag, le.Key)
		}
	}
	return err
}

const configHelp = `Configuration comes from the defaults, then each --config file in order, then environment
variables BERTH__section__key (e.g. BERTH__auth__admin_token, BERTH__api_peer__port), then
the flags. Unknown keys and bad values are errors that name them. Every key is described in
docs/config.md.`

func (c *cli) startCommand() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run the engine",
		Long: `Run the engine until SIGINT, SIGTERM or POST /shutdown on the api-peer port (a graceful drain:
node.shutdown_drain_ms bounds it, default 25000; node.releases bounds the ownership releases in
flight, default 128; BERTH_SHUTDOWN_DRAIN_MS and BERTH_RELEASES are aliases): the public API, the runner and envoy sockets and the
actor gateway on the guard port (6420, --listen), api-peer on 6421 (--peer-listen), Prometheus
metrics on 6430 (--metrics-listen).

SIGHUP reads the TLS certificate and key files again (they are also read within a second of a
change). Under systemd with Type=notify (NOTIFY_SOCKET set), berth reports READY=1 once it
serves, RELOADING=1 and READY=1 around a reload, and STOPPING=1 when it drains.

` + configHelp + ` Unknown keys and bad values stop the engine before it starts.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("start: unexpected arguments %q", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cf.load(cmd, c.environ)
			if err != nil {
				return fmt.Errorf("start: %w", err)
			}
			log, err := telemetry.NewLogger(c.err, cfg.Log)
			if err != nil {
				return fmt.Errorf("start: %w", err)
			}
			defer gcfloor.Start(uint64(cfg.Node.GCHeapFloorMiB)<<20, c.environ, func() { log.Debug("idle: free heap memory given back") })()
			// SIGHUP reads the TLS certificate files again (systemctl reload) instead of
			// ending the process, Go's default.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			notify := sdNotifier(c.getenv("NOTIFY_SOCKET"))
			if !cfg.Node.KeepBinaryPages {
				pages := &binaryPages{log: log}
				defer pages.restore()
				notify = onFirstReady(notify, pages.releaseLater)
			}
			return explainListen(engine.Run(cmd.Context(), engine.Options{Config: cfg, Build: buildInfo(), Log: log,
				Reload: hup, Notify: notify}))
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&cf.logLevel, "log-level", "", "log level: debug, info, warn or error (overrides log.level; default info)")
	cmd.Flags().BoolVar(&cf.allowAnonymous, "allow-anonymous", false, "serve addresses other machines reach without an admin token (sets auth.allow_anonymous; without a token berth listens on loopback only)")
	return cmd
}

// onFirstReady returns notify (nil for none) followed, the first time the engine reports
// READY=1, by f.
func onFirstReady(notify func(state string), f func()) func(state string) {
	once := sync.OnceFunc(f)
	return func(state string) {
		if notify != nil {
			notify(state)
		}
		if strings.HasPrefix(state, "READY=1") {
			once()
		}
	}
}

// binaryPages gives back the binary's pages start-up used a little after the engine first
// serves, and reads them back into the page cache as it stops, so that the next start does
// not read the binary from disk (node.keep_binary_pages; docs/benchmarks.md).
type binaryPages struct {
	log      *slog.Logger
	mu       sync.Mutex
	timer    *time.Timer // the release to come, once releaseLater ran
	released bool        // even in part
	stopped  bool        // restore ran: nothing is given back any more
}

// releaseAfter is how long after the engine first reports ready the binary's pages are
// given back. Giving them back makes the code that runs next fault its pages in from disk,
// one at a time: done at once, it made the first requests to a new engine (a health check
// polled every 5 ms) wait up to 120 ms instead of about 20 (docs/benchmarks.md).
const releaseAfter = time.Second

// releaseLater gives the pages back releaseAfter from now, unless the engine stops first.
// It runs once (onFirstReady).
func (b *binaryPages) releaseLater() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped {
		b.timer = time.AfterFunc(releaseAfter, b.release)
	}
}

func (b *binaryPages) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	n, err := textpages.Release()
	b.released = true
	if err != nil {
		b.log.Warn("could not give back the binary's pages mapped at start-up; node.keep_binary_pages=true skips this", "err", err)
		return
	}
	b.log.Debug("gave back the binary's pages mapped at start-up", "resident_kib", n>>10)
}

// restore reads the binary back into the page cache if its pages were given back, and
// cancels a release still to come.
func (b *binaryPages) restore() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
	if !b.released {
		return
	}
	if err := textpages.Restore(); err != nil {
		b.log.Debug("could not read the binary back into the page cache for the next start", "err", err)
		return
	}
	b.log.Debug("reading the binary back into the page cache for the next start")
}

// start runs `berth start args` until ctx ends, with environ as the environment.
func start(ctx context.Context, args, environ []string) error {
	var out, errOut strings.Builder
	c := &cli{stdio: stdio{out: &out, err: &errOut, environ: environ}}
	root := c.rootCommand()
	root.SetArgs(append([]string{"start"}, args...))
	root.SetOut(&out)
	root.SetErr(&errOut)
	return root.ExecuteContext(ctx)
}

func (c *cli) versionCommand() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			b := buildInfo()
			if jsonOut {
				return c.printJSON(map[string]string{"version": b.Version, "git_sha": b.GitSHA,
					"build_timestamp": b.BuildTimestamp, "go_version": b.GoVersion})
			}
			_, err := fmt.Fprintf(c.out, "berth %s (commit %s, built %s, %s)\n", b.Version, b.GitSHA, b.BuildTimestamp, b.GoVersion)
			return err
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}
