package runnertest

import (
	"sync/atomic"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
	"github.com/berthhq/berth/sdk/runner"
)

// Recorder records a runner's hooks on buffered channels (64 each), so hooks never block.
type Recorder struct {
	Connected    chan string
	Disconnected chan error
	Commands     chan []proto.CommandWrapper
	ForceStop    chan runner.ForceStopReason
	Shutdown     chan error
	Actors       atomic.Int64 // what ActiveActors reports
}

// NewRecorder returns a Recorder with empty channels.
func NewRecorder() *Recorder {
	return &Recorder{
		Connected:    make(chan string, 64),
		Disconnected: make(chan error, 64),
		Commands:     make(chan []proto.CommandWrapper, 64),
		ForceStop:    make(chan runner.ForceStopReason, 64),
		Shutdown:     make(chan error, 64),
	}
}

// Hooks returns hooks that record on rec.
func (rec *Recorder) Hooks() runner.Hooks {
	return runner.Hooks{
		OnConnected:       func(id string) { rec.Connected <- id },
		OnDisconnected:    func(err error) { rec.Disconnected <- err },
		OnCommands:        func(c []proto.CommandWrapper) { rec.Commands <- c },
		OnForceStopActors: func(r runner.ForceStopReason) { rec.ForceStop <- r },
		OnShutdown:        func(err error) { rec.Shutdown <- err },
		ActiveActors:      func() int { return int(rec.Actors.Load()) },
	}
}
