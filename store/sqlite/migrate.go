package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"github.com/slackask/slackask/store/internal/migrations"
)

// The schema is the numbered SQL files in migrations/ ("0001_init.sql",
// "0002_….sql", …), applied in order, each exactly once. PRAGMA user_version
// holds the number of the last one applied; PRAGMA application_id marks the
// file as slackask's. A migration is never edited once released: changes
// go in a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// applicationID is PRAGMA application_id of a slackask database ("SlAk").
const applicationID = 0x536c416b

var (
	// ErrSchemaTooNew: the file was written by a newer slackask whose
	// schema this build does not know. Open refuses it rather than guess.
	ErrSchemaTooNew = migrations.ErrSchemaTooNew
	// ErrNotSlackask: the file is a SQLite database of something else.
	ErrNotSlackask = errors.New("not a slackask database")
)

var schema = migrations.NewSet(migrationFiles, "migrations")

// SchemaVersion returns the schema version this build writes: the number of
// its last migration.
func SchemaVersion() int { return schema.Version() }

// migrate brings the schema of db up to date in one BEGIN IMMEDIATE
// transaction, so that two processes opening one file do not both migrate.
// Up to date, it changes nothing.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := schema.All()
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].Version
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var app, version, tables int
	if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		return err
	}
	switch {
	case app != applicationID && (app != 0 || version != 0 || tables != 0):
		return fmt.Errorf("%w (application_id %#x, user_version %d, %d schema objects)", ErrNotSlackask, app, version, tables)
	case version > latest:
		return fmt.Errorf("%w: the file is at schema version %d, this build knows up to %d; run a newer slackask or use another file",
			ErrSchemaTooNew, version, latest)
	case version == latest:
		return nil
	}
	for _, m := range ms[version:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", latest)); err != nil {
		return err
	}
	return tx.Commit()
}
