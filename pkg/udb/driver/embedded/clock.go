package embedded

import (
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/pkg/udb"
)

// versionClock turns elapsed time into versions: base plus microseconds since
// open, plus whatever tests advanced it by. It only moves forward.
type versionClock struct {
	base     int64
	start    time.Time
	advanced atomic.Int64
}

func newVersionClock(base int64) *versionClock {
	return &versionClock{base: base, start: time.Now()}
}

func (c *versionClock) now() int64 {
	return c.base + time.Since(c.start).Microseconds()*(udb.VersionsPerSecond/1_000_000) + c.advanced.Load()
}
