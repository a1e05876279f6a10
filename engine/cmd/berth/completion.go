package main

import (
	"github.com/spf13/cobra"
)

// completionCommand prints the shell completion scripts cobra writes for the command tree.
func completionCommand() *cobra.Command {
	shell := func(name, how string, gen func(cmd *cobra.Command) error) *cobra.Command {
		return &cobra.Command{
			Use:   name,
			Short: "Print the " + name + " completion script",
			Long:  "Print the " + name + " completion script. " + how,
			Args:  noArgs,
			RunE:  func(cmd *cobra.Command, _ []string) error { return gen(cmd) },
		}
	}
	return group("completion", "Print a shell completion script: bash, zsh or fish",
		shell("bash", "Load it in the current shell with\n\n  source <(berth completion bash)\n\nor for every shell, save it as ~/.local/share/bash-completion/completions/berth (needs the bash-completion package).",
			func(cmd *cobra.Command) error { return cmd.Root().GenBashCompletionV2(cmd.OutOrStdout(), true) }),
		shell("zsh", "Load it in the current shell with\n\n  source <(berth completion zsh)\n\nor for every shell, save it as _berth in a folder of your $fpath (compinit must be on).",
			func(cmd *cobra.Command) error { return cmd.Root().GenZshCompletion(cmd.OutOrStdout()) }),
		shell("fish", "Load it in the current shell with\n\n  berth completion fish | source\n\nor for every shell, save it as ~/.config/fish/completions/berth.fish.",
			func(cmd *cobra.Command) error { return cmd.Root().GenFishCompletion(cmd.OutOrStdout(), true) }),
	)
}
