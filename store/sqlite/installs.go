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
// org-wide one of the enterprise (second), else the org-wide one
// install_teams names for the team (third: the team when no enterprise is
// given, else ""). Keys are never "", so an id given as "" matches nothing.
const installForWhere = "WHERE (id = ? AND NOT org_wide) OR (id = ? AND org_wide)" +
	" OR (org_wide AND id = (SELECT enterprise FROM install_teams WHERE team = ?)) ORDER BY org_wide LIMIT 1"

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

// SetInstallTeams implements store.InstallStore.
func (s *Store) SetInstallTeams(ctx context.Context, enterprise string, teams []string) error {
	return installTable(s.keys()).setTeams(ctx, enterprise, teams)
}

// InstallTeams implements store.InstallStore.
func (s *Store) InstallTeams(ctx context.Context, enterprise string) ([]string, error) {
	return installTable(s.keys()).teams(ctx, enterprise)
}

var _ store.InstallStore = (*Keys)(nil)

// SetInstallTeams implements store.InstallStore.
func (k *Keys) SetInstallTeams(ctx context.Context, enterprise string, teams []string) error {
	return installTable(k.t).setTeams(ctx, enterprise, teams)
}

// InstallTeams implements store.InstallStore.
func (k *Keys) InstallTeams(ctx context.Context, enterprise string) ([]string, error) {
	return installTable(k.t).teams(ctx, enterprise)
}

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
	mapped := team
	if enterprise != "" {
		mapped = ""
	}
	var row *sql.Row
	if t.installForStmt != nil {
		row = t.installForStmt.QueryRowContext(ctx, team, enterprise, mapped)
	} else {
		row = t.r.QueryRowContext(ctx, selectInstall+installForWhere, team, enterprise, mapped)
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
		where, arg = "WHERE id = ? AND org_wide", enterprise
	}
	var gone []store.InstallRow
	err := t.write(ctx, func(q querier) error {
		var err error
		if gone, err = queryInstalls(ctx, q, selectInstall+where+" ORDER BY id", arg); err != nil {
			return err
		}
		if _, err = q.ExecContext(ctx, "DELETE FROM installs "+where, arg); err != nil || team != "" {
			return err
		}
		_, err = q.ExecContext(ctx, "DELETE FROM install_teams WHERE enterprise = ?", enterprise)
		return err
	})
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return gone, nil
}

func (t installTable) setTeams(ctx context.Context, enterprise string, teams []string) error {
	op := fmt.Sprintf("%s set install teams %q", t.name, enterprise)
	if err := store.CheckInstallTeams(enterprise, teams); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	if err := t.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	err := t.write(ctx, func(q querier) error {
		if _, err := q.ExecContext(ctx, "DELETE FROM install_teams WHERE enterprise = ?", enterprise); err != nil {
			return err
		}
		for _, team := range teams {
			if _, err := q.ExecContext(ctx, `INSERT INTO install_teams (team, enterprise) VALUES (?, ?)
				ON CONFLICT (team) DO UPDATE SET enterprise = excluded.enterprise`, team, enterprise); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	return nil
}

func (t installTable) teams(ctx context.Context, enterprise string) ([]string, error) {
	op := fmt.Sprintf("%s install teams %q", t.name, enterprise)
	if err := t.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rows, err := t.r.QueryContext(ctx, "SELECT team FROM install_teams WHERE enterprise = ? ORDER BY team", enterprise)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var team string
		if err := rows.Scan(&team); err != nil {
			return nil, store.WrapErr(ctx, op, err)
		}
		out = append(out, team)
	}
	if err := rows.Err(); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return out, nil
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
