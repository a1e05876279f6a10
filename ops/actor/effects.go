package actor

import "github.com/berthhq/berth/pkg/id"

// Effects is what a committed transition asks of the engine: they are facts already in
// the store (commands are stored until acknowledged), so carrying them out late or twice
// is harmless, and a crash before carrying them out loses nothing a reconnect or a timer
// does not redo.
type Effects struct {
	// Commands go to the hosts' sockets, in order.
	Commands []Command
	// Ready are actors that became connectable; Stopped ones that stopped being so (told to
	// stop), and again once they have stopped and left their host.
	Ready, Stopped []id.ID
	// Destroyed are actors destroyed by this transition.
	Destroyed []id.ID
	// Pools had a slot freed: their pending queue may move.
	Pools []Pool
	// StoppedRunners finished draining: their sockets close with ws.eviction.
	StoppedRunners []id.ID
	// StoppedEnvoys were stopping and have no actor left: their sockets close with
	// ws.eviction.
	StoppedEnvoys []Host
	// Created and Woken count the actors this transition created and woke (for the
	// engine's metrics once it has committed).
	Created, Woken int
}

// Pool names a pending queue.
type Pool struct {
	Namespace id.ID
	Selector  string
}

// Merge appends o's effects to e.
func (e *Effects) Merge(o Effects) {
	e.Commands = append(e.Commands, o.Commands...)
	e.Ready = append(e.Ready, o.Ready...)
	e.Stopped = append(e.Stopped, o.Stopped...)
	e.Destroyed = append(e.Destroyed, o.Destroyed...)
	for _, p := range o.Pools {
		e.addPool(p)
	}
	e.StoppedRunners = append(e.StoppedRunners, o.StoppedRunners...)
	e.StoppedEnvoys = append(e.StoppedEnvoys, o.StoppedEnvoys...)
	e.Created += o.Created
	e.Woken += o.Woken
}

func (e *Effects) addPool(p Pool) {
	for _, q := range e.Pools {
		if q == p {
			return
		}
	}
	e.Pools = append(e.Pools, p)
}
