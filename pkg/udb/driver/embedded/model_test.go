package embedded

import (
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/udbtest"
)

// TestModelSerializable runs udbtest.Model (random interleavings checked against a serial
// oracle) on an in-memory store, several schedules at once so that commit groups mix.
func TestModelSerializable(t *testing.T) {
	db, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// 4,000 schedules take about 1 s, 5-10 s with -race; the budget bounds the test on a
	// loaded machine.
	udbtest.Model(t, db, udbtest.ModelOptions{Schedules: 4000, Budget: 15 * time.Second,
		Replay: "TestModelSerializable ./pkg/udb/driver/embedded"})
}

// TestSetReadVersionAtCommitVersion: a read at a commit group's version sees the group.
func TestSetReadVersionAtCommitVersion(t *testing.T) {
	db, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	same := func(int) udb.Database { return db }
	udbtest.SetReadVersionAtCommitVersion(t, same, same, 20)
}
