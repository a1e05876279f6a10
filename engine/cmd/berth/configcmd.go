package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

func (c *cli) configCommand() *cobra.Command {
	return group("config", "Check and show the engine's configuration",
		c.configValidateCommand(), c.configPrintCommand())
}

func (c *cli) configValidateCommand() *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the configuration berth start would use, without starting",
		Long: `Load the configuration as berth start would and report every unknown key and bad value,
naming each and where it was set. Exit status 1 when there is any.

` + configHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := cf.load(cmd, c.environ); err != nil {
				return err
			}
			_, err := fmt.Fprintln(c.out, "configuration OK")
			return err
		},
	}
	cf.add(cmd)
	return cmd
}

func (c *cli) configPrintCommand() *cobra.Command {
	var cf configFlags
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "print",
		Short: "Print the effective configuration, secrets masked",
		Long: `Print the configuration berth start would use, with every default filled in, as YAML (or
JSON with --json). Secrets are masked: auth.admin_token, and passwords in the store URL.

` + configHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cf.load(cmd, c.environ)
			if err != nil {
				return err
			}
			masked := cfg.Redacted()
			if jsonOut {
				return c.printJSON(masked)
			}
			// JSON is YAML: decoding it into a node keeps the order of the struct's fields.
			b, err := json.Marshal(masked)
			if err != nil {
				return err
			}
			var doc yaml.Node
			if err := yaml.Unmarshal(b, &doc); err != nil {
				return err
			}
			plainStyle(&doc)
			enc := yaml.NewEncoder(c.out)
			enc.SetIndent(2)
			if err := enc.Encode(&doc); err != nil {
				return err
			}
			return enc.Close()
		},
	}
	cf.add(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON instead of YAML")
	return cmd
}

// plainStyle turns the flow style of a node decoded from JSON into YAML's block style.
func plainStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		n.Style &^= yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		plainStyle(c)
	}
}
