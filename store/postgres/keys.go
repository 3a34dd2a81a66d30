package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/internal/sqlrow"
)

const selectKey = "SELECT id, name, hash, scope, created_at, revoked_at FROM api_keys "

// CreateKey implements store.KeyStore.
func (s *Store) CreateKey(ctx context.Context, k store.APIKey) error {
	op := fmt.Sprintf("postgres create key %q", k.Name)
	if err := store.CheckKey(k); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	if err := s.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	scope, err := store.EncodeKeyScope(k)
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	_, err = s.pool.Exec(ctx, "INSERT INTO api_keys (id, name, hash, scope, created_at) VALUES ($1, $2, $3, $4, $5)",
		k.ID, k.Name, k.Hash, scope, sqlrow.Nanos(k.CreatedAt))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		err = store.ErrKeyExists
	}
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	return nil
}

// KeyByHash implements store.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (store.APIKey, error) {
	const op = "postgres key by hash"
	if err := s.check(ctx); err != nil {
		return store.APIKey{}, store.WrapErr(ctx, op, err)
	}
	k, err := scanKey(s.pool.QueryRow(ctx, selectKey+"WHERE hash = $1", hash))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNoKey
	}
	if err != nil {
		return store.APIKey{}, store.WrapErr(ctx, op, err)
	}
	return k, nil
}

// Keys implements store.KeyStore.
func (s *Store) Keys(ctx context.Context) ([]store.APIKey, error) {
	const op = "postgres keys"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rows, err := s.pool.Query(ctx, selectKey+"ORDER BY created_at, id")
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

// RevokeKey implements store.KeyStore.
func (s *Store) RevokeKey(ctx context.Context, idOrName string, at time.Time) (store.APIKey, error) {
	op := fmt.Sprintf("postgres revoke key %q", idOrName)
	if err := s.check(ctx); err != nil {
		return store.APIKey{}, store.WrapErr(ctx, op, err)
	}
	if _, err := s.pool.Exec(ctx, "UPDATE api_keys SET revoked_at = $1 WHERE (id = $2 OR name = $2) AND revoked_at IS NULL", sqlrow.Nanos(at), idOrName); err != nil {
		return store.APIKey{}, store.WrapErr(ctx, op, err)
	}
	k, err := scanKey(s.pool.QueryRow(ctx, selectKey+"WHERE id = $1 OR name = $1", idOrName))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNoKey
	}
	if err != nil {
		return store.APIKey{}, store.WrapErr(ctx, op, err)
	}
	return k, nil
}

func scanKey(row pgx.Row) (store.APIKey, error) {
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
