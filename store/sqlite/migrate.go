package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"
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
	ErrSchemaTooNew = errors.New("database schema is newer than this slackask")
	// ErrNotSlackask: the file is a SQLite database of something else.
	ErrNotSlackask = errors.New("not a slackask database")
)

type migration struct {
	version int
	name    string
	sql     string
}

var loadMigrations = sync.OnceValues(func() ([]migration, error) {
	return readMigrations(migrationFiles, "migrations")
})

// readMigrations reads dir's NNNN_name.sql files; their numbers must run
// 1, 2, 3, … without gaps.
func readMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir) // sorted by name
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != len(ms)+1 {
			return nil, fmt.Errorf("migration %s: want a name like %04d_what.sql", e.Name(), len(ms)+1)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	if len(ms) == 0 {
		return nil, errors.New("no migrations")
	}
	return ms, nil
}

// SchemaVersion returns the schema version this build writes: the number of
// its last migration.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate brings the schema of db up to date in one BEGIN IMMEDIATE
// transaction, so that two processes opening one file do not both migrate.
// Up to date, it changes nothing.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].version
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
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
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
