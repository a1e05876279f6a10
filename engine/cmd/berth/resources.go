package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/sdk/client"
)

// take gathers the items of seq, at most limit of them (0: all).
func take[T any](seq func(func(T, error) bool), limit int) ([]T, error) {
	var out []T
	for item, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, item)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// notFound is the error of a get whose list came back empty, shaped as the engine's.
func notFound(group, what, id string) error {
	return &client.APIError{Status: http.StatusNotFound, Group: group, Code: "not_found",
		Message: fmt.Sprintf("The %s %q does not exist.", what, id)}
}

// --- namespaces

var namespaceTable = table[client.Namespace]{
	header: []string{"NAME", "DISPLAY NAME", "ID", "CREATED"},
	row: func(n client.Namespace) []string {
		return []string{n.Name, n.DisplayName, n.NamespaceId, ts(&n.CreateTs)}
	},
	id: func(n client.Namespace) string { return n.Name },
}

func (c *cli) namespacesCommand() *cobra.Command {
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List namespaces",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			items, err := take(cl.Namespaces().All(cmd.Context(), client.NamespaceListOptions{}), limit)
			if err != nil {
				return err
			}
			return output(c, items, false, namespaceTable)
		},
	}
	list.Flags().IntVar(&limit, "limit", 0, "list at most this many (0: all)")

	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a namespace",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			p, err := cl.Namespaces().List(cmd.Context(), client.NamespaceListOptions{Name: args[0]})
			if err != nil {
				return err
			}
			if len(p.Items) == 0 {
				return notFound("namespace", "namespace", args[0])
			}
			return output(c, p.Items[:1], true, namespaceTable)
		},
	}

	var display string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a namespace",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			if display == "" {
				display = args[0]
			}
			n, err := cl.Namespaces().Create(cmd.Context(), args[0], display)
			if err != nil {
				return err
			}
			return output(c, []client.Namespace{n}, true, namespaceTable)
		},
	}
	create.Flags().StringVar(&display, "display-name", "", "the display name (default: the name)")

	c.quietFlag(list, get, create)
	return c.clientFlags(group("namespaces", "List, show and create namespaces (namespaces cannot be deleted)", list, get, create))
}

// --- runners

func runnerState(r client.Runner) string {
	switch {
	case r.StopTs != nil:
		return "stopped"
	case r.DrainTs != nil:
		return "draining"
	}
	return "active"
}

var runnerTable = table[client.Runner]{
	header: []string{"ID", "NAME", "KEY", "VERSION", "STATE", "FREE SLOTS", "LAST PING", "RTT", "DATACENTER"},
	row: func(r client.Runner) []string {
		return []string{r.RunnerId, r.Name, r.Key, strconv.Itoa(int(r.Version)), runnerState(r),
			fmt.Sprintf("%d/%d", r.RemainingSlots, r.TotalSlots), ago(r.LastPingTs), fmt.Sprintf("%dms", r.LastRtt), r.Datacenter}
	},
	id:   func(r client.Runner) string { return r.RunnerId },
	json: func(r client.Runner) any { return runnerJSON{r, runnerState(r)} },
}

// runnerJSON is a runner with the state its table shows.
type runnerJSON struct {
	client.Runner
	State string `json:"state"`
}

// getRunner reads one runner, stopped or not.
func getRunner(ctx context.Context, cl *client.Client, runnerID string) (client.Runner, error) {
	p, err := cl.Runners().List(ctx, client.RunnerListOptions{RunnerIDs: []string{runnerID}, IncludeStopped: true})
	if err != nil {
		return client.Runner{}, err
	}
	if len(p.Items) == 0 {
		return client.Runner{}, notFound("runner", "runner", runnerID)
	}
	return p.Items[0], nil
}

func (c *cli) runnersCommand() *cobra.Command {
	var (
		name           string
		includeStopped bool
		limit          int
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the runners of the namespace",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			items, err := take(cl.Runners().All(cmd.Context(), client.RunnerListOptions{Name: name, IncludeStopped: includeStopped}), limit)
			if err != nil {
				return err
			}
			return output(c, items, false, runnerTable)
		},
	}
	list.Flags().StringVar(&name, "name", "", "only runners of this name (pool)")
	list.Flags().BoolVar(&includeStopped, "include-stopped", false, "stopped runners too")
	list.Flags().IntVar(&limit, "limit", 0, "list at most this many (0: all)")

	get := &cobra.Command{
		Use:   "get RUNNER_ID",
		Short: "Show a runner",
		Args:  idArgs(exactArgs("RUNNER_ID"), "RUNNER_ID", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			r, err := getRunner(cmd.Context(), cl, args[0])
			if err != nil {
				return err
			}
			return output(c, []client.Runner{r}, true, runnerTable)
		},
	}

	var (
		wait    bool
		timeout time.Duration
	)
	drain := &cobra.Command{
		Use:   "drain RUNNER_ID",
		Short: "Drain a runner: no new actors, its actors stop and move, then it stops",
		Long: `Drain a runner: it gets no new actors, every actor on it is told to stop (and is placed
again elsewhere, by its crash policy), and the runner stops once none is left or once
pegboard.runner_lost_threshold has passed. With --wait, wait until it has stopped, showing
how many of its actors have left.`,
		Args: idArgs(exactArgs("RUNNER_ID"), "RUNNER_ID", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			r, err := cl.Runners().Drain(ctx, args[0])
			if err != nil {
				return err
			}
			if wait { // reports "done" also when the runner stopped before the drain answered
				if timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, timeout)
					defer cancel()
				}
				if r, err = c.waitStopped(ctx, cl, r); err != nil {
					return err
				}
			}
			return output(c, []client.Runner{r}, true, runnerTable)
		},
	}
	drain.Flags().BoolVar(&wait, "wait", false, "wait until the runner has stopped")
	drain.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (e.g. 5m; 0: never)")

	names := &cobra.Command{
		Use:   "names",
		Short: "List the runner names (pools) of the namespace",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			items, err := take(cl.Runners().AllNames(cmd.Context(), client.NameListOptions{}), limit)
			if err != nil {
				return err
			}
			return output(c, items, false, nameTable)
		},
	}
	names.Flags().IntVar(&limit, "limit", 0, "list at most this many (0: all)")

	c.quietFlag(list, get, drain, names)
	return c.clientFlags(group("runners", "List, show and drain runners, and list their names", list, get, drain, names))
}

// waitStopped polls the runner until it has stopped, reporting how many of the actors it
// held at the start have left.
func (c *cli) waitStopped(ctx context.Context, cl *client.Client, r client.Runner) (client.Runner, error) {
	held := int64(r.TotalSlots - r.RemainingSlots)
	p := c.newProgress("draining runner "+r.RunnerId, "actors gone", held)
	p.Set(0, -1)
	defer p.Done()
	t := time.NewTicker(c.pollInterval)
	defer t.Stop()
	for r.StopTs == nil {
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("runner %s has not stopped: %w", r.RunnerId, context.Cause(ctx))
		case <-t.C:
		}
		var err error
		if r, err = getRunner(ctx, cl, r.RunnerId); err != nil {
			return r, err
		}
		left := int64(r.TotalSlots - r.RemainingSlots)
		if r.StopTs != nil {
			left = 0
		}
		if left > held { // an actor placed just before the drain
			held = left
		}
		p.Set(held-left, held)
	}
	return r, nil
}

// nameTable shows a list of names (runner names).
var nameTable = table[string]{
	header: []string{"NAME"},
	row:    func(n string) []string { return []string{n} },
	id:     func(n string) string { return n },
}

// --- envoys

var envoyTable = table[client.Envoy]{
	header: []string{"KEY", "POOL", "VERSION", "STATE", "SLOTS", "LAST PING", "RTT", "DATACENTER"},
	row: func(e client.Envoy) []string {
		return []string{e.EnvoyKey, e.PoolName, strconv.Itoa(int(e.Version)), envoyState(e), strconv.FormatInt(e.Slots, 10),
			ago(e.LastPingTs), fmt.Sprintf("%dms", e.LastRtt), e.Datacenter}
	},
	id:   func(e client.Envoy) string { return e.EnvoyKey },
	json: func(e client.Envoy) any { return envoyJSON{e, envoyState(e)} },
}

func envoyState(e client.Envoy) string {
	if e.StopTs != nil {
		return "stopped"
	}
	return "active"
}

// envoyJSON is an envoy with the state its table shows.
type envoyJSON struct {
	client.Envoy
	State string `json:"state"`
}

func (c *cli) envoysCommand() *cobra.Command {
	var (
		pool  string
		limit int
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the envoys of the namespace",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			items, err := take(cl.Envoys().All(cmd.Context(), client.EnvoyListOptions{Pool: pool}), limit)
			if err != nil {
				return err
			}
			return output(c, items, false, envoyTable)
		},
	}
	list.Flags().StringVar(&pool, "pool", "", "only envoys of this pool")
	list.Flags().IntVar(&limit, "limit", 0, "list at most this many (0: all)")

	get := &cobra.Command{
		Use:   "get ENVOY_KEY",
		Short: "Show an envoy",
		Args:  exactArgs("ENVOY_KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			p, err := cl.Envoys().List(cmd.Context(), client.EnvoyListOptions{EnvoyKeys: []string{args[0]}})
			if err != nil {
				return err
			}
			if len(p.Items) == 0 {
				return notFound("envoy", "envoy", args[0])
			}
			return output(c, p.Items[:1], true, envoyTable)
		},
	}
	var (
		wait    bool
		timeout time.Duration
	)
	drain := &cobra.Command{
		Use:   "drain ENVOY_KEY",
		Short: "Drain an envoy: no new actors, its actors move, then it closes",
		Long: `Drain an envoy (a berth extension of the API): it gets no new actors, its actors are moved
away (paced by its pool's runner config), and its socket is closed once none is left. With
--wait, wait until no actor is left on it, showing how many have left.`,
		Args: exactArgs("ENVOY_KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			e, err := cl.Envoys().Drain(ctx, args[0])
			if err != nil {
				return err
			}
			if wait {
				if timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, timeout)
					defer cancel()
				}
				if e, err = c.waitEnvoyEmpty(ctx, cl, e); err != nil {
					return err
				}
			}
			return output(c, []client.Envoy{e}, true, envoyTable)
		},
	}
	drain.Flags().BoolVar(&wait, "wait", false, "wait until no actor is left on the envoy")
	drain.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (e.g. 5m; 0: never)")

	c.quietFlag(list, get, drain)
	return c.clientFlags(group("envoys", "List, show and drain envoys", list, get, drain))
}

// waitEnvoyEmpty polls the envoy until no actor is left on it (or it is gone from the
// list: it closed and expired), reporting how many of the actors it held have left.
func (c *cli) waitEnvoyEmpty(ctx context.Context, cl *client.Client, e client.Envoy) (client.Envoy, error) {
	held := e.Slots
	p := c.newProgress("draining envoy "+e.EnvoyKey, "actors gone", held)
	p.Set(0, -1)
	defer p.Done()
	t := time.NewTicker(c.pollInterval)
	defer t.Stop()
	for left := e.Slots; left > 0; {
		select {
		case <-ctx.Done():
			return e, fmt.Errorf("envoy %s still has actors: %w", e.EnvoyKey, context.Cause(ctx))
		case <-t.C:
		}
		page, err := cl.Envoys().List(ctx, client.EnvoyListOptions{EnvoyKeys: []string{e.EnvoyKey}})
		if err != nil {
			return e, err
		}
		left = 0
		if len(page.Items) > 0 {
			e, left = page.Items[0], page.Items[0].Slots
		}
		held = max(held, left)
		p.Set(held-left, held)
	}
	return e, nil
}

// --- datacenters

var datacenterTable = table[client.Datacenter]{
	header: []string{"NAME", "LABEL", "URL"},
	row: func(d client.Datacenter) []string {
		return []string{d.Name, strconv.Itoa(int(d.Label)), d.Url}
	},
	id: func(d client.Datacenter) string { return d.Name },
}

func (c *cli) datacentersCommand() *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "List the datacenters of the engine's topology",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			items, err := cl.Datacenters().List(cmd.Context())
			if err != nil {
				return err
			}
			return output(c, items, false, datacenterTable)
		},
	}
	c.quietFlag(list)
	return c.clientFlags(group("datacenters", "List the datacenters", list))
}

// deref shows an optional field; "-" for none or an empty one.
func deref[T any](p *T) string {
	if p == nil {
		return "-"
	}
	if s := fmt.Sprint(*p); s != "" {
		return s
	}
	return "-"
}
