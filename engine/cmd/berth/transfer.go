package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/engine"
	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/transfer"
)

// storeFlags name the store of export and import: --db, or the configuration's database.url.
type storeFlags struct {
	db    string
	files []string
}

func (f *storeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.db, "db", "", "store URL: file://PATH, postgres://..., fdb://CLUSTER_FILE (default: database.url of the configuration)")
	cmd.Flags().StringArrayVar(&f.files, "config", nil, "config file to read database.url from when --db is not given; repeatable")
}

func (f *storeFlags) url(environ []string) (string, error) {
	if f.db != "" {
		return f.db, nil
	}
	cfg, err := config.Load(config.Sources{Files: f.files, Environ: environ})
	if err != nil {
		return "", fmt.Errorf("configuration:\n%w", err)
	}
	return cfg.Database.URL, nil
}

// transferCommands are berth export and berth import.
func (c *cli) transferCommands() []*cobra.Command {
	var (
		exp storeFlags
		out string
	)
	export := &cobra.Command{
		Use:   "export [--db URL] [--out FILE]",
		Short: "Copy every key of a store into a file",
		Long: `Write every key and value of a store to a file (or stdout), in a checksummed format that
berth import reads into any store (embedded, PostgreSQL, FoundationDB). Progress goes to
stderr. With no --out, stdout must be a file or a pipe: a terminal is refused. An embedded
store must not be open in a running engine.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if out == "-" && isTerminal(c.out) {
				return usagef("export: stdout is a terminal, and an export is binary: give --out FILE, or redirect it (berth export > FILE)")
			}
			dbURL, err := exp.url(c.environ)
			if err != nil {
				return err
			}
			w, finish, err := c.output(out)
			if err != nil {
				return err
			}
			defer func() { err = finish(err) }()
			db, err := udb.Open(cmd.Context(), dbURL)
			if err != nil {
				return err
			}
			defer db.Close()
			p := c.newProgress("exporting", "keys", 0)
			st, err := transfer.Export(cmd.Context(), db, w, transfer.Options{Progress: func(s transfer.Stats) { p.Set(s.Keys, -1) }})
			p.Done()
			if err != nil {
				return err
			}
			fmt.Fprintf(c.err, "exported %d keys (%d bytes of keys and values) from %s\n", st.Keys, st.Bytes, config.RedactURL(dbURL))
			return nil
		},
	}
	exp.add(export)
	export.Flags().StringVar(&out, "out", "-", "the file to write; - for stdout")

	var (
		imp       storeFlags
		in        string
		overwrite bool
	)
	imp2 := &cobra.Command{
		Use:   "import [--db URL] [--in FILE] [--overwrite]",
		Short: "Load a file written by berth export into a store",
		Long: `Read a file written by berth export (or stdin) into a store. The store must be empty
unless --overwrite, which first clears all of it. A damaged or cut file is refused and
what it had written is removed.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dbURL, err := imp.url(c.environ)
			if err != nil {
				return err
			}
			r, err := c.open(in)
			if err != nil {
				return err
			}
			defer r.Close()
			db, err := udb.Open(cmd.Context(), dbURL)
			if err != nil {
				return err
			}
			defer db.Close()
			p := c.newProgress("importing", "keys", 0)
			st, err := transfer.Import(cmd.Context(), db, bufio.NewReaderSize(r, 1<<20),
				transfer.Options{Overwrite: overwrite, Progress: func(s transfer.Stats) { p.Set(s.Keys, -1) }})
			p.Done()
			if err != nil {
				return err
			}
			fmt.Fprintf(c.err, "imported %d keys (%d bytes of keys and values) into %s\n", st.Keys, st.Bytes, config.RedactURL(dbURL))
			return nil
		},
	}
	imp.add(imp2)
	imp2.Flags().StringVar(&in, "in", "-", "the file to read; - for stdin")
	imp2.Flags().BoolVar(&overwrite, "overwrite", false, "clear a store that holds keys before importing")
	return []*cobra.Command{export, imp2, c.backupCommand()}
}

// defaultPeerEndpoint is where berth backup finds api-peer unless told.
const defaultPeerEndpoint = "http://127.0.0.1:6421"

// backupCommand is berth backup: an online export through a running engine's api-peer.
func (c *cli) backupCommand() *cobra.Command {
	var endpoint, token, out string
	cmd := &cobra.Command{
		Use:   "backup [--endpoint PEER_URL] [--token TOKEN] --out FILE",
		Short: "Copy every key of a running engine's store into a file",
		Long: `Ask a running engine for a backup of its store through its api-peer listener (GET /backup,
with the admin token when the engine has one) and write it to a file, in berth export's
format: berth import restores it into an empty store. The engine reads the key space at one
read version while its store allows (see docs/udb.md, "Export and import"), so the store need
not be stopped, embedded ones included. Progress goes to stderr.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if out == "-" && isTerminal(c.out) {
				return usagef("backup: stdout is a terminal, and a backup is binary: give --out FILE, or redirect it")
			}
			base := strings.TrimRight(endpoint, "/")
			if token == "" {
				token = c.getenv(envToken)
			}
			req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, base+engine.BackupPath, nil)
			if err != nil {
				return usagef("backup: --endpoint %q: %v", endpoint, err)
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
			defer hc.CloseIdleConnections()
			resp, err := hc.Do(req)
			if err != nil {
				return fmt.Errorf("backup: cannot reach api-peer at %s: %w (give its URL with --endpoint, default %s)", base, err, defaultPeerEndpoint)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				return fmt.Errorf("backup: %s answered %s: %s", base+engine.BackupPath, resp.Status, strings.TrimSpace(string(b)))
			}
			w, finish, err := c.output(out)
			if err != nil {
				return err
			}
			defer func() { err = finish(err) }()
			p := c.newProgress("backing up", "bytes", 0)
			n, err := io.Copy(w, &countingReader{r: resp.Body, p: p})
			p.Done()
			if err != nil {
				return fmt.Errorf("backup: the stream from %s broke after %d bytes: %w", base, n, err)
			}
			fmt.Fprintf(c.err, "backed up %d bytes from %s\n", n, base)
			return nil
		},
	}
	cmd.Flags().StringVar(&endpoint, "endpoint", defaultPeerEndpoint, "the engine's api-peer URL")
	cmd.Flags().StringVar(&token, "token", "", "the engine's admin token (env "+envToken+")")
	cmd.Flags().StringVar(&out, "out", "-", "the file to write; - for stdout")
	return cmd
}

// countingReader reports the bytes read through it to a progress.
type countingReader struct {
	r io.Reader
	p *progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.Add(int64(n))
	return n, err
}

// output opens where export writes: stdout for "-", else the file, which finish removes if
// the export failed (a partial stream is of no use).
func (c *cli) output(name string) (io.Writer, func(error) error, error) {
	if name == "-" {
		bw := bufio.NewWriterSize(c.out, 1<<20)
		return bw, func(err error) error { return errors.Join(err, bw.Flush()) }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	return bw, func(err error) error {
		if err == nil {
			err = bw.Flush()
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
		}
		return err
	}, nil
}
