// Package migrations reads a store's schema migrations: numbered SQL files
// ("0001_init.sql", "0002_….sql", …) applied in order, each exactly once.
// A migration is never edited once released: changes go in a new file.
package migrations

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"
)

// ErrSchemaTooNew: the schema was written by a newer slackask whose
// migrations this build does not know; a store refuses it rather than
// guess.
var ErrSchemaTooNew = errors.New("database schema is newer than this slackask")

// Set is a store's migrations, read once.
type Set struct{ read func() ([]Migration, error) }

// NewSet returns the migrations in dir of fsys (see Read), read on first
// use.
func NewSet(fsys fs.FS, dir string) *Set {
	return &Set{read: sync.OnceValues(func() ([]Migration, error) { return Read(fsys, dir) })}
}

// All returns the migrations, in order.
func (s *Set) All() ([]Migration, error) { return s.read() }

// Version is the schema version the set writes: the number of its last
// migration (0 when they cannot be read).
func (s *Set) Version() int {
	ms, err := s.read()
	if err != nil {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Migration is one numbered SQL file.
type Migration struct {
	Version int    // its number: 1, 2, 3, …
	Name    string // its file name
	SQL     string
}

// Read reads dir's NNNN_name.sql files; their numbers must run 1, 2, 3, …
// without gaps, and there must be at least one.
func Read(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir) // sorted by name
	if err != nil {
		return nil, err
	}
	var ms []Migration
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
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	if len(ms) == 0 {
		return nil, errors.New("no migrations")
	}
	return ms, nil
}
