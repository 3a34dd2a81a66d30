package asks

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// noticeSurface is the test surface with Notice: it records every notice
// and can fail the next ones.
type noticeSurface struct {
	*surface
	nmu     sync.Mutex
	notices []Notice
	byAsk   []string // the ask of each notice, in order
	fail    int      // the next fail notices fail
}

func (f *noticeSurface) Notice(_ context.Context, rec Record, n Notice) error {
	f.nmu.Lock()
	defer f.nmu.Unlock()
	if f.fail > 0 {
		f.fail--
		return errors.New("slack is down")
	}
	f.notices = append(f.notices, n)
	f.byAsk = append(f.byAsk, rec.ID+"/"+n.Key)
	return nil
}

func (f *noticeSurface) count(key string) int {
	f.nmu.Lock()
	defer f.nmu.Unlock()
	n := 0
	for _, x := range f.notices {
		if x.Key == key {
			n++
		}
	}
	return n
}

func (f *noticeSurface) all() []Notice {
	f.nmu.Lock()
	defer f.nmu.Unlock()
	return slices.Clone(f.notices)
}

// wantReachKinds checks the events of ask id besides created, posted and
// notified: kinds want, in order; and that it has notified events of
// each of hows (a DM copy's and a thread notice's may come in either
// order).
func wantReachKinds(t *testing.T, st store.Store, id string, hows map[string]int, want ...string) {
	t.Helper()
	evs, err := st.Events(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	notified := map[string]int{}
	for _, e := range evs {
		switch e.Kind {
		case store.EventCreated, store.EventPosted:
		case store.EventNotified:
			var d struct{ How string }
			_ = json.Unmarshal(e.Data, &d)
			notified[d.How]++
		default:
			got = append(got, e.Kind)
		}
	}
	if !slices.Equal(got, want) || !maps.Equal(notified, hows) {
		t.Fatalf("events %v notified %v, want %v and %v", got, notified, want, hows)
	}
}

func newNoticeRig(t *testing.T) (*rig, *noticeSurface) {
	t.Helper()
	r := newRig(t)
	ns := &noticeSurface{surface: r.surf}
	svc, err := New(Config{Store: r.st, Surface: ns, DefaultChannel: chanID, Logger: r.svc.log})
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	return r, ns
}

// Reminders with remindEvery repeat at that interval, count, stop when the
// ask is answered, and never exceed MaxReminders.
func TestRemindEveryRepeatsAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.run()
		in := interaction.AskInput{Request: twoQuestions(), Responders: []string{alice},
			RemindAfter: interaction.Duration(5 * time.Minute), RemindEvery: interaction.Duration(10 * time.Minute)}
		answered := r.create(in)
		capped := r.create(in)
		for i, want := range []int{1, 2, 3} {
			time.Sleep(time.Duration(map[int]int{0: 5, 1: 10, 2: 10}[i])*time.Minute + time.Second)
			synctest.Wait()
			if n := r.surf.count(&r.surf.reminders, answered.ID); n != want {
				t.Fatalf("after %d intervals: %d reminders, want %d", i, n, want)
			}
			time.Sleep(-time.Second)
		}
		if _, err := r.svc.Submit(context.Background(), click(answered, alice), map[int][]int{0: {0}, 1: {1}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Hour)
		synctest.Wait()
		if n := r.surf.count(&r.surf.reminders, answered.ID); n != 3 {
			t.Fatalf("%d reminders after the answer, want the 3 before it", n)
		}
		if n := r.surf.count(&r.surf.reminders, capped.ID); n != interaction.MaxReminders {
			t.Fatalf("%d reminders in 10 hours every 10 minutes, want the cap %d", n, interaction.MaxReminders)
		}
		rec, _ := r.st.Get(context.Background(), capped.ID)
		if !rec.Reminded || rec.Reminders != interaction.MaxReminders || !rec.WakeAt.IsZero() {
			t.Fatalf("capped ask: reminded %v count %d wake %v", rec.Reminded, rec.Reminders, rec.WakeAt)
		}
	})
}

// An escalation step adds its people at its time, not before, and
// notifies them once; the message is re-rendered with them; a later
// step follows.
func TestEscalationAddsAndNotifies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, ns := newNoticeRig(t)
		r.run()
		const carol = "U0CAROL"
		ask := r.create(interaction.AskInput{Request: twoQuestions(), Responders: []string{alice},
			Timeout: interaction.Duration(2 * time.Hour),
			Escalation: []interaction.EscalationStep{
				{After: interaction.Duration(30 * time.Minute), Responders: []string{bob}},
				{After: interaction.Duration(time.Hour), Responders: []string{carol}, Notify: interaction.NotifyDM},
			}})
		time.Sleep(30*time.Minute - time.Second)
		synctest.Wait()
		if _, err := r.svc.Submit(context.Background(), click(ask, bob), map[int][]int{0: {0}, 1: {0}}); !errors.Is(err, ErrRefused) {
			t.Fatalf("bob before the step: %v, want ErrRefused", err)
		}
		if n := len(ns.all()); n != 0 {
			t.Fatalf("%d notices before the first step", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		rec, _ := r.st.Get(context.Background(), ask.ID)
		if rec.Escalation[0].FiredAt == nil || rec.Escalation[1].FiredAt != nil || !slices.Equal(rec.Added, []string{bob}) {
			t.Fatalf("after step 0: fired %v %v added %v", rec.Escalation[0].FiredAt, rec.Escalation[1].FiredAt, rec.Added)
		}
		if ns.count("step-0") != 1 || !rec.Steps[0].Sent {
			t.Fatalf("step 0 notices %d sent %v", ns.count("step-0"), rec.Steps[0].Sent)
		}
		if u, ok := r.surf.lastUpdate(ask.ID); !ok || !slices.Contains(u.Added, bob) {
			t.Fatal("the message was not re-rendered with the added person")
		}
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		if ns.count("step-1") != 1 {
			t.Fatalf("step 1: %d notices", ns.count("step-1"))
		}
		if n := ns.all()[1]; !n.DM || n.Step != 1 || !slices.Equal(n.People, []string{carol}) || n.Retry {
			t.Fatalf("step 1's notice: %+v", n)
		}
		// Bob, added by step 0, answers: accepted (the ask's message
		// moved on a revision since: his picks are judged on it).
		a := click(ask, bob)
		rec, _ = r.st.Get(context.Background(), ask.ID)
		a.Rev = rec.Rev
		out, err := r.svc.Submit(context.Background(), a, map[int][]int{0: {0}, 1: {0}})
		if err != nil || out.Status != interaction.StatusAnswered || out.AnsweredBy.ID != bob {
			t.Fatalf("bob after the step: %v %s", err, out.Status)
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if n := len(ns.all()); n != 2 {
			t.Fatalf("%d notices in all, want 2", n)
		}
		wantReachKinds(t, r.st, ask.ID, map[string]int{"thread": 2, "dm": 1}, store.EventEscalated, store.EventEscalated, store.EventResponse, store.EventEnded)
	})
}

// A step whose notice fails is fired once (its people added once) and its
// notice retried until it is out, marked as a retry so that the surface
// looks for an earlier post first.
func TestEscalationNoticeRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, ns := newNoticeRig(t)
		ns.fail = 2
		r.run()
		ask := r.create(interaction.AskInput{Request: twoQuestions(), Responders: []string{alice},
			Escalation: []interaction.EscalationStep{{After: interaction.Duration(time.Minute), Responders: []string{bob, "S0OPS"}}}})
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		got := ns.all()
		if len(got) != 1 || !got[0].Retry {
			t.Fatalf("notices %+v, want one, a retry", got)
		}
		rec, _ := r.st.Get(context.Background(), ask.ID)
		if !slices.Equal(rec.Added, []string{bob, "S0OPS"}) || rec.Steps[0].Attempts != 3 || !rec.Steps[0].Sent || !rec.WakeAt.IsZero() {
			t.Fatalf("added %v steps %+v wake %v", rec.Added, rec.Steps, rec.WakeAt)
		}
	})
}

// Steps fire once across replicas sharing a store, whichever creates the
// ask; a replica that dies leaves its steps to the other.
func TestEscalationFiresOnceAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSurface()
		ns := &noticeSurface{surface: base}
		r := newReplicas(t, ns, ns)
		r.surf = base
		stop0 := r.run(0)
		r.run(1)
		var ids []string
		for i := range 10 {
			ask, err := r.svcs[i%2].Create(context.Background(), interaction.AskInput{Request: twoQuestions(), Responders: []string{alice},
				Escalation: []interaction.EscalationStep{
					{After: interaction.Duration(10 * time.Minute), Responders: []string{bob}},
					{After: interaction.Duration(20 * time.Minute), Responders: []string{"U0CAROL"}},
				}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ask.ID)
		}
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		stop0()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := len(ns.all()); n != 20 {
			t.Fatalf("%d notices, want 20", n)
		}
		for _, id := range ids {
			rec := r.get(id)
			if rec.Escalation[0].FiredAt == nil || rec.Escalation[1].FiredAt == nil || len(rec.Added) != 2 {
				t.Fatalf("%s: %+v added %v", id, rec.Escalation, rec.Added)
			}
		}
	})
}

// A person who may answer hands the ask off: the one handed to may then
// answer, the one who handed off still may, the hand-off is in the
// resource and the person is told.
func TestHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, ns := newNoticeRig(t)
		r.run()
		ask := r.create(interaction.AskInput{Request: twoQuestions(), Responders: []string{alice}, Notify: interaction.NotifyDM})
		synctest.Wait() // alice's DM copy is posted (notified, dm)
		if _, err := r.svc.Check(context.Background(), click(ask, bob)); !errors.Is(err, ErrRefused) {
			t.Fatalf("bob before the hand-off: %v", err)
		}
		if _, err := r.svc.HandOff(context.Background(), click(ask, bob), interaction.User{ID: bob}); !errors.Is(err, ErrRefused) {
			t.Fatalf("bob handing off an ask he may not answer: %v", err)
		}
		if _, err := r.svc.HandOff(context.Background(), click(ask, alice), interaction.User{ID: alice}); !errors.Is(err, ErrNoHandoff) {
			t.Fatalf("a hand-off to oneself: %v", err)
		}
		rec, err := r.svc.HandOff(context.Background(), click(ask, alice), interaction.User{ID: bob, Name: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Handoffs) != 1 || rec.Handoffs[0].From.ID != alice || rec.Handoffs[0].To.ID != bob || !slices.Equal(rec.Added, []string{bob}) {
			t.Fatalf("handoffs %+v added %v", rec.Handoffs, rec.Added)
		}
		synctest.Wait()
		if got := ns.all(); len(got) != 1 || got[0].To.ID != bob || !got[0].DM || got[0].Step != -1 {
			t.Fatalf("notices %+v", got)
		}
		wantReachKinds(t, r.st, ask.ID, map[string]int{"thread": 1, "dm": 2}, store.EventHandedOff)
		for _, who := range []string{alice, bob} {
			if _, err := r.svc.Check(context.Background(), click(ask, who)); err != nil {
				t.Fatalf("%s after the hand-off: %v", who, err)
			}
		}
		open := r.create(interaction.AskInput{Request: twoQuestions()})
		if _, err := r.svc.HandOff(context.Background(), click(open, alice), interaction.User{ID: bob}); !errors.Is(err, ErrNoHandoff) {
			t.Fatalf("hand-off of an ask anyone may answer: %v", err)
		}
	})
}

// A step with notify "dm" and a channel adds, when it fires and only
// then, a DM copy per person (group members included) and a copy in the
// channel; a hand-off of an ask with notify "dm" adds a DM copy for the
// person handed to.
func TestEscalationAndHandoffAddCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newNoticeRig(t)
		r.surf.groups["S0OPS"] = []string{"U0OPS1", "U0OPS2"}
		r.run()
		ask := r.create(interaction.AskInput{Request: twoQuestions(), Responders: []string{alice}, Notify: interaction.NotifyDM,
			Escalation: []interaction.EscalationStep{{After: interaction.Duration(10 * time.Minute), Responders: []string{bob, "S0OPS"},
				Channel: "C0OPS", Notify: interaction.NotifyDM}}})
		copies := func() []Copy {
			rec, _ := r.st.Get(context.Background(), ask.ID)
			var out []Copy
			for _, c := range rec.Copies {
				out = append(out, Copy{For: c.For, In: c.In})
			}
			return out
		}
		time.Sleep(10*time.Minute - time.Second)
		synctest.Wait()
		if got := copies(); len(got) != 1 || got[0].For != alice {
			t.Fatalf("copies before the step: %+v (want alice's DM only)", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		want := []Copy{{For: alice}, {For: bob}, {For: "U0OPS1"}, {For: "U0OPS2"}, {In: "C0OPS"}}
		if got := copies(); !slices.Equal(got, want) {
			t.Fatalf("copies after the step: %+v, want %+v", got, want)
		}
		rec, err := r.svc.HandOff(context.Background(), click(ask, alice), interaction.User{ID: "U0CAROL"})
		if err != nil {
			t.Fatal(err)
		}
		if last := rec.Copies[len(rec.Copies)-1]; last.For != "U0CAROL" {
			t.Fatalf("copies after the hand-off: %+v", rec.Copies)
		}
	})
}

// On a surface that marks its replies, a reminder whose post fails (or
// whose process died after counting it) is posted later, once, as a
// retry (the surface looks for it first); the next reminders follow.
func TestReminderPostedExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, ns := newNoticeRig(t)
		ns.fail = 1
		r.run()
		ask := r.create(interaction.AskInput{Request: twoQuestions(), Responders: []string{alice},
			RemindAfter: interaction.Duration(5 * time.Minute), RemindEvery: interaction.Duration(10 * time.Minute)})
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		if n := ns.count("remind-1"); n != 0 {
			t.Fatalf("%d posts of a reminder whose post failed", n)
		}
		time.Sleep(time.Minute) // the claim (45 s) runs out: the duty posts it
		synctest.Wait()
		if got := ns.all(); len(got) != 1 || got[0].Key != "remind-1" || !got[0].Retry || got[0].Reminder != 1 {
			t.Fatalf("notices %+v", got)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if ns.count("remind-1") != 1 || ns.count("remind-2") != 1 {
			t.Fatalf("notices %+v", ns.all())
		}
		rec, _ := r.st.Get(context.Background(), ask.ID)
		if rec.Reminders != 2 || rec.RemindSend != nil {
			t.Fatalf("reminders %d, owed %+v", rec.Reminders, rec.RemindSend)
		}
		if n := r.surf.count(&r.surf.reminders, ask.ID); n != 0 {
			t.Fatalf("%d reminders through Remind on a surface that marks its replies", n)
		}
	})
}
