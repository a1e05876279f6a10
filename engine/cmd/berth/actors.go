package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/sdk/client"
)

var actorHeader = []string{"ID", "NAME", "KEY", "STATE", "POOL", "CRASH POLICY", "DATACENTER", "CREATED"}

// actorState names where an actor is in its lifecycle, from its timestamps.
func actorState(a client.Actor) string {
	switch {
	case a.DestroyTs != nil:
		return "destroyed"
	case a.SleepTs != nil:
		return "sleeping"
	case a.ConnectableTs != nil:
		return "running"
	case a.PendingAllocationTs != nil:
		return "pending"
	case a.RescheduleTs != nil:
		if a.Error != nil {
			return "crashed"
		}
		return "rescheduling"
	}
	return "starting"
}

func actorRow(a client.Actor) []string {
	key := "-"
	if a.Key != nil {
		key = *a.Key
	}
	return []string{a.ActorId, a.Name, key, actorState(a), a.RunnerNameSelector, string(a.CrashPolicy), a.Datacenter, ts(&a.CreateTs)}
}

// bulkWorkers bounds the creates of `actors create --count` in flight at once.
const bulkWorkers = 16

func (c *cli) actorsCommand() *cobra.Command {
	var (
		name, key        string
		includeDestroyed bool
		limit            int
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the actors of the namespace (all names, or --name)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if key != "" && name == "" {
				return usagef("actors list: --key needs --name")
			}
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			names := []string{name}
			if name == "" {
				all, err := client.Collect(cl.Actors().AllNames(ctx, client.NameListOptions{}))
				if err != nil {
					return err
				}
				names = names[:0]
				for _, n := range all {
					names = append(names, n.Name)
				}
			}
			var items []client.Actor
			for _, n := range names {
				more, err := take(cl.Actors().All(ctx, client.ActorListOptions{Name: n, Key: key, IncludeDestroyed: includeDestroyed}), limit-len(items))
				items = append(items, more...)
				if err != nil {
					return err
				}
				if limit > 0 && len(items) >= limit {
					break
				}
			}
			return output(c, items, false, actorHeader, actorRow)
		},
	}
	list.Flags().StringVar(&name, "name", "", "only actors of this name")
	list.Flags().StringVar(&key, "key", "", "with --name: the actor holding this key")
	list.Flags().BoolVar(&includeDestroyed, "include-destroyed", false, "destroyed actors too")
	list.Flags().IntVar(&limit, "limit", 0, "list at most this many (0: all)")

	get := &cobra.Command{
		Use:   "get ACTOR_ID",
		Short: "Show an actor, in any state",
		Args:  exactArgs("ACTOR_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			a, err := cl.Actors().Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return output(c, []client.Actor{a}, true, actorHeader, actorRow)
		},
	}

	del := &cobra.Command{
		Use:     "delete ACTOR_ID...",
		Aliases: []string{"destroy"},
		Short:   "Destroy actors (for good)",
		Args:    minArgs("ACTOR_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			for _, id := range args {
				if err := cl.Actors().Destroy(cmd.Context(), id); err != nil {
					return err
				}
				if !c.jsonOut {
					fmt.Fprintf(c.out, "destroyed %s\n", id)
				}
			}
			if c.jsonOut {
				return c.printJSON(map[string]any{"destroyed": args})
			}
			return nil
		},
	}

	return c.clientFlags(group("actors", "List, show, create and destroy actors", list, get, c.actorsCreateCommand(), del))
}

func (c *cli) actorsCreateCommand() *cobra.Command {
	var (
		o         client.ActorCreateOptions
		input     string
		inputFile string
		policy    string
		count     int
	)
	cmd := &cobra.Command{
		Use:   "create --name NAME --runner-name-selector POOL [--key KEY] [--input TEXT]",
		Short: "Create actors",
		Long: `Create an actor of --name, hosted by the runners named --runner-name-selector. With
--count N, create N of them (with --key K, their keys are K-0 … K-(N-1)), showing progress.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case o.Name == "":
				return usagef("actors create: --name is required")
			case o.Pool == "":
				return usagef("actors create: --runner-name-selector is required")
			case count < 1:
				return usagef("actors create: --count must be at least 1")
			case input != "" && inputFile != "":
				return usagef("actors create: give --input or --input-file, not both")
			}
			switch p := client.CrashPolicy(policy); p {
			case client.CrashRestart, client.CrashSleep, client.CrashDestroy:
				o.CrashPolicy = p
			default:
				return usagef("actors create: --crash-policy %q: want restart, sleep or destroy", policy)
			}
			if cmd.Flags().Changed("input") {
				o.Input = []byte(input)
			}
			if inputFile != "" {
				b, err := os.ReadFile(inputFile)
				if err != nil {
					return err
				}
				o.Input = b
			}
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			if count == 1 {
				a, err := cl.Actors().Create(cmd.Context(), o)
				if err != nil {
					return err
				}
				return output(c, []client.Actor{a}, true, actorHeader, actorRow)
			}
			created, err := c.createMany(cmd.Context(), cl, o, count)
			if err != nil {
				if len(created) > 0 {
					fmt.Fprintf(c.err, "berth: created %d of %d actors before the error\n", len(created), count)
				}
				return err
			}
			return output(c, created, false, actorHeader, actorRow)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "the actor name (required)")
	f.StringVar(&o.Key, "key", "", "the actor key, unique among the live actors of the name")
	f.StringVar(&input, "input", "", "the input handed to the actor at start, as text")
	f.StringVar(&inputFile, "input-file", "", "read the input from this file")
	f.StringVar(&o.Pool, "runner-name-selector", "", "the runner name (pool) whose runners host it (required)")
	f.StringVar(&policy, "crash-policy", string(client.CrashSleep), "what a crash does: restart, sleep or destroy")
	f.StringVar(&o.Datacenter, "datacenter", "", "the datacenter to create it in, by name (default: the one called)")
	f.IntVar(&count, "count", 1, "how many actors to create")
	return cmd
}

// createMany creates count actors like o, bulkWorkers at a time, in order of their index in
// the result. It stops at the first error and returns the actors created until then.
func (c *cli) createMany(ctx context.Context, cl *client.Client, o client.ActorCreateOptions, count int) ([]client.Actor, error) {
	p := c.newProgress("creating actors", "created", int64(count))
	defer p.Done()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	results := make([]*client.Actor, count)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(bulkWorkers, count) {
		wg.Go(func() {
			for i := range next {
				oi := o
				if o.Key != "" {
					oi.Key = fmt.Sprintf("%s-%d", o.Key, i)
				}
				a, err := cl.Actors().Create(ctx, oi)
				if err != nil {
					cancel(err)
					continue
				}
				results[i] = &a
				p.Add(1)
			}
		})
	}
feed:
	for i := range count {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	var created []client.Actor
	for _, a := range results {
		if a != nil {
			created = append(created, *a)
		}
	}
	if err := context.Cause(ctx); err != nil {
		return created, err
	}
	return created, nil
}
