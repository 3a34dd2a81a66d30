package main

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, to hold the database's write lock

	"github.com/slackask/slackask/interaction"
)

// holdWrites takes SQLite's write lock on the database at path (BEGIN
// IMMEDIATE on a connection of this process) until the func it returns is
// called: slackask's writes wait (up to its busy timeout), its reads do
// not.
func holdWrites(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		_ = conn.Close()
		_ = db.Close()
	}
	t.Cleanup(release)
	return release
}

// With SQLite, a click is acked once journaled, before it is stored
// (issues 13 and 14), and a process killed with SIGKILL right after the
// ack applies it on its next start. Here the database's write lock is
// held by the test while the click comes, so the ack cannot wait for the
// store (without the journal it never arrives) and the kill always lands
// before the change is stored: only the replay can apply it. Once for a
// select that answers a one-question ask, once for a form's Submit.
func TestProcessKilledRightAfterTheAckKeepsTheClick(t *testing.T) {
	r := newProcRig(t)
	p := r.serve()
	person := r.fake.Person(alice)
	ctx := r.ctx()

	oneTap, code := r.post(ask1(question("db", "Which database?", "SQLite", "Postgres")))
	if code != 201 {
		t.Fatalf("create: %d", code)
	}
	form, code := r.post(ask1(question("db", "Which database?", "SQLite", "Postgres"), question("env", "Where?", "dev", "prod")))
	if code != 201 {
		t.Fatalf("create: %d", code)
	}
	if _, err := person.Select(ctx, channel, form.TS, control(0, "select"), "Postgres"); err != nil {
		t.Fatal(err)
	}
	if _, err := person.Select(ctx, channel, form.TS, control(1, "select"), "prod"); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		what  string
		click func() error
	}{
		{"select", func() error {
			_, err := person.Select(ctx, channel, oneTap.TS, control(0, "select"), "Postgres")
			return err
		}},
		{"submit", func() error {
			_, err := person.Click(ctx, channel, form.TS, control(-1, "submit"))
			return err
		}},
	} {
		release := holdWrites(t, r.db)
		if err := c.click(); err != nil {
			t.Fatalf("%s: not acked while the database was locked: %v", c.what, err)
		}
		p.kill9(t)
		release()
		if fi, err := os.Stat(r.db + journalSuffix); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: no journal next to the database after the kill: %v", c.what, err)
		}
		p = r.serve()
	}
	want := map[string]string{
		oneTap.ID: `{"answers":[{"id":"db","selected":["Postgres"]}]}`,
		form.ID:   `{"answers":[{"id":"db","selected":["Postgres"]},{"id":"env","selected":["prod"]}]}`,
	}
	for id, answer := range want {
		got := r.get(id, 10*time.Second)
		if got.Status != interaction.StatusAnswered || mustJSON(t, got.Answer) != answer {
			t.Errorf("ask %s after kill -9 right after the ack: %s %s, want answered %s", id, got.Status, mustJSON(t, got.Answer), answer)
		}
	}
}
