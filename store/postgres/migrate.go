package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"github.com/slackask/slackask/store/internal/migrations"

	"github.com/jackc/pgx/v5"
)

// The schema is the numbered SQL files in migrations/ ("0001_init.sql",
// "0002_….sql", …), applied in order, each exactly once, each in the
// transaction that records it in schema_migrations. A migration is never
// edited once released: changes go in a new file. Replicas that start
// together migrate one after the other under a transaction-level advisory
// lock keyed by the schema's name; the later ones find nothing to do.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrSchemaTooNew: the schema was migrated by a newer slackask whose
// migrations this build does not know. Open refuses it rather than guess.
var ErrSchemaTooNew = migrations.ErrSchemaTooNew

var schema = migrations.NewSet(migrationFiles, "migrations")

// SchemaVersion returns the schema version this build writes: the number of
// its last migration.
func SchemaVersion() int { return schema.Version() }

// migrate brings the schema up to date and returns its name. create, when
// not empty, is a schema to create first if it does not exist (WithSchema);
// otherwise the connection's current schema is used and must exist.
func migrate(ctx context.Context, conn *pgx.Conn, create string) (string, error) {
	ms, err := schema.All()
	if err != nil {
		return "", err
	}
	latest := ms[len(ms)-1].Version
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	schema := create
	if schema == "" {
		var cur *string
		if err := tx.QueryRow(ctx, "SELECT current_schema()").Scan(&cur); err != nil {
			return "", err
		}
		if cur == nil {
			return "", errors.New("no schema to use: the search_path names no existing schema (create it, or use search_path= in the URL)")
		}
		schema = *cur
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('slackask migrate ' || $1))", schema); err != nil {
		return "", fmt.Errorf("migration lock: %w", err)
	}
	if create != "" {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{create}.Sanitize()); err != nil {
			return "", err
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     NOT NULL PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return "", err
	}
	var version int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&version); err != nil {
		return "", err
	}
	switch {
	case version > latest:
		return "", fmt.Errorf("%w: schema %q is at version %d, this build knows up to %d; run a newer slackask or use another schema",
			ErrSchemaTooNew, schema, version, latest)
	case version == latest:
		return schema, nil
	}
	for _, m := range ms[version:] {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return "", fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			return "", err
		}
	}
	return schema, tx.Commit(ctx)
}
