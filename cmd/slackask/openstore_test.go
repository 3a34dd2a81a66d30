package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackask/slackask/store/postgres"
	"github.com/slackask/slackask/store/postgres/pgtest"
	"github.com/slackask/slackask/store/sqlite"
)

// SLACKASK_DATABASE picks the store: a file path is SQLite, a postgres://
// or postgresql:// URL is PostgreSQL.
func TestOpenStoreBySetting(t *testing.T) {
	st, err := openStore(t.Context(), filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*sqlite.Store); !ok {
		t.Errorf("a file path opened %T, want *sqlite.Store", st)
	}
	_ = st.Close()

	u := pgtest.URL(t)
	for _, dsn := range []string{u, "postgresql" + strings.TrimPrefix(u, "postgres")} {
		st, err := openStore(t.Context(), dsn)
		if err != nil {
			t.Fatalf("openStore(%s): %v", strings.SplitN(dsn, ":", 2)[0], err)
		}
		if _, ok := st.(*postgres.Store); !ok {
			t.Errorf("a %s URL opened %T, want *postgres.Store", strings.SplitN(dsn, ":", 2)[0], st)
		}
		_ = st.Close()
	}
}

// A PostgreSQL server that cannot be reached fails with an error that names
// the variable and hides the password.
func TestOpenStorePostgresErrorHidesPassword(t *testing.T) {
	_, err := openStore(t.Context(), "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=2")
	if err == nil || !strings.Contains(err.Error(), "SLACKASK_DATABASE") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v, want one naming SLACKASK_DATABASE without the password", err)
	}
}
