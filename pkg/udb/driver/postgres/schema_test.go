package postgres

import (
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// A store of format 1 (udb_writes, the step function of earlier versions) is upgraded
// when a process of format 2 opens it: its data stays, udb_writes goes, so that a format 1
// process still running fails its commits, and a transaction that read before the upgrade
// fails with transaction_too_old rather than being checked against a log that lacks the
// writes made between its read and the upgrade.
func TestUpgradeFromFormat1(t *testing.T) {
	ctx := t.Context()
	url := newStore(t)
	first, admin := openWithAdmin(t, url)
	put(t, first, "k", "before")
	reader := mustTx(t, first)
	if v, err := reader.Get(ctx, []byte("k")); err != nil || string(v) != "before" {
		t.Fatalf("k before the upgrade: %q, %v", v, err)
	}
	put(t, first, "k", "between")
	// The store as format 1 left it: that write recorded in udb_writes, not in the log.
	downgrade := `
UPDATE udb_meta SET format = 1;
CREATE TABLE udb_writes (key bytea PRIMARY KEY, version bigint NOT NULL);
INSERT INTO udb_writes (key, version) VALUES ('\x'::bytea, 0);
DELETE FROM udb_write_log`
	if _, err := admin.Exec(ctx, downgrade); err != nil {
		t.Fatal(err)
	}

	var o opener
	second := o.open(t, url)
	var format int
	var horizon, version int64
	var writes *string
	err := admin.QueryRow(ctx, `SELECT format, horizon, version, to_regclass('udb_writes')::text FROM udb_meta`).Scan(&format, &horizon, &version, &writes)
	if err != nil {
		t.Fatal(err)
	}
	if format != schemaFormat || writes != nil || horizon != version {
		t.Fatalf("after the upgrade: format %d, udb_writes %v, horizon %d, version %d; want format %d, no udb_writes, horizon = version",
			format, writes, horizon, version, schemaFormat)
	}
	reader.Set([]byte("k"), []byte("from an old read"))
	if err := reader.Commit(ctx); !udb.HasCode(err, udb.CodeTransactionTooOld) {
		t.Errorf("commit of a transaction that read before the upgrade: %v, want transaction_too_old", err)
	}
	if v, err := mustTx(t, second).Get(ctx, []byte("k")); err != nil || string(v) != "between" {
		t.Errorf("k after the upgrade: %q, %v; want between", v, err)
	}
	put(t, second, "k", "after")
	put(t, first, "k", "from the first process")
}

// A process commits only to a store of its own format: one left running when a newer
// version upgraded the store fails its commits, and opening it says why.
func TestCommitRefusesAnotherFormat(t *testing.T) {
	ctx := t.Context()
	url := newStore(t)
	db, admin := openWithAdmin(t, url)
	if _, err := admin.Exec(ctx, `UPDATE udb_meta SET format = $1`, schemaFormat+1); err != nil {
		t.Fatal(err)
	}
	tx := mustTx(t, db)
	tx.Set([]byte("k"), []byte("v"))
	if err := tx.Commit(ctx); err == nil || !strings.Contains(err.Error(), "udb format 3") {
		t.Errorf("commit to a store of a newer format: %v, want the format named", err)
	}
	if v, err := mustTx(t, db).Get(ctx, []byte("k")); err != nil || v != nil {
		t.Errorf("k after the refused commit: %q, %v; want absent", v, err)
	}
	if _, err := udb.Open(ctx, url); err == nil || !strings.Contains(err.Error(), "udb format 3") {
		t.Errorf("opening a store of a newer format: %v, want the format named", err)
	}
}
