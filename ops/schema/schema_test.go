package schema

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/udb"
)

var quiet = slog.New(slog.DiscardHandler)

func stored(t *testing.T, db udb.Database) (uint32, bool) {
	t.Helper()
	ctx := context.Background()
	v, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (version, error) {
		v, found, err := keys.Get(ctx, r, keys.SchemaVersionKey{})
		return version{v, found}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v.v, v.found
}

func setStored(t *testing.T, db udb.Database, v uint32) {
	t.Helper()
	if err := udb.Update(context.Background(), db, func(tx udb.Transaction) error {
		keys.Set(tx, keys.SchemaVersionKey{}, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A store without a version (new, or written before versions were recorded) has version 1,
// which is then recorded.
func TestUpgradeRecordsTheVersion(t *testing.T) {
	db := opstest.Open(t)
	from, to, err := Upgrade(context.Background(), db, Migrations, quiet)
	if err != nil || from != 1 || to != Current {
		t.Fatalf("Upgrade: %d → %d, %v", from, to, err)
	}
	if v, found := stored(t, db); !found || v != Current {
		t.Fatalf("stored version %d (found %v), want %d", v, found, Current)
	}
}

// A store of a newer version is refused, and left as it was.
func TestUpgradeRefusesANewerStore(t *testing.T) {
	db := opstest.Open(t)
	setStored(t, db, Current+1)
	_, _, err := Upgrade(context.Background(), db, Migrations, quiet)
	if !errors.Is(err, ErrNewer) || !strings.Contains(err.Error(), "schema version is 2 and this build reads up to 1") {
		t.Fatalf("Upgrade of a newer store: %v", err)
	}
	if v, _ := stored(t, db); v != Current+1 {
		t.Fatalf("the newer store's version became %d", v)
	}
}

// Migrations run in order from the store's version, each once; one that fails leaves the
// store at the version before it, and runs again at the next Upgrade.
func TestUpgradeRunsMigrations(t *testing.T) {
	db := opstest.Open(t)
	ctx := context.Background()
	var ran []string
	failOnce := true
	marker := []byte("migrated")
	ms := []Migration{
		{To: 2, Name: "two", Run: func(ctx context.Context, db udb.Database, _ *slog.Logger) error {
			ran = append(ran, "two")
			return udb.Update(ctx, db, func(tx udb.Transaction) error { tx.Set(marker, []byte("2")); return nil })
		}},
		{To: 3, Name: "three", Run: func(ctx context.Context, db udb.Database, _ *slog.Logger) error {
			ran = append(ran, "three")
			if failOnce {
				failOnce = false
				return errors.New("disk on fire")
			}
			return udb.Update(ctx, db, func(tx udb.Transaction) error { tx.Set(marker, []byte("3")); return nil })
		}},
	}
	if _, _, err := Upgrade(ctx, db, ms, quiet); err == nil || !strings.Contains(err.Error(), "migration 3 (three): disk on fire") {
		t.Fatalf("first Upgrade: %v, want migration 3's failure", err)
	}
	if v, _ := stored(t, db); v != 2 {
		t.Fatalf("after a failed migration 3 the store is at %d, want 2", v)
	}
	from, to, err := Upgrade(ctx, db, ms, quiet)
	if err != nil || from != 2 || to != 3 {
		t.Fatalf("second Upgrade: %d → %d, %v", from, to, err)
	}
	if _, _, err := Upgrade(ctx, db, ms, quiet); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ran, ","); got != "two,three,three" {
		t.Errorf("migrations ran %s, want two,three,three", got)
	}
	b, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) ([]byte, error) { return r.Get(ctx, marker) })
	if err != nil || string(b) != "3" {
		t.Errorf("marker %q %v, want 3", b, err)
	}
}

// A missing step is an error, not a skip.
func TestUpgradeNeedsEveryStep(t *testing.T) {
	db := opstest.Open(t)
	ms := []Migration{{To: 3, Name: "three", Run: func(context.Context, udb.Database, *slog.Logger) error { return nil }}}
	if _, _, err := Upgrade(context.Background(), db, ms, quiet); err == nil || !strings.Contains(err.Error(), "no migration from schema version 1 to 2") {
		t.Fatalf("Upgrade with a gap: %v", err)
	}
	if _, found := stored(t, db); found {
		t.Error("a version was recorded after a failed upgrade")
	}
}

// Current is where Migrations lead.
func TestCurrentIsTheLastMigration(t *testing.T) {
	want := uint32(1)
	for i, m := range Migrations {
		if m.To != uint32(i)+2 {
			t.Errorf("migration %d (%s) leads to %d, want %d", i, m.Name, m.To, i+2)
		}
		want = m.To
	}
	if Current != want {
		t.Errorf("Current is %d, the migrations lead to %d", Current, want)
	}
}
