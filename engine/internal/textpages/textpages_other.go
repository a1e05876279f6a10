//go:build !linux

package textpages

// Release does nothing on this system.
func Release() (uint64, error) { return 0, nil }

// Restore does nothing on this system.
func Restore() error { return nil }
