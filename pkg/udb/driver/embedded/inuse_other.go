//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package embedded

func lockConflict(error) bool { return false }

// lockHolder cannot ask who holds a lock here: a failed open is reported as it is.
func lockHolder(string) (int, bool) { return 0, false }

func commandLine(int) string { return "" }
