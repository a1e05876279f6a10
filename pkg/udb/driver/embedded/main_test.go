package embedded

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: every
// database the tests open must stop its committer and pebble on Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
