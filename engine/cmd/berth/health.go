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

// healthCommand is `berth health`: GET /health/ready of a running engine, exit status 0 when
// it answers 200 and 1 otherwise (not ready, draining, unreachable). It is the container
// image's health check, which has no shell or curl to run.
func (c *cli) healthCommand() *cobra.Command {
	var endpoint string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check that an engine is ready: GET /health/ready, exit status 1 when it is not",
		Long: `Check that an engine is ready: GET ENDPOINT/health/ready answers 200 while the engine serves
and 503 once it drains. Exit status 0 when ready, 1 otherwise. The container image runs it as
its health check. --endpoint (env ` + envEndpoint + `, default ` + defaultEndpoint + `) names the engine;
no token is needed.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base := strings.TrimRight(c.setting(cmd, "endpoint", endpoint, envEndpoint, defaultEndpoint), "/")
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health/ready", nil)
			if err != nil {
				return usageError{fmt.Errorf("--endpoint: %w", err)}
			}
			tr := &http.Transport{} // no proxy from the environment: the engine is usually local
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				return fmt.Errorf("health: %w", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("health: %s/health/ready answered %d %s", base, resp.StatusCode, strings.TrimSpace(string(body)))
			}
			_, err = fmt.Fprintln(c.out, strings.TrimSpace(string(body)))
			return err
		},
	}
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "the engine's public URL (env "+envEndpoint+"; default "+defaultEndpoint+")")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}
