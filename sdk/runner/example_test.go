package runner_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
	"github.com/berthhq/berth/sdk/runner"
)

// A runner process: connect, hand commands to the actor host, and drain on SIGTERM.
func Example() {
	var mu sync.Mutex
	actors := map[string]bool{} // the host's running actors, by id

	r, err := runner.New(runner.Config{
		Endpoint:   "http://127.0.0.1:6420",
		Namespace:  "default",
		Name:       "my-pool",
		TotalSlots: 100,
		Token:      os.Getenv("BERTH_TOKEN"),
		Hooks: runner.Hooks{
			OnCommands: func(cmds []proto.CommandWrapper) {
				mu.Lock()
				defer mu.Unlock()
				for _, c := range cmds {
					switch c.Inner.(type) {
					case proto.CommandStartActor:
						actors[c.Checkpoint.ActorID] = true // start it, then report Running with SendEvents
					case proto.CommandStopActor:
						delete(actors, c.Checkpoint.ActorID) // stop it, then report Stopped
					}
				}
			},
			OnForceStopActors: func(runner.ForceStopReason) {
				mu.Lock()
				defer mu.Unlock()
				clear(actors) // the engine has given them away
			},
			// Graceful shutdown waits (up to 120 s) until this reaches 0.
			ActiveActors: func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(actors)
			},
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	// SIGTERM ends ctx; Run then sends ToServerStopping, waits for the actors to stop, and
	// closes with 1000 pegboard.runner_shutdown. Run also returns if the runner is evicted.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := r.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
