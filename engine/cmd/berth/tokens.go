package main

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/pkg/auth"
)

// The tokens commands edit the tokens file (auth.tokens_file) on this machine; a running
// engine reads it again within a second of a change. They never talk to the engine.

func (c *cli) tokensCommand() *cobra.Command {
	return group("tokens", "Create, list and revoke scoped tokens (the auth.tokens_file)",
		c.tokensCreateCommand(), c.tokensListCommand(), c.tokensRevokeCommand())
}

// tokensFileFlag adds the required --file flag.
func tokensFileFlag(cmd *cobra.Command, file *string) {
	cmd.Flags().StringVar(file, "file", "", "the tokens file, as auth.tokens_file names it (required)")
	_ = cmd.MarkFlagRequired("file")
}

// readTokens reads the tokens file; a missing one is empty when missingOK.
func readTokens(path string, missingOK bool) (auth.File, error) {
	f, err := auth.ReadFile(path)
	if missingOK && errors.Is(err, fs.ErrNotExist) {
		return auth.File{}, nil
	}
	return f, err
}

func (c *cli) tokensCreateCommand() *cobra.Command {
	var file, ns, role, id string
	var expiresIn time.Duration
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Make a token for one namespace and role, and add it to the tokens file",
		Long: `Make a random token limited to one namespace with a role, add its SHA-256 to the tokens
file (creating the file, readable by its owner only), and print the token: it is shown
this once and kept nowhere. Roles:

  admin   everything within the namespace
  read    lists and gets (GET on the REST API), nothing else
  runner  connecting runners and envoys of the namespace; no REST API

To rotate a token: create its successor, move its users over, revoke the old one. A running
engine picks up each change within a second, without a restart.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !auth.Role(role).Valid() {
				return usagef("tokens create: --role %q: want admin, read or runner", role)
			}
			if ns == "" {
				return usagef("tokens create: --namespace is required")
			}
			f, err := readTokens(file, true)
			if err != nil {
				return err
			}
			if id == "" {
				id = fmt.Sprintf("%s-%s-%s", ns, role, auth.NewToken()[len(auth.TokenPrefix):][:6])
			}
			tok := auth.NewToken()
			now := time.Now().UTC().Truncate(time.Second)
			e := auth.Entry{ID: id, Namespace: ns, Role: auth.Role(role), SHA256: auth.Hash(tok), CreatedAt: &now}
			if expiresIn > 0 {
				at := now.Add(expiresIn)
				e.ExpiresAt = &at
			}
			f.Tokens = append(f.Tokens, e)
			if err := f.Check(); err != nil { // the engine's checks: a duplicate id, say
				return err
			}
			if err := auth.WriteFile(file, f); err != nil {
				return err
			}
			if c.jsonOut {
				return c.printJSON(map[string]any{"token": tok, "entry": e})
			}
			fmt.Fprintf(c.err, "token %s (%s of namespace %s) added to %s; it is shown this once:\n", e.ID, e.Role, e.Namespace, file)
			_, err = fmt.Fprintln(c.out, tok)
			return err
		},
	}
	tokensFileFlag(cmd, &file)
	cmd.Flags().StringVarP(&ns, "namespace", "n", "", "the namespace the token reaches (required)")
	cmd.Flags().StringVar(&role, "role", "", "admin, read or runner (required)")
	cmd.Flags().StringVar(&id, "id", "", "the token's name in the file and in logs (default: namespace-role-random)")
	cmd.Flags().DurationVar(&expiresIn, "expires-in", 0, "end the token after this long (e.g. 720h); default: never")
	cmd.Flags().BoolVar(&c.jsonOut, "json", false, "print the token and its entry as JSON")
	_ = cmd.MarkFlagRequired("role")
	return cmd
}

func (c *cli) tokensListCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tokens of the tokens file (their ids, never the tokens)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := readTokens(file, false)
			if err != nil {
				return err
			}
			if c.jsonOut {
				return c.printJSON(f.Tokens)
			}
			rows := make([][]string, 0, len(f.Tokens))
			for _, e := range f.Tokens {
				rows = append(rows, []string{e.ID, e.Namespace, string(e.Role), timeOrDash(e.ExpiresAt), timeOrDash(e.CreatedAt)})
			}
			return c.printTable([]string{"ID", "NAMESPACE", "ROLE", "EXPIRES", "CREATED"}, rows)
		},
	}
	tokensFileFlag(cmd, &file)
	cmd.Flags().BoolVar(&c.jsonOut, "json", false, "print JSON instead of a table")
	return cmd
}

func (c *cli) tokensRevokeCommand() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "revoke ID...",
		Short: "Remove tokens from the tokens file; a running engine refuses them within a second",
		Args:  minArgs("ID"),
		RunE: func(cmd *cobra.Command, ids []string) error {
			f, err := readTokens(file, false)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if !slices.ContainsFunc(f.Tokens, func(e auth.Entry) bool { return e.ID == id }) {
					return fmt.Errorf("tokens revoke: no token %q in %s", id, file)
				}
			}
			f.Tokens = slices.DeleteFunc(f.Tokens, func(e auth.Entry) bool { return slices.Contains(ids, e.ID) })
			if err := auth.WriteFile(file, f); err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.out, "revoked %d token(s)\n", len(ids))
			return err
		},
	}
	tokensFileFlag(cmd, &file)
	return cmd
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
