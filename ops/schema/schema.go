// Package schema versions the layout of a berth store and moves an older store to the
// layout this build writes (docs/udb.md, "Schema version").
package schema

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/udb"
)

// Current is the schema version this build reads and writes. Version 1 is the layout
// berth has written since its first release; a store without a version has it.
const Current uint32 = 1

// A Migration moves a store from version To−1 to To. Run must be idempotent: a node that
// stops half-way runs it again at its next start, and several nodes of one datacenter may
// run it at once. It may use as many transactions as it needs.
type Migration struct {
	To   uint32
	Name string // for the log
	Run  func(ctx context.Context, db udb.Database, log *slog.Logger) error
}

// Migrations are this build's migrations, in order, the last one's To being Current.
var Migrations []Migration

// versionTimeout bounds the reads and writes of the version itself.
const versionTimeout = 30 * time.Second

// ErrNewer is wrapped by Upgrade's error for a store written by a newer berth.
var ErrNewer = errors.New("the store was written by a newer berth")

// Upgrade brings db to the version of the last of migrations (Current when migrations is
// Migrations): it runs every migration above the store's version in order, recording the
// version after each, and records the version in a store that has none. A store of a
// higher version is refused with an error wrapping ErrNewer, and nothing is written.
func Upgrade(ctx context.Context, db udb.Database, migrations []Migration, log *slog.Logger) (from, to uint32, err error) {
	target := uint32(1)
	if n := len(migrations); n > 0 {
		target = migrations[n-1].To
	}
	// The version is read and recorded even when ctx has ended (a start that is stopped at
	// once still checks the store); migrations stop with ctx.
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), versionTimeout)
	stored, err := udb.ReadTransact(vctx, db, func(r udb.ReadTransaction) (version, error) {
		v, found, err := keys.Get(vctx, r, keys.SchemaVersionKey{})
		return version{v, found}, err
	})
	cancel()
	if err != nil {
		return 0, 0, fmt.Errorf("read the store's schema version: %w", err)
	}
	from, found := stored.v, stored.found
	if !found {
		from = 1
	}
	if from > target {
		return from, target, fmt.Errorf("%w: its schema version is %d and this build reads up to %d; run that berth (or a newer one), or restore a backup taken before it ran", ErrNewer, from, target)
	}
	v := from
	for _, m := range migrations {
		if m.To <= v {
			continue
		}
		if m.To != v+1 {
			return from, v, fmt.Errorf("no migration from schema version %d to %d", v, v+1)
		}
		log.Info("migrating the store", "from", v, "to", m.To, "migration", m.Name)
		if err := m.Run(ctx, db, log); err != nil {
			return from, v, fmt.Errorf("migration %d (%s): %w", m.To, m.Name, err)
		}
		if err := setVersion(ctx, db, v, m.To); err != nil {
			return from, v, err
		}
		v = m.To
		log.Info("store migrated", "version", v)
	}
	if !found {
		if err := setVersion(ctx, db, 0, v); err != nil {
			return from, v, err
		}
	}
	return from, v, nil
}

type version struct {
	v     uint32
	found bool
}

// setVersion records version to, unless another node moved the store past was already
// (0: no version recorded); like the read, even when ctx has ended.
func setVersion(ctx context.Context, db udb.Database, was, to uint32) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), versionTimeout)
	defer cancel()
	return udb.Update(ctx, db, func(tx udb.Transaction) error {
		cur, found, err := keys.Get(ctx, tx, keys.SchemaVersionKey{})
		if err != nil {
			return err
		}
		if found && cur != was && cur >= to {
			return nil
		}
		keys.Set(tx, keys.SchemaVersionKey{}, to)
		return nil
	})
}
