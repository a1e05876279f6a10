package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// healthCommand is `berth health`: GET /health/ready of a running engine (exit status 1
// unless it answers 200: not ready, draining or unreachable), then its build from /metadata.
// The container image runs it as its health check, having no shell or curl.
func (c *cli) healthCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that the engine is ready (GET /health/ready) and show its build",
		Long: `Check that an engine is ready: GET /health/ready answers 200 while the engine serves and
503 once it drains. Exit status 0 when ready, 1 otherwise; then the engine's build from
/metadata. The container image runs it as its health check. No token is needed.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			base := strings.TrimRight(c.setting(cmd, "endpoint", c.endpoint, envEndpoint, defaultEndpoint), "/")
			if err := ready(ctx, c.hc, base); err != nil {
				return err
			}
			m, err := cl.Metadata(ctx)
			if err != nil {
				return err
			}
			if c.jsonOut {
				return c.printJSON(map[string]any{"health": map[string]string{"status": "ok"}, "metadata": m})
			}
			_, err = fmt.Fprintf(c.out, "ok: %s %s (commit %s, built %s, %s; runner protocol %s, envoy protocol %s)\n",
				m.Runtime, deref(&m.Version), deref(m.GitSha), deref(m.BuildTimestamp), deref(m.GoVersion),
				deref(m.RunnerProtocolVersion), deref(m.EnvoyProtocolVersion))
			return err
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answers")
	return c.clientFlags(cmd)
}

// ready asks base's /health/ready: nil on 200, an error naming the answer otherwise.
func ready(ctx context.Context, hc *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health/ready", nil)
	if err != nil {
		return usageError{fmt.Errorf("--endpoint: %w", err)}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err // described by report, as any unreachable engine
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/health/ready answered %d %s", base, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
