package udbtest

import (
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// Section H: durability, for drivers that persist data.
func durabilityCases() []testCase {
	return []testCase{
		{"56_ReopenKeepsDataAndVersions", testReopen},
	}
}

// 56. Committed data survives closing and reopening the store, and versions
// keep increasing across the reopen.
func testReopen(t *testing.T, h Harness) {
	if h.Reopen == nil {
		t.Skip("harness has no Reopen (not a durable driver)")
	}
	e := newEnv(t, h)
	tx := e.tx()
	tx.Set(e.k("a"), []byte("1"))
	tx.Set(e.k("b"), []byte{})
	tx.Atomic(udb.MutationAdd, e.k("n"), le64(41))
	e.commit(tx)
	before, err := tx.GetCommittedVersion()
	if err != nil {
		t.Fatalf("GetCommittedVersion: %v", err)
	}
	tx = e.tx()
	tx.Clear(e.k("a"))
	tx.Set(e.k("a"), []byte("2"))
	tx.Atomic(udb.MutationAdd, e.k("n"), le64(1))
	e.commit(tx)
	if v, _ := tx.GetCommittedVersion(); v > before {
		before = v
	}

	e.db = h.Reopen(t, e.db)
	// Clear the subspace before whatever cleanup Reopen registered closes
	// the reopened database (cleanups run last-registered first).
	t.Cleanup(e.clearSubspace)

	e.expectRows("subspace after reopen", e.contents(), pair{"a", "2"}, pair{"b", ""}, pair{"n", string(le64(42))})
	tx = e.tx()
	if rv := e.grv(tx); rv < before {
		t.Errorf("read version after reopen: got %d, want >= %d (the last commit before it)", rv, before)
	}
	tx.Set(e.k("c"), []byte("3"))
	e.commit(tx)
	after, err := tx.GetCommittedVersion()
	if expectOK(t, "GetCommittedVersion", err) && after <= before {
		t.Errorf("commit version after reopen: got %d, want > %d (before the reopen)", after, before)
	}
	e.expectValue("key written after reopen", e.read(e.k("c")), []byte("3"))
}
