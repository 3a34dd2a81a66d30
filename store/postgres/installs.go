package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/internal/sqlrow"
)

const installCols = sqlrow.InstallColumns

// SaveInstall implements store.InstallStore.
func (s *Store) SaveInstall(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	op := fmt.Sprintf("postgres save install %q", r.Key)
	if err := store.CheckInstall(r); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	if err := s.check(ctx); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	out, err := sqlrow.Install(s.pool.QueryRow(ctx, `INSERT INTO installs (`+installCols+`)
		VALUES ($1, $2, $3, $4, 1, $5, $6, $7)
		ON CONFLICT (id) DO UPDATE SET enterprise = excluded.enterprise, team = excluded.team, org_wide = excluded.org_wide,
			version = installs.version + 1, sealed = excluded.sealed, expires_at = excluded.expires_at, updated_at = excluded.updated_at
		RETURNING `+installCols,
		r.Key, r.Enterprise, r.Team, r.OrgWide, r.Sealed, sqlrow.ExpiresCol(r.ExpiresAt), sqlrow.Nanos(r.UpdatedAt)))
	if err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

// InstallFor implements store.InstallStore.
func (s *Store) InstallFor(ctx context.Context, enterprise, team string) (store.InstallRow, error) {
	op := fmt.Sprintf("postgres install for %q/%q", enterprise, team)
	if err := s.check(ctx); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	// The team's own row, else the enterprise's org-wide one, else (no
	// enterprise given) the org-wide one install_teams names for the
	// team. Keys are never "", so an id given as "" matches nothing.
	mapped := team
	if enterprise != "" {
		mapped = ""
	}
	r, err := sqlrow.Install(s.pool.QueryRow(ctx, "SELECT "+installCols+
		" FROM installs WHERE (id = $1 AND NOT org_wide) OR (id = $2 AND org_wide)"+
		" OR (org_wide AND id = (SELECT enterprise FROM install_teams WHERE team = $3)) ORDER BY org_wide LIMIT 1", team, enterprise, mapped))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNoInstall
	}
	if err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	return r, nil
}

// SwapInstall implements store.InstallStore.
func (s *Store) SwapInstall(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	op := fmt.Sprintf("postgres swap install %q", r.Key)
	if err := store.CheckInstall(r); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	if err := s.check(ctx); err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	out, err := sqlrow.Install(s.pool.QueryRow(ctx, `UPDATE installs SET enterprise = $1, team = $2, org_wide = $3, version = version + 1,
		sealed = $4, expires_at = $5, updated_at = $6 WHERE id = $7 AND version = $8 RETURNING `+installCols,
		r.Enterprise, r.Team, r.OrgWide, r.Sealed, sqlrow.ExpiresCol(r.ExpiresAt), sqlrow.Nanos(r.UpdatedAt), r.Key, r.Version))
	if errors.Is(err, pgx.ErrNoRows) {
		// Lost, or gone: which one decides what the caller does next.
		var one int
		switch e := s.pool.QueryRow(ctx, "SELECT 1 FROM installs WHERE id = $1", r.Key).Scan(&one); {
		case e == nil:
			err = store.ErrInstallChanged
		case errors.Is(e, pgx.ErrNoRows):
			err = store.ErrNoInstall
		default:
			err = e
		}
	}
	if err != nil {
		return store.InstallRow{}, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

// DeleteInstalls implements store.InstallStore.
func (s *Store) DeleteInstalls(ctx context.Context, enterprise, team string) ([]store.InstallRow, error) {
	op := fmt.Sprintf("postgres delete installs %q/%q", enterprise, team)
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	if team != "" {
		gone, err := s.queryInstalls(ctx, "DELETE FROM installs WHERE id = $1 AND NOT org_wide RETURNING "+installCols, team)
		if err != nil {
			return nil, store.WrapErr(ctx, op, err)
		}
		return gone, nil
	}
	// The org-wide row and the teams recorded for it, in one statement.
	gone, err := s.queryInstalls(ctx, `WITH teams AS (DELETE FROM install_teams WHERE enterprise = $1)
		DELETE FROM installs WHERE id = $1 AND org_wide RETURNING `+installCols, enterprise)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return gone, nil
}

// SetInstallTeams implements store.InstallStore.
func (s *Store) SetInstallTeams(ctx context.Context, enterprise string, teams []string) error {
	op := fmt.Sprintf("postgres set install teams %q", enterprise)
	if err := store.CheckInstallTeams(enterprise, teams); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	if err := s.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	if teams == nil {
		teams = []string{} // NULL would make ANY($2) unknown and keep every old team
	}
	// One statement: the enterprise's old teams go, the new ones come (or
	// move from another enterprise), atomically.
	_, err := s.pool.Exec(ctx, `WITH gone AS (DELETE FROM install_teams WHERE enterprise = $1 AND NOT (team = ANY($2)))
		INSERT INTO install_teams (team, enterprise) SELECT DISTINCT unnest($2::text[]), $1
		ON CONFLICT (team) DO UPDATE SET enterprise = excluded.enterprise`, enterprise, teams)
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	return nil
}

// InstallTeams implements store.InstallStore.
func (s *Store) InstallTeams(ctx context.Context, enterprise string) ([]string, error) {
	op := fmt.Sprintf("postgres install teams %q", enterprise)
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rows, err := s.pool.Query(ctx, "SELECT team FROM install_teams WHERE enterprise = $1 ORDER BY team", enterprise)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

// Installs implements store.InstallStore.
func (s *Store) Installs(ctx context.Context) ([]store.InstallRow, error) {
	const op = "postgres installs"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	out, err := s.queryInstalls(ctx, "SELECT "+installCols+" FROM installs")
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

// UseNonce implements store.InstallStore.
func (s *Store) UseNonce(ctx context.Context, nonce string, expires time.Time) error {
	const op = "postgres use nonce"
	if err := s.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	if _, err := s.pool.Exec(ctx, "DELETE FROM oauth_nonces WHERE expires_at < $1", sqlrow.Nanos(time.Now())); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	// The primary key decides between replicas: one insert wins.
	tag, err := s.pool.Exec(ctx, "INSERT INTO oauth_nonces (nonce, expires_at) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING",
		nonce, sqlrow.Nanos(expires))
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNonceUsed
	}
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	return nil
}

// queryInstalls returns the rows query yields, by id.
func (s *Store) queryInstalls(ctx context.Context, query string, args ...any) ([]store.InstallRow, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out, err := sqlrow.Installs(rows)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.InstallRow) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
