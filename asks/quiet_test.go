package asks

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// A pick that only records progress (a menu's selection on a message that
// need not be drawn again, a person's draft pick or skip on a team ask) goes
// unannounced: no watcher acts on progress, and on PostgreSQL every
// replica would wake for it. A pick that redraws, a response and an end
// are announced.
func TestDraftPicksGoUnannounced(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	var (
		mu   sync.Mutex
		seen = map[string]bool{} // "id vN" announced
		got  = make(chan struct{}, 1)
	)
	defer r.st.Watch(func(c store.Change) {
		mu.Lock()
		seen[key(c.ID, c.Version)] = true
		mu.Unlock()
		select {
		case got <- struct{}{}:
		default:
		}
	})()
	announced := func(rec Record) bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[key(rec.ID, rec.Version)]
	}
	waitAnnounced := func(rec Record) {
		t.Helper()
		for deadline := time.After(10 * time.Second); !announced(rec); {
			select {
			case <-got:
			case <-deadline:
				t.Fatalf("%s v%d never announced", rec.ID, rec.Version)
			}
		}
	}

	one := r.create(interaction.AskInput{Request: twoQuestions()})
	quiet, err := r.svc.Select(ctx, click(one, alice), 0, []int{1})
	if err != nil || !quiet.Quiet || quiet.Rev != 1 {
		t.Fatalf("a menu pick: quiet %v rev %d, %v", quiet.Quiet, quiet.Rev, err)
	}
	stale := click(one, alice)
	stale.Rev = 0 // the person's message shows an older rendering: redrawn
	drawn, err := r.svc.Select(ctx, stale, 1, []int{0})
	if err != nil || drawn.Quiet || drawn.Rev != 2 {
		t.Fatalf("a pick that redraws: quiet %v rev %d, %v", drawn.Quiet, drawn.Rev, err)
	}

	team := r.create(interaction.AskInput{Request: twoQuestions(), Responses: interaction.ResponseCount{N: 2}, Responders: []string{alice, bob}})
	draft, err := r.svc.Select(ctx, click(team, alice), 0, []int{0})
	if err != nil || !draft.Quiet || len(draft.Drafts[alice]) == 0 {
		t.Fatalf("a draft pick: quiet %v drafts %v, %v", draft.Quiet, draft.Drafts, err)
	}
	skip, err := r.svc.Skip(ctx, click(team, alice), 1)
	if err != nil || !skip.Quiet || len(skip.Drafts[alice]) < 2 || !skip.Drafts[alice][1].Skipped {
		t.Fatalf("a draft skip: quiet %v drafts %v, %v", skip.Quiet, skip.Drafts, err)
	}
	resp, err := r.svc.Submit(ctx, click(team, bob), map[int][]int{0: {0}, 1: {1}})
	if err != nil || resp.Quiet || len(resp.Responses) != 1 {
		t.Fatalf("a response: quiet %v, %v", resp.Quiet, err)
	}
	end, err := r.svc.Submit(ctx, click(one, alice), nil)
	if err != nil || end.Quiet || end.Status != interaction.StatusAnswered {
		t.Fatalf("the end: quiet %v status %s, %v", end.Quiet, end.Status, err)
	}

	// The announced writes after each quiet one have been heard: had the
	// quiet ones been announced, they would have been heard before.
	for _, rec := range []Record{drawn, resp, end} {
		waitAnnounced(rec)
	}
	for _, rec := range []Record{quiet, draft, skip} {
		if announced(rec) {
			t.Errorf("%s v%d (progress only) was announced", rec.ID, rec.Version)
		}
	}
}

func key(id string, v int64) string { return fmt.Sprintf("%s v%d", id, v) }
