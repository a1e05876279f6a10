// Command counter is an example runner written with the Go runner SDK: it hosts "counter"
// actors (Counter), whose count lives in the actor's KV.
//
// Start an engine (berth start), then the runner:
//
//	go run ./examples/counter -endpoint http://127.0.0.1:6420
//
// create an actor and talk to it through the gateway:
//
//	curl -s -X POST 'http://127.0.0.1:6420/actors?namespace=default' -H 'content-type: application/json' \
//	     -d '{"name":"counter","runner_name_selector":"counter","crash_policy":"sleep"}'
//	curl -s -X POST http://127.0.0.1:6420/gateway/ACTOR_ID/      # 1
//	curl -s http://127.0.0.1:6420/gateway/ACTOR_ID/               # 1
//	curl -s -X POST http://127.0.0.1:6420/gateway/ACTOR_ID/sleep  # sleeps; the next request wakes it
//
// SIGTERM or Ctrl-C drains the runner: the engine moves its actors to another runner of the
// pool (or starts them on the next one that connects) before it exits.
// A drain by the engine (berth runners drain RUNNER_ID) ends it too, with status 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"syscall"

	"github.com/berthhq/berth/sdk/runner"
)

// options are the command's flags.
type options struct {
	Endpoint  string
	Namespace string
	Pool      string
	Token     string
	Slots     uint
}

// newRunner makes the runner that hosts counters.
func newRunner(o options, log *slog.Logger) (*runner.Runner, error) {
	return runner.New(runner.Config{
		Endpoint:   o.Endpoint,
		Namespace:  o.Namespace,
		Name:       o.Pool,
		TotalSlots: uint32(o.Slots),
		Token:      o.Token,
		Logger:     log,
		Actors: map[string]func() runner.Actor{
			"counter": func() runner.Actor { return &Counter{} },
		},
	})
}

func main() {
	var o options
	flag.StringVar(&o.Endpoint, "endpoint", "http://127.0.0.1:6420", "the engine's public URL")
	flag.StringVar(&o.Namespace, "namespace", "default", "the namespace")
	flag.StringVar(&o.Pool, "pool", "counter", "the runner name: actors are created with this runner_name_selector")
	flag.StringVar(&o.Token, "token", os.Getenv("BERTH_TOKEN"), "the engine's admin token (default $BERTH_TOKEN)")
	flag.UintVar(&o.Slots, "slots", 1000, "how many actors this runner hosts at most")
	flag.Parse()

	if o.Slots > math.MaxUint32 {
		fmt.Fprintln(os.Stderr, "counter: -slots larger than", uint32(math.MaxUint32))
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx, o, log)
	stop()
	os.Exit(code)
}

// run runs the runner until ctx ends (a drain of its own, then 0) or the engine stops it,
// and returns the exit status. A drain by the engine (berth runners drain) ends the runner
// with ws.eviction once its actors have gone: that is a normal end, 0 with an info line.
func run(ctx context.Context, o options, log *slog.Logger) int {
	r, err := newRunner(o, log)
	if err != nil {
		log.Error("counter: bad settings", "error", err)
		return 2
	}
	err = r.Run(ctx)
	var ce *runner.CloseError
	switch {
	case err == nil:
		log.Info("counter: runner stopped")
		return 0
	case errors.As(err, &ce) && ce.Evicted():
		log.Info("counter: the engine drained this runner; exiting", "runner_id", r.RunnerID())
		return 0
	}
	log.Error("counter: runner stopped", "error", err)
	return 1
}
