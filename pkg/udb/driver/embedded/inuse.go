package embedded

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// ErrInUse is the error of opening a store another process (or another Open of this one)
// holds: an embedded store has one user at a time.
var ErrInUse = errors.New("embedded: store in use")

// storeInUse tells a failed open of dir because its LOCK file is held from any other
// failure (nil): the error says so in plain words, names the holder when it can be found
// (the process id and command line, from the lock itself), and what to do.
func storeInUse(dir string, openErr error) error {
	lock := filepath.Join(dir, "LOCK")
	if strings.Contains(openErr.Error(), "lock held by current process") {
		return fmt.Errorf("%w: %s is already open in this process (its lock %s is held)", ErrInUse, dir, lock)
	}
	if !lockConflict(openErr) {
		return nil
	}
	pid, ok := lockHolder(lock)
	if !ok {
		return nil
	}
	who := "another process"
	if pid > 0 {
		who = fmt.Sprintf("process %d", pid)
		if cmd := commandLine(pid); cmd != "" {
			who += " (" + cmd + ")"
		}
	}
	return fmt.Errorf("%w: %s holds the lock of the store %s (%s). An embedded store is used by one "+
		"process at a time: stop that engine first (berth start, export and import each need the store "+
		"to themselves), or give this one another directory", ErrInUse, who, dir, lock)
}
