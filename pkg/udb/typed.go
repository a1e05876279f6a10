package udb

import "context"

// Transact runs f in a transaction of db (Database.Transact) and returns its result with
// its own type, so that callers need no type assertion.
func Transact[T any](ctx context.Context, db Database, f func(Transaction) (T, error)) (T, error) {
	var out T
	_, err := db.Transact(ctx, func(tx Transaction) (any, error) {
		var err error
		out, err = f(tx)
		return nil, err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// ReadTransact runs f in a read transaction of db (Database.ReadTransact) and returns its
// result with its own type.
func ReadTransact[T any](ctx context.Context, db Database, f func(ReadTransaction) (T, error)) (T, error) {
	var out T
	_, err := db.ReadTransact(ctx, func(r ReadTransaction) (any, error) {
		var err error
		out, err = f(r)
		return nil, err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// Update runs f in a transaction of db (Database.Transact), for a transaction whose only
// result is its error.
func Update(ctx context.Context, db Database, f func(Transaction) error) error {
	_, err := db.Transact(ctx, func(tx Transaction) (any, error) { return nil, f(tx) })
	return err
}

// View runs f in a read transaction of db (Database.ReadTransact), for a read whose only
// result is its error.
func View(ctx context.Context, db Database, f func(ReadTransaction) error) error {
	_, err := db.ReadTransact(ctx, func(r ReadTransaction) (any, error) { return nil, f(r) })
	return err
}
