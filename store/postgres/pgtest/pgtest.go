// Package pgtest gives tests a PostgreSQL database of their own: a new
// schema on the server named by SLACKASK_TEST_DATABASE_URL, dropped when
// the test ends. Tests that need PostgreSQL skip without the variable.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slackask/slackask/internal/tcpfault"
)

// EnvVar names the server tests use, e.g.
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const EnvVar = "SLACKASK_TEST_DATABASE_URL"

// URL creates a schema with a random name on the server of EnvVar and
// returns a URL whose search_path is that schema, for store/postgres.Open
// (and for a `slackask serve` under test through SLACKASK_DATABASE). The
// schema is dropped with everything in it when the test and its subtests
// have finished, after cleanups registered later (closing stores) ran.
// Without EnvVar the test is skipped.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvVar)
	if base == "" {
		t.Skip(EnvVar + " not set: skipping PostgreSQL tests")
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	schema := "t_" + hex.EncodeToString(b)
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, sql)
		return err
	}
	ident := pgx.Identifier{schema}.Sanitize()
	if err := exec("CREATE SCHEMA " + ident); err != nil {
		t.Fatalf("pgtest: create schema on %s: %v", EnvVar, err)
	}
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA " + ident + " CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: %s does not parse as a URL", EnvVar)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// ThroughProxy returns db (a postgres:// URL) reached through a tcpfault
// proxy of its own, closed when the test ends.
func ThroughProxy(t testing.TB, db string) (string, *tcpfault.Proxy) {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tcpfault.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	u.Host = p.Addr()
	return u.String(), p
}
