package asks

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// events returns the kinds of ask id's events and the events.
func (r *rig) events(id string) ([]string, []store.Event) {
	r.t.Helper()
	evs, err := r.st.Events(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	kinds := make([]string, len(evs))
	for i, e := range evs {
		kinds[i] = e.Kind
	}
	return kinds, evs
}

func wantKinds(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func decode[T any](t *testing.T, e store.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		t.Fatalf("event %s data %s: %v", e.Kind, e.Data, err)
	}
	return v
}

// An ask's life is its events, in order, each once: an idempotent create
// retried records one created; of concurrent ends one records ended.
func TestEventsOfAnAsk(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	in := interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "k"}
	ask := r.create(in)
	if again := r.create(in); again.ID != ask.ID {
		t.Fatalf("the retry made another ask")
	}
	kinds, evs := r.events(ask.ID)
	wantKinds(t, kinds, "created", "posted")
	if p := decode[postedData](t, evs[1]); p.Channel != chanID || p.TS != ask.TS {
		t.Fatalf("posted %+v, want %s %s", p, chanID, ask.TS)
	}
	if _, err := r.svc.Select(ctx, click(ask, alice), 0, []int{1}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			act := click(ask, alice)
			act.Rev = 1
			if i%2 == 0 {
				_, _ = r.svc.Submit(ctx, act, map[int][]int{0: {0}, 1: {1}})
			} else {
				_, _ = r.svc.Cancel(ctx, act)
			}
		})
	}
	wg.Wait()
	end := r.get(ask.ID)
	kinds, evs = r.events(ask.ID)
	last := evs[len(evs)-1]
	if end.Status == interaction.StatusAnswered {
		wantKinds(t, kinds, "created", "posted", "response", "ended")
		resp := decode[responseData](t, evs[2])
		if resp.User == nil || resp.User.ID != alice || !reflect.DeepEqual(resp.Answer, *end.Answer) || evs[2].By.ID != alice {
			t.Fatalf("response %+v, want alice's answer %+v", resp, end.Answer)
		}
	} else {
		wantKinds(t, kinds, "created", "posted", "ended")
	}
	if e := decode[endedData](t, last); e.Status != end.Status || e.By == nil || e.By.ID != alice || last.By.ID != alice {
		t.Fatalf("ended %+v by %v, want %s by alice", e, last.By, end.Status)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq || evs[i].At.Before(evs[i-1].At) {
			t.Fatalf("events out of order: %+v", evs)
		}
	}
}

// A team ask records each person's submission as a response (a
// resubmission too), then its end.
func TestEventsOfATeamAsk(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ask := r.create(teamInput(2, alice, bob, carol))
	rec, err := r.svc.Submit(ctx, click(ask, alice), map[int][]int{0: {0}})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = r.svc.Submit(ctx, on(rec, alice), map[int][]int{0: {0}}); err != nil {
		t.Fatal(err)
	}
	if rec, err = r.svc.Submit(ctx, on(rec, bob), map[int][]int{0: {0}}); err != nil || rec.Status != interaction.StatusAnswered {
		t.Fatalf("bob's submit: %s %v", rec.Status, err)
	}
	kinds, evs := r.events(ask.ID)
	wantKinds(t, kinds, "created", "posted", "response", "response", "response", "ended")
	for i, who := range []string{alice, alice, bob} {
		resp := decode[responseData](t, evs[2+i])
		if resp.User.ID != who || evs[2+i].By.ID != who {
			t.Fatalf("response %d by %+v, want %s", i, resp.User, who)
		}
	}
	if got := decode[responseData](t, evs[2]).Answer.Answers[0].Selected; !reflect.DeepEqual(got, []string{"Yes"}) {
		t.Fatalf("alice's first response %v, want [Yes]", got)
	}
	if e := decode[endedData](t, evs[5]); e.Status != interaction.StatusAnswered || e.By.ID != bob {
		t.Fatalf("ended %+v", e)
	}
}

// The reminder is recorded when it is sent, the deadline's end without a
// person.
func TestEventsRemindedAndExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.run()
		ask := r.create(interaction.AskInput{Request: twoQuestions(), Responders: []string{alice},
			Timeout: interaction.Duration(10 * time.Minute), RemindAfter: interaction.Duration(5 * time.Minute)})
		time.Sleep(11 * time.Minute)
		synctest.Wait()
		kinds, evs := r.events(ask.ID)
		wantKinds(t, kinds, "created", "posted", "reminded", "ended")
		if d := decode[remindedData](t, evs[2]); d.Reminder != 1 {
			t.Fatalf("reminded %+v", d)
		}
		if e := decode[endedData](t, evs[3]); e.Status != interaction.StatusExpired || e.By != nil || evs[3].By != nil {
			t.Fatalf("ended %+v by %v, want expired by nobody", e, evs[3].By)
		}
	})
}

// WaitFeed waits for the next event committed after the seq it is given,
// and returns none when its wait passes first.
func TestWaitFeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ctx := context.Background()
		ask := r.create(interaction.AskInput{Request: twoQuestions()})
		_, evs := r.events(ask.ID)
		last := evs[len(evs)-1].Seq
		if got, err := r.svc.WaitFeed(ctx, 0, 10, time.Minute); err != nil || len(got) != len(evs) {
			t.Fatalf("WaitFeed with events waiting = %d, %v; want them at once", len(got), err)
		}
		done := make(chan []store.Event, 1)
		go func() {
			got, err := r.svc.WaitFeed(ctx, last, 10, time.Minute)
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		synctest.Wait()
		select {
		case got := <-done:
			t.Fatalf("WaitFeed returned %v with nothing new", got)
		default:
		}
		if _, err := r.svc.Withdraw(ctx, ask.ID); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if len(got) != 1 || got[0].Kind != store.EventEnded || got[0].Seq <= last {
			t.Fatalf("WaitFeed woke with %+v, want the end", got)
		}
		go func() {
			got, _ := r.svc.WaitFeed(ctx, got[0].Seq, 10, time.Minute)
			done <- got
		}()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := <-done; len(got) != 0 {
			t.Fatalf("WaitFeed after its wait = %v, want none", got)
		}
	})
}
