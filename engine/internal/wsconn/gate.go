package wsconn

import (
	"slices"
	"sync"
)

// CommandGate orders a host socket's actor commands around the replay of its stored ones:
// commands sent before Open are held; Open writes the replay, then the held commands the
// replay does not already carry (same checkpoint key), and lets later ones through at once,
// but for one the replay carried: a command committed before the replay was read can be sent
// live after Open, and the host must not get it twice. Writes are serialised, so the host sees
// commands in the order they were committed.
type CommandGate[C any, K comparable] struct {
	// Key is a command's checkpoint; Write writes a batch (never empty) to the socket.
	Key   func(C) K
	Write func([]C)

	mu       sync.Mutex
	open     bool
	held     []C
	replayed map[K]bool // written by Open; dropped once sent live again
}

// Send writes cmds, or holds them until Open.
func (g *CommandGate[C, K]) Send(cmds []C) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		g.held = append(g.held, cmds...)
		return
	}
	if slices.ContainsFunc(cmds, func(c C) bool { return g.replayed[g.Key(c)] }) {
		cmds = slices.DeleteFunc(slices.Clone(cmds), func(c C) bool {
			k := g.Key(c)
			again := g.replayed[k]
			delete(g.replayed, k)
			return again
		})
	}
	g.write(cmds)
}

// Open writes replay and the held commands not in it, then opens the gate.
func (g *CommandGate[C, K]) Open(replay []C) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = true
	sent := make(map[K]bool, len(replay))
	for _, c := range replay {
		sent[g.Key(c)] = true
	}
	for _, c := range g.held {
		if !sent[g.Key(c)] {
			replay = append(replay, c)
		}
	}
	g.held = nil
	g.replayed = sent
	g.write(replay)
}

func (g *CommandGate[C, K]) write(cmds []C) {
	if len(cmds) > 0 {
		g.Write(cmds)
	}
}
