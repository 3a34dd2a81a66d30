package main

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// readyz returns the status of replica i's GET /readyz (0: no answer).
func (r *replicaRig) readyz(i int) int {
	resp, err := r.http.Get("http://" + r.reps[i].addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A replica whose database stops answering (its packets vanish) while its
// Socket Mode connections stay up gives them up and says not ready, so
// every click goes to the replica that can store it; it takes them back
// when the database answers again. With every replica cut, a click shows
// the person an error and changes nothing; once the database is back, it
// goes through.
func TestReplicaCutFromTheDatabase(t *testing.T) {
	db := pgtest.URL(t) // skips without SLACKASK_TEST_DATABASE_URL
	db0, p0 := pgtest.ThroughProxy(t, db)
	db1, p1 := pgtest.ThroughProxy(t, db)
	r := newReplicaRigOn(t, db0, 1, 2)
	r.db = db1
	r.add()
	ctx := ctxT(t)
	const n = 8
	var asks []interaction.Ask
	for i := range n + 1 {
		asks = append(asks, r.create(i%2, oneTap("ship")))
	}

	p1.Blackhole(true)
	waitUntil(t, "replica 1, cut from the database, gave up its sockets and said not ready", 15*time.Second, func() bool {
		return r.readyz(1) == http.StatusServiceUnavailable && r.fake.Connections() == 2
	})
	p := r.fake.Person(alice)
	for i, a := range asks[:n] {
		if _, err := p.Select(ctx, channel, a.TS, control(0, "select"), "yes"); err != nil {
			t.Fatalf("click %d with replica 1 cut: %v (every click should go to replica 0)", i, err)
		}
	}
	p1.Blackhole(false)
	waitUntil(t, "replica 1 took its sockets back once the database answered", 15*time.Second, func() bool {
		return r.readyz(1) == http.StatusOK && r.fake.Connections() == 4
	})

	p0.Blackhole(true)
	p1.Blackhole(true)
	waitUntil(t, "both replicas gave up their sockets", 15*time.Second, func() bool {
		return r.readyz(0) == http.StatusServiceUnavailable && r.readyz(1) == http.StatusServiceUnavailable && r.fake.Connections() == 0
	})
	failed := len(r.fake.FailedInteractions())
	last := asks[n]
	_, err := p.Select(ctx, channel, last.TS, control(0, "select"), "no")
	if !errors.Is(err, slackfake.ErrNoConnection) {
		t.Fatalf("a click with every replica cut: %v, want an error in front of the person", err)
	}
	if got := len(r.fake.FailedInteractions()); got != failed+1 {
		t.Fatalf("failed interactions shown: %d, want %d", got, failed+1)
	}
	p0.Blackhole(false)
	p1.Blackhole(false)
	waitUntil(t, "both replicas ready again", 15*time.Second, func() bool {
		return r.readyz(0) == http.StatusOK && r.readyz(1) == http.StatusOK && r.fake.Connections() == 4
	})
	if _, err := p.Select(ctx, channel, last.TS, control(0, "select"), "yes"); err != nil {
		t.Fatalf("a click once the database is back: %v", err)
	}
	for i, a := range asks {
		got, err := r.get(i%2, a.ID, 10*time.Second)
		if err != nil || got.Status != interaction.StatusAnswered || got.Answer.Answers[0].Selected[0] != "yes" {
			t.Fatalf("ask %d: %s %+v %v, want answered yes by the acked click", i, got.Status, got.Answer, err)
		}
	}
}
