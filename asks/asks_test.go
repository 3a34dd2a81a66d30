package asks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	chanID = "C0TEST"
	alice  = "U0ALICE"
	bob    = "U0BOB"
	team   = "T0TEAM"
)

// surface is an in-memory Surface: it records what the lifecycle asked of
// it.
type surface struct {
	mu        sync.Mutex
	n         int
	posts     []Record
	updates   []Record
	reminders []Record
	found     map[string]string   // FindPosted's answer per ask id
	groups    map[string][]string // members per group
	postErr   error
	updateErr error // every Update's answer (after it is recorded)
	// copies: posts and updates of copies, the revision and status each
	// copy (by ref) shows, FindCopy's answer per ask id/target.
	copyPosts, copyUpdates []Record
	copyShows              map[string]int
	copyStatus             map[string]interaction.Status
	foundCopy              map[string]string
	copyErr                error
}

func newSurface() *surface {
	return &surface{found: map[string]string{}, groups: map[string][]string{},
		copyShows: map[string]int{}, copyStatus: map[string]interaction.Status{}, foundCopy: map[string]string{}}
}

func (f *surface) Home() (string, string) { return team, "A0APP" }

func (f *surface) Post(_ context.Context, rec Record) (Posted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.postErr != nil {
		return Posted{}, f.postErr
	}
	f.n++
	f.posts = append(f.posts, store.Clone(rec))
	return placed(mainChannel(rec), fmt.Sprintf("1700000000.%06d", f.n)), nil
}

// MainRef implements Referrer, as the Slack adapter does: records stored
// without Ref (posted before references were kept) are acted on by their
// channel/ts.
func (f *surface) MainRef(rec Record) string { return rec.Channel + "/" + rec.TS }

// mainChannel is where the test surface posts rec's main message: its
// channel, or the DM with its person.
func mainChannel(rec Record) string {
	if rec.Channel == "" && rec.User != "" {
		return "D" + rec.User[1:]
	}
	return rec.Channel
}

// placed is a view of the test surface at channel/ts, with its reference.
func placed(channel, ts string) Posted {
	return Posted{Channel: channel, TS: ts, Ref: channel + "/" + ts}
}

func (f *surface) Update(_ context.Context, rec Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, store.Clone(rec))
	return f.updateErr
}

func (f *surface) Remind(_ context.Context, rec Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reminders = append(f.reminders, store.Clone(rec))
	return nil
}

func (f *surface) FindPosted(_ context.Context, rec Record) (Posted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ts := f.found[rec.ID]; ts != "" {
		return placed(mainChannel(rec), ts), nil
	}
	return Posted{}, nil
}

func (f *surface) PostCopy(_ context.Context, rec Record, c Copy) (Posted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.copyErr != nil {
		return Posted{}, f.copyErr
	}
	f.n++
	f.copyPosts = append(f.copyPosts, store.Clone(rec))
	at := Posted{Channel: "D" + c.For + c.In, TS: fmt.Sprintf("1700000000.%06d", f.n)}
	at.Ref = at.Channel + "/" + at.TS
	f.copyShows[at.Ref] = rec.Rev
	return at, nil
}

func (f *surface) UpdateCopy(_ context.Context, rec Record, c Copy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.copyUpdates = append(f.copyUpdates, store.Clone(rec))
	f.copyShows[c.Ref] = rec.Rev
	f.copyStatus[c.Ref] = rec.Status
	return nil
}

func (f *surface) FindCopy(_ context.Context, rec Record, c Copy) (Posted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Posted{Ref: f.foundCopy[rec.ID+"/"+c.For+c.In]}, nil
}

func (f *surface) InGroup(_ context.Context, _, group, user string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.groups[group], user), nil
}

// IsGroup: the test surface's groups are named as Slack's user groups
// are (S…), so that the tests read like Slack's asks.
func (f *surface) IsGroup(id string) bool { return strings.HasPrefix(id, "S") }

func (f *surface) Members(_ context.Context, _, group string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.groups[group]
	if !ok {
		return nil, interaction.Errorf(interaction.SlackError, "no_such_subteam")
	}
	return slices.Clone(m), nil
}

// lastUpdate returns the newest rendering of ask id, if any.
func (f *surface) lastUpdate(id string) (Record, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.updates) - 1; i >= 0; i-- {
		if f.updates[i].ID == id {
			return f.updates[i], true
		}
	}
	return Record{}, false
}

func (f *surface) count(of *[]Record, id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range *of {
		if r.ID == id {
			n++
		}
	}
	return n
}

type rig struct {
	t     *testing.T
	st    store.Store
	surf  *surface
	svc   *Service
	ended atomic.Int64
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t, st: memory.New(), surf: newSurface()}
	svc, err := New(Config{Store: r.st, Surface: r.surf, DefaultChannel: chanID, Logger: zerolog.Nop(),
		OnEnd: func(interaction.Ask) { r.ended.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	return r
}

// startRecovered makes a Service of cfg and runs its background work
// until the test ends; it returns once recovery is done.
func startRecovered(t *testing.T, cfg Config) *Service {
	t.Helper()
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	<-svc.recovered
	return svc
}

// run runs the service's background work until the test ends.
func (r *rig) run() {
	if err := r.svc.Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = r.svc.Close() })
	<-r.svc.recovered
}

func yesNo(id string) interaction.Question {
	return interaction.Question{ID: id, Question: "Go?", Options: []interaction.Option{{Label: "yes"}, {Label: "no"}}}
}

func twoQuestions() interaction.Request {
	return interaction.Request{Questions: []interaction.Question{yesNo("a"), yesNo("b")}}
}

func (r *rig) create(in interaction.AskInput) interaction.Ask {
	r.t.Helper()
	ask, err := r.svc.Create(context.Background(), in)
	if err != nil {
		r.t.Fatal(err)
	}
	return ask
}

// click is alice acting on the message of ask as it was posted.
func click(ask interaction.Ask, who string) Act {
	return Act{AskID: ask.ID, By: interaction.User{ID: who, Name: who}, Workspace: team, App: "A0APP",
		Ref: ask.Channel + "/" + ask.TS, Rev: 1}
}

// checking is a surface with rules of its own (Checker): it refuses a
// channel not named C…, and notes what it was asked about.
type checking struct {
	*surface
	asked []interaction.AskInput
}

func (c *checking) CheckAsk(in interaction.AskInput) error {
	c.asked = append(c.asked, in)
	if in.Channel != "" && !strings.HasPrefix(in.Channel, "C") {
		return interaction.Errorf(interaction.InvalidQuestion, "channel %q: not ours", in.Channel)
	}
	return nil
}

// TestCreateChecks: Create refuses what interaction.ValidateInput refuses
// without asking the surface, then what the surface's Checker refuses, as
// it was given (before defaults), and posts neither; CheckAsk answers as
// Create does. The lifecycle itself reads no ids: a surface without a
// Checker takes any.
func TestCreateChecks(t *testing.T) {
	r := newRig(t)
	surf := &checking{surface: r.surf}
	svc, err := New(Config{Store: r.st, Surface: surf, DefaultChannel: "#default", Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]interaction.AskInput{
		"key":     {Request: twoQuestions(), IdempotencyKey: string(make([]byte, 201))},
		"channel": {Request: twoQuestions(), Channel: "#general"},
	} {
		t.Run(name, func(t *testing.T) {
			want := svc.CheckAsk(in)
			if interaction.ErrorCode(want) != interaction.InvalidQuestion {
				t.Fatalf("CheckAsk: %v", want)
			}
			if _, err := svc.Create(context.Background(), in); err == nil || !strings.HasSuffix(err.Error(), want.Error()) {
				t.Fatalf("Create: %v, want %v", err, want)
			}
		})
	}
	if len(surf.asked) != 2 || surf.asked[0].Channel != "#general" || surf.asked[1].Channel != "#general" {
		t.Fatalf("the surface was asked about %+v, want the #general ask twice (CheckAsk, Create) and never the bad key", surf.asked)
	}
	if _, err := r.svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions(), Channel: "#general", Responders: []string{"alice"}}); err != nil {
		t.Fatalf("a surface without a Checker: %v", err)
	}
	t.Run("no channel", func(t *testing.T) {
		svc, err := New(Config{Store: r.st, Surface: r.surf, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions()}); interaction.ErrorCode(err) != interaction.InvalidQuestion {
			t.Fatalf("err = %v", err)
		}
	})
	if n := len(r.surf.posts); n != 1 {
		t.Fatalf("%d messages posted, want the one without a Checker", n)
	}
}

func TestCreateIdempotentAndDropsUnposted(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	in := interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "k"}
	a, created, err := r.svc.CreateIdempotent(ctx, in)
	if err != nil || !created || a.TS == "" || a.Channel != chanID {
		t.Fatalf("first create: %+v %v %v", a, created, err)
	}
	b, created, err := r.svc.CreateIdempotent(ctx, in)
	if err != nil || created || b.ID != a.ID || len(r.surf.posts) != 1 {
		t.Fatalf("second create: %+v %v %v, %d posts", b, created, err, len(r.surf.posts))
	}
	// A refused post leaves nothing behind, so a retry posts afresh.
	r.surf.postErr = interaction.Errorf(interaction.SlackError, "channel_not_found")
	if _, err := r.svc.Create(ctx, interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "k2"}); interaction.ErrorCode(err) != interaction.SlackError {
		t.Fatalf("err = %v", err)
	}
	r.surf.postErr = nil
	if _, created, err := r.svc.CreateIdempotent(ctx, interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "k2"}); err != nil || !created {
		t.Fatalf("retry after a refused post: created %v, %v", created, err)
	}
	// A DM ask is posted in the conversation the surface opened.
	dm := r.create(interaction.AskInput{Request: twoQuestions(), User: alice})
	if dm.Channel != "D0ALICE" {
		t.Fatalf("DM ask posted in %q", dm.Channel)
	}
}

// Progress is stored with each act, and the end comes exactly once however
// many people press Submit or Cancel at the same moment: one wins, the
// others get ErrEnded with the record as it ended; the waiters, OnEnd and
// the message update see one end.
func TestProgressThenExactlyOnceEnd(t *testing.T) {
	r := newRig(t)
	r.run()
	ctx := context.Background()
	ask := r.create(interaction.AskInput{Request: twoQuestions()})
	rec, err := r.svc.Select(ctx, click(ask, alice), 0, []int{1})
	if err != nil || fmt.Sprint(rec.Progress[0].Selected) != "[no]" || rec.Rev != 1 {
		t.Fatalf("select: %+v %v", rec.Progress, err)
	}
	rec, err = r.svc.Skip(ctx, click(ask, alice), 1)
	if err != nil || !rec.Progress[1].Skipped || rec.Rev != 2 {
		t.Fatalf("skip: %+v rev %d %v", rec.Progress, rec.Rev, err)
	}
	var notified atomic.Int64
	defer r.svc.Notify(ask.ID, func(interaction.Ask) { notified.Add(1) })()
	waited := make(chan interaction.Ask, 1)
	go func() {
		a, _ := r.svc.Wait(ctx, ask.ID)
		waited <- a
	}()
	var wins, lost atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			act := click(ask, alice)
			act.Rev = 2
			var err error
			var rec Record
			if i%2 == 0 {
				rec, err = r.svc.Submit(ctx, act, map[int][]int{0: {0}})
			} else {
				rec, err = r.svc.Cancel(ctx, act)
			}
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ErrEnded) && rec.Status.Ended():
				lost.Add(1)
			default:
				t.Errorf("act: %v (status %s)", err, rec.Status)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || lost.Load() != 19 {
		t.Fatalf("%d ends, %d refused", wins.Load(), lost.Load())
	}
	got := <-waited
	if !got.Status.Ended() || notified.Load() != 1 || r.ended.Load() != 1 {
		t.Fatalf("waiter got %s; notified %d, OnEnd %d", got.Status, notified.Load(), r.ended.Load())
	}
	c := r.svc.Counters()
	if c.Answered+c.Cancelled != 1 {
		t.Fatalf("counters %+v", c)
	}
	if got.Status == interaction.StatusAnswered {
		// The Submit's picks (rendered at rev 2) replace the stored select;
		// the skip stays.
		if fmt.Sprint(got.Answer.Answers[0].Selected) != "[yes]" || len(got.Answer.Answers[1].Selected) != 0 {
			t.Fatalf("answer %+v", got.Answer)
		}
	}
	waitFor(t, "the message shows the end", func() bool {
		u, ok := r.surf.lastUpdate(ask.ID)
		return ok && u.Status.Ended()
	})
	if cur, _ := r.st.Get(ctx, ask.ID); !cur.Synced {
		waitFor(t, "the record marked synced", func() bool { cur, _ := r.st.Get(ctx, ask.ID); return cur.Synced })
	}
}

// The person acts refuse what does not belong to the ask or its
// responders, and say so with the record they judged.
func TestActRefusals(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.surf.groups["S0TEAM"] = []string{bob}
	ask := r.create(interaction.AskInput{Request: twoQuestions(), Responders: []string{alice, "S0TEAM"}})
	for name, c := range map[string]struct {
		act  func(Act) Act
		want error
	}{
		"other workspace": {func(a Act) Act { a.Workspace = "T0EVIL"; return a }, ErrForeign},
		"other app":       {func(a Act) Act { a.App = "A0EVIL"; return a }, ErrForeign},
		"other message":   {func(a Act) Act { a.Ref = chanID + "/1.000001"; return a }, ErrForeign},
		"other channel":   {func(a Act) Act { a.Ref = "C0OTHER/" + ask.TS; return a }, ErrForeign},
		"no view":         {func(a Act) Act { a.Ref = ""; return a }, ErrForeign},
		"no user":         {func(a Act) Act { a.By.ID = ""; return a }, ErrForeign},
		"not a responder": {func(a Act) Act { a.By.ID = "U0EVE"; return a }, ErrRefused},
		"no question":     {func(a Act) Act { return a }, ErrBadChoice},
	} {
		t.Run(name, func(t *testing.T) {
			q := 0
			if name == "no question" {
				q = 7
			}
			rec, err := r.svc.Skip(ctx, c.act(click(ask, alice)), q)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if c.want == ErrRefused && len(rec.Responders) != 2 {
				t.Fatalf("refusal without the record: %+v", rec)
			}
		})
	}
	if rec, _ := r.st.Get(ctx, ask.ID); rec.Progress[0].Touched() || rec.Status.Ended() {
		t.Fatalf("a refused act changed the ask: %+v", rec)
	}
	// A member of a responder group may answer; a form act needs no message.
	form := click(ask, bob)
	form.Form, form.Ref = true, ""
	if _, err := r.svc.Other(ctx, form, 1, "maybe"); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]int{"out of range": {2}, "negative": {-1}, "two for single-select": {0, 1}} {
		if _, err := r.svc.Select(ctx, click(ask, alice), 0, opts); !errors.Is(err, ErrBadChoice) {
			t.Fatalf("%s: err = %v", name, err)
		}
	}
	if _, err := r.svc.Withdraw(ctx, ask.ID); err != nil {
		t.Fatal(err)
	}
	rec, err := r.svc.Select(ctx, click(ask, alice), 0, []int{0})
	if !errors.Is(err, ErrEnded) || rec.Status != interaction.StatusAborted {
		t.Fatalf("act on an ended ask: %s %v", rec.Status, err)
	}
	if _, err := r.svc.Check(ctx, click(ask, alice)); !errors.Is(err, ErrEnded) {
		t.Fatalf("check on an ended ask: %v", err)
	}
	if _, err := r.svc.Skip(ctx, Act{AskID: "anosuchask", By: interaction.User{ID: alice}}, 0); interaction.ErrorCode(err) != interaction.NotFound {
		t.Fatalf("unknown ask: %v", err)
	}
}

// A select on a one-question ask answers it; an empty select there
// changes nothing.
func TestOneTapSelectAnswers(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ask := r.create(interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("go")}}})
	if rec, err := r.svc.Select(ctx, click(ask, alice), 0, nil); err != nil || rec.Status.Ended() {
		t.Fatalf("empty select: %s %v", rec.Status, err)
	}
	rec, err := r.svc.Select(ctx, click(ask, alice), 0, []int{1})
	if err != nil || rec.Status != interaction.StatusAnswered || rec.Answer.Answers[0].Selected[0] != "no" || rec.AnsweredBy.ID != alice {
		t.Fatalf("one tap: %+v %v", rec, err)
	}
}

// A click that beats the store (the message is shown before the post has
// returned its ts) waits for the ts rather than being refused.
func TestActWaitsForTheTS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ctx := context.Background()
		rec := Record{Ask: interaction.Ask{ID: "aposting", Status: interaction.StatusPending, Questions: twoQuestions().Questions,
			Channel: chanID, CreatedAt: time.Now()}, Rev: 1, Progress: make([]interaction.Progress, 2)}
		if _, _, err := r.st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		act := click(rec.Ask, alice)
		at := placed(chanID, "1700000000.000001")
		act.Ref = at.Ref
		done := make(chan error, 1)
		go func() {
			_, err := r.svc.Skip(ctx, act, 0)
			done <- err
		}()
		synctest.Wait() // the act found no ts and waits
		select {
		case err := <-done:
			t.Fatalf("the act did not wait for the ts: %v", err)
		default:
		}
		if _, err := r.st.Update(ctx, rec.ID, func(r *Record) error { setPosted(r, at); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// Deadlines and reminders fire at their stored times, once.
func TestExpireAndRemind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.run()
		ask := r.create(interaction.AskInput{Request: twoQuestions(), Responders: []string{alice},
			Timeout: interaction.Duration(10 * time.Minute), RemindAfter: interaction.Duration(5 * time.Minute)})
		time.Sleep(5*time.Minute - time.Second)
		synctest.Wait()
		if n := r.surf.count(&r.surf.reminders, ask.ID); n != 0 {
			t.Fatalf("reminder came early: %d", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := r.surf.count(&r.surf.reminders, ask.ID); n != 1 {
			t.Fatalf("%d reminders at the reminder time, want 1", n)
		}
		time.Sleep(5*time.Minute - 2*time.Second)
		synctest.Wait()
		if a, _ := r.svc.Get(context.Background(), ask.ID); a.Status != interaction.StatusPending {
			t.Fatalf("ended before its deadline: %s", a.Status)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		a, _ := r.svc.Get(context.Background(), ask.ID)
		if a.Status != interaction.StatusExpired || interaction.ErrorCode(a.Error) != interaction.AskTimeout {
			t.Fatalf("after the deadline: %s %v", a.Status, a.Error)
		}
		if u, ok := r.surf.lastUpdate(ask.ID); !ok || u.Status != interaction.StatusExpired {
			t.Fatal("the message does not show the expiry")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := r.surf.count(&r.surf.reminders, ask.ID); n != 1 {
			t.Fatalf("%d reminders, want 1", n)
		}
	})
}

// A restart picks up what the earlier process left: an ask stored but
// never posted is posted, one whose post landed before the crash is
// adopted (not posted twice), an overdue one expires, a pending one whose
// last change never reached the message is updated, and an ended one
// whose end never reached the message is updated.
func TestRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		ctx := context.Background()
		past := time.Now().Add(-time.Hour)
		deadline := time.Now().Add(-time.Minute)
		mk := func(id string, f func(*Record)) {
			rec := Record{Ask: interaction.Ask{ID: id, Status: interaction.StatusPending, Questions: twoQuestions().Questions,
				Channel: chanID, CreatedAt: past}, Rev: 1, Synced: true, Progress: make([]interaction.Progress, 2)}
			f(&rec)
			if _, _, err := r.st.Create(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		mk("aunposted", func(r *Record) { r.Synced = false })
		mk("aadopted", func(r *Record) { r.Synced = false })
		r.surf.found["aadopted"] = "1690000000.000001"
		mk("aoverdue", func(r *Record) { r.TS = "1690000000.000002"; r.ExpiresAt = &deadline })
		mk("astale", func(r *Record) { r.TS = "1690000000.000003"; r.Rev, r.Synced = 2, false })
		mk("aendedunsynced", func(r *Record) {
			r.TS, r.Status, r.EndedAt, r.Rev, r.Synced = "1690000000.000004", interaction.StatusCancelled, &past, 2, false
		})
		// Due already: the dispatcher may claim it before recovery
		// lists it, and holds it too.
		mk("aduestale", func(r *Record) {
			r.TS, r.Rev, r.Synced, r.WakeAt = "1690000000.000005", 2, false, deadline
		})
		r.run()
		synctest.Wait()
		get := func(id string) Record { rec, _ := r.st.Get(ctx, id); return rec }
		if n := r.surf.count(&r.surf.posts, "aunposted"); n != 1 || get("aunposted").TS == "" {
			t.Fatalf("unposted ask: %d posts, ts %q", n, get("aunposted").TS)
		}
		if n := r.surf.count(&r.surf.posts, "aadopted"); n != 0 || get("aadopted").TS != "1690000000.000001" {
			t.Fatalf("adopted ask: %d posts, ts %q", n, get("aadopted").TS)
		}
		if _, ok := r.surf.lastUpdate("aadopted"); !ok {
			t.Fatal("adopted ask not re-rendered")
		}
		if st := get("aoverdue").Status; st != interaction.StatusExpired {
			t.Fatalf("overdue ask %s", st)
		}
		// A message left unsynced may have had an update in flight from
		// the process before, which can land after this one's: it is
		// rendered now, held unsynced, and rendered again once postGrace
		// has passed. One synced at start is not held.
		for _, id := range []string{"astale", "aendedunsynced", "aduestale"} {
			if _, ok := r.surf.lastUpdate(id); !ok || get(id).Synced {
				t.Fatalf("%s: rendered %v, synced %v during the hold", id, ok, get(id).Synced)
			}
		}
		if _, ok := r.surf.lastUpdate("aoverdue"); !ok || !get("aoverdue").Synced {
			t.Fatalf("aoverdue: message not brought in step")
		}
		before := map[string]int{}
		for _, id := range []string{"astale", "aendedunsynced", "aduestale"} {
			before[id] = r.surf.count(&r.surf.updates, id)
		}
		time.Sleep(postGrace - time.Second)
		synctest.Wait()
		for id, n := range before {
			if m := r.surf.count(&r.surf.updates, id); m != n || get(id).Synced {
				t.Fatalf("%s: %d renders, synced %v before the hold ended (%d at start)", id, m, get(id).Synced, n)
			}
		}
		time.Sleep(time.Second + duePoll)
		synctest.Wait()
		for id, n := range before {
			if m := r.surf.count(&r.surf.updates, id); m != n+1 || !get(id).Synced {
				t.Fatalf("%s: %d renders, synced %v after the hold (%d at start)", id, m, get(id).Synced, n)
			}
		}
	})
}

// Each change is rendered from the record it stored: the message update
// that follows a click reads nothing from the store.
func TestSyncRendersTheStoredChange(t *testing.T) {
	r := newRig(t)
	cs := &countingStore{Store: r.st}
	svc, err := New(Config{Store: cs, Surface: r.surf, DefaultChannel: chanID, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	r.run()
	ask := r.create(interaction.AskInput{Request: twoQuestions()})
	if _, err := svc.Other(context.Background(), click(ask, alice), 0, "later"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message shows the text", func() bool {
		u, ok := r.surf.lastUpdate(ask.ID)
		return ok && u.Progress[0].Custom == "later"
	})
	waitFor(t, "synced", func() bool { rec, _ := r.st.Get(context.Background(), ask.ID); return rec.Synced })
	if n := cs.gets.Load(); n != 0 {
		t.Fatalf("%d store reads", n)
	}
}

// Provider: Ask posts, waits, and withdraws when the caller leaves.
func TestProviderAsk(t *testing.T) {
	r := newRig(t)
	r.run()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.svc.Ask(ctx, twoQuestions())
		errc <- err
	}()
	waitFor(t, "posted", func() bool { r.surf.mu.Lock(); defer r.surf.mu.Unlock(); return len(r.surf.posts) == 1 })
	cancel()
	if err := <-errc; interaction.ErrorCode(err) != interaction.AskAborted {
		t.Fatalf("err = %v", err)
	}
	if c := r.svc.Counters(); c.Aborted != 1 || c.Created != 1 || c.Posts != 1 {
		t.Fatalf("counters %+v", c)
	}
}

type countingStore struct {
	store.Store
	gets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, id string) (Record, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, id)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A Submit with nothing picked, skipped or typed on any question changes
// nothing: the ask stays pending (issue 16.8).
func TestSubmitWithNothingChosen(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ask := r.create(interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{
		yesNo("a"), {ID: "b", Question: "Why?"}}}})
	before, _ := r.st.Get(ctx, ask.ID)
	for name, picks := range map[string]map[int][]int{"no state": nil, "cleared select": {0: {}}} {
		rec, err := r.svc.Submit(ctx, click(ask, alice), picks)
		if !errors.Is(err, ErrNothingChosen) || rec.Status != interaction.StatusPending {
			t.Fatalf("%s: %s %v", name, rec.Status, err)
		}
	}
	if after, _ := r.st.Get(ctx, ask.ID); after.Version != before.Version {
		t.Fatal("a Submit with nothing chosen changed the record")
	}
	// One skip is a choice: Submit then answers.
	if _, err := r.svc.Skip(ctx, click(ask, alice), 1); err != nil {
		t.Fatal(err)
	}
	act := click(ask, alice)
	act.Rev = 2
	if rec, err := r.svc.Submit(ctx, act, nil); err != nil || rec.Status != interaction.StatusAnswered {
		t.Fatalf("after a skip: %s %v", rec.Status, err)
	}
}

// A Submit's option values that are not the question's are ignored, not
// answered as an empty selection: the stored pick stays; a Submit whose
// picks are all impossible, with nothing else chosen, is nothing chosen
// (issue 14.8).
func TestSubmitIgnoresImpossiblePicks(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ask := r.create(interaction.AskInput{Request: twoQuestions()})
	if _, err := r.svc.Submit(ctx, click(ask, alice), map[int][]int{0: {7}, 1: {-1, 99}}); !errors.Is(err, ErrNothingChosen) {
		t.Fatalf("all impossible: %v", err)
	}
	if _, err := r.svc.Select(ctx, click(ask, alice), 0, []int{1}); err != nil {
		t.Fatal(err)
	}
	rec, err := r.svc.Submit(ctx, click(ask, alice), map[int][]int{0: {7}, 1: {-1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustAnswer(rec); got != "[no] [yes]" {
		t.Fatalf("answer %s, want the stored pick kept and the possible one taken", got)
	}
}

func mustAnswer(rec Record) string {
	if rec.Answer == nil {
		return "<none>"
	}
	var parts []string
	for _, it := range rec.Answer.Answers {
		parts = append(parts, fmt.Sprint(it.Selected))
	}
	return fmt.Sprint(parts[0], " ", parts[1])
}

// staleList is a store whose Pending returns what it read before another
// replica ended the ask named end (and brought its message in step): the
// list recovery gets is older than the store by the time it renders it.
type staleList struct {
	store.Store
	end string
}

func (s staleList) Pending(ctx context.Context) ([]store.Record, error) {
	recs, err := s.Store.Pending(ctx)
	if err == nil {
		_, _ = s.Store.Update(ctx, s.end, func(r *store.Record) error {
			now := time.Now()
			r.Status, r.EndedAt, r.Rev, r.Synced = interaction.StatusCancelled, &now, r.Rev+1, true
			return nil
		})
	}
	return recs, err
}

// Recovery renders an unsynced record as it stands when it gets to it,
// not as its page listed it: another replica may have ended the ask (and
// drawn it ended) in between, and the listed pending record would draw it
// live again.
func TestRecoveryRendersTheRecordAsItStands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		ctx := context.Background()
		past := time.Now().Add(-time.Hour)
		rec := Record{Ask: interaction.Ask{ID: "alisted", Status: interaction.StatusPending, Questions: twoQuestions().Questions,
			Channel: chanID, TS: "1690000000.000001", CreatedAt: past}, Rev: 2, Synced: false, Progress: make([]interaction.Progress, 2)}
		if _, _, err := st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		surf := newSurface()
		startRecovered(t, Config{Store: staleList{Store: st, end: "alisted"}, Surface: surf, DefaultChannel: chanID, Logger: zerolog.Nop()})
		synctest.Wait()
		surf.mu.Lock()
		defer surf.mu.Unlock()
		for _, u := range surf.updates {
			if u.ID == "alisted" && u.Status == interaction.StatusPending {
				t.Fatalf("recovery drew the ask pending (rev %d) after another replica ended it", u.Rev)
			}
		}
	})
}
