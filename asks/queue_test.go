package asks

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
)

// limitedSurface is surface with Slack's per-conversation post limit: one
// message a second (no burst); a post before its turn is refused with
// RateLimited, as the Slack adapter refuses a 429.
type limitedSurface struct {
	*surface
	mu      sync.Mutex
	last    map[string]time.Time // the last post per conversation
	refused int
}

func newLimited(f *surface) *limitedSurface {
	return &limitedSurface{surface: f, last: map[string]time.Time{}}
}

func (l *limitedSurface) Post(ctx context.Context, rec Record) (Posted, error) {
	l.mu.Lock()
	now := time.Now()
	if last, ok := l.last[rec.Channel]; ok && now.Sub(last) < time.Second {
		l.refused++
		l.mu.Unlock()
		return Posted{}, &RateLimited{RetryAfter: time.Second - now.Sub(last)}
	}
	l.last[rec.Channel] = now
	l.mu.Unlock()
	return l.surface.Post(ctx, rec)
}

// posted lists the ids of the asks posted, in posting order.
func (f *surface) posted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.posts {
		out = append(out, r.ID)
	}
	return out
}

// A burst of asks to one rate-limited conversation: every create answers
// at once (the first posted, the others queued with their place), and
// every ask is posted once, in creation order, at the conversation's pace,
// whichever of two replicas created or posts it; one replica dies in the
// middle.
func TestBurstQueuesInOrderAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSurface()
		lim := newLimited(base)
		r := newReplicas(t, lim, lim)
		stop0 := r.run(0)
		r.run(1)
		const n = 12
		var created []interaction.Ask
		for i := range n {
			ask := r.create(i % 2)
			created = append(created, ask)
			time.Sleep(time.Millisecond) // creation order is CreatedAt's
		}
		if created[0].TS == "" || created[0].Posting != "" {
			t.Fatalf("first ask: ts %q posting %q, want posted at once", created[0].TS, created[0].Posting)
		}
		for i, a := range created[1:] {
			if a.Status != interaction.StatusPending || a.TS != "" || a.Posting != interaction.PostingQueued || a.QueuePlace != i+1 {
				t.Fatalf("ask %d: status %s ts %q posting %q place %d, want pending, queued at place %d", i+1, a.Status, a.TS, a.Posting, a.QueuePlace, i+1)
			}
		}
		got, err := r.svcs[1].Get(context.Background(), created[n-1].ID)
		if err != nil || got.Posting != interaction.PostingQueued || got.QueuePlace != n-1 {
			t.Fatalf("Get of the last: posting %q place %d (%v), want queued at %d", got.Posting, got.QueuePlace, err, n-1)
		}
		time.Sleep(4500 * time.Millisecond)
		stop0() // a replica dies with part of the queue left
		time.Sleep(time.Duration(n) * time.Second)
		synctest.Wait()
		want := make([]string, n)
		for i, a := range created {
			want[i] = a.ID
		}
		if got := base.posted(); !slices.Equal(got, want) {
			t.Fatalf("posted %v,\nwant once each in creation order %v", got, want)
		}
		for _, a := range created {
			rec := r.get(a.ID)
			if rec.TS == "" || rec.Posting != "" || rec.PostQueue != "" {
				t.Fatalf("%s after the queue drained: ts %q posting %q queue %q", a.ID, rec.TS, rec.Posting, rec.PostQueue)
			}
		}
	})
}

// A queued ask survives a restart of the only process: the next start
// posts what is left, in order, once each; an ask withdrawn while queued
// is never posted and does not hold up the ones behind it.
func TestQueueSurvivesRestartAndWithdraw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSurface()
		lim := newLimited(base)
		st := newReplicas(t).st
		start := func() (*Service, func()) {
			svc, err := New(Config{Store: st, Surface: lim, DefaultChannel: chanID, Logger: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			return svc, func() { _ = svc.Close() }
		}
		svc, stop := start()
		var created []interaction.Ask
		for range 5 {
			ask, err := svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions()})
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, ask)
			time.Sleep(time.Millisecond)
		}
		if _, err := svc.Withdraw(context.Background(), created[1].ID); err != nil {
			t.Fatal(err)
		}
		stop() // before any queued ask's turn
		if got := base.posted(); len(got) != 1 {
			t.Fatalf("posted before the restart: %v, want the first only", got)
		}
		time.Sleep(10 * time.Second)
		svc, stop = start()
		defer stop()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		want := []string{created[0].ID, created[2].ID, created[3].ID, created[4].ID}
		if got := base.posted(); !slices.Equal(got, want) {
			t.Fatalf("posted %v, want %v (the withdrawn one never)", got, want)
		}
		w, err := svc.Get(context.Background(), created[1].ID)
		if err != nil || w.Status != interaction.StatusAborted || w.Posting != "" || w.QueuePlace != 0 {
			t.Fatalf("withdrawn queued ask: %+v (%v)", w, err)
		}
	})
}

// A caller waiting on a queued ask waits on: the ask is answered once it
// is posted.
func TestQueuedAskWaitsForItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSurface()
		lim := newLimited(base)
		r := newReplicas(t, lim)
		r.run(0)
		r.create(0)
		queued := r.create(0)
		if queued.TS != "" || queued.Posting != interaction.PostingQueued {
			t.Fatalf("second ask: ts %q posting %q, want queued", queued.TS, queued.Posting)
		}
		done := make(chan interaction.Ask)
		go func() {
			a, _ := r.svcs[0].Wait(context.Background(), queued.ID)
			done <- a
		}()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		posted, err := r.svcs[0].Get(context.Background(), queued.ID)
		if err != nil || posted.TS == "" {
			t.Fatalf("after its turn: %+v (%v)", posted, err)
		}
		if _, err := r.svcs[0].Submit(context.Background(), click(posted, alice), map[int][]int{0: {0}, 1: {1}}); err != nil {
			t.Fatal(err)
		}
		if a := <-done; a.Status != interaction.StatusAnswered {
			t.Fatalf("waiter got %s", a.Status)
		}
	})
}
