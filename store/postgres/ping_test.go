package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slackask/slackask/store/postgres/pgtest"
)

// An answer to the pool stands for a Ping while it is fresh: with the
// database then cut off, Ping still says it answers, and says it does
// not once the answer is older than pingFresh.
func TestPingUsesRecentAnswer(t *testing.T) {
	u, p := pgtest.ThroughProxy(t, pgtest.URL(t))
	s := openURL(t, u)
	ctx := t.Context()
	answered := time.Now() // no later than the answer: the checks below err on the safe side
	if _, err := s.pool.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	p.Blackhole(true)
	pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := s.Ping(pctx)
	cancel()
	if err != nil && time.Since(answered) < pingFresh {
		t.Fatalf("Ping %v after the pool's answer: %v, want nil (that answer stands for it)", time.Since(answered), err)
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := s.Ping(pctx)
		cancel()
		if err != nil {
			if since := time.Since(answered); since < pingFresh {
				t.Fatalf("Ping failed %v after the pool's last answer, inside pingFresh", since)
			}
			break
		}
		if time.Since(answered) > 10*pingFresh {
			t.Fatal("Ping kept saying the database answers with every byte held")
		}
	}
	p.Blackhole(false)
}

// What counts as the server's answer: success or the server's own error;
// not a connection's error or a timeout.
func TestNoteAnswer(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{&pgconn.PgError{Code: "23505"}, true},
		{context.DeadlineExceeded, false},
		{&pgconn.ConnectError{}, false},
	} {
		var tc tripCounter
		tc.noteAnswer(c.err)
		if got := tc.answeredWithin(time.Minute); got != c.want {
			t.Errorf("after %v: answered %v, want %v", c.err, got, c.want)
		}
	}
}
