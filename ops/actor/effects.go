package actor

import (
	"github.com/berthhq/berth/pkg/id"
	envoyproto "github.com/berthhq/berth/pkg/protocol/envoy"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
)

// Effects is what a committed transition asks of the engine: they are facts already in
// the store (commands are stored until acknowledged), so carrying them out late or twice
// is harmless, and a crash before carrying them out loses nothing a reconnect or a timer
// does not redo.
type Effects struct {
	// Commands go to the hosts' sockets, in order.
	Commands []HostCommand
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
}

// HostCommand is a command for one host, in the runner protocol's shape (runner v7 and
// envoy v8 commands differ only in the stop's reason, which envoys get from StopReason).
type HostCommand struct {
	Host    Host
	Command proto.CommandWrapper
	// StopReason is why a stop command stops the actor (envoy v8 CommandStopActor.reason).
	StopReason envoyproto.StopActorReason
}

// Wrappers are the commands of a runner host, in the runner protocol.
func Wrappers(cmds []HostCommand) []proto.CommandWrapper {
	out := make([]proto.CommandWrapper, len(cmds))
	for i, c := range cmds {
		out[i] = c.Command
	}
	return out
}

// RunnerCommands are runner rid's commands cmds as HostCommands.
func RunnerCommands(rid id.ID, cmds []proto.CommandWrapper) []HostCommand {
	h := RunnerHost(rid)
	out := make([]HostCommand, len(cmds))
	for i, c := range cmds {
		out[i] = HostCommand{Host: h, Command: c}
	}
	return out
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
}

func (e *Effects) addPool(p Pool) {
	for _, q := range e.Pools {
		if q == p {
			return
		}
	}
	e.Pools = append(e.Pools, p)
}
