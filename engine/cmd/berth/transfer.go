package main

import "github.com/spf13/cobra"

// transferCommands are berth export and berth import, once pkg/udb/transfer exists.
func (c *cli) transferCommands() []*cobra.Command { return nil }
