package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/internal/sqlrow"
)

const selectKey = "SELECT id, name, hash, scope, created_at, revoked_at FROM api_keys "

// querier is what a key write runs its statements on: the Store's write
// connection inside its transaction, or a Keys' *sql.Tx.
type querier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// keyTable is the api_keys table of one database: r reads, write runs fn
// in one write transaction. It serves the Store and Keys alike.
type keyTable struct {
	name  string // "sqlite" or "sqlite keys", for errors
	check func(ctx context.Context) error
	r     *sql.DB
	write func(ctx context.Context, fn func(q querier) error) error
	// installForStmt is the prepared InstallFor query on r, nil to parse it
	// each time (Keys, for the CLI)
	installForStmt *sql.Stmt
}

func (s *Store) keys() keyTable {
	return keyTable{name: "sqlite", check: s.check, r: s.r, installForStmt: s.st.rInstallFor, write: func(ctx context.Context, fn func(q querier) error) error {
		return s.write(ctx, func() error { return fn(s.w) })
	}}
}

// CreateKey implements store.KeyStore.
func (s *Store) CreateKey(ctx context.Context, k store.APIKey) error { return s.keys().create(ctx, k) }

// KeyByHash implements store.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (store.APIKey, error) {
	return s.keys().byHash(ctx, hash)
}

// Keys implements store.KeyStore.
func (s *Store) Keys(ctx context.Context) ([]store.APIKey, error) { return s.keys().list(ctx) }

// RevokeKey implements store.KeyStore.
func (s *Store) RevokeKey(ctx context.Context, idOrName string, at time.Time) (store.APIKey, error) {
	return s.keys().revoke(ctx, idOrName, at)
}

// Keys is a store.KeyStore on the file of a Store that may be open in
// another process (serve): it takes no lock on the file, touches only the
// api_keys table, and so lets `slackask keys` manage the keys of a running
// server. Open it with OpenKeys.
type Keys struct {
	db     *sql.DB
	closed atomic.Bool
	t      keyTable
}

var _ store.KeyStore = (*Keys)(nil)

// OpenKeys opens the key table of the database at path, creating the file
// and bringing its schema up to date as Open does (without Open's lock).
func OpenKeys(ctx context.Context, path string) (*Keys, error) {
	op := fmt.Sprintf("sqlite open keys %s", path)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: url.Values{
		"_busy_timeout": {strconv.Itoa(5000)},
		"_journal_mode": {"WAL"},
		"_txlock":       {"immediate"},
	}.Encode()}).String())
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	db.SetMaxOpenConns(1)
	if err := migrate(ctx, db); err != nil {
		_ = db.Close()
		return nil, store.WrapErr(ctx, op, err)
	}
	k := &Keys{db: db}
	k.t = keyTable{name: "sqlite keys", r: db, check: func(ctx context.Context) error {
		if k.closed.Load() {
			return errClosed
		}
		return ctx.Err()
	}, write: func(ctx context.Context, fn func(q querier) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // a no-op after Commit
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Commit()
	}}
	return k, nil
}

// CreateKey implements store.KeyStore.
func (k *Keys) CreateKey(ctx context.Context, key store.APIKey) error { return k.t.create(ctx, key) }

// KeyByHash implements store.KeyStore.
func (k *Keys) KeyByHash(ctx context.Context, hash []byte) (store.APIKey, error) {
	return k.t.byHash(ctx, hash)
}

// Keys implements store.KeyStore.
func (k *Keys) Keys(ctx context.Context) ([]store.APIKey, error) { return k.t.list(ctx) }

// RevokeKey implements store.KeyStore.
func (k *Keys) RevokeKey(ctx context.Context, idOrName string, at time.Time) (store.APIKey, error) {
	return k.t.revoke(ctx, idOrName, at)
}

// Close closes the database.
func (k *Keys) Close() error {
	if !k.closed.CompareAndSwap(false, true) {
		return nil
	}
	return k.db.Close()
}

func (t keyTable) create(ctx context.Context, k store.APIKey) error {
	op := fmt.Sprintf("%s create key %q", t.name, k.Name)
	if err := store.CheckKey(k); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	if err := t.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	scope, err := store.EncodeKeyScope(k)
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	err = t.write(ctx, func(q querier) error {
		var one int
		switch err := q.QueryRowContext(ctx, "SELECT 1 FROM api_keys WHERE id = ? OR name = ? OR hash = ?", k.ID, k.Name, k.Hash).Scan(&one); {
		case err == nil:
			return store.ErrKeyExists
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err := q.ExecContext(ctx, "INSERT INTO api_keys (id, name, hash, scope, created_at) VALUES (?, ?, ?, ?, ?)",
			k.ID, k.Name, k.Hash, scope, sqlrow.Nanos(k.CreatedAt))
		return err
	})
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	return nil
}

func (t keyTable) byHash(ctx context.Context, hash []byte) (store.APIKey, error) {
	op := t.name + " key by hash"
	if err := t.check(ctx); err != nil {
		return store.APIKey{}, store.WrapErr(ctx, op, err)
	}
	k, err := scanKey(t.r.QueryRowContext(ctx, selectKey+"WHERE hash = ?", hash))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNoKey
	}
	if err != nil {
		return store.APIKey{}, store.WrapErr(ctx, op, err)
	}
	return k, nil
}

func (t keyTable) list(ctx context.Context) ([]store.APIKey, error) {
	op := t.name + " keys"
	if err := t.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rows, err := t.r.QueryContext(ctx, selectKey+"ORDER BY created_at, id")
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	defer rows.Close()
	var out []store.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, store.WrapErr(ctx, op, err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

func (t keyTable) revoke(ctx context.Context, idOrName string, at time.Time) (store.APIKey, error) {
	op := fmt.Sprintf("%s revoke key %q", t.name, idOrName)
	if err := t.check(ctx); err != nil {
		return store.APIKey{}, store.WrapErr(ctx, op, err)
	}
	var k store.APIKey
	err := t.write(ctx, func(q querier) error {
		if _, err := q.ExecContext(ctx, "UPDATE api_keys SET revoked_at = ? WHERE (id = ? OR name = ?) AND revoked_at IS NULL", sqlrow.Nanos(at), idOrName, idOrName); err != nil {
			return err
		}
		var err error
		k, err = scanKey(q.QueryRowContext(ctx, selectKey+"WHERE id = ? OR name = ?", idOrName, idOrName))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNoKey
		}
		return err
	})
	if err != nil {
		return store.APIKey{}, store.WrapErr(ctx, op, err)
	}
	return k, nil
}

func scanKey(row scanner) (store.APIKey, error) {
	var (
		k       store.APIKey
		scope   []byte
		created int64
		revoked *int64
	)
	if err := row.Scan(&k.ID, &k.Name, &k.Hash, &scope, &created, &revoked); err != nil {
		return k, err
	}
	err := store.DecodeKey(&k, scope, created, revoked)
	return k, err
}
