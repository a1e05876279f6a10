package main

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/sdk/client"
)

// keyConflict is a key of one actor name held by more than one live actor: possible only
// for keys that two datacenters held before keys were reserved across datacenters
// (docs/design.md, "Keys across datacenters").
type keyConflict struct {
	Namespace string      `json:"namespace"`
	Name      string      `json:"name"`
	Key       string      `json:"key"`
	Actors    []actorJSON `json:"actors"`
}

// doctorReport is what `berth doctor --json` prints.
type doctorReport struct {
	Namespaces   int           `json:"namespaces"`
	KeyedActors  int           `json:"keyed_actors"`
	KeyConflicts []keyConflict `json:"key_conflicts"`
}

var conflictHeader = []string{"NAMESPACE", "NAME", "KEY", "ACTOR", "DATACENTER", "STATE", "CREATED"}

func (c *cli) doctorCommand() *cobra.Command {
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Look for keys held by more than one live actor across datacenters",
		Long: `doctor reads every live actor of the namespace (or of every namespace the token
sees, with --all-namespaces) through the public API and lists the keys held by more than
one of them. A key has one live actor across every datacenter, but for keys that two
datacenters each held before they reserved keys across datacenters: both actors were
kept when the engine started, and no third is created. Destroy the one you do not want;
the key then belongs to the other.

Exit status: 0 when no key is held twice, 1 when one is (or on an error).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			namespaces := []string{cl.Namespace()}
			if allNamespaces {
				all, err := client.Collect(cl.Namespaces().All(cmd.Context(), client.NamespaceListOptions{}))
				if err != nil {
					return err
				}
				namespaces = namespaces[:0]
				for _, ns := range all {
					namespaces = append(namespaces, ns.Name)
				}
			}
			rep, err := c.findKeyConflicts(cmd, cl, namespaces)
			if err != nil {
				return err
			}
			if err := c.printDoctorReport(rep); err != nil {
				return err
			}
			if n := len(rep.KeyConflicts); n > 0 {
				return fmt.Errorf("%d %s held by more than one live actor", n, plural(n, "key is", "keys are"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&allNamespaces, "all-namespaces", false, "check every namespace the token can list")
	return c.clientFlags(cmd)
}

// findKeyConflicts pages through the live actors of every name of namespaces, reporting
// progress on stderr, and returns the keys held by more than one of them.
func (c *cli) findKeyConflicts(cmd *cobra.Command, cl *client.Client, namespaces []string) (doctorReport, error) {
	ctx := cmd.Context()
	rep := doctorReport{Namespaces: len(namespaces), KeyConflicts: []keyConflict{}}
	prog := c.newProgress("doctor: actors read", "actors", 0)
	defer prog.Done()
	for _, ns := range namespaces {
		api := cl.InNamespace(ns).Actors()
		names, err := client.Collect(api.AllNames(ctx, client.NameListOptions{}))
		if err != nil {
			return rep, fmt.Errorf("namespace %s: %w", ns, err)
		}
		for _, n := range names {
			byKey := map[string][]actorJSON{}
			for a, err := range api.All(ctx, client.ActorListOptions{Name: n.Name}) {
				if err != nil {
					return rep, fmt.Errorf("namespace %s, actors named %s: %w", ns, n.Name, err)
				}
				prog.Add(1)
				if a.Key == nil || a.DestroyTs != nil {
					continue
				}
				rep.KeyedActors++
				byKey[*a.Key] = append(byKey[*a.Key], actorJSON{Actor: a, State: actorState(a)})
			}
			for key, held := range byKey {
				if len(held) > 1 {
					slices.SortFunc(held, func(x, y actorJSON) int { return cmp.Compare(x.CreateTs, y.CreateTs) })
					rep.KeyConflicts = append(rep.KeyConflicts, keyConflict{Namespace: ns, Name: n.Name, Key: key, Actors: held})
				}
			}
		}
	}
	slices.SortFunc(rep.KeyConflicts, func(x, y keyConflict) int {
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name), cmp.Compare(x.Key, y.Key))
	})
	return rep, nil
}

func (c *cli) printDoctorReport(rep doctorReport) error {
	if c.jsonOut {
		return c.printJSON(rep)
	}
	if len(rep.KeyConflicts) == 0 {
		_, err := fmt.Fprintf(c.out, "no key is held by more than one live actor (%d keyed %s in %d %s)\n",
			rep.KeyedActors, plural(rep.KeyedActors, "actor", "actors"), rep.Namespaces, plural(rep.Namespaces, "namespace", "namespaces"))
		return err
	}
	var rows [][]string
	for _, k := range rep.KeyConflicts {
		for _, a := range k.Actors {
			rows = append(rows, []string{k.Namespace, k.Name, k.Key, a.ActorId, a.Datacenter, a.State, ts(&a.CreateTs)})
		}
	}
	return c.printTable(conflictHeader, rows)
}

// plural picks the singular or plural form for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
