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
)

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
