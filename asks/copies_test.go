package asks

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// copyRefs returns the posted copies of rec, by the person or
// conversation each is for.
func copyRefs(rec Record) map[string]string {
	out := map[string]string{}
	for _, c := range rec.Copies {
		out[c.For+c.In] = c.Ref
	}
	return out
}

func (f *surface) shows(ref string) (int, interaction.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.copyShows[ref], f.copyStatus[ref]
}

func (f *surface) copyPostsOf(id string) int { return f.count(&f.copyPosts, id) }

// notify "dm": each named responder (a group's members too, each person
// once) gets a copy; an answer in one copy ends the ask, and every copy
// and the main message are drawn ended.
func TestNotifyDMCopyPerResponderAnsweredInOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil)
		r.surf.groups["S0TEAM"] = []string{carol, alice}
		r.run(0)
		ask, err := r.svcs[0].Create(context.Background(), interaction.AskInput{Request: twoQuestions(),
			Responders: []string{alice, bob, "S0TEAM"}, Notify: interaction.NotifyDM})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		rec := r.get(ask.ID)
		refs := copyRefs(rec)
		if len(refs) != 3 || refs[alice] == "" || refs[bob] == "" || refs[carol] == "" {
			t.Fatalf("copies %+v, want one posted DM each for alice, bob, carol", rec.Copies)
		}
		if n := r.surf.copyPostsOf(ask.ID); n != 3 {
			t.Fatalf("%d copies posted, want 3", n)
		}
		evs, err := r.st.Events(context.Background(), ask.ID)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		dms := map[string]bool{}
		for _, e := range evs {
			kinds[e.Kind]++
			if e.Kind == store.EventNotified {
				var d struct{ User, How string }
				if err := json.Unmarshal(e.Data, &d); err != nil || d.How != "dm" {
					t.Fatalf("notified %s (%v)", e.Data, err)
				}
				dms[d.User] = true
			}
		}
		if kinds[store.EventPosted] != 4 || len(dms) != 3 || kinds[store.EventNotified] != 3 {
			t.Fatalf("events %v, DMs noted %v: want posted 4 times (the message, 3 copies), notified by dm once each", kinds, dms)
		}
		act := Act{AskID: ask.ID, By: interaction.User{ID: bob, Name: "bob"}, Workspace: team, App: "A0APP",
			Ref: refs[bob], Rev: rec.Rev}
		if _, err := r.svcs[0].Submit(context.Background(), act, map[int][]int{0: {0}, 1: {1}}); err != nil {
			t.Fatalf("answer in bob's copy: %v", err)
		}
		synctest.Wait()
		rec = r.get(ask.ID)
		if rec.Status != interaction.StatusAnswered || !rec.Synced {
			t.Fatalf("after the answer: %s, synced %v", rec.Status, rec.Synced)
		}
		for who, ref := range refs {
			if rev, st := r.surf.shows(ref); rev != rec.Rev || st != interaction.StatusAnswered {
				t.Errorf("%s's copy shows rev %d %s, want rev %d answered", who, rev, st, rec.Rev)
			}
		}
		if u, _ := r.surf.lastUpdate(ask.ID); u.Status != interaction.StatusAnswered {
			t.Errorf("main message shows %s", u.Status)
		}
		// An act naming a view that is not the ask's is refused.
		act.Ref = "D0ELSE/1"
		if _, err := r.svcs[0].Check(context.Background(), act); err == nil {
			t.Error("an act on a view that is not the ask's was admitted")
		}
	})
}

// notify "dm" to more than 50 people is refused at create.
func TestNotifyDMAtMost50(t *testing.T) {
	r := newRig(t)
	var many []string
	for i := range 51 {
		many = append(many, fmt.Sprintf("U0P%03d", i))
	}
	_, err := r.svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions(), Responders: many, Notify: interaction.NotifyDM})
	if interaction.ErrorCode(err) != interaction.InvalidQuestion {
		t.Fatalf("51 people: %v, want INVALID_QUESTION", err)
	}
}

// AddCopy adds a copy to a pending ask once, and never to an ended one or
// where the ask is shown already.
func TestAddCopy(t *testing.T) {
	r := Record{Ask: interaction.Ask{Status: interaction.StatusPending, Channel: "C1", User: "U0DM"}}
	for _, c := range []struct {
		c    Copy
		want bool
	}{
		{Copy{For: alice}, true},
		{Copy{For: alice}, false}, // once
		{Copy{In: "C2"}, true},
		{Copy{In: "C1"}, false},    // the main message's conversation
		{Copy{For: "U0DM"}, false}, // the ask's own DM
		{Copy{}, false},
		{Copy{For: bob, In: "C3"}, false},
	} {
		if got := AddCopy(&r, c.c); got != c.want {
			t.Errorf("AddCopy(%+v) = %v, want %v", c.c, got, c.want)
		}
	}
	if len(r.Copies) != 2 {
		t.Fatalf("copies %+v", r.Copies)
	}
	r.Status = interaction.StatusAnswered
	if AddCopy(&r, Copy{For: bob}) {
		t.Error("a copy added to an ended ask")
	}
}

// AddCopies (reach's escalation to another channel) adds a copy to a
// pending ask: it is posted and kept in step like the others.
func TestAddCopiesPostsAndKeepsInStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil)
		r.run(0)
		ask := r.create(0)
		if _, err := r.svcs[0].AddCopies(context.Background(), ask.ID, Copy{In: "C0OPS"}, Copy{In: "C0OPS"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ref := copyRefs(r.get(ask.ID))["C0OPS"]
		if ref == "" || r.surf.copyPostsOf(ask.ID) != 1 {
			t.Fatalf("copy %q, %d posted, want one", ref, r.surf.copyPostsOf(ask.ID))
		}
		if _, err := r.svcs[0].Withdraw(context.Background(), ask.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, st := r.surf.shows(ref); st != interaction.StatusAborted {
			t.Fatalf("copy shows %s after the withdrawal", st)
		}
		if _, err := r.svcs[0].AddCopies(context.Background(), ask.ID, Copy{In: "C0LATE"}); err == nil {
			t.Fatal("a copy added to an ended ask")
		}
	})
}

// landedSurface lands the first post of each copy but answers as if the
// connection broke (ErrOutcomeUnknown), as a process killed mid-post
// leaves it; FindCopy then finds what landed.
type landedSurface struct {
	*surface
	mu     sync.Mutex
	broken map[string]bool
}

func (l *landedSurface) PostCopy(ctx context.Context, rec Record, c Copy) (Posted, error) {
	at, err := l.surface.PostCopy(ctx, rec, c)
	l.mu.Lock()
	defer l.mu.Unlock()
	key := rec.ID + "/" + c.For + c.In
	if err != nil || l.broken[key] {
		return at, err
	}
	l.broken[key] = true
	l.surface.mu.Lock()
	l.surface.foundCopy[key] = at.Ref
	l.surface.mu.Unlock()
	return Posted{}, fmt.Errorf("%w: connection reset", ErrOutcomeUnknown)
}

// A copy whose post may have landed is never posted again blindly: after
// postGrace it is looked for and adopted, on whichever replica (here
// after the first one died), and drawn as the record stands.
func TestCopyOfUnknownOutcomeIsAdoptedNotPostedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSurface()
		l := &landedSurface{surface: base, broken: map[string]bool{}}
		r := newReplicas(t, l, l)
		r.surf = base
		stop := r.run(0)
		ask, err := r.svcs[0].Create(context.Background(), interaction.AskInput{Request: twoQuestions(),
			Responders: []string{alice, bob}, Notify: interaction.NotifyDM})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		stop()
		r.run(1)
		time.Sleep(postGrace + dueLease + time.Second)
		synctest.Wait()
		rec := r.get(ask.ID)
		refs := copyRefs(rec)
		if n := base.copyPostsOf(ask.ID); n != 2 || refs[alice] == "" || refs[bob] == "" {
			t.Fatalf("%d copy posts, copies %+v: want the two that landed, adopted", n, rec.Copies)
		}
		for who, ref := range refs {
			if rev, _ := base.shows(ref); rev != rec.Rev || !rec.Synced {
				t.Errorf("%s's adopted copy shows rev %d, record rev %d synced %v", who, rev, rec.Rev, rec.Synced)
			}
		}
	})
}

// A copy the surface refuses for good is marked failed and not tried
// again; the ask and its other views go on.
func TestRefusedCopyNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil)
		r.surf.copyErr = interaction.Errorf(interaction.SlackError, "cannot_dm_bot")
		r.run(0)
		ask, err := r.svcs[0].Create(context.Background(), interaction.AskInput{Request: twoQuestions(),
			Responders: []string{alice}, Notify: interaction.NotifyDM})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		rec := r.get(ask.ID)
		if len(rec.Copies) != 1 || rec.Copies[0].Failed == "" || rec.Status != interaction.StatusPending {
			t.Fatalf("copies %+v status %s", rec.Copies, rec.Status)
		}
		if !rec.WakeAt.IsZero() && !rec.WakeAt.After(time.Now()) {
			t.Fatalf("the refused copy keeps the ask due: WakeAt %v", rec.WakeAt)
		}
	})
}

// slowCopySurface shows a copy (the person can act on it) before its
// post returns the reference.
type slowCopySurface struct {
	*surface
	entered, release chan struct{}
}

func (s *slowCopySurface) PostCopy(ctx context.Context, rec Record, c Copy) (Posted, error) {
	close(s.entered)
	<-s.release
	return Posted{Channel: "D0BOB", TS: "1.1", Ref: "D0BOB/1.1"}, nil
}

// An act on a copy that arrives before the copy's post returned its
// reference waits for it, as one on the main message waits for its ts.
func TestActOnACopyBeforeItsRefIsStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSurface()
		slow := &slowCopySurface{surface: base, entered: make(chan struct{}), release: make(chan struct{})}
		r := newReplicas(t, slow)
		r.surf = base
		r.run(0)
		ask, err := r.svcs[0].Create(context.Background(), interaction.AskInput{Request: twoQuestions(),
			Responders: []string{bob}, Notify: interaction.NotifyDM})
		if err != nil {
			t.Fatal(err)
		}
		<-slow.entered
		done := make(chan error, 1)
		go func() {
			act := Act{AskID: ask.ID, By: interaction.User{ID: bob}, Workspace: team, App: "A0APP", Ref: "D0BOB/1.1", Rev: 1}
			_, err := r.svcs[0].Submit(context.Background(), act, map[int][]int{0: {0}, 1: {0}})
			done <- err
		}()
		synctest.Wait() // the act waits for the copy's reference
		close(slow.release)
		if err := <-done; err != nil {
			t.Fatalf("an act on the copy as its post returned: %v", err)
		}
	})
}
