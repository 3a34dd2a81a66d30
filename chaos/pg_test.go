package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/webhook"
)

// The PostgreSQL mode (SLACKASK_CHAOS_STORE=postgres): three replicas on
// one schema, each reaching PostgreSQL through a fault proxy of its own
// (internal/tcpfault), with timers (reminders, deadlines, escalation
// steps) and callbacks in the workload.

const callbackSecret = "chaos-callback-secret"

// callbacks receives the signed callbacks of ended asks.
type callbacks struct {
	url string
	mu  sync.Mutex
	got map[string]int // ask id → deliveries
	bad []string       // deliveries refused (signature, body)
}

func newCallbacks(t interface {
	Fatal(...any)
	Cleanup(func())
}) *callbacks {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cb := &callbacks{url: "http://" + ln.Addr().String() + "/callback", got: map[string]int{}}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		var a struct {
			ID string `json:"id"`
		}
		verr := webhook.Verify([]byte(callbackSecret), req.Header, body, time.Now(), 0)
		if jerr := json.Unmarshal(body, &a); verr != nil || jerr != nil || a.ID == "" {
			cb.mu.Lock()
			cb.bad = append(cb.bad, fmt.Sprintf("signature %v, body %v: %.200s", verr, jerr, body))
			cb.mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		cb.mu.Lock()
		cb.got[a.ID]++
		cb.mu.Unlock()
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return cb
}

// delivered returns how many callbacks ask id got.
func (cb *callbacks) delivered(id string) int {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.got[id]
}

// addTimers gives a's request timers: an ask the person leaves gets a
// reminder, an escalation step and a deadline (which ends it: it must
// expire, once); a quarter of the others a reminder.
func (ru *run) addTimers(a *askModel, rng *rand.Rand) {
	if a.leave {
		// The step comes at least 37 s before the deadline: longer than
		// the longest blackhole (30 s) and a lease, so it fires first.
		step := time.Duration(4+rng.IntN(5)) * time.Second
		a.timeout = step + time.Duration(37+rng.IntN(15))*time.Second
		a.in.Timeout = interaction.Duration(a.timeout)
		a.in.RemindAfter = interaction.Duration(time.Duration(2+rng.IntN(4)) * time.Second)
		other := people[(slices.Index(people, a.person)+1)%len(people)]
		a.in.Escalation = []interaction.EscalationStep{{After: interaction.Duration(step), Responders: []string{other}}}
		return
	}
	if rng.IntN(4) == 0 {
		a.in.RemindAfter = interaction.Duration(time.Duration(2+rng.IntN(7)) * time.Second)
	}
}

// violate records a broken invariant found while a fault runs.
func (ru *run) violate(v violation) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	ru.faultVs = append(ru.faultVs, v)
}

// pgFaults are the PostgreSQL mode's faults.
func (ru *run) pgFaults(ctx context.Context, rng *rand.Rand) []fault {
	r := ru.r
	every := func(f func(s *slot)) {
		for _, s := range r.slots {
			f(s)
		}
	}
	sleep := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	// A short run (CI's two minutes) must meet every kind before its end
	// phase: the long faults take the short end of their range.
	long := func(lo, hi time.Duration) time.Duration {
		if ru.set.dur < 5*time.Minute {
			hi = lo + (hi-lo)/4
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	return []fault{
		{"kill-two", 2, func() {
			r.kill("random (two at once)")
			r.kill("random (two at once)")
		}},
		{"kill-timer-holder", 2, func() { ru.killTimerHolder() }},
		{"sigterm-rolling", 1, func() {
			for _, s := range r.slots {
				if !r.signal(s, syscall.SIGTERM, "sigterm (rolling restart)", 20*time.Second) {
					continue
				}
				if err := r.restartSlot(ctx, s); err != nil {
					r.errorf("rolling restart of replica %d: %v", s.i, err)
				}
			}
		}},
		{"pg-reset", 2, func() { every(func(s *slot) { s.pg.Reset() }) }},
		{"pg-blackhole", 1, func() {
			d := long(5*time.Second, 30*time.Second).Round(time.Second)
			ru.logf("pg-blackhole: every replica's packets to PostgreSQL held for %v", d)
			every(func(s *slot) { s.pg.Blackhole(true) })
			if d >= 8*time.Second {
				sleep(6 * time.Second)
				// Every replica is cut: none may say ready, none may hold
				// a socket (a click gets an error, not a silent loss).
				for _, s := range r.slots {
					if code, socks := r.readyz(ctx, s); code == http.StatusOK || socks > 0 {
						ru.violate(violation{invariant: "a replica cut from the database gives up its sockets", ask: "-",
							detail: fmt.Sprintf("replica %d, 6 s into a blackhole of every replica: /readyz %d with %d sockets", s.i, code, socks)})
					}
				}
				d -= 6 * time.Second
			}
			sleep(d)
			every(func(s *slot) { s.pg.Blackhole(false) })
		}},
		{"pg-latency", 1, func() {
			d := long(8*time.Second, 20*time.Second)
			every(func(s *slot) { s.pg.Latency(200 * time.Millisecond) })
			sleep(d)
			every(func(s *slot) { s.pg.Latency(0) })
		}},
		{"pg-restart", 1, func() { ru.restartPostgres(ctx) }},
		{"replica-cut", 2, func() { ru.cutReplica(ctx, long(10*time.Second, 20*time.Second), rng) }},
	}
}

// logf logs a line of the run.
func (ru *run) logf(format string, args ...any) {
	ru.t.Logf("%s chaos: %s", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// restartPostgres runs SLACKASK_CHAOS_PG_RESTART, or counts the fault
// skipped.
func (ru *run) restartPostgres(ctx context.Context) {
	if ru.set.pgRestart == "" {
		ru.count("pg-restart (skipped: SLACKASK_CHAOS_PG_RESTART not set)")
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(cctx, "sh", "-c", ru.set.pgRestart).CombinedOutput()
	if err != nil {
		ru.r.errorf("SLACKASK_CHAOS_PG_RESTART (%s): %v: %s", ru.set.pgRestart, err, out)
		return
	}
	ru.logf("PostgreSQL restarted in %v", time.Since(start).Round(time.Millisecond))
}

// cutReplica cuts one running replica from PostgreSQL (its packets held,
// or its connections refused) for d (10-20 s) while its Socket Mode
// connections stay up: it must give them up and say not ready within
// 10 s, the others stay ready, and it must take them back within 20 s of
// the database's return.
func (ru *run) cutReplica(ctx context.Context, d time.Duration, rng *rand.Rand) {
	r := ru.r
	s := r.slots[rng.IntN(len(r.slots))]
	d = d.Round(time.Second)
	refuse := rng.IntN(2) == 0
	how := "packets held"
	if refuse {
		how = "connections refused"
	}
	// Cut a ready replica, or its giving up is never seen: one a fault
	// just before killed may still be starting.
	for wait := time.Now(); ctx.Err() == nil && time.Since(wait) < 15*time.Second; time.Sleep(100 * time.Millisecond) {
		if code, socks := r.readyz(ctx, s); code == http.StatusOK && socks > 0 {
			break
		}
	}
	ru.logf("replica-cut: replica %d cut from PostgreSQL (%s) for %v", s.i, how, d)
	if refuse {
		s.pg.Refuse(true)
	} else {
		s.pg.Blackhole(true)
	}
	start := time.Now()
	gaveUp := false
	for time.Since(start) < d && ctx.Err() == nil {
		if code, socks := r.readyz(ctx, s); code == http.StatusServiceUnavailable && socks == 0 {
			gaveUp = true
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(start)
	if !gaveUp && d >= 10*time.Second && r.aliveSlot(s) {
		code, socks := r.readyz(ctx, s)
		ru.violate(violation{invariant: "a replica cut from the database gives up its sockets", ask: "-",
			detail: fmt.Sprintf("replica %d, cut (%s) for %v: /readyz %d with %d sockets", s.i, how, took.Round(time.Millisecond), code, socks)})
	}
	if rest := d - took; rest > 0 {
		time.Sleep(rest)
	}
	if refuse {
		s.pg.Refuse(false)
	} else {
		s.pg.Blackhole(false)
	}
	back := time.Now()
	for ctx.Err() == nil && r.aliveSlot(s) {
		if code, socks := r.readyz(ctx, s); code == http.StatusOK && socks > 0 {
			ru.logf("replica-cut: replica %d gave up its sockets %v into the cut and was ready again %v after it", s.i, took.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
			return
		}
		if time.Since(back) > 20*time.Second {
			code, socks := r.readyz(ctx, s)
			ru.violate(violation{invariant: "a replica takes its sockets back when the database returns", ask: "-",
				detail: fmt.Sprintf("replica %d, 20 s after its cut ended: /readyz %d with %d sockets", s.i, code, socks)})
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// aliveSlot reports whether slot s has a child running.
func (r *rig) aliveSlot(s *slot) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.cur != nil
}

// killTimerHolder kills the replica that claimed a due reminder, right
// before its chat.postMessage reaches Slack (within 30 s).
func (ru *run) killTimerHolder() {
	f := &proxyFault{kind: "kill-before", point: "timer holder, before its reminder", left: 1, fired: make(chan struct{}),
		match: func(p url.Values) bool {
			return p.Get("thread_ts") != "" && strings.HasPrefix(p.Get("text"), reminderPrefix)
		}}
	ru.r.addFault("chat.postMessage", f)
	select {
	case <-f.fired:
		ru.mu.Lock()
		if ru.reminderKills == nil {
			ru.reminderKills = map[string]bool{}
		}
		ru.reminderKills[f.what] = true
		ru.mu.Unlock()
	case <-time.After(30 * time.Second):
		ru.r.dropFault("chat.postMessage", f)
		ru.count("kill-timer-holder (no reminder came)")
	}
}

// reminderPrefix starts the text of every reminder (bot's reminderText);
// noticeBlockPrefix the block id of an escalation notice, followed by
// "<ask id>.<key>" (bot's noticeBlockID).
const (
	reminderPrefix    = "Reminder:"
	noticeBlockPrefix = "sanotice."
)

// timerTally is what checkTimers counted.
type timerTally struct {
	reminders, remindedTwice, remindersUnclaimed, remindersDropped int
	// remindersKilled: of remindersDropped, those whose replica about to
	// post was killed right before Slack saw it; killedThenPosted: those
	// posted after such a kill (by the claim's retry, on any replica).
	remindersKilled, killedThenPosted         int
	deadlines, steps, notices, noticesMissing int
}

func (t timerTally) String() string {
	return fmt.Sprintf("reminders posted %d (twice: %d; due and never posted: %d unclaimed and %d claimed, of which the replica about to post was killed for %d; posted after the replica about to post was killed: %d), deadlines fired %d, escalation steps fired %d (their notice posted once: %d, none: %d)",
		t.reminders, t.remindedTwice, t.remindersUnclaimed, t.remindersDropped, t.remindersKilled, t.killedThenPosted, t.deadlines, t.steps, t.notices, t.noticesMissing)
}

// reminderClaim is the claim window of a counted reminder's post (asks'
// postGrace): a claim left unsent (its replica died, its post failed) is
// retried, on any replica, once it runs out. reminderLeeway is what a
// dispatcher may take, through the run's faults (a blackhole of at most
// 30 s, restarts), to start a timer once due.
const (
	reminderClaim  = 45 * time.Second
	reminderLeeway = 45 * time.Second
)

// checkTimers checks the timers of every ask the run created: no reminder
// posted twice, every due one posted; every deadline fired (the ask
// expired) and every escalation step due before it fired.
//
// A reminder is due at its remindAfter; the dispatcher counts it (the
// audit trail's "reminded" event), which also claims its post; the post
// is then sent, or, once the claim runs out, retried by any replica
// (looking in the thread first), but only while the ask is pending. So a
// reminder must have been posted when its ask stayed pending past its
// count + claim + leeway, and counted when the ask stayed pending past its
// due time + postGrace (an ask whose post's outcome was unknown is posted
// or adopted only then, and a reminder needs the message) + leeway. An
// ask ended before either lets it go unposted (counted apart, not failed).
func (ru *run) checkTimers(ctx context.Context, asks []*askModel, byID map[string]interaction.Ask) (timerTally, []violation) {
	var tally timerTally
	var vs []violation
	reminders := map[string]int{}
	notices := map[string]int{} // "<ask id>.step-<i>" → escalation notices posted
	for _, m := range ru.r.fake.Messages(channel) {
		if m.ThreadTS == "" || m.ThreadTS == m.TS {
			continue
		}
		if strings.HasPrefix(m.Text, reminderPrefix) {
			reminders[m.ThreadTS]++
		}
		var bs []struct {
			BlockID string `json:"block_id"`
		}
		if json.Unmarshal(m.Blocks, &bs) == nil && len(bs) > 0 {
			if key, ok := strings.CutPrefix(bs[0].BlockID, noticeBlockPrefix); ok {
				notices[key]++
			}
		}
	}
	ru.mu.Lock()
	killed := maps.Clone(ru.reminderKills)
	ru.mu.Unlock()
	for _, a := range asks {
		got, ok := byID[a.id]
		if !ok || a.ts == "" {
			continue
		}
		if a.in.RemindAfter > 0 {
			n := reminders[a.ts]
			tally.reminders += n
			if killed[a.ts] && n == 1 {
				tally.killedThenPosted++ // not "never posted": counted apart
			}
			due := got.CreatedAt.Add(time.Duration(a.in.RemindAfter))
			endedOrNow := time.Now()
			if got.EndedAt != nil {
				endedOrNow = *got.EndedAt
			}
			switch {
			case n > 1:
				tally.remindedTwice++
				vs = append(vs, violation{invariant: "every timer fired once", ask: a.id, detail: fmt.Sprintf("%d reminders posted, due at %s", n, due.Format("15:04:05.000"))})
			case n == 0 && endedOrNow.After(due):
				counted, err := ru.remindedAt(ctx, a.id)
				switch {
				case err != nil:
					vs = append(vs, violation{invariant: "every timer fired once", ask: a.id, detail: fmt.Sprintf("reminder due at %s not posted, and its events unreadable: %v", due.Format("15:04:05.000"), err)})
				case counted.IsZero() && endedOrNow.After(due.Add(reminderClaim+reminderLeeway)):
					vs = append(vs, violation{invariant: "every timer fired once", ask: a.id, detail: fmt.Sprintf("reminder due at %s never counted; the ask pending until %s", due.Format("15:04:05.000"), endedOrNow.Format("15:04:05.000"))})
				case counted.IsZero():
					tally.remindersUnclaimed++
				case endedOrNow.After(counted.Add(reminderClaim + reminderLeeway)):
					vs = append(vs, violation{invariant: "every timer fired once", ask: a.id, detail: fmt.Sprintf("reminder counted at %s never posted; the ask pending until %s", counted.Format("15:04:05.000"), endedOrNow.Format("15:04:05.000"))})
				default:
					tally.remindersDropped++ // the ask ended before the claim's retry
					if killed[a.ts] {
						tally.remindersKilled++
					}
				}
			}
		}
		if a.timeout > 0 {
			if got.Status == interaction.StatusExpired {
				tally.deadlines++
			}
			for i, st := range got.Escalation {
				if st.FiredAt != nil {
					tally.steps++
					switch n := notices[fmt.Sprintf("%s.step-%d", a.id, i)]; {
					case n > 1:
						vs = append(vs, violation{invariant: "every timer fired once", ask: a.id, detail: fmt.Sprintf("escalation step %d: %d notices posted", i, n)})
					case n == 1:
						tally.notices++
					default:
						tally.noticesMissing++
					}
					continue
				}
				vs = append(vs, violation{invariant: "every timer fired once", ask: a.id,
					detail: fmt.Sprintf("escalation step %d (after %s) never fired; the ask is %s", i, time.Duration(st.After), got.Status)})
			}
		}
	}
	return tally, vs
}

// remindedAt returns when ask id's first reminder was counted (its
// "reminded" event), zero if never.
func (ru *run) remindedAt(ctx context.Context, id string) (time.Time, error) {
	evs, err := ru.events(ctx, id)
	for _, e := range evs {
		if e.Kind == interaction.EventReminded {
			return e.At, nil
		}
	}
	return time.Time{}, err
}

// askEvent is an event of an ask's audit trail, as the API gives it.
type askEvent struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
}

// events returns ask id's audit trail (GET /v1/asks/{id}/events), trying
// up to ten times a second apart.
func (ru *run) events(ctx context.Context, id string) ([]askEvent, error) {
	var body struct {
		Events []askEvent `json:"events"`
	}
	var err error
	for range 10 {
		var req *http.Request
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/v1/asks/%s/events", ru.r.base(), id), nil)
		if err != nil {
			return nil, err
		}
		var resp *http.Response
		if resp, err = ru.r.hc.Do(req); err == nil {
			err = fmt.Errorf("GET events: %s", resp.Status)
			if resp.StatusCode == http.StatusOK {
				err = json.NewDecoder(resp.Body).Decode(&body)
			}
			resp.Body.Close()
			if err == nil {
				return body.Events, nil
			}
		}
		time.Sleep(time.Second)
	}
	return nil, err
}

// waitDeadlines waits until every timed ask's deadline has passed (and a
// minute for it to fire), returning early once each has ended.
func (ru *run) waitDeadlines(ctx context.Context, asks []*askModel) {
	for _, a := range asks {
		if a.timeout == 0 || a.id == "" {
			continue
		}
		for ctx.Err() == nil {
			gctx, cancel := context.WithTimeout(ctx, 40*time.Second)
			got, code, err := ru.r.getAsk(gctx, a.id, 30*time.Second)
			cancel()
			if err == nil && code == 200 && (got.Status.Ended() || time.Now().After(got.CreatedAt.Add(a.timeout+time.Minute))) {
				break
			}
			if err != nil || code != 200 {
				time.Sleep(500 * time.Millisecond)
			}
		}
	}
}

// checkCallbacks waits up to 60 s until every ended ask in listed had its
// callback delivered at least once.
func (ru *run) checkCallbacks(ctx context.Context, listed []interaction.Ask) (delivered, extra int, vs []violation) {
	deadline := time.Now().Add(60 * time.Second)
	var missing []interaction.Ask
	for {
		missing = missing[:0]
		delivered, extra = 0, 0
		for _, a := range listed {
			if !a.Status.Ended() {
				continue
			}
			switch n := ru.cb.delivered(a.ID); {
			case n == 0:
				missing = append(missing, a)
			default:
				delivered++
				extra += n - 1
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, a := range missing {
		vs = append(vs, violation{invariant: "every callback delivered", ask: a.ID, detail: fmt.Sprintf("ended %s at %v, no callback 60 s after the run", a.Status, a.EndedAt)})
	}
	ru.cb.mu.Lock()
	for _, b := range ru.cb.bad {
		vs = append(vs, violation{invariant: "every callback delivered", ask: "-", detail: "a callback was refused: " + b})
	}
	ru.cb.mu.Unlock()
	return delivered, extra, vs
}
