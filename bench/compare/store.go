package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	natsserver "github.com/nats-io/nats-server/v2/server"
)

// The stores a run can put the engines on (-store).
const (
	storeEmbedded = "embedded" // each engine's own: berth's file store, the reference's RocksDB
	storePostgres = "postgres" // one PostgreSQL server, a fresh database per session
)

// pgServer is the PostgreSQL server of a -store postgres run: admin is a URL of a database on
// it that the run may connect to, as a role that may create databases.
type pgServer struct {
	admin string
}

// with runs f on a connection to the admin database, within 30 s.
func (s *pgServer) with(ctx context.Context, f func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.admin)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return f(ctx, c)
}

// exec runs sql on the admin database.
func (s *pgServer) exec(ctx context.Context, sql string) error {
	return s.with(ctx, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, sql)
		return err
	})
}

// queryRow scans the one row of sql into dst.
func (s *pgServer) queryRow(ctx context.Context, dst any, sql string, args ...any) error {
	return s.with(ctx, func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, sql, args...).Scan(dst)
	})
}

// create makes a fresh database named after target and returns its name and URL.
func (s *pgServer) create(ctx context.Context, target string) (name, dbURL string, err error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name = "bench_" + target + "_" + hex.EncodeToString(b[:])
	if err := s.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(s.admin)
	if err != nil {
		return "", "", err
	}
	u.Path = "/" + name
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return name, u.String(), nil
}

// drop removes database name, ending the connections still open to it.
func (s *pgServer) drop(name string) error {
	return s.exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// commits is pg_stat_database's xact_commit of database name: every transaction committed in
// it, the read-only ones too. A server backend reports its counts at most once a second while
// busy and within 10 s once idle (PostgreSQL's statistics flush intervals), so a reading is
// exact only after statsSettle of quiet.
func (s *pgServer) commits(ctx context.Context, name string) (int64, error) {
	var n int64
	err := s.queryRow(ctx, &n, "SELECT coalesce(xact_commit, 0) FROM pg_stat_database WHERE datname = $1", name)
	return n, err
}

// statsSettle is how long after a phase its store commits are read: PostgreSQL's idle
// backends flush their statistics within 10 s.
const statsSettle = 11 * time.Second

// startNATS starts an in-process NATS server on loopback for several berth nodes and returns
// its URL and how to stop it.
func startNATS() (string, func(), error) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		return "", nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return "", nil, fmt.Errorf("NATS server not ready within 30 s")
	}
	return ns.ClientURL(), func() { ns.Shutdown(); ns.WaitForShutdown() }, nil
}

// version is the server's version, e.g. "15.18 (Debian 15.18-0+deb12u1)".
func (s *pgServer) version(ctx context.Context) (string, error) {
	var v string
	err := s.queryRow(ctx, &v, "SHOW server_version")
	return v, err
}
