package serverless

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Poll timings (docs/serverless.md, § 3.1).
const (
	DefaultPollInterval = 10 * time.Second
	MinPollInterval     = 5 * time.Second
	maxBackoffExponent  = 8
	// WriteFetchTimeout bounds the /metadata fetch a config write waits for,
	// below api-public's default datacenter timeout (5 s) so that a hanging
	// endpoint cannot fail the write; the poller fetches again right after.
	WriteFetchTimeout = 3 * time.Second
	scanEvery         = 2 * time.Second
	scanPage          = 1000
)

// Service fetches the /metadata of this datacenter's serverless pools and
// stores what it learns.
type Service struct {
	DB      udb.Database
	Fetcher Fetcher
	Log     *slog.Logger
	// Hosts drains the hosts of pools (version upgrades, deleted configs); nil drains none.
	Hosts PoolHosts
	// NodeID names this node in the pools' poll leases (poll_lease.go); "" polls every
	// pool without a lease.
	NodeID string

	wake chan struct{}
}

// New returns a Service.
func New(db udb.Database, f Fetcher, log *slog.Logger) *Service {
	return &Service{DB: db, Fetcher: f, Log: log, wake: make(chan struct{}, 1)}
}

// HealthCheck answers POST /runner-configs/serverless-health-check.
func (s *Service) HealthCheck(ctx context.Context, url string, headers map[string]string) any {
	return s.Fetcher.HealthCheck(ctx, url, headers)
}

// Refresh fetches the pool's /metadata now and applies it: a pool that does
// not exist or is not serverless is core.internal_error (as on the
// reference), a failed fetch serverless_runner_pool.failed_to_fetch_metadata.
func (s *Service) Refresh(ctx context.Context, ns id.ID, name string) error {
	e, err := udb.ReadTransact(ctx, s.DB, func(r udb.ReadTransaction) (runnerconfig.Entry, error) {
		return runnerconfig.Get(ctx, r, runnerconfig.GetInput{Namespace: ns, Name: name})
	})
	if err != nil || e.Config.Serverless == nil {
		return rerr.Internal(errors.Join(errors.New("serverless: refresh-metadata of a pool that is not serverless"), err))
	}
	if ferr := s.fetchApply(ctx, ns, name, *e.Config.Serverless); ferr != nil {
		return rerr.FailedToFetchMetadata(ferr.Envelope())
	}
	return nil
}

// Written is called after a config write whose endpoint changed: it fetches
// the pool's /metadata, waiting at most WriteFetchTimeout, and wakes the
// poller. Failures are logged, never returned: the write stands.
func (s *Service) Written(ctx context.Context, ns id.ID, name string, cfg keys.RunnerConfig) {
	if cfg.Serverless == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, WriteFetchTimeout)
	defer cancel()
	if err := s.fetchApply(ctx, ns, name, *cfg.Serverless); err != nil {
		s.logFailure(ns, name, err)
	}
	s.Deleted()
}

// Deleted is called after a config was deleted: the poller looks at once, and drains
// the pool's hosts if it was serverless (gone).
func (s *Service) Deleted() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Service) logFailure(ns id.ID, name string, err *FetchError) {
	// Never the headers: they are the endpoint's secrets.
	s.Log.Warn("serverless metadata fetch failed", "namespace_id", ns.String(), "pool", name,
		"kind", err.Kind(), "error", err.Error())
}

// fetchApply fetches the pool's /metadata and applies it (apply).
func (s *Service) fetchApply(ctx context.Context, ns id.ID, name string, cfg keys.ServerlessRunnerConfig) *FetchError {
	m, ferr := s.Fetcher.Fetch(ctx, cfg.URL, cfg.Headers)
	if ferr != nil {
		return ferr
	}
	s.apply(ctx, ns, name, cfg, m)
	return nil
}

// poolKey names a pool in the poller's state.
type poolKey struct {
	ns   id.ID
	name string
}

type poolState struct {
	cfg      keys.ServerlessRunnerConfig
	next     time.Time
	failures int
	busy     bool
	seen     bool
	held     bool // this node held the pool's poll lease at its last try
}

// PollInterval is a pool's poll interval: metadata_poll_interval (ms), or
// DefaultPollInterval when unset, at least MinPollInterval.
func PollInterval(cfg keys.ServerlessRunnerConfig) time.Duration {
	d := DefaultPollInterval
	if p := cfg.MetadataPollInterval; p != nil {
		d = time.Duration(min(*p, uint64(time.Hour/time.Millisecond))) * time.Millisecond
	}
	return max(d, MinPollInterval)
}

// Backoff is the wait after failures consecutive failed fetches (failures ≥
// 1): the interval · 2^(failures−1), the exponent capped at 8.
func Backoff(interval time.Duration, failures int) time.Duration {
	return interval << min(max(failures-1, 0), maxBackoffExponent)
}

// Run polls every serverless pool of the datacenter until ctx ends: a pool
// whose poll lease this node holds (one node at a time), every interval.
func (s *Service) Run(ctx context.Context) {
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		pools = map[poolKey]*poolState{}
	)
	defer func() {
		wg.Wait()
		var held []poolKey
		for k, st := range pools {
			if st.held {
				held = append(held, k)
			}
		}
		s.releasePolls(held)
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var lastScan time.Time
	for {
		now := time.Now()
		if now.Sub(lastScan) >= scanEvery {
			lastScan = now
			gone, err := s.scan(ctx, &mu, pools, now)
			if err != nil && ctx.Err() == nil {
				s.Log.Warn("serverless: listing pools failed", "error", err.Error())
			}
			for _, k := range gone {
				wg.Go(func() { s.gone(ctx, k.ns, k.name) })
			}
		}
		mu.Lock()
		for k, st := range pools {
			if st.busy || now.Before(st.next) {
				continue
			}
			st.busy = true
			wg.Add(1)
			go func(k poolKey, cfg keys.ServerlessRunnerConfig, failures int) {
				defer wg.Done()
				interval := PollInterval(cfg)
				held, err := s.takePoll(ctx, k, interval, failures)
				var ferr *FetchError
				if held {
					ferr = s.fetchApply(ctx, k.ns, k.name, cfg)
				}
				mu.Lock()
				defer mu.Unlock()
				st.busy = false
				st.held = held || (err != nil && st.held)
				if err != nil && ctx.Err() == nil {
					s.Log.Warn("serverless: taking a poll lease failed", "pool", k.name, "error", err.Error())
				}
				if ferr != nil && ctx.Err() == nil {
					st.failures++
					s.logFailure(k.ns, k.name, ferr)
					st.next = time.Now().Add(Backoff(interval, st.failures))
					return
				}
				st.failures = 0
				st.next = time.Now().Add(interval)
			}(k, st.cfg, st.failures)
		}
		mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wake:
			lastScan = time.Time{}
		}
	}
}

// scan refreshes the set of pools from the store: new pools are due now,
// pools whose url or headers changed too, pools no longer serverless are
// dropped and returned.
func (s *Service) scan(ctx context.Context, mu *sync.Mutex, pools map[poolKey]*poolState, now time.Time) (gone []poolKey, err error) {
	var all []runnerconfig.Pool
	var after *runnerconfig.Pool
	for {
		page, err := udb.ReadTransact(ctx, s.DB, func(r udb.ReadTransaction) ([]runnerconfig.Pool, error) {
			return runnerconfig.ListServerless(ctx, r, after, scanPage)
		})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < scanPage {
			break
		}
		after = &page[len(page)-1]
	}
	mu.Lock()
	defer mu.Unlock()
	for _, st := range pools {
		st.seen = false
	}
	for _, p := range all {
		k := poolKey{p.Namespace, p.Name}
		st, ok := pools[k]
		if !ok || st.cfg.URL != p.Config.URL || !sameHeaders(st.cfg.Headers, p.Config.Headers) {
			st = &poolState{next: now}
			pools[k] = st
		}
		st.cfg, st.seen = p.Config, true
	}
	for k, st := range pools {
		if !st.seen && !st.busy {
			delete(pools, k)
			gone = append(gone, k)
		}
	}
	return gone, nil
}

func sameHeaders(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Policy is the outbound destination policy.
func (s *Service) Policy() outbound.Policy { return s.Fetcher.Policy }
