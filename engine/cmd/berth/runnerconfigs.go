package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/sdk/client"
)

// runnerConfig is the config of one runner name in one datacenter: a row of the table, and
// with --json the API's fields and these two.
type runnerConfig struct {
	Name       string `json:"name"`
	Datacenter string `json:"datacenter"`
	client.RunnerConfigResponse
}

var runnerConfigTable = table[runnerConfig]{
	header: []string{"NAME", "DATACENTER", "KIND", "URL", "PROTOCOL", "ERROR"},
	row: func(r runnerConfig) []string {
		kind, url, protocol, poolErr := "normal", "-", "-", "-"
		if s := r.Serverless; s != nil {
			kind, url = "serverless", s.Url
		}
		if r.ProtocolVersion != nil {
			protocol = strconv.Itoa(int(*r.ProtocolVersion))
		}
		if r.RunnerPoolError != nil {
			if b, err := json.Marshal(r.RunnerPoolError); err == nil {
				poolErr = string(b)
			}
		}
		return []string{r.Name, r.Datacenter, kind, url, protocol, poolErr}
	},
	id: func(r runnerConfig) string { return r.Name },
}

// listRunnerConfigs returns the configs o selects, one per runner name and datacenter, in
// order of name and datacenter.
func listRunnerConfigs(ctx context.Context, cl *client.Client, o client.RunnerConfigListOptions) ([]runnerConfig, error) {
	m, err := cl.RunnerConfigs().List(ctx, o)
	if err != nil {
		return nil, err
	}
	var out []runnerConfig
	for name, dcs := range m {
		for dc, cfg := range dcs {
			out = append(out, runnerConfig{Name: name, Datacenter: dc, RunnerConfigResponse: cfg})
		}
	}
	slices.SortFunc(out, func(a, b runnerConfig) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Datacenter, b.Datacenter))
	})
	return out, nil
}

func (c *cli) runnerConfigsCommand() *cobra.Command {
	var (
		variant string
		limit   int
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the runner configs of the namespace, one row per datacenter",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := client.RunnerConfigListOptions{Variant: client.RunnerConfigVariant(variant), Limit: limit}
			if variant != "" && !o.Variant.Valid() {
				return usagef("runner-configs list: --variant %q: want normal or serverless", variant)
			}
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			items, err := listRunnerConfigs(cmd.Context(), cl, o)
			if err != nil {
				return err
			}
			return output(c, items, false, runnerConfigTable)
		},
	}
	list.Flags().StringVar(&variant, "variant", "", "only configs of this kind: normal or serverless")
	_ = list.RegisterFlagCompletionFunc("variant", cobra.FixedCompletions(
		[]string{string(client.VariantNormal), string(client.VariantServerless)}, cobra.ShellCompDirectiveNoFileComp))
	list.Flags().IntVar(&limit, "limit", 0, "at most this many per datacenter (0: the engine's default)")

	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show the config of a runner name in each datacenter",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			items, err := listRunnerConfigs(cmd.Context(), cl, client.RunnerConfigListOptions{RunnerNames: args[:1]})
			if err != nil {
				return err
			}
			if len(items) == 0 {
				return notFound("runner_config", "runner config", args[0])
			}
			return output(c, items, false, runnerConfigTable)
		},
	}

	refresh := c.each("refresh NAME...", "Make every datacenter fetch a serverless pool's /metadata now", "refreshed", minArgs("NAME"),
		func(ctx context.Context, cl *client.Client, name string) error {
			return cl.RunnerConfigs().RefreshMetadata(ctx, name)
		})
	del := c.each("delete NAME...", "Delete the config of runner names in every datacenter", "deleted", minArgs("NAME"),
		func(ctx context.Context, cl *client.Client, name string) error {
			return cl.RunnerConfigs().Delete(ctx, name)
		})

	put := c.runnerConfigsPutCommand()
	c.quietFlag(list, get, put)
	return c.clientFlags(group("runner-configs", "List, show, set, delete, refresh and check runner configs (pools)",
		list, get, put, del, refresh, c.runnerConfigsCheckCommand()))
}

func (c *cli) runnerConfigsPutCommand() *cobra.Command {
	var (
		file        string
		normal      bool
		datacenters []string
	)
	cmd := &cobra.Command{
		Use:   "put NAME (--normal | --file FILE) [--datacenter DC]...",
		Short: "Set the config of a runner name in some datacenters, removing it from the others",
		Long: `Set the config of runner name NAME in each --datacenter (default: every datacenter);
the datacenters not named lose their config for NAME. The config is --normal (runners that
connect by themselves), or the JSON object of --file (- for stdin) as the API takes it, e.g.
{"serverless": {"url": "https://app.example/api/rivet", "request_lifespan": 3600}}.`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg client.RunnerConfig
			switch {
			case normal == (file != ""):
				return usagef("runner-configs put: give --normal or --file")
			case normal:
				cfg.Normal = &client.RunnerConfigNormal{}
			default:
				if err := c.readJSONFile(file, &cfg); err != nil {
					return usagef("runner-configs put: --file %s: %v", file, err)
				}
			}
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if len(datacenters) == 0 {
				dcs, err := cl.Datacenters().List(ctx)
				if err != nil {
					return err
				}
				for _, dc := range dcs {
					datacenters = append(datacenters, dc.Name)
				}
			}
			set := make(map[string]client.RunnerConfig, len(datacenters))
			for _, dc := range datacenters {
				set[dc] = cfg
			}
			changed, err := cl.RunnerConfigs().Upsert(ctx, args[0], set)
			switch {
			case err != nil:
				return err
			case c.jsonOut:
				return c.printJSON(map[string]any{"name": args[0], "datacenters": datacenters, "endpoint_config_changed": changed})
			case c.quiet:
				_, err = fmt.Fprintln(c.out, args[0])
			default:
				_, err = fmt.Fprintf(c.out, "set %s in %s\n", args[0], strings.Join(datacenters, ", "))
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&normal, "normal", false, "a normal config: runners connect by themselves")
	cmd.Flags().StringVar(&file, "file", "", "read the config, a JSON object, from this file (- for stdin)")
	cmd.Flags().StringArrayVar(&datacenters, "datacenter", nil, "a datacenter to set it in, by name; repeatable (default: all)")
	return cmd
}

// readJSONFile decodes the JSON of file ("-": stdin) into v, refusing unknown fields.
func (c *cli) readJSONFile(file string, v any) error {
	r, err := c.open(file)
	if err != nil {
		return err
	}
	defer r.Close()
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (c *cli) runnerConfigsCheckCommand() *cobra.Command {
	var headers []string
	cmd := &cobra.Command{
		Use:   "check URL [--header NAME=VALUE]...",
		Short: "Make the engine call a serverless endpoint's /metadata once and say what it found",
		Long: `Make the engine call URL/metadata once, as it would for a serverless pool, and print the
version it found. Exit status 1 when the call failed, saying why (the kind of failure and
the engine's message).`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			h := map[string]string{}
			for _, kv := range headers {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("runner-configs check: --header %q: want NAME=VALUE", kv)
				}
				h[k] = v
			}
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			r, err := cl.RunnerConfigs().ServerlessHealthCheck(cmd.Context(), args[0], h)
			if err != nil {
				return err
			}
			if c.jsonOut {
				if err := c.printJSON(r); err != nil {
					return err
				}
			}
			if f := r.Failure; f != nil {
				msg := fmt.Sprintf("%s failed its check: %s: %s", args[0], f.Error.Metadata.Kind, f.Error.Message)
				if f.Error.Details != nil {
					msg += " (" + *f.Error.Details + ")"
				}
				return fmt.Errorf("%s", msg)
			}
			if !c.jsonOut && r.Success != nil {
				_, err = fmt.Fprintf(c.out, "%s answers: version %s\n", args[0], r.Success.Version)
			}
			return err
		},
	}
	cmd.Flags().StringArrayVar(&headers, "header", nil, "a header to send, NAME=VALUE; repeatable")
	return cmd
}
