package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/internal/sqlrow"
)

const selectInstall = "SELECT " + sqlrow.InstallColumns + " FROM installs "

// installForWhere picks the team's own row (first argument), else the
// org-wide one of the enterprise (second). Keys are never "", so an id
// given as "" matches nothing.
const installForWhere = "WHERE (id = ? AND NOT org_wide) OR (id = ? AND org_wide) ORDER BY org_wide LIMIT 1"

// installTable is the installs and oauth_nonces tables of one database,
// reached as keyTable reaches api_keys (the Store, or Keys beside a
// running serve).
type installTable keyTable

// SaveInstall implements store.InstallStore.
func (s *Store) SaveInstall(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	return installTable(s.keys()).save(ctx, r)
}

// InstallFor implements store.InstallStore.
func (s *Store) InstallFor(ctx context.Context, enterprise, team string) (store.InstallRow, error) {
	return installTable(s.keys()).installFor(ctx, enterprise, team)
}

// SwapInstall implements store.InstallStore.
func (s *Store) SwapInstall(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	return installTable(s.keys()).swap(ctx, r)
}

// DeleteInstalls implements store.InstallStore.
func (s *Store) DeleteInstalls(ctx context.Context, enterprise, team string) ([]store.InstallRow, error) {
	return installTable(s.keys()).remove(ctx, enterprise, team)
}

// Installs implements store.InstallStore.
func (s *Store) Installs(ctx context.Context) ([]store.InstallRow, error) {
	return installTable(s.keys()).list(ctx)
}

// UseNonce implements store.InstallStore.
func (s *Store) UseNonce(ctx context.Context, nonce string, expires time.Time) error {
	return installTable(s.keys()).useNonce(ctx, nonce, expires)
}

var _ store.InstallStore = (*Keys)(nil)

// SaveInstall implements store.InstallStore.
func (k *Keys) SaveInstall(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	return installTable(k.t).save(ctx, r)
}

// InstallFor implements store.InstallStore.
func (k *Keys) InstallFor(ctx context.Context, enterprise, team string) (store.InstallRow, error) {
	return installTable(k.t).installFor(ctx, enterprise, team)
}

// SwapInstall implements store.InstallStore.
func (k *Keys) SwapInstall(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	return installTable(k.t).swap(ctx, r)
}

// DeleteInstalls implements store.InstallStore.
func (k *Keys) DeleteInstalls(ctx context.Context, enterprise, team string) ([]store.InstallRow, error) {
	return installTable(k.t).remove(ctx, enterprise, team)
}

// Installs implements store.InstallStore.
func (k *Keys) Installs(ctx context.Context) ([]store.InstallRow, error) {
	return installTable(k.t).list(ctx)
}

// UseNonce implements store.InstallStore.
func (k *Keys) UseNonce(ctx context.Context, nonce string, expires time.Time) error {
	return installTable(k.t).useNonce(ctx, nonce, expires)
}

func (t installTable) save(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	op := fmt.Sprintf("%s save install %q", t.name, r.Key)
	if err := store.CheckInstall(r); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	if err := t.check(ctx); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	var out store.InstallRow
	err := t.write(ctx, func(q querier) error {
		if _, err := q.ExecContext(ctx, `INSERT INTO installs (id, enterprise, team, org_wide, version, sealed, expires_at, updated_at)
			VALUES (?, ?, ?, ?, 1, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET enterprise = excluded.enterprise, team = excluded.team, org_wide = excluded.org_wide,
				version = installs.version + 1, sealed = excluded.sealed, expires_at = excluded.expires_at, updated_at = excluded.updated_at`,
			r.Key, r.Enterprise, r.Team, r.OrgWide, r.Sealed, sqlrow.ExpiresCol(r.ExpiresAt), sqlrow.Nanos(r.UpdatedAt)); err != nil {
			return err
		}
		var err error
		out, err = sqlrow.Install(q.QueryRowContext(ctx, selectInstall+"WHERE id = ?", r.Key))
		return err
	})
	if err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

func (t installTable) installFor(ctx context.Context, enterprise, team string) (store.InstallRow, error) {
	op := fmt.Sprintf("%s install for %q/%q", t.name, enterprise, team)
	if err := t.check(ctx); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	var row *sql.Row
	if t.installForStmt != nil {
		row = t.installForStmt.QueryRowContext(ctx, team, enterprise)
	} else {
		row = t.r.QueryRowContext(ctx, selectInstall+installForWhere, team, enterprise)
	}
	r, err := sqlrow.Install(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNoInstall
	}
	if err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	return r, nil
}

func (t installTable) swap(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	op := fmt.Sprintf("%s swap install %q", t.name, r.Key)
	if err := store.CheckInstall(r); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	if err := t.check(ctx); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	var out store.InstallRow
	err := t.write(ctx, func(q querier) error {
		res, err := q.ExecContext(ctx, `UPDATE installs SET enterprise = ?, team = ?, org_wide = ?, version = version + 1,
			sealed = ?, expires_at = ?, updated_at = ? WHERE id = ? AND version = ?`,
			r.Enterprise, r.Team, r.OrgWide, r.Sealed, sqlrow.ExpiresCol(r.ExpiresAt), sqlrow.Nanos(r.UpdatedAt), r.Key, r.Version)
		if err != nil {
			return err
		}
		out, err = sqlrow.Install(q.QueryRowContext(ctx, selectInstall+"WHERE id = ?", r.Key))
		switch n, _ := res.RowsAffected(); {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrNoInstall
		case err != nil:
			return err
		case n == 0:
			return store.ErrInstallChanged
		}
		return nil
	})
	if err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

func (t installTable) remove(ctx context.Context, enterprise, team string) ([]store.InstallRow, error) {
	op := fmt.Sprintf("%s delete installs %q/%q", t.name, enterprise, team)
	if err := t.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	where, arg := "WHERE id = ? AND NOT org_wide", team
	if team == "" {
		where, arg = "WHERE enterprise = ? AND enterprise <> ''", enterprise
	}
	var gone []store.InstallRow
	err := t.write(ctx, func(q querier) error {
		var err error
		if gone, err = queryInstalls(ctx, q, selectInstall+where+" ORDER BY id", arg); err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, "DELETE FROM installs "+where, arg)
		return err
	})
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return gone, nil
}

func (t installTable) list(ctx context.Context) ([]store.InstallRow, error) {
	op := t.name + " installs"
	if err := t.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	out, err := queryInstalls(ctx, t.r, selectInstall+"ORDER BY id")
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

func (t installTable) useNonce(ctx context.Context, nonce string, expires time.Time) error {
	op := t.name + " use nonce"
	if err := t.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	err := t.write(ctx, func(q querier) error {
		if _, err := q.ExecContext(ctx, "DELETE FROM oauth_nonces WHERE expires_at < ?", sqlrow.Nanos(time.Now())); err != nil {
			return err
		}
		res, err := q.ExecContext(ctx, "INSERT INTO oauth_nonces (nonce, expires_at) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING",
			nonce, sqlrow.Nanos(expires))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(store.ErrNonceUsed, err)
		}
		return nil
	})
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	return nil
}

func queryInstalls(ctx context.Context, q querier, query string, args ...any) ([]store.InstallRow, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlrow.Installs(rows)
}
