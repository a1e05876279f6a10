package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/pkg/id"
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
	jsonOut, quiet             bool

	// calling is the endpoint the client was made for, for messages when it cannot be reached.
	calling string

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
	fmt.Fprintf(c.err, "berth: %s\n", c.describe(err))
	return exitError
}

// describe words an error of a command for its user.
func (c *cli) describe(err error) string {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		context, _ := strings.CutSuffix(err.Error(), apiErr.Error()) // "namespace x: ", say
		if context == err.Error() {
			context = ""
		}
		return context + describeAPIError(apiErr)
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case c.calling == "": // no engine called
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot reach the engine at %s (connection refused); start one with 'berth start' or set --endpoint / %s", c.calling, envEndpoint)
	case errors.As(err, &dnsErr):
		return c.unreachable(dnsErr)
	case errors.As(err, &opErr):
		return c.unreachable(opErr)
	}
	return strings.TrimPrefix(err.Error(), "berth client: ") // one "berth: " is enough
}

// unreachable says that the engine could not be reached, and why.
func (c *cli) unreachable(cause error) string {
	return fmt.Sprintf("cannot reach the engine at %s (%v); check --endpoint / %s", c.calling, cause, envEndpoint)
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
	if e.Group == "actor" && e.Code == "no_runner_config_configured" {
		pool, _ := e.Metadata["pool_name"].(string)
		if pool == "" {
			pool = "POOL"
		}
		s += "\n  no runner or envoy of pool " + strconv.Quote(pool) + " has ever connected, so the engine does not know" +
			"\n  where to run the actor. A pool gets its runner config when its first runner or envoy" +
			"\n  connects with that runner name, or from 'berth runner-configs put' (PUT /runner-configs/" + pool + ")." +
			"\n  Start your runner with that name, or check --runner-name-selector for a typo."
	}
	switch e.Status {
	case http.StatusUnauthorized:
		s += "\n  the engine wants a token: give it with --token or " + envToken
	case http.StatusForbidden:
		s += "\n  the engine refused the token of --token or " + envToken + ": a wrong one, or one without this right"
	}
	return s
}

func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "berth",
		Short: "berth runs a stateful-actor engine and manages a running one",
		Long: `berth runs a stateful-actor engine (berth start) and manages a running one through its
public API: namespaces, runners, envoys, actors, runner configs and datacenters.

The client commands find the engine with --endpoint, --token and --namespace, or the
environment variables BERTH_ENDPOINT, BERTH_TOKEN and BERTH_NAMESPACE (flags win).

Exit status: 0 on success, 1 on an error, 2 on a usage error.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE:          groupRun,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if c.quiet && c.jsonOut {
				return usagef("%s: give --json or --quiet, not both", name(cmd))
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
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
		c.runnerConfigsCommand(),
		c.datacentersCommand(),
		c.healthCommand(),
		completionCommand(),
	)
	for _, cmd := range c.transferCommands() {
		root.AddCommand(cmd)
	}
	return root
}

// groupRun runs a command that only holds subcommands: its help, and exit status 2.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		cmd.SuggestionsMinimumDistance = 2 // edits between a typo and the names it suggests
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageError{errors.New(msg)}
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

// exampleID shows what an id looks like, in messages.
const exampleID = "0b8y5rkfbb3xvdwlcu9mbvqwnimg2t"

// idArgs runs check, then makes sure the first n arguments (all of them when n is 0) are
// ids, naming the argument what when one is not.
func idArgs(check cobra.PositionalArgs, what string, n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return err
		}
		ids := args
		if n > 0 {
			ids = args[:n]
		}
		for _, a := range ids {
			if _, err := id.Parse(a); err != nil {
				var pe *id.ParseError
				detail := err.Error()
				if errors.As(err, &pe) {
					detail = pe.Err.Error() + ": " + pe.Detail
				}
				return usagef("%s: %s %q is not an id (%s): an id is 30 characters of 0-9 and a-z, like %s",
					name(cmd), what, a, detail, exampleID)
			}
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

// quietFlag adds -q/--quiet to commands that print items: their ids (or names) only.
func (c *cli) quietFlag(cmds ...*cobra.Command) {
	for _, cmd := range cmds {
		cmd.Flags().BoolVarP(&c.quiet, "quiet", "q", false, "print only ids (names of namespaces and runner configs), one a line")
	}
}

// each makes a command that calls do on each of its arguments in turn, printing "done ARG"
// for each, or with --json {"done": [args]} at the end. It stops at the first error.
func (c *cli) each(use, short, done string, args cobra.PositionalArgs, do func(context.Context, *client.Client, string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			for _, a := range args {
				if err := do(cmd.Context(), cl, a); err != nil {
					return err
				}
				if !c.jsonOut {
					fmt.Fprintf(c.out, "%s %s\n", done, a)
				}
			}
			if c.jsonOut {
				return c.printJSON(map[string]any{done: args})
			}
			return nil
		},
	}
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
	c.calling = endpoint
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

// table says how items of one kind show: a header and a row per item, the id -q prints, and
// what --json prints of an item when it is more than the item (a state the table computes).
type table[T any] struct {
	header []string
	row    func(T) []string
	id     func(T) string
	json   func(T) any // nil: the item as it is
}

// output prints items as JSON (a list, or one object when single), as ids (-q; items of one
// id next to each other show it once) or as a table.
func output[T any](c *cli, items []T, single bool, t table[T]) error {
	switch {
	case c.jsonOut:
		view := make([]any, len(items))
		for i, it := range items {
			view[i] = it
			if t.json != nil {
				view[i] = t.json(it)
			}
		}
		if single && len(view) == 1 {
			return c.printJSON(view[0])
		}
		return c.printJSON(view)
	case c.quiet: // each id once: a runner config has a row per datacenter
		prev := ""
		for i, it := range items {
			if id := t.id(it); i == 0 || id != prev {
				if _, err := fmt.Fprintln(c.out, id); err != nil {
					return err
				}
				prev = id
			}
		}
		return nil
	}
	rows := make([][]string, len(items))
	for i, it := range items {
		rows[i] = t.row(it)
	}
	return c.printTable(t.header, rows)
}

// open opens file for reading; "-" is stdin.
func (c *cli) open(file string) (io.ReadCloser, error) {
	if file == "-" {
		return io.NopCloser(c.in), nil
	}
	return os.Open(file)
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
