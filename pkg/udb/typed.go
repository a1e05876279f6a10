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
