package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// settings of a run, from the environment.
type settings struct {
	dur  time.Duration
	seed uint64
	// postgres: SLACKASK_CHAOS_STORE=postgres, three replicas on a schema
	// of their own on SLACKASK_TEST_DATABASE_URL's server.
	postgres bool
	// pgRestart: SLACKASK_CHAOS_PG_RESTART, a shell command that restarts
	// that server ("": the pg-restart fault is skipped).
	pgRestart string
}

// replicas is how many `slackask serve` share the database in the
// PostgreSQL mode.
const replicas = 3

func readSettings(t *testing.T) settings {
	t.Helper()
	d := os.Getenv("SLACKASK_CHAOS_DURATION")
	if os.Getenv("SLACKASK_CHAOS") != "1" && d == "" {
		t.Skip("the chaos suite runs only with SLACKASK_CHAOS=1 or SLACKASK_CHAOS_DURATION set")
	}
	s := settings{dur: 2 * time.Minute, seed: uint64(time.Now().UnixNano())}
	if d != "" {
		v, err := time.ParseDuration(d)
		if err != nil || v <= 0 {
			t.Fatalf("SLACKASK_CHAOS_DURATION=%q: want a positive Go duration such as 2m", d)
		}
		s.dur = v
	}
	switch v := os.Getenv("SLACKASK_CHAOS_STORE"); v {
	case "", "sqlite":
	case "postgres":
		s.postgres = true
		s.pgRestart = os.Getenv("SLACKASK_CHAOS_PG_RESTART")
	default:
		t.Fatalf("SLACKASK_CHAOS_STORE=%q: want sqlite (the default) or postgres", v)
	}
	if v := os.Getenv("SLACKASK_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SLACKASK_CHAOS_SEED=%q: want a whole number", v)
		}
		s.seed = n
	}
	return s
}

var people = []string{"U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"}

// The shapes of asks the run creates.
const (
	shapeOneTap = iota // one single-select question: a pick answers it
	shapeForm          // several questions (single, multi, free text) and Submit
	shapeTeam          // one single-select question, responses: 2: two people's taps answer it
)

// teamSize is the responses a team ask collects.
const teamSize = 2

// qModel is what the person believes they did on one question: the last
// acknowledged act, and whether a later act's outcome is unknown.
type qModel struct {
	p        interaction.Progress
	lastAck  string    // description of the last acknowledged act
	lastAt   time.Time // when it was acknowledged
	unsure   bool      // an act after lastAck was never acknowledged
	everActs int
}

// askModel is one ask as the caller and the person know it.
type askModel struct {
	mu      sync.Mutex
	id, ts  string
	key     string // idempotency key, "" for none
	agent   string // unique per logical request: finds orphans in the list
	in      interaction.AskInput
	shape   int
	person  string
	qs      []qModel
	end     interaction.Status // ending acknowledged by the fake ("" none)
	endAck  time.Time
	endWhat string
	endTry  interaction.Status // an ending attempted without an acknowledgment
	seen    []interaction.Ask  // ended states observed through the API
	leave   bool               // the person leaves it pending until the final check
	// team (shapeTeam): what each person's taps did, by user id (their
	// response replaces the one before); the person acts first, second
	// (another person) after.
	team    map[string]*qModel
	second  string
	timeout time.Duration // its deadline (PostgreSQL mode: the asks left pending), 0 for none
}

// run is one chaos run.
type run struct {
	t    *testing.T
	r    *rig
	set  settings
	stop time.Time

	acked     atomic.Int64 // interactive payloads acknowledged
	unacked   atomic.Int64 // payloads whose ack never came
	created   atomic.Int64
	postFails atomic.Int64
	killAck   atomic.Pointer[chan struct{}] // armed: kill right after the next ack
	killIdem  atomic.Pointer[chan struct{}] // armed: kill while the next keyed POST is in flight
	late      *proxyFault                   // the post answered after the client's timeout, once injected

	mu      sync.Mutex
	asks    []*askModel
	byKey   map[string][]string // idempotency key → ask ids returned for it
	noKey   []string            // agents of unkeyed POSTs whose answer was lost
	counts  map[string]int      // faults injected by kind
	queues  map[string]chan *askModel
	pending atomic.Int64
	summary string // the run's figures, once check has them

	cb            *callbacks      // the callback receiver (PostgreSQL mode)
	faultVs       []violation     // invariants found broken while a fault ran
	reminderKills map[string]bool // ask ts → its reminder's sender was killed before Slack saw it
	crossed       int             // replicas' updates that crossed an end (checkRenders)
}

func TestChaos(t *testing.T) {
	set := readSettings(t)
	t.Logf("chaos: seed %d, duration %v (replay with SLACKASK_CHAOS_SEED=%d SLACKASK_CHAOS_DURATION=%v)", set.seed, set.dur, set.seed, set.dur)
	var r *rig
	var cb *callbacks
	if set.postgres {
		pgURL := pgtest.URL(t) // a fresh schema; skips without SLACKASK_TEST_DATABASE_URL
		cb = newCallbacks(t)
		r = newRig(t, buildBinary(t), pgURL, replicas, set.seed,
			"SLACKASK_SOCKET_CONNECTIONS=2", "SLACKASK_CALLBACK_URL="+cb.url, "SLACKASK_CALLBACK_SECRET="+callbackSecret,
			"SLACKASK_CALLBACK_ALLOW_PRIVATE=1")
		if set.pgRestart == "" {
			t.Log("chaos: SLACKASK_CHAOS_PG_RESTART is not set: the pg-restart fault (PostgreSQL restarted) is skipped")
		}
	} else {
		r = newRig(t, buildBinary(t), "", 1, set.seed)
	}
	for _, p := range people {
		r.fake.AddUser(p, strings.ToLower(p[3:]))
	}
	r.fake.AddChannel(channel, "chaos")
	ru := &run{t: t, r: r, set: set, cb: cb, byKey: map[string][]string{}, counts: map[string]int{}, queues: map[string]chan *askModel{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos: seed %d (replay with SLACKASK_CHAOS_SEED=%d SLACKASK_CHAOS_DURATION=%v)", set.seed, set.seed, set.dur)
			logs := r.logs.String()
			path := filepath.Join(os.TempDir(), fmt.Sprintf("slackask-chaos-%d.log", set.seed))
			if err := os.WriteFile(path, []byte(logs), 0o600); err == nil {
				t.Logf("slackask serve logs of every child in %s; the last 16 KiB:\n%s", path, tail(logs, 16<<10))
			} else {
				t.Logf("slackask serve logs (last 64 KiB):\n%s", tail(logs, 64<<10))
			}
			if ru.summary != "" { // "" when the run failed before check
				t.Logf("chaos: %s", ru.summary)
			}
			for _, f := range r.reported() {
				t.Logf("chaos failure: %s", f)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), set.dur+3*time.Minute)
	defer cancel()
	if err := r.restart(ctx); err != nil {
		r.fatalf("first start: %v", err)
	}
	ru.stop = time.Now().Add(set.dur)
	var wg sync.WaitGroup
	for i, p := range people {
		q := make(chan *askModel, 64)
		ru.queues[p] = q
		wg.Go(func() { ru.person(ctx, p, q, rand.New(rand.NewPCG(set.seed, uint64(10+i)))) })
	}
	wg.Go(func() { ru.creator(ctx, rand.New(rand.NewPCG(set.seed, 1))) })
	ru.chaos(ctx, rand.New(rand.NewPCG(set.seed, 2)))
	wg.Wait()
	ru.check(ctx)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// fault is one kind of fault: drawn by weight once every kind came.
type fault struct {
	name   string
	weight int
	do     func()
}

// chaos injects a fault every few seconds until the run's end, then leaves
// a child running (every replica running).
func (ru *run) chaos(ctx context.Context, rng *rand.Rand) {
	r := ru.r
	faults := []fault{
		{"kill-random", 4, func() { r.kill("random") }},
		{"kill-after-ack", 4, func() { ru.armed(&ru.killAck, "after-ack") }},
		{"kill-post-applied", 2, func() { ru.proxyKill("chat.postMessage", "post-applied-unrecorded") }},
		{"kill-update-applied", 1, func() { ru.proxyKill("chat.update", "update-applied-unrecorded") }},
		{"kill-views-open-applied", 1, func() { ru.proxyKill("views.open", "views-open-applied") }},
		{"kill-idempotent-post", 2, func() { ru.armed(&ru.killIdem, "idempotent-post-in-flight") }},
		{"kill-startup", 2, func() { ru.startupKill(ctx, rng) }},
		{"kill-recovery-250", 1, func() { ru.recovery250(ctx) }},
		{"socket-cut", 2, func() { r.fake.Cut() }},
		// Storms come once a run (weight 0: only in the first pass): their
		// faults wait for the next connections, whichever process makes
		// them, and each young death lengthens slackask's backoff.
		{"socket-disconnect-storm", 0, func() {
			r.fake.FailNextSockets(3, slackfake.SocketFault{Action: slackfake.SocketDisconnect})
			r.fake.Disconnect("refresh_requested")
		}},
		{"socket-cut-storm", 0, func() {
			r.fake.FailNextSockets(3, slackfake.SocketFault{Action: slackfake.SocketCut})
			r.fake.Cut()
		}},
		{"api-5xx", 2, func() {
			m := []string{"chat.update", "chat.postMessage", "views.open", "chat.postEphemeral"}[rng.IntN(4)]
			r.fake.FailNext(m, 1+rng.IntN(3), slackfake.Failure{Status: 500 + rng.IntN(4)})
		}},
		{"api-update-outage", 1, func() {
			// More failures in a row than a fixed number of retries.
			r.fake.FailNext("chat.update", 8+rng.IntN(8), slackfake.Failure{Status: 500})
		}},
		{"api-ratelimit", 2, func() {
			m := []string{"chat.update", "chat.postMessage"}[rng.IntN(2)]
			r.fake.FailNext(m, 1+rng.IntN(2), slackfake.Failure{Status: 429, RetryAfter: time.Second})
		}},
		{"api-slow", 2, func() {
			m := []string{"chat.update", "chat.postMessage", "views.open"}[rng.IntN(3)]
			r.addFault(m, &proxyFault{kind: "slow", delay: time.Duration(500+rng.IntN(3000)) * time.Millisecond, left: 1 + rng.IntN(3)})
		}},
		{"api-applied-then-502", 1, func() {
			m := []string{"chat.update", "chat.postMessage"}[rng.IntN(2)]
			r.addFault(m, &proxyFault{kind: "fail", left: 1})
		}},
	}
	if ru.set.postgres {
		faults = append(faults, ru.pgFaults(ctx, rng)...)
	}
	var noKillUntil time.Time
	// Once a run, near its end, chat.update is down for 20 s: longer than a
	// few retries with backoff last. settle then checks that the messages
	// caught up.
	outage, late := false, false
	total := 0
	for _, f := range faults {
		total += f.weight
	}
	todo := rng.Perm(len(faults))
	for time.Now().Before(ru.stop) {
		pause := time.Duration(1500+rng.IntN(3000)) * time.Millisecond
		if ru.set.postgres && len(todo) > 0 {
			// Twice the kinds, some of them long: a two-minute run still
			// meets each before its end phase.
			pause = time.Duration(300+rng.IntN(700)) * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		if !late && ru.set.dur >= 60*time.Second && time.Until(ru.stop) < 35*time.Second {
			// Once a run, Slack applies a post but answers after the
			// client's 30 s timeout: the outcome is unknown to slackask,
			// which lives through it (no kill until the run ends).
			late = true
			noKillUntil = ru.stop
			ru.waitConnected(ctx)
			ru.count("api-post-answered-after-client-timeout")
			ru.late = &proxyFault{kind: "late", delay: 31 * time.Second, left: 1, fired: make(chan struct{})}
			r.addFault("chat.postMessage", ru.late)
			continue
		}
		if !outage && ru.set.dur >= 40*time.Second && time.Until(ru.stop) < 25*time.Second {
			outage = true
			ru.waitConnected(ctx)
			ru.count("api-update-outage-at-end")
			r.outage("chat.update", 20*time.Second)
			noKillUntil = ru.stop // no restart's resync hides an update given up
			continue
		}
		allowed := func(i int) bool {
			return !strings.HasPrefix(faults[i].name, "kill") || !time.Now().Before(noKillUntil)
		}
		pick := -1
		// Every kind of fault comes once, in a seeded order, before they
		// are drawn at random by weight.
		for j, i := range todo {
			if allowed(i) {
				pick = i
				todo = slices.Delete(todo, j, j+1)
				break
			}
		}
		if pick < 0 {
			n := rng.IntN(total)
			for i, f := range faults {
				if n -= f.weight; n < 0 {
					pick = i
					break
				}
			}
		}
		if allowed(pick) {
			ru.count(faults[pick].name)
			faults[pick].do()
		}
		if !r.running() {
			ru.restartOrFail(ctx)
		}
	}
	// Let the last faults settle on a healthy child.
	if !r.running() {
		ru.restartOrFail(ctx)
	}
}

// waitConnected waits up to 30 s for a live Socket Mode connection, so
// that the end phase's faults meet people who can act.
func (ru *run) waitConnected(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = ru.r.fake.WaitConnected(wctx, 1)
}

func (ru *run) count(name string) {
	ru.mu.Lock()
	ru.counts[name]++
	ru.mu.Unlock()
}

func (ru *run) restartOrFail(ctx context.Context) {
	if err := ru.r.restart(ctx); err != nil {
		ru.r.errorf("restart after a kill: %v", err)
	}
}

// armed arms a kill that another goroutine fires (after an ack, during a
// keyed POST) and waits up to 5 s for it; if it never fired the child is
// killed at a random instant instead.
func (ru *run) armed(p *atomic.Pointer[chan struct{}], point string) {
	ch := make(chan struct{})
	p.Store(&ch)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		if p.CompareAndSwap(&ch, nil) {
			ru.r.kill("random (" + point + " did not come)")
		} else {
			<-ch
		}
	}
}

// fire kills the child if p is armed.
func (ru *run) fire(p *atomic.Pointer[chan struct{}], point string) {
	ch := p.Swap(nil)
	if ch == nil {
		return
	}
	ru.r.kill(point)
	close(*ch)
}

// proxyKill kills the child once the fake has applied the next call of
// method, before the answer reaches the child (within 10 s, else at once).
func (ru *run) proxyKill(method, point string) {
	f := &proxyFault{kind: "kill", point: point, left: 1, fired: make(chan struct{})}
	ru.r.addFault(method, f)
	select {
	case <-f.fired:
	case <-time.After(10 * time.Second):
		ru.r.dropFault(method, f)
		ru.r.kill("random (" + point + " did not come)")
	}
}

// startupKill kills the child, then kills the next one during its start:
// before it is ready, or right after its first Socket Mode hello.
func (ru *run) startupKill(ctx context.Context, rng *rand.Rand) {
	r := ru.r
	s := r.slots[rng.IntN(len(r.slots))]
	r.killSlot(s, "random (before a start-up kill)")
	if rng.IntN(2) == 0 {
		r.start(s)
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		r.killSlot(s, "start-up")
		return
	}
	events, cancel := r.fake.Subscribe()
	defer cancel()
	c := r.start(s)
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Type == slackfake.EventConnected {
				// On replicas the hello may be another's (reconnecting).
				r.killSlot(s, "start-up after hello")
				return
			}
		case <-c.done:
			return
		case <-timeout:
			r.killSlot(s, "start-up (no hello)")
			return
		case <-ctx.Done():
			return
		}
	}
}

// recovery250 kills the child between a post being applied and its
// record, and while it is down posts 250 other messages to the channel,
// so that the orphaned post is no longer among the newest 200.
func (ru *run) recovery250(ctx context.Context) {
	f := &proxyFault{kind: "kill", point: "post-applied, then 250 messages", left: 1, fired: make(chan struct{})}
	ru.r.addFault("chat.postMessage", f)
	select {
	case <-f.fired:
	case <-time.After(10 * time.Second):
		ru.r.dropFault("chat.postMessage", f)
		ru.count("kill-recovery-250 (no post came)")
		return
	}
	for i := range 250 {
		if err := ru.noise(ctx, i); err != nil {
			ru.r.errorf("posting noise: %v", err)
			return
		}
	}
}

// noise posts a plain message to the channel straight to the fake.
func (ru *run) noise(ctx context.Context, i int) error {
	body := strings.NewReader(fmt.Sprintf("channel=%s&text=noise+%d", channel, i))
	req, _ := newFormRequest(ctx, ru.r.fake.APIURL()+"chat.postMessage", body)
	resp, err := ru.r.hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// creator keeps creating asks until the run's end.
func (ru *run) creator(ctx context.Context, rng *rand.Rand) {
	// Up to three POSTs at once: one held by a slow Slack does not stop
	// the others.
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for n := 0; time.Now().Before(ru.stop) && ctx.Err() == nil; n++ {
		if ru.pending.Load() >= 12 {
			time.Sleep(50 * time.Millisecond)
			n--
			continue
		}
		a := ru.newAsk(n, rng)
		crng := rand.New(rand.NewPCG(ru.set.seed, uint64(1000+n)))
		ru.pending.Add(1)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if ru.create(ctx, a, crng) {
				ru.queues[a.person] <- a
			} else {
				ru.pending.Add(-1)
			}
		})
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
	}
	wg.Wait()
	for _, q := range ru.queues {
		close(q)
	}
}

var words = []string{"Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf"}

func (ru *run) newAsk(n int, rng *rand.Rand) *askModel {
	a := &askModel{agent: fmt.Sprintf("chaos-%d", n), person: people[rng.IntN(len(people))]}
	opts := func(k int) []interaction.Option {
		var o []interaction.Option
		for _, w := range words[:k] {
			o = append(o, interaction.Option{Label: w})
		}
		return o
	}
	switch x := rng.IntN(6); {
	case x < 2:
		a.shape = shapeOneTap
		a.in.Questions = []interaction.Question{{ID: "pick", Question: fmt.Sprintf("Ask %d: pick one", n), Options: opts(2 + rng.IntN(3))}}
	case x < 3:
		a.shape = shapeTeam
		a.in.Questions = []interaction.Question{{ID: "pick", Question: fmt.Sprintf("Ask %d: each of two picks one", n), Options: opts(2 + rng.IntN(3))}}
		a.in.Responses = interaction.ResponseCount{N: teamSize}
		a.second = people[(slices.Index(people, a.person)+1+rng.IntN(len(people)-1))%len(people)]
		a.team = map[string]*qModel{}
	default:
		a.shape = shapeForm
		a.in.Questions = []interaction.Question{
			{ID: "one", Question: fmt.Sprintf("Ask %d: which one?", n), Options: opts(3)},
			{ID: "many", Question: "Which ones?", Options: opts(4), MultiSelect: true},
		}
		if rng.IntN(2) == 0 {
			a.in.Questions = append(a.in.Questions, interaction.Question{ID: "why", Question: "Why?"})
		}
	}
	a.in.Agent = &interaction.Agent{ID: a.agent, Name: "Chaos"}
	if rng.IntN(2) == 0 {
		a.key = fmt.Sprintf("key-%d-%d", ru.set.seed, n)
		a.in.IdempotencyKey = a.key
	}
	a.qs = make([]qModel, len(a.in.Questions))
	a.leave = rng.IntN(10) == 0
	if ru.set.postgres {
		ru.addTimers(a, rng)
	}
	return a
}

// create posts a; a keyed POST is retried (same body) across kills until
// it gets an answer.
func (ru *run) create(ctx context.Context, a *askModel, rng *rand.Rand) bool {
	for attempt := 0; ; attempt++ {
		if a.key != "" {
			if ch := ru.killIdem.Swap(nil); ch != nil {
				d := time.Duration(rng.IntN(30)) * time.Millisecond
				go func() {
					time.Sleep(d)
					ru.r.kill("idempotent-post-in-flight")
					close(*ch)
				}()
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		got, code, err := ru.r.postAsk(cctx, a.in)
		cancel()
		if err == nil && (code == 200 || code == 201) {
			if got.ID == "" {
				ru.r.errorf("POST %s: %d without an id: %+v", a.agent, code, got)
				return false
			}
			// No ts: the post's outcome is unknown to slackask, which
			// keeps the ask and finds out; the person waits for it.
			a.id, a.ts = got.ID, got.TS
			ru.mu.Lock()
			ru.asks = append(ru.asks, a)
			if a.key != "" {
				ru.byKey[a.key] = append(ru.byKey[a.key], a.id)
			}
			ru.mu.Unlock()
			ru.created.Add(1)
			return true
		}
		ru.postFails.Add(1)
		if a.key == "" || ctx.Err() != nil || attempt > 200 {
			ru.mu.Lock()
			ru.noKey = append(ru.noKey, a.agent)
			ru.mu.Unlock()
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// person answers the asks of its queue one after the other.
func (ru *run) person(ctx context.Context, id string, q <-chan *askModel, rng *rand.Rand) {
	p := ru.r.fake.Person(id)
	for a := range q {
		if !a.leave && ru.waitTS(ctx, a) {
			ru.answer(ctx, p, a, rng, false)
		}
		ru.pending.Add(-1)
	}
}

// waitTS waits up to 60 s for the message of an ask created while its
// post's outcome was unknown, and reports whether it has one.
func (ru *run) waitTS(ctx context.Context, a *askModel) bool {
	for deadline := time.Now().Add(60 * time.Second); a.ts == "" && time.Now().Before(deadline) && ctx.Err() == nil; {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, code, err := ru.r.getAsk(gctx, a.id, 0)
		cancel()
		if err == nil && code == 200 && got.TS != "" {
			a.mu.Lock()
			a.ts = got.TS
			a.mu.Unlock()
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return a.ts != ""
}

// act is one thing the person does; it returns the ack's error.
type act struct {
	what string
	by   string               // a team ask's tap: whose response it is (a.team)
	q    int                  // question, -1 for the whole ask
	prog interaction.Progress // what it records on q
	end  interaction.Status   // the ending it asks for
	do   func(ctx context.Context) error
}

// answer plays the person on a. final: the check after the last restart
// (every act must then work).
func (ru *run) answer(ctx context.Context, p *slackfake.Person, a *askModel, rng *rand.Rand, final bool) {
	var acts []act
	sel := func(q int, labels ...string) act {
		return act{what: fmt.Sprintf("select %v on %s", labels, a.in.Questions[q].ID), q: q,
			prog: interaction.Progress{Selected: labels},
			do: func(ctx context.Context) error {
				_, err := p.Select(ctx, channel, a.ts, control(q, "select"), labels...)
				return err
			}}
	}
	skip := func(q int) act {
		return act{what: "skip " + a.in.Questions[q].ID, q: q, prog: interaction.Progress{Skipped: true},
			do: func(ctx context.Context) error {
				_, err := p.Click(ctx, channel, a.ts, control(q, "skip"))
				return err
			}}
	}
	other := func(q int, text string) act {
		return act{what: fmt.Sprintf("other %q on %s", text, a.in.Questions[q].ID), q: q, prog: interaction.Progress{Custom: text},
			do: func(ctx context.Context) error { return ru.typeOther(ctx, p, a, q, text) }}
	}
	submit := act{what: "submit", q: -1, end: interaction.StatusAnswered, do: func(ctx context.Context) error {
		_, err := p.Click(ctx, channel, a.ts, control(-1, "submit"))
		return err
	}}
	cancelAct := act{what: "cancel", q: -1, end: interaction.StatusCancelled, do: func(ctx context.Context) error {
		_, err := p.Click(ctx, channel, a.ts, control(-1, "cancel"))
		return err
	}}
	pickSome := func(q int) []string {
		opts := a.in.Questions[q].Options
		if !a.in.Questions[q].MultiSelect {
			return []string{opts[rng.IntN(len(opts))].Label}
		}
		var out []string
		for _, o := range opts {
			if rng.IntN(2) == 0 {
				out = append(out, o.Label)
			}
		}
		if len(out) == 0 {
			out = []string{opts[0].Label}
		}
		return out
	}
	text := fmt.Sprintf("typed by %s at %d", p.ID(), rng.IntN(1e6))
	switch {
	case a.shape == shapeTeam:
		ru.answerTeam(ctx, p, a, pickSome, rng, final)
	case a.shape == shapeOneTap:
		x := rng.IntN(10)
		switch {
		case final || x < 6:
			a := sel(0, pickSome(0)...)
			a.end = interaction.StatusAnswered
			acts = append(acts, a)
		case x < 8:
			o := other(0, text)
			o.end = interaction.StatusAnswered
			acts = append(acts, o)
		case x < 9:
			s := skip(0)
			s.end = interaction.StatusAnswered
			acts = append(acts, s)
		default:
			acts = append(acts, cancelAct)
		}
	default:
		for q := range a.in.Questions {
			for range 1 + rng.IntN(2) {
				hasOpts := len(a.in.Questions[q].Options) > 0
				switch x := rng.IntN(10); {
				case hasOpts && x < 6:
					acts = append(acts, sel(q, pickSome(q)...))
				case x < 8:
					acts = append(acts, other(q, fmt.Sprintf("%s (%s)", text, a.in.Questions[q].ID)))
				default:
					acts = append(acts, skip(q))
				}
			}
		}
		if final || rng.IntN(8) > 0 {
			acts = append(acts, submit)
		} else {
			acts = append(acts, cancelAct)
		}
	}
	for _, x := range acts {
		if !ru.perform(ctx, a, x, final) || x.end != "" {
			break
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
	}
	// Watch the outcome through the API, as the caller would.
	gctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if got, code, err := ru.r.getAsk(gctx, a.id, 10*time.Second); err == nil && code == 200 && got.Status.Ended() {
		a.mu.Lock()
		a.seen = append(a.seen, got)
		a.mu.Unlock()
	}
}

// typeOther clicks Other… on question q, types text in the modal and
// submits it; the error is the submission's ack's (or the click's).
func (ru *run) typeOther(ctx context.Context, p *slackfake.Person, a *askModel, q int, text string) error {
	if _, err := p.Click(ctx, channel, a.ts, control(q, "other")); err != nil {
		return err
	}
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	view, err := p.WaitView(vctx)
	cancel()
	if err != nil {
		return fmt.Errorf("no modal after Other…: %w", errNoView)
	}
	if err := p.Type(ctx, view.ID, slackfake.ByActionID("text"), text); err != nil {
		return err
	}
	_, err = p.Submit(ctx, view.ID)
	return err
}

var errNoView = errors.New("no view")

// perform does x until its ack comes (a person who saw an error tries
// again). It records what was acknowledged and reports whether it was.
func (ru *run) perform(ctx context.Context, a *askModel, x act, final bool) bool {
	tries := 8
	if final {
		tries = 20
	}
	for try := 0; try < tries && ctx.Err() == nil; try++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := x.do(actx)
		cancel()
		if err == nil {
			at := time.Now()
			ru.fire(&ru.killAck, "after-ack")
			ru.acked.Add(1)
			a.mu.Lock()
			switch {
			case x.by != "":
				a.team[x.by] = &qModel{p: x.prog, lastAck: x.what, lastAt: at}
			case x.q >= 0:
				a.qs[x.q] = qModel{p: x.prog, lastAck: x.what, lastAt: at, everActs: a.qs[x.q].everActs + 1}
			}
			if x.end != "" {
				a.end, a.endAck, a.endWhat = x.end, at, x.what
			}
			a.mu.Unlock()
			return true
		}
		var verr *slackfake.ViewErrors
		switch {
		case errors.Is(err, slackfake.ErrAckTimeout), errors.Is(err, slackfake.ErrNoConnection),
			errors.Is(err, context.DeadlineExceeded), errors.Is(err, errNoView):
			// The person saw an error: the outcome is unknown.
			ru.unacked.Add(1)
			a.mu.Lock()
			switch {
			case x.by != "":
				if a.team[x.by] == nil {
					a.team[x.by] = &qModel{}
				}
				a.team[x.by].unsure = true
				// Applied or not: with the other's response in, it may
				// have ended the ask.
				a.endTry = interaction.StatusAnswered
			case x.q >= 0:
				a.qs[x.q].unsure = true
			}
			if x.end != "" {
				a.endTry = x.end
			}
			a.mu.Unlock()
		case errors.Is(err, slackfake.ErrNoMatch), errors.Is(err, slackfake.ErrNotFound):
			// The message shows no such control: the ask ended (an act
			// whose ack was lost may have ended it) or is being redrawn.
			gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			got, code, gerr := ru.r.getAsk(gctx, a.id, 0)
			cancel()
			if gerr == nil && code == 200 && got.Status.Ended() {
				return false
			}
		case errors.As(err, &verr):
			ru.r.errorf("ask %s: %s: the modal answered %v", a.id, x.what, verr)
			return false
		default:
			ru.r.errorf("ask %s: %s: %v", a.id, x.what, err)
			return false
		}
		time.Sleep(300 * time.Millisecond)
	}
	if final {
		ru.r.errorf("ask %s: %s never acknowledged after the final restart", a.id, x.what)
	}
	return false
}

// control finds the element of kind ("select", "other", "skip",
// "submit", "cancel") of question q (-1: the bottom bar), whatever the
// message's revision.
func control(q int, kind string) slackfake.Finder {
	suffix := fmt.Sprintf(".%d.%s", q, kind)
	return func(blockID, actionID string, el map[string]any) bool {
		t, _ := el["type"].(string)
		if kind == "select" && t == "button" { // a question drawn as buttons
			return strings.HasPrefix(actionID, "sa.") && strings.Contains(actionID, suffix+".")
		}
		if kind == "select" && !strings.Contains(t, "select") {
			return false
		}
		return strings.HasPrefix(actionID, "sa.") && strings.HasSuffix(actionID, suffix)
	}
}

// expected is the answer the acknowledged acts make.
func (a *askModel) expected() interaction.Answer {
	prog := make([]interaction.Progress, len(a.qs))
	for i, q := range a.qs {
		prog[i] = q.p
	}
	return interaction.AnswerFrom(a.in.Request, prog)
}

// violation is one broken invariant.
type violation struct {
	invariant string
	ask       string
	detail    string
	lost      int    // acknowledged payloads it lost
	point     string // the kill point of the first kill after the lost act
}

// check restarts the child one last time and checks every invariant.
func (ru *run) check(ctx context.Context) {
	t, r := ru.t, ru.r
	settleStart := time.Now()
	if ru.set.postgres {
		ru.mu.Lock()
		timed := slices.Clone(ru.asks)
		ru.mu.Unlock()
		ru.waitDeadlines(ctx, timed)
	}
	synced := ru.settle(ctx)
	settled := time.Since(settleStart)
	r.killAll("final restart")
	if err := r.restart(ctx); err != nil {
		r.fatalf("final restart: %v", err)
	}
	var vs []violation
	add := func(inv, ask string, lost int, f string, args ...any) {
		vs = append(vs, violation{invariant: inv, ask: ask, detail: fmt.Sprintf(f, args...), lost: lost})
	}
	ru.mu.Lock()
	asks := slices.Clone(ru.asks)
	ru.mu.Unlock()

	// 1. Every acknowledged act is in the ask resource; the ending
	// observed once never changes.
	var still []*askModel
	ended := 0
	for _, a := range asks {
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		got, code, err := r.getAsk(gctx, a.id, 0)
		cancel()
		if err != nil || code != 200 {
			add("acknowledged ask present", a.id, a.ackCount(), "GET after the final restart: %d %v (message %s)", code, err, a.ts)
			continue
		}
		a.mu.Lock()
		if a.ts == "" {
			a.ts = got.TS
		}
		for _, s := range a.seen {
			if s.Status != got.Status || mustJSON(s.Answer) != mustJSON(got.Answer) {
				add("ended once", a.id, 0, "was %s %s, now %s %s", s.Status, mustJSON(s.Answer), got.Status, mustJSON(got.Answer))
			}
		}
		if a.timeout > 0 {
			// Left to its deadline, which must have fired.
			if got.Status != interaction.StatusExpired {
				add("every timer fired once", a.id, 0, "left to its deadline (%v), yet %s%s", a.timeout, got.Status, ru.endNote(got))
			}
			ended++
			a.mu.Unlock()
			continue
		}
		switch {
		case a.end != "" && got.Status != a.end:
			desc, point := ru.nearestKill(a.endAck)
			add("acknowledged ending kept", a.id, 1, "%s acknowledged at %s (%s), status %s%s",
				a.endWhat, a.endAck.Format("15:04:05.000"), desc, got.Status, ru.endNote(got))
			vs[len(vs)-1].point = point
		case got.Status == "pending" && a.end == "":
			still = append(still, a)
		case got.Status != "pending" && a.end == "" && a.endTry == "" && !a.leave:
			add("ends only by an act", a.id, 0, "status %s without an ending act%s", got.Status, ru.endNote(got))
		case got.Status != "pending" && a.end == "" && a.leave:
			add("ends only by an act", a.id, 0, "left pending, yet %s%s", got.Status, ru.endNote(got))
		}
		if got.Status == interaction.StatusAnswered && (a.end == interaction.StatusAnswered || a.endTry == interaction.StatusAnswered) {
			ended++
			vs = append(vs, a.compare(ru, got)...)
		} else if got.Status.Ended() {
			ended++
		}
		a.mu.Unlock()
	}

	// 2. Every pending ask can still be answered, and then holds what was
	// acknowledged before.
	rng := rand.New(rand.NewPCG(ru.set.seed, 3))
	for _, a := range still {
		if a.ts == "" {
			add("pending ask answerable", a.id, 0, "no message after the final restart (its post's outcome was unknown)")
			continue
		}
		ru.answer(ctx, r.fake.Person(a.person), a, rng, true)
		gctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		got, code, err := r.getAsk(gctx, a.id, 10*time.Second)
		cancel()
		if err != nil || code != 200 || got.Status != interaction.StatusAnswered {
			add("pending ask answerable", a.id, 0, "after the final answer: %d %v %s%s", code, err, got.Status, ru.endNote(got))
			continue
		}
		ended++
		a.mu.Lock()
		vs = append(vs, a.compare(ru, got)...)
		a.mu.Unlock()
	}

	// 3. One ask per idempotency key, one message per ask, no message
	// without its ask.
	ru.mu.Lock()
	for key, ids := range ru.byKey {
		if u := slices.Compact(slices.Sorted(slices.Values(ids))); len(u) > 1 {
			add("one ask per idempotency key", ids[0], 0, "key %s returned %v", key, ids)
		}
	}
	known := map[string]*askModel{}
	for _, a := range ru.asks {
		known[a.id] = a
	}
	ru.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	listed, err := r.listAsks(lctx)
	cancel()
	if err != nil {
		r.errorf("listing asks: %v", err)
	}
	byAgent := map[string][]string{}
	inDB := map[string]bool{}
	for _, a := range listed {
		inDB[a.ID] = true
		if a.Agent != nil {
			byAgent[a.Agent.ID] = append(byAgent[a.Agent.ID], a.ID)
		}
	}
	for _, a := range asks {
		if ids := byAgent[a.agent]; len(ids) != 1 || ids[0] != a.id {
			add("one ask per idempotency key", a.id, 0, "request %s (key %q) has asks %v in the database, the caller got %s", a.agent, a.key, ids, a.id)
		}
	}
	// Asks made by a POST without a key whose answer never reached the
	// caller: at most one per request, and answerable like the others.
	ru.mu.Lock()
	lostPosts := slices.Clone(ru.noKey)
	ru.mu.Unlock()
	listedByID := map[string]interaction.Ask{}
	for _, a := range listed {
		listedByID[a.ID] = a
	}
	for _, agent := range lostPosts {
		ids := byAgent[agent]
		if len(ids) > 1 {
			add("one ask per request", ids[0], 0, "request %s (sent once, no key) has asks %v", agent, ids)
		}
		if len(ids) != 1 {
			continue
		}
		got := listedByID[ids[0]]
		if got.Status != interaction.StatusPending || got.TS == "" {
			continue
		}
		a := &askModel{id: got.ID, ts: got.TS, agent: agent, person: people[0], shape: shapeForm}
		a.in.Questions = got.Questions
		if len(got.Questions) == 1 && len(got.Questions[0].Options) > 0 && !got.Questions[0].MultiSelect {
			a.shape = shapeOneTap
			if got.Wanted > 1 {
				a.shape, a.second, a.team = shapeTeam, people[1], map[string]*qModel{}
			}
		}
		a.qs = make([]qModel, len(a.in.Questions))
		ru.answer(ctx, r.fake.Person(a.person), a, rng, true)
		gctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		end, code, err := r.getAsk(gctx, a.id, 10*time.Second)
		cancel()
		if err != nil || code != 200 || end.Status != interaction.StatusAnswered {
			add("pending ask answerable", a.id, 0, "(made by a POST whose answer was lost) after the final answer: %d %v %s%s", code, err, end.Status, ru.endNote(end))
			continue
		}
		a.mu.Lock()
		vs = append(vs, a.compare(ru, end)...)
		a.mu.Unlock()
	}

	perAsk := map[string][]string{}
	for _, m := range r.fake.Messages(channel) {
		if m.ThreadTS != "" && m.ThreadTS != m.TS {
			continue
		}
		id := blocks.MessageAskID(m.Blocks)
		if id == "" {
			continue
		}
		perAsk[id] = append(perAsk[id], m.TS)
		if known[id] == nil && !inDB[id] {
			add("no message without its ask", id, 0, "message %s belongs to no ask in the database", m.TS)
		}
	}
	for id, tss := range perAsk {
		if len(tss) > 1 {
			var when []string
			for _, ts := range tss[1:] {
				when = append(when, ts+": "+ru.killBeforeTS(ts))
			}
			add("one message per ask", id, 0, "%d messages posted: first %s, then %s", len(tss), tss[0], strings.Join(when, "; "))
		}
	}

	for _, x := range synced {
		id, status, _ := strings.Cut(x, " ")
		if status == "unposted" {
			add("pending ask answerable", id, 0, "60 s after the run the pending ask still has no message")
			continue
		}
		add("message matches the record", id, 0, "60 s after the run the message of the %s ask still disagrees with it (live controls on an ended ask, or none on a pending one); its updates: %s", status, ru.updatesOf(listedByID[id].TS))
	}

	// 4. No ask ended twice: the message, once drawn ended, never shows
	// another ending or live controls again, by an update of a live
	// process (see checkRenders).
	vs = append(vs, ru.checkRenders(known)...)

	// 5. Every team ask ended once (one "ended" event in its audit trail).
	teams, tvs := ru.checkTeamEnds(ctx, asks, listedByID)
	vs = append(vs, tvs...)

	// 6. PostgreSQL mode: every timer fired once, every callback
	// delivered, and what the faults themselves checked.
	var timers, callbacks string
	if ru.set.postgres {
		tally, tvs := ru.checkTimers(ctx, asks, listedByID)
		vs = append(vs, tvs...)
		delivered, extra, cvs := ru.checkCallbacks(ctx, listed)
		vs = append(vs, cvs...)
		timers = "; timers: " + tally.String()
		callbacks = fmt.Sprintf("; callbacks delivered for %d ended asks (%d deliveries more than once)", delivered, extra)
	}
	ru.mu.Lock()
	vs = append(vs, ru.faultVs...)
	ru.mu.Unlock()

	// Summary.
	lost := 0
	lostAt := map[string]int{}
	for _, v := range vs {
		lost += v.lost
		if v.lost > 0 {
			lostAt[v.point] += v.lost
		}
	}
	kills := r.killLog()
	survived := 0
	for _, k := range kills {
		if k.point != "final restart" && k.point != "cleanup" {
			survived++
		}
	}
	p50, p99, maxLat, n := r.fake.AckStats()
	restarts, slowest, lateCalls := r.tallies()
	ru.mu.Lock()
	if ru.late != nil {
		select {
		case <-ru.late.fired:
			ru.counts["late-post-answered"]++
		default:
			ru.counts["late-post-never-came"]++
		}
	}
	counts := fmt.Sprint(ru.counts)
	ru.mu.Unlock()
	points := map[string]int{}
	for _, k := range kills {
		points[k.point]++
	}
	mode := "SQLite, 1 process"
	if ru.set.postgres {
		mode = fmt.Sprintf("PostgreSQL, %d replicas", len(r.slots))
	}
	ru.summary = fmt.Sprintf("summary (seed %d, %v, %s): kills survived %d %v; faults %s; payloads acknowledged %d, lost %d %v, unacknowledged (person saw an error) %d; asks created %d, ended %d, failed POSTs %d; %s; failed interactions in the fake %d; ack latency p50 %v p99 %v max %v over %d acks; settled in %v; %d restarts, the slowest ready in %v; %d calls passed on after their sender died; %d replicas' updates crossed an end (of an older revision, sent before it was drawn or within drawRenew after, drawn again after)%s%s",
		ru.set.seed, ru.set.dur, mode, survived, points, counts, ru.acked.Load(), lost, lostAt, ru.unacked.Load(),
		ru.created.Load(), ended, ru.postFails.Load(), teams, r.fake.UnackedInteractions(), p50, p99, maxLat, n, settled.Round(time.Millisecond), restarts, slowest.Round(time.Millisecond), lateCalls, ru.crossed, timers, callbacks)
	t.Logf("chaos %s", ru.summary)
	for _, v := range vs {
		r.errorf("invariant %q broken for ask %s: %s", v.invariant, v.ask, v.detail)
	}
}

// settle waits up to 60 s (a retry backing off from a 20 s outage may
// come 30 s after it ended; an ask a kill left unposted is posted 45 s
// after its creation), before the final restart, until every pending ask
// has a message and every ask's message agrees with its record: drawn
// ended (no controls) once the ask ended, with controls while it is
// pending. It returns "id status" of the asks whose message still
// disagrees ("id unposted" for a pending ask without one), so that a message update given up (rather than
// retried until it lands) is found without a restart's resync hiding it.
func (ru *run) settle(ctx context.Context) []string {
	start := time.Now()
	deadline, nextNote := start.Add(60*time.Second), start.Add(10*time.Second)
	for {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		listed, err := ru.r.listAsks(lctx)
		cancel()
		var bad []string
		if err == nil {
			for _, a := range listed {
				if a.TS == "" {
					// Left unposted by a kill: the dispatcher posts it
					// once postGrace has passed since its creation.
					if !a.Status.Ended() {
						bad = append(bad, a.ID+" unposted")
					}
					continue
				}
				m, ok := ru.r.fake.Message(channel, a.TS)
				if ok && liveControls(string(m.Blocks)) == a.Status.Ended() {
					bad = append(bad, a.ID+" "+string(a.Status))
				}
			}
		}
		if err == nil && len(bad) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return bad
		}
		if time.Now().After(nextNote) {
			// What a long settle waits for: a retry after an outage, or a
			// post left to the dispatcher's grace.
			nextNote = nextNote.Add(10 * time.Second)
			ru.t.Logf("settle: after %v, waiting on %d asks (list error %v): %v", time.Since(start).Round(time.Second), len(bad), err, bad[:min(len(bad), 5)])
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// liveControls reports whether a render of an ask's message has controls.
func liveControls(blocks string) bool {
	return strings.Contains(blocks, ".submit\"") || strings.Contains(blocks, ".select\"") || strings.Contains(blocks, ".select.") || strings.Contains(blocks, ".cancel\"")
}

// ackCount is how many acknowledged acts a carries. a.mu held or unused.
func (a *askModel) ackCount() int {
	n := 0
	for _, q := range a.qs {
		if q.lastAck != "" {
			n++
		}
	}
	for _, m := range a.team {
		if m.lastAck != "" {
			n++
		}
	}
	if a.end != "" {
		n++
	}
	return n
}

// compare checks an answered ask against the acknowledged acts. a.mu held.
func (a *askModel) compare(ru *run, got interaction.Ask) []violation {
	if a.shape == shapeTeam {
		return a.compareTeam(ru, got)
	}
	var vs []violation
	want := a.expected()
	if got.Answer == nil {
		return []violation{{invariant: "acknowledged answer present", ask: a.id, lost: 1, detail: "answered without an answer"}}
	}
	for i, w := range want.Answers {
		q := a.qs[i]
		if q.unsure && q.lastAck == "" {
			continue
		}
		var g interaction.AnswerItem
		if i < len(got.Answer.Answers) {
			g = got.Answer.Answers[i]
		}
		if sameItem(g, w) {
			continue
		}
		if q.unsure {
			// An unacknowledged later act may have been applied.
			continue
		}
		desc, point := ru.nearestKill(q.lastAt)
		vs = append(vs, violation{invariant: "acknowledged answer present and right", ask: a.id, lost: 1, point: point,
			detail: fmt.Sprintf("question %s: got %s, want %s (last acknowledged: %s at %s, %s)",
				w.ID, mustJSON(g), mustJSON(w), q.lastAck, q.lastAt.Format("15:04:05.000"), desc)})
	}
	return vs
}

func sameItem(a, b interaction.AnswerItem) bool {
	x, y := slices.Clone(a.Selected), slices.Clone(b.Selected)
	slices.Sort(x)
	slices.Sort(y)
	return a.ID == b.ID && a.Custom == b.Custom && slices.Equal(x, y)
}

// nearestKill describes the first kill after t (the one that could lose
// an act acknowledged at t) and returns its kill point.
func (ru *run) nearestKill(t time.Time) (desc, point string) {
	for _, k := range ru.r.killLog() {
		if !k.at.Before(t) {
			return fmt.Sprintf("next kill %v later at point %q (child %d)", k.at.Sub(t).Round(time.Microsecond), k.point, k.gen), k.point
		}
	}
	return "no kill after it", "none"
}

// killBeforeTS describes the last kill before the message ts was posted.
func (ru *run) killBeforeTS(ts string) string {
	at, err := tsTime(ts)
	if err != nil {
		return err.Error()
	}
	return ru.killBefore(at)
}

// killBefore describes the last kill before at.
func (ru *run) killBefore(at time.Time) string {
	var last *killRec
	for _, k := range ru.r.killLog() {
		if k.at.Before(at) {
			last = &k
		}
	}
	if last == nil {
		return "no kill before it"
	}
	return fmt.Sprintf("%v after the kill at point %q (child %d)", at.Sub(last.at).Round(time.Millisecond), last.point, last.gen)
}

// tsTime reads a message ts ("seconds.micros").
func tsTime(ts string) (time.Time, error) {
	sec, frac, ok := strings.Cut(ts, ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(frac, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return time.Time{}, fmt.Errorf("bad ts %q", ts)
	}
	return time.Unix(s, us*1000), nil
}

func (ru *run) endNote(got interaction.Ask) string {
	if got.Error != nil {
		return " (" + string(got.Error.Code) + ": " + got.Error.Message + ")"
	}
	return ""
}

// checkRenders replays every applied chat.update of each ask's message,
// but those the proxy passed on after their sender died: once a render
// has no live controls (the ask ended), later renders keep the same
// ending text and no controls. On replicas, another replica's update of
// an older revision that reached Slack's side before the end was drawn,
// or within drawRenew after, is counted (ru.crossed), not a violation.
func (ru *run) checkRenders(known map[string]*askModel) []violation {
	tsAsk := map[string]string{}
	for _, a := range known {
		tsAsk[a.ts] = a.id
	}
	vs, crossed := renderViolations(ru.r.fake.Calls(), tsAsk, ru.r.replicated(), ru.killBefore)
	ru.crossed += crossed
	return vs
}

// renderViolations is checkRenders over calls (the fake's, in the order
// it applied them), for the asks whose messages tsAsk maps to their ids;
// killBefore describes the kill before a time, for a report.
func renderViolations(calls []slackfake.Call, tsAsk map[string]string, replicated bool, killBefore func(time.Time) string) (vs []violation, crossed int) {
	type state struct {
		ended   bool
		outcome string
		bad     bool
		endedBy string // the render that drew it ended, for the report
		endedAt time.Time
		endedIn string // the child that drew it ended
		endRev  int    // the revision drawn ended; -1 unknown
	}
	// by describes one applied update, to tell how two came in order.
	revOf := func(c slackfake.Call) int {
		if r, ok := blocks.MessageRef([]byte(c.Params["blocks"])); ok {
			return r.Rev
		}
		return -1
	}
	by := func(c slackfake.Call) string {
		rev := "?"
		if r := revOf(c); r >= 0 {
			rev = strconv.Itoa(r)
		}
		return fmt.Sprintf("rev %s by child %s at %s", rev, c.Params[senderParam], c.At.Format("15:04:05.000"))
	}
	byTS := map[string]*state{}
	for _, c := range calls {
		if c.Method != "chat.update" || c.Error != "" || c.Params[deadSenderParam] != "" {
			// An update that landed after its sender died can draw an
			// older rendering over a newer one, and no process can stop
			// it: its successor renders the record again once no such
			// update can land (postGrace), which settle checks.
			continue
		}
		ts := c.Params["ts"]
		id := tsAsk[ts]
		if id == "" {
			continue
		}
		blocks := c.Params["blocks"]
		live := liveControls(blocks)
		outcome := outcomeText(blocks)
		st := byTS[ts]
		if st == nil {
			st = &state{}
			byTS[ts] = st
		}
		switch {
		case st.bad:
		case !st.ended && !live:
			st.ended, st.outcome, st.endedBy = true, outcome, by(c)
			st.endedAt, st.endedIn, st.endRev = c.At, c.Params[senderParam], revOf(c)
		case st.ended && live && replicated && c.Params[senderParam] != st.endedIn &&
			revOf(c) >= 0 && revOf(c) < st.endRev && arrivedBefore(c, st.endedAt.Add(drawRenew)):
			// Another replica's update of a revision before the end,
			// on its way to Slack before the end was drawn or started
			// within drawRenew after: a replica draws the revision it
			// wrote without reading the record again, and starts that
			// update up to drawRenew after listing itself as drawing
			// (asks/drawers.go), which its write did before the end was
			// written. chat.update has no compare-and-set, so no
			// replica can keep it from landing after the end. Its
			// sender checks the record after each update and draws the
			// ask again; settle checks that every message ends right.
			// Counted, not a violation; one sent later, or of the ended
			// revision or a newer one, still is.
			crossed++
		case st.ended && live:
			st.bad = true
			vs = append(vs, violation{invariant: "ended once", ask: id, detail: fmt.Sprintf("the message showed live controls again after it was drawn ended (ended: %s; live: %s; %s)", st.endedBy, by(c), killBefore(c.At))})
		case st.ended && outcome != st.outcome:
			st.bad = true
			vs = append(vs, violation{invariant: "ended once", ask: id, detail: fmt.Sprintf("drawn ended as %q (%s), then as %q (%s)", st.outcome, st.endedBy, outcome, by(c))})
		}
	}
	return vs, crossed
}

// updatesOf describes the chat.update calls of the message ts, in the
// order the fake applied (or refused) them, for a failure's report.
func (ru *run) updatesOf(ts string) string {
	var out []string
	for _, c := range ru.r.fake.Calls() {
		if c.Method != "chat.update" || c.Params["ts"] != ts {
			continue
		}
		rev := "?"
		if r, ok := blocks.MessageRef([]byte(c.Params["blocks"])); ok {
			rev = strconv.Itoa(r.Rev)
		}
		d := fmt.Sprintf("rev %s live %v by child %s at %s", rev, liveControls(c.Params["blocks"]), c.Params[senderParam], c.At.Format("15:04:05.000"))
		if c.Error != "" {
			d += " refused: " + c.Error
		}
		if c.Params[deadSenderParam] != "" {
			d += " (its sender dead)"
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// drawRenew is asks/drawers.go's: how long after listing itself as
// drawing an ask's message a replica may start an update of it.
const drawRenew = 5 * time.Second

// arrivedBefore reports whether call c reached the proxy before t.
func arrivedBefore(c slackfake.Call, t time.Time) bool {
	at, err := time.Parse(time.RFC3339Nano, c.Params[arrivedParam])
	return err == nil && at.Before(t)
}

// outcomeText returns the text of the outcome block of a render.
func outcomeText(blocks string) string {
	var bs []map[string]any
	if json.Unmarshal([]byte(blocks), &bs) != nil {
		return ""
	}
	for _, b := range bs {
		if id, _ := b["block_id"].(string); strings.HasSuffix(id, ".outcome") {
			return mustJSON(b["text"]) + mustJSON(b["elements"])
		}
	}
	return ""
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
