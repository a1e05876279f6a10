package pegboard

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/berthhq/berth/engine/metrics"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// LifecycleOptions configures a Lifecycle. DB, Hosts and Watchers are required.
type LifecycleOptions struct {
	DB       udb.Database
	Hosts    Hosts
	Watchers *Watchers
	Log      *slog.Logger
	Metrics  *metrics.Metrics
	// Config is the actors' timings (actor.DefaultConfig: Rivet's); RunnerLostThreshold and
	// EnvoyLostThreshold the hosts' (zero: 15 s).
	Config              actor.Config
	RunnerLostThreshold time.Duration
	EnvoyLostThreshold  time.Duration
	// Label and Datacenter name this datacenter in new actors.
	Label      uint16
	Datacenter string
	// Announce tells the datacenter's other nodes of changed actors (ActorsOptions.Announce).
	Announce func(actors []id.ID)
	// Keys makes keys unique across datacenters (ActorsOptions.Keys); nil in one datacenter.
	Keys KeyService
	// Serverless starts the actors of serverless envoy pools (ActorsOptions.Serverless).
	Serverless ServerlessStarter
}

// Lifecycle is a node's control plane: the actor, runner and envoy lifecycles over one
// store, reaching the hosts through Hosts.
type Lifecycle struct {
	Actors  *Actors
	Runners *Runners
	Envoys  *Envoys
}

// NewLifecycle returns the lifecycles; Run runs their loops.
func NewLifecycle(o LifecycleOptions) *Lifecycle {
	if o.RunnerLostThreshold <= 0 {
		o.RunnerLostThreshold = 15 * time.Second
	}
	if o.EnvoyLostThreshold <= 0 {
		o.EnvoyLostThreshold = 15 * time.Second
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	actors := NewActors(ActorsOptions{
		DB: o.DB, Hosts: o.Hosts, Watchers: o.Watchers, Log: o.Log, Metrics: o.Metrics, Config: o.Config,
		Label: o.Label, Datacenter: o.Datacenter, Announce: o.Announce, Keys: o.Keys, Serverless: o.Serverless,
	})
	return &Lifecycle{
		Actors: actors,
		Runners: NewRunners(RunnersOptions{
			DB: o.DB, Hosts: o.Hosts, Actors: actors, Log: o.Log, Metrics: o.Metrics, LostThreshold: o.RunnerLostThreshold,
		}),
		Envoys: NewEnvoys(EnvoysOptions{DB: o.DB, Hosts: o.Hosts, Actors: actors, Log: o.Log, LostThreshold: o.EnvoyLostThreshold}),
	}
}

// Run runs the loops (timers and queues, lost runners, lost envoys) until ctx ends.
func (l *Lifecycle) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { l.Actors.Run(ctx) })
	wg.Go(func() { l.Runners.Run(ctx) })
	wg.Go(func() { l.Envoys.Run(ctx) })
	wg.Wait()
}
