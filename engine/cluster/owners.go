package cluster

import (
	"sync"
	"time"

	"github.com/berthhq/berth/keys"
	opnode "github.com/berthhq/berth/ops/node"
)

// A request to a host whose socket another node holds used to look that node up in the
// store twice (Connected, then the relay's dial), each time a read version and two reads:
// through three nodes on PostgreSQL, requests spread over many actors cost ten times the
// store transactions they cost through one (docs/scaling.md). Sockets move rarely (a
// runner reconnects elsewhere, a node stops), so a node keeps the owners it found for
// ownerTTL. A relay that a cached owner refuses drops the entry and looks again at once,
// so a socket that moved costs one refused dial; a socket that went away is seen as gone
// after at most ownerTTL, its requests meanwhile failing as they do when a socket closes
// under them. Only owners found are kept: a host held nowhere is looked up each time.

const (
	ownerTTL = time.Second
	// maxOwners bounds the cache: past it, expired entries go, then all if none had.
	maxOwners = 1 << 16
)

// owners caches, by socket, the other node that holds it.
type owners struct {
	mu sync.Mutex
	m  map[keys.Socket]cachedOwner
}

type cachedOwner struct {
	o     opnode.Owner
	until time.Time
}

func (c *owners) get(s keys.Socket, now time.Time) (opnode.Owner, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[s]
	if !ok || !now.Before(e.until) {
		return opnode.Owner{}, false
	}
	return e.o, true
}

func (c *owners) put(s keys.Socket, o opnode.Owner, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[keys.Socket]cachedOwner{}
	}
	if len(c.m) >= maxOwners {
		for k, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxOwners {
			clear(c.m)
		}
	}
	c.m[s] = cachedOwner{o: o, until: now.Add(ownerTTL)}
}

// drop forgets s's owner if it is still o.
func (c *owners) drop(s keys.Socket, o opnode.Owner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[s]; ok && e.o == o {
		delete(c.m, s)
	}
}
