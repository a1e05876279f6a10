package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/sdk/client"
)

// actorTable shows actors; --json adds the state the table computes.
var actorTable = table[client.Actor]{
	header: []string{"ID", "NAME", "KEY", "STATE", "POOL", "CRASH POLICY", "DATACENTER", "CREATED"},
	row: func(a client.Actor) []string {
		key := "-"
		if a.Key != nil {
			key = *a.Key
		}
		return []string{a.ActorId, a.Name, key, actorState(a), a.RunnerNameSelector, string(a.CrashPolicy), a.Datacenter, ts(&a.CreateTs)}
	},
	id:   func(a client.Actor) string { return a.ActorId },
	json: func(a client.Actor) any { return actorJSON{Actor: a, State: actorState(a)} },
}

// actorJSON is an actor with its state and, from get-or-create, whether it was created.
type actorJSON struct {
	client.Actor
	State   string `json:"state"`
	Created *bool  `json:"created,omitempty"`
}

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
			return output(c, items, false, actorTable)
		},
	}
	list.Flags().StringVar(&name, "name", "", "only actors of this name")
	list.Flags().StringVar(&key, "key", "", "with --name: the actor holding this key")
	list.Flags().BoolVar(&includeDestroyed, "include-destroyed", false, "destroyed actors too")
	list.Flags().IntVar(&limit, "limit", 0, "list at most this many (0: all)")

	get := &cobra.Command{
		Use:   "get ACTOR_ID",
		Short: "Show an actor, in any state",
		Args:  idArgs(exactArgs("ACTOR_ID"), "ACTOR_ID", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			a, err := cl.Actors().Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return output(c, []client.Actor{a}, true, actorTable)
		},
	}

	names := &cobra.Command{
		Use:   "names",
		Short: "List the actor names of the namespace, with their metadata",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			items, err := take(cl.Actors().AllNames(cmd.Context(), client.NameListOptions{}), limit)
			if err != nil {
				return err
			}
			return output(c, items, false, actorNameTable)
		},
	}
	names.Flags().IntVar(&limit, "limit", 0, "list at most this many (0: all)")

	create, getOrCreate := c.actorsCreateCommand(), c.actorsGetOrCreateCommand()
	c.quietFlag(list, get, names, create, getOrCreate)
	return c.clientFlags(group("actors", "List, show, create, destroy, sleep and reschedule actors, and read their KV",
		list, get, names, create, getOrCreate,
		c.actorsEach("delete", "Destroy actors (for good)", "destroyed", (*client.ActorsAPI).Destroy, "destroy"),
		c.actorsEach("sleep", "Put actors to sleep: a running one stops and sleeps until woken", "sleeping", (*client.ActorsAPI).Sleep),
		c.actorsEach("reschedule", "Place actors again now (a running one stops first), skipping a crash backoff", "rescheduled", (*client.ActorsAPI).Reschedule),
		c.actorsKVCommand()))
}

// actorNameTable shows actor names with their metadata.
var actorNameTable = table[client.ActorName]{
	header: []string{"NAME", "METADATA"},
	row: func(n client.ActorName) []string {
		b, _ := json.Marshal(n.Metadata)
		return []string{n.Name, string(b)}
	},
	id: func(n client.ActorName) string { return n.Name },
}

// actorsEach makes a command that calls do on each ACTOR_ID given.
func (c *cli) actorsEach(use, short, done string, do func(*client.ActorsAPI, context.Context, string) error, aliases ...string) *cobra.Command {
	cmd := c.each(use+" ACTOR_ID...", short, done, idArgs(minArgs("ACTOR_ID"), "ACTOR_ID", 0),
		func(ctx context.Context, cl *client.Client, id string) error { return do(cl.Actors(), ctx, id) })
	cmd.Aliases = aliases
	return cmd
}

// actorsKVCommand reads actors' KV stores. The public API reads one key at a time; it has
// no listing of keys.
func (c *cli) actorsKVCommand() *cobra.Command {
	var keyBase64 bool
	get := &cobra.Command{
		Use:   "get ACTOR_ID KEY",
		Short: "Print the value of one key of an actor's KV store, as it is",
		Long: `Print the value of one key of an actor's KV store to stdout, its bytes as they are (no
newline added). KEY is the key's text, or with --base64 its bytes in base64. With --json,
print {"value": base64, "update_ts": ms}. A key without a value is actor.kv_key_not_found.`,
		Args: idArgs(exactArgs("ACTOR_ID", "KEY"), "ACTOR_ID", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := []byte(args[1])
			if keyBase64 {
				var err error
				if key, err = base64.StdEncoding.DecodeString(args[1]); err != nil {
					return usagef("actors kv get: KEY %q is not base64: %v", args[1], err)
				}
			}
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			v, err := cl.Actors().KVGet(cmd.Context(), args[0], key)
			if err != nil {
				return err
			}
			if c.jsonOut {
				return c.printJSON(v)
			}
			_, err = c.out.Write(v.Value)
			return err
		},
	}
	get.Flags().BoolVar(&keyBase64, "base64", false, "KEY is the key's bytes in base64 (standard alphabet)")
	return group("kv", "Read an actor's KV store (the API reads one key at a time and lists none)", get)
}

// actorFlags are the flags of a new actor, shared by create and get-or-create.
type actorFlags struct {
	o                client.ActorCreateOptions
	input, inputFile string
	policy           string
}

func (f *actorFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.o.Name, "name", "", "the actor name (required)")
	fl.StringVar(&f.o.Key, "key", "", "the actor key, unique among the live actors of the name")
	fl.StringVar(&f.input, "input", "", "the input handed to the actor at start, as text")
	fl.StringVar(&f.inputFile, "input-file", "", "read the input from this file")
	fl.StringVar(&f.o.Pool, "runner-name-selector", "", "the runner name (pool) whose runners host it (required)")
	fl.StringVar(&f.policy, "crash-policy", string(client.CrashSleep), "what a crash does: restart, sleep or destroy")
	_ = cmd.RegisterFlagCompletionFunc("crash-policy", cobra.FixedCompletions(
		[]string{string(client.CrashRestart), string(client.CrashSleep), string(client.CrashDestroy)}, cobra.ShellCompDirectiveNoFileComp))
	fl.StringVar(&f.o.Datacenter, "datacenter", "", "the datacenter to create it in, by name (default: the one called)")
}

// options checks the flags and returns the new actor they describe.
func (f *actorFlags) options(cmd *cobra.Command) (client.ActorCreateOptions, error) {
	o := f.o
	switch {
	case o.Name == "":
		return o, usagef("%s: --name is required", name(cmd))
	case o.Pool == "":
		return o, usagef("%s: --runner-name-selector is required", name(cmd))
	case f.input != "" && f.inputFile != "":
		return o, usagef("%s: give --input or --input-file, not both", name(cmd))
	}
	switch p := client.CrashPolicy(f.policy); p {
	case client.CrashRestart, client.CrashSleep, client.CrashDestroy:
		o.CrashPolicy = p
	default:
		return o, usagef("%s: --crash-policy %q: want restart, sleep or destroy", name(cmd), f.policy)
	}
	if cmd.Flags().Changed("input") {
		o.Input = []byte(f.input)
	}
	if f.inputFile != "" {
		b, err := os.ReadFile(f.inputFile)
		if err != nil {
			return o, err
		}
		o.Input = b
	}
	return o, nil
}

func (c *cli) actorsCreateCommand() *cobra.Command {
	var (
		f     actorFlags
		count int
	)
	cmd := &cobra.Command{
		Use:   "create --name NAME --runner-name-selector POOL [--key KEY] [--input TEXT]",
		Short: "Create actors",
		Long: `Create an actor of --name, hosted by the runners named --runner-name-selector. With
--count N, create N of them (with --key K, their keys are K-0 … K-(N-1)), showing progress.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd)
			if err != nil {
				return err
			}
			if count < 1 {
				return usagef("actors create: --count must be at least 1")
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
				return output(c, []client.Actor{a}, true, actorTable)
			}
			created, err := c.createMany(cmd.Context(), cl, o, count)
			if err != nil {
				if len(created) > 0 {
					fmt.Fprintf(c.err, "berth: created %d of %d actors before the error\n", len(created), count)
				}
				return err
			}
			return output(c, created, false, actorTable)
		},
	}
	f.add(cmd)
	cmd.Flags().IntVar(&count, "count", 1, "how many actors to create")
	return cmd
}

func (c *cli) actorsGetOrCreateCommand() *cobra.Command {
	var f actorFlags
	cmd := &cobra.Command{
		Use:   "get-or-create --name NAME --key KEY --runner-name-selector POOL",
		Short: "Show the live actor of a name holding a key, or create it",
		Long: `Show the live actor of --name holding --key, in whichever datacenter it lives, or create
it as create does. Concurrent calls with one key create one actor. stderr says which
happened; --json adds "created".`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd)
			if err != nil {
				return err
			}
			if o.Key == "" {
				return usagef("actors get-or-create: --key is required")
			}
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			a, created, err := cl.Actors().GetOrCreate(cmd.Context(), o)
			if err != nil {
				return err
			}
			if c.jsonOut {
				return c.printJSON(actorJSON{Actor: a, State: actorState(a), Created: &created})
			}
			if !c.quiet {
				what := "existing actor"
				if created {
					what = "created actor"
				}
				fmt.Fprintf(c.err, "%s %s\n", what, a.ActorId)
			}
			return output(c, []client.Actor{a}, true, actorTable)
		},
	}
	f.add(cmd)
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
