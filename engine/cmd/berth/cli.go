package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/sdk/client"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// Client defaults and the environment variables that override them (flags win over both).
const (
	defaultEndpoint = "http://localhost:6420"
	envEndpoint     = "BERTH_ENDPOINT"
	envToken        = "BERTH_TOKEN"
	envNamespace    = "BERTH_NAMESPACE"
)

// stdio is what a run of the command reads and writes: the process's own in main, buffers in
// tests.
type stdio struct {
	in      io.Reader
	out     io.Writer
	err     io.Writer
	environ []string // os.Environ form
}

// cli is one run of the command: its streams and the values of the shared client flags.
type cli struct {
	stdio

	endpoint, token, namespace string
	jsonOut                    bool

	// pollInterval is how often waits (runners drain --wait) look again.
	pollInterval time.Duration
	// progressEvery is how often a progress report is written when stderr is not a terminal.
	progressEvery time.Duration

	hc *http.Client // the client's HTTP client; idle connections are closed when the run ends
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// run executes the command line args and returns the exit status.
func run(ctx context.Context, args []string, io stdio) int {
	c := &cli{stdio: io, pollInterval: 500 * time.Millisecond, progressEvery: 2 * time.Second}
	return c.exec(ctx, args)
}

func (c *cli) exec(ctx context.Context, args []string) int {
	defer func() {
		if c.hc != nil {
			c.hc.CloseIdleConnections()
		}
	}()
	root := c.rootCommand()
	root.SetArgs(args)
	root.SetIn(c.in)
	root.SetOut(c.out)
	root.SetErr(c.err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	return c.report(cmd, err)
}

// report prints err and returns the exit status it calls for.
func (c *cli) report(cmd *cobra.Command, err error) int {
	var ue usageError
	if errors.As(err, &ue) || isCobraUsageError(err) {
		fmt.Fprintf(c.err, "berth: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return exitUsage
	}
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		fmt.Fprintf(c.err, "berth: %s\n", describeAPIError(apiErr))
		return exitError
	}
	fmt.Fprintf(c.err, "berth: %v\n", err)
	return exitError
}

// isCobraUsageError recognises the errors cobra itself returns for a bad command line.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// describeAPIError shows an engine error as `group.code: message`, then its metadata.
func describeAPIError(e *client.APIError) string {
	if e.Group == "" && e.Code == "" {
		return fmt.Sprintf("HTTP %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	}
	s := e.Group + "." + e.Code + ": " + e.Message
	if len(e.Metadata) > 0 {
		if b, err := json.Marshal(e.Metadata); err == nil {
			s += "\n  metadata: " + string(b)
		}
	}
	if e.RayID != "" {
		s += "\n  ray id: " + e.RayID
	}
	return s
}

func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "berth",
		Short: "berth runs a stateful-actor engine and manages a running one",
		Long: `berth runs a stateful-actor engine (berth start) and manages a running one through its
public API: namespaces, runners, envoys and actors.

The client commands find the engine with --endpoint, --token and --namespace, or the
environment variables BERTH_ENDPOINT, BERTH_TOKEN and BERTH_NAMESPACE (flags win).

Exit status: 0 on success, 1 on an error, 2 on a usage error.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE:          groupRun,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.HiddenDefaultCmd = true
	root.AddCommand(
		c.startCommand(),
		c.versionCommand(),
		c.configCommand(),
		c.namespacesCommand(),
		c.runnersCommand(),
		c.envoysCommand(),
		c.actorsCommand(),
		c.tokensCommand(),
		c.doctorCommand(),
		c.healthCommand(),
	)
	for _, cmd := range c.transferCommands() {
		root.AddCommand(cmd)
	}
	return root
}

// groupRun runs a command that only holds subcommands: its help, and exit status 2.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	cmd.SetOut(cmd.ErrOrStderr())
	_ = cmd.Help()
	return usagef("%s: missing command", name(cmd))
}

// group makes a command that holds subcommands.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: groupRun}
	g.AddCommand(subs...)
	return g
}

// name is the command's path without "berth", for messages: "actors create".
func name(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// exactArgs accepts exactly the named positional arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return usagef("%s: missing %s", name(cmd), strings.Join(names[len(args):], " "))
		case len(args) > len(names):
			return usagef("%s: unexpected arguments %q", name(cmd), strings.Join(args[len(names):], " "))
		}
		return nil
	}
}

// minArgs accepts one or more of the named argument.
func minArgs(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("%s: missing %s", name(cmd), what)
		}
		return nil
	}
}

// noArgs refuses positional arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s: unexpected arguments %q", name(cmd), strings.Join(args, " "))
	}
	return nil
}

// clientFlags adds --endpoint, --token, --namespace and --json to a client command group.
func (c *cli) clientFlags(cmd *cobra.Command) *cobra.Command {
	f := cmd.PersistentFlags()
	f.StringVar(&c.endpoint, "endpoint", "", "the engine's public URL (env "+envEndpoint+"; default "+defaultEndpoint+")")
	f.StringVar(&c.token, "token", "", "a token: the admin token or a scoped one (env "+envToken+")")
	f.StringVarP(&c.namespace, "namespace", "n", "", "the namespace (env "+envNamespace+"; default "+client.DefaultNamespace+")")
	f.BoolVar(&c.jsonOut, "json", false, "print JSON instead of a table")
	return cmd
}

// getenv reads a variable of the run's environment.
func (c *cli) getenv(name string) string {
	for _, kv := range c.environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// setting returns the flag's value when it was given, else the environment's, else def.
func (c *cli) setting(cmd *cobra.Command, flag, value, env, def string) string {
	if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return value
	}
	if v := c.getenv(env); v != "" {
		return v
	}
	return def
}

// client returns an API client configured from the flags and the environment.
func (c *cli) client(cmd *cobra.Command) (*client.Client, error) {
	endpoint := strings.TrimRight(c.setting(cmd, "endpoint", c.endpoint, envEndpoint, defaultEndpoint), "/")
	token := c.setting(cmd, "token", c.token, envToken, "")
	ns := c.setting(cmd, "namespace", c.namespace, envNamespace, client.DefaultNamespace)
	if ns == "" {
		return nil, usagef("--namespace must not be empty")
	}
	if c.hc == nil {
		c.hc = &http.Client{Timeout: time.Minute, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 32}}
	}
	cl, err := client.New(endpoint, client.WithToken(token), client.WithNamespace(ns), client.WithHTTPClient(c.hc))
	if err != nil {
		return nil, usageError{fmt.Errorf("--endpoint: %w", err)}
	}
	return cl, nil
}

// printJSON writes v as indented JSON.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printTable writes rows under header, aligned in columns.
func (c *cli) printTable(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(c.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// output prints items as JSON (a list, or one object when single) or as a table.
func output[T any](c *cli, items []T, single bool, header []string, row func(T) []string) error {
	if c.jsonOut {
		if single && len(items) == 1 {
			return c.printJSON(items[0])
		}
		if items == nil {
			items = []T{}
		}
		return c.printJSON(items)
	}
	rows := make([][]string, len(items))
	for i, it := range items {
		rows[i] = row(it)
	}
	return c.printTable(header, rows)
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// ts shows a millisecond timestamp; "-" for none.
func ts(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return time.UnixMilli(*ms).UTC().Format(time.RFC3339)
}

// ago shows how long ago a millisecond timestamp was.
func ago(ms int64) string {
	if ms == 0 {
		return "-"
	}
	d := time.Since(time.UnixMilli(ms))
	switch {
	case d < 0:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}
