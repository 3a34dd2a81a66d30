package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// BenchmarkReplicas runs, once per configuration (SQLite with one replica,
// PostgreSQL with one and with three), real `slackask serve` processes
// against one Slack fake and measures: asks created per second over HTTP,
// the ack latency of clicks, the answer latency (Submit → a long-poll
// returning, on another replica than the one that got the Submit when
// there are several), an end on one replica → a long-poll on another
// returning, a kill -9's due timers firing on the other replicas, and the
// clicks lost in a rolling restart. It prints the results as a Markdown
// table. Run it with:
//
//	SLACKASK_TEST_DATABASE_URL=postgres://… go test ./cmd/slackask -run '^$' -bench BenchmarkReplicas -benchtime 1x
//
// SLACKASK_BENCH_REPLICAS_SMALL=1 shrinks every phase (a smoke run).
func BenchmarkReplicas(b *testing.B) {
	if os.Getenv(pgtest.EnvVar) == "" {
		b.Skip(pgtest.EnvVar + " not set: the replica benchmark compares SQLite with PostgreSQL")
	}
	size := replicaBenchFull
	if os.Getenv("SLACKASK_BENCH_REPLICAS_SMALL") != "" {
		size = replicaBenchSmall
	}
	var rows []replicaBenchRow
	for _, c := range replicaBenchConfigs {
		b.Run(c.name, func(b *testing.B) {
			var row replicaBenchRow
			for range b.N {
				db := filepath.Join(b.TempDir(), "slackask.db")
				if c.postgres {
					db = pgtest.URL(b)
				}
				row = runReplicaBench(b, db, c.n, size)
			}
			row.name = c.name
			row.report(b)
			rows = append(rows, row)
		})
	}
	// The table goes to stdout: a parent benchmark's log is not printed.
	fmt.Print("\n" + replicaBenchTable(rows, size) + "\n")
}

// replicaBenchConfigs are the configurations the replica benchmarks
// compare: one process on SQLite, one and three replicas on PostgreSQL.
var replicaBenchConfigs = []struct {
	name     string
	postgres bool
	n        int
}{{"sqlite-1", false, 1}, {"postgres-1", true, 1}, {"postgres-3", true, 3}}

// replicaBenchSize sets how much each phase does.
type replicaBenchSize struct {
	creates, creators        int // asks created for the ack and answer phases; concurrent clients
	clickers, clicksEach     int // people clicking selects at once; clicks each
	answers                  int // asks answered one after another
	endPolls                 int // asks ended on one replica, long-polled on another
	timers                   int // asks with a deadline on the replica killed
	restartAsks, restartRate int // one-tap asks for the rolling restart; clicks per second
}

var (
	// 300 end polls: with 50 the p99 was the maximum, one sample.
	replicaBenchFull  = replicaBenchSize{400, 16, 8, 100, 100, 300, 20, 1500, 100}
	replicaBenchSmall = replicaBenchSize{40, 8, 4, 10, 10, 10, 4, 600, 50}
)

type replicaBenchRow struct {
	name     string
	replicas int
	createMS time.Duration // wall time of the creates
	created  int
	acks     []time.Duration
	answers  []time.Duration
	crossAns int // answers long-polled on another replica than the Submit's
	endPoll  []time.Duration
	deleteRT []time.Duration // the DELETE that ends the ask: sent → response read
	// failover (several replicas only)
	timerLate []time.Duration // deadline → the expired ask read on a surviving replica
	sinceKill time.Duration   // kill → the last of them read
	timerMsgs time.Duration   // the last deadline → every message shows the end
	// rolling restart
	restartClicks, restartAcked, restartFailed, restartUndelivered, restartLost, restartStored int
	restartAckMax                                                                              time.Duration
	// of the failed clicks, those stored nonetheless (the retry found the ask answered)
	restartHandledUnacked int
	restartOther          string // clicks that failed otherwise than by a missed ack
	// SIGTERM → exit; start → sockets connected, per replica
	restartStop, restartStart []time.Duration
}

func (row replicaBenchRow) report(b *testing.B) {
	b.ReportMetric(float64(row.created)/row.createMS.Seconds(), "asks/s")
	b.ReportMetric(ms(pct(row.acks, 99)), "ack-p99-ms")
	b.ReportMetric(ms(pct(row.answers, 99)), "answer-p99-ms")
	b.ReportMetric(ms(pct(row.endPoll, 99)), "end-poll-p99-ms")
	if row.timerLate != nil {
		b.ReportMetric(slices.Max(row.timerLate).Seconds(), "failover-max-s")
	}
	b.ReportMetric(float64(row.restartFailed), "restart-clicks-failed")
	b.ReportMetric(float64(row.restartLost), "restart-answers-lost")
}

// pct is the nearest-rank percentile q of d (zero when empty).
func pct(d []time.Duration, q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*q + 99) / 100
	return s[max(0, min(i-1, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtMS(d []time.Duration) string {
	if len(d) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f / %.2f / %.2f", ms(pct(d, 50)), ms(pct(d, 99)), ms(slices.Max(d)))
}

func replicaBenchTable(rows []replicaBenchRow, size replicaBenchSize) string {
	var sb strings.Builder
	sb.WriteString("| | " + strings.Join(mapRows(rows, func(r replicaBenchRow) string { return r.name }), " | ") + " |\n")
	sb.WriteString("|---|" + strings.Repeat("---|", len(rows)) + "\n")
	line := func(label string, f func(r replicaBenchRow) string) {
		sb.WriteString("| " + label + " | " + strings.Join(mapRows(rows, f), " | ") + " |\n")
	}
	line(fmt.Sprintf("asks created/s (%d asks, %d clients)", size.creates, size.creators), func(r replicaBenchRow) string {
		return fmt.Sprintf("%.0f", float64(r.created)/r.createMS.Seconds())
	})
	line(fmt.Sprintf("ack ms p50 / p99 / max (%d people × %d select clicks)", size.clickers, size.clicksEach), func(r replicaBenchRow) string { return fmtMS(r.acks) })
	line(fmt.Sprintf("answer ms p50 / p99 / max, Submit sent → long-poll returned (%d asks)", size.answers), func(r replicaBenchRow) string {
		s := fmtMS(r.answers)
		if r.replicas > 1 {
			s += fmt.Sprintf(" (%d of %d polled on another replica)", r.crossAns, len(r.answers))
		}
		return s
	})
	line(fmt.Sprintf("end → long-poll returned, ms p50 / p99 / max (%d asks; DELETE sent on one replica, poll on another)", size.endPolls), func(r replicaBenchRow) string {
		s := fmtMS(r.endPoll)
		if r.replicas == 1 {
			s += " (same replica)"
		}
		// The slowest sample's DELETE round trip tells a slow commit (the
		// notification goes out at commit) from a slow notification path.
		slowest := 0
		for k, d := range r.endPoll {
			if d > r.endPoll[slowest] {
				slowest = k
			}
		}
		// After the DELETE's response (its commit, and so the NOTIFY, came
		// before it): the notification path's own share, at most.
		after := make([]time.Duration, len(r.endPoll))
		for k, d := range r.endPoll {
			after[k] = max(d-r.deleteRT[k], 0)
		}
		return s + fmt.Sprintf(" (the DELETE's own round trip: p50 %.2f / p99 %.2f; in the slowest sample %.2f) (poll returned after the DELETE's response: p50 / p99 / max %s)",
			ms(pct(r.deleteRT, 50)), ms(pct(r.deleteRT, 99)), ms(r.deleteRT[slowest]), fmtMS(after))
	})
	line(fmt.Sprintf("failover: kill -9 → its %d due timers fired elsewhere, s after the deadline p50 / max", size.timers), func(r replicaBenchRow) string {
		if r.timerLate == nil {
			return "– (no other replica)"
		}
		return fmt.Sprintf("%.2f / %.2f (last read %.2f s after the kill; every message updated %.2f s after the last deadline)",
			pct(r.timerLate, 50).Seconds(), slices.Max(r.timerLate).Seconds(), r.sinceKill.Seconds(), r.timerMsgs.Seconds())
	})
	line("rolling restart: clicks sent / acked / failed in front of the person (not acked in 3 s) / of which found no socket / of which stored anyway", func(r replicaBenchRow) string {
		return fmt.Sprintf("%d / %d / %d / %d / %d", r.restartClicks, r.restartAcked, r.restartFailed, r.restartUndelivered, r.restartHandledUnacked)
	})
	line("rolling restart: acked clicks whose answer is not stored (lost) / answers stored", func(r replicaBenchRow) string {
		return fmt.Sprintf("%d / %d", r.restartLost, r.restartStored)
	})
	line("rolling restart: clicks that failed otherwise (not an ack timeout)", func(r replicaBenchRow) string { return cmp.Or(r.restartOther, "0") })
	line("rolling restart: slowest ack, ms", func(r replicaBenchRow) string { return fmt.Sprintf("%.0f", ms(r.restartAckMax)) })
	line("rolling restart: SIGTERM → exit / start → sockets connected, s (slowest replica)", func(r replicaBenchRow) string {
		return fmt.Sprintf("%.2f / %.2f", slices.Max(r.restartStop).Seconds(), slices.Max(r.restartStart).Seconds())
	})
	return sb.String()
}

func mapRows(rows []replicaBenchRow, f func(replicaBenchRow) string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

// benchCtx bounds one phase.
func benchCtx(b *testing.B, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	b.Cleanup(cancel)
	return ctx
}

// tryCreate posts an ask to replica i; safe in any goroutine.
func (r *replicaRig) tryCreate(i int, in interaction.AskInput) (interaction.Ask, error) {
	body, _ := json.Marshal(in)
	resp, err := r.http.Post("http://"+r.reps[i].addr+"/v1/asks", "application/json", bytes.NewReader(body))
	if err != nil {
		return interaction.Ask{}, err
	}
	defer resp.Body.Close()
	var a interaction.Ask
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusCreated {
		return a, fmt.Errorf("create on replica %d: %d %v", i, resp.StatusCode, err)
	}
	return a, nil
}

// createMany creates n asks from input(k) with c concurrent clients,
// spread round robin over the replicas, and returns them in order k.
func (r *replicaRig) createMany(b *testing.B, n, c int, input func(k int) interaction.AskInput) ([]interaction.Ask, time.Duration) {
	b.Helper()
	out := make([]interaction.Ask, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for range c {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= n {
					return
				}
				a, err := r.tryCreate(k%len(r.reps), input(k))
				if err != nil {
					failed.Store(err)
					return
				}
				out[k] = a
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return out, took
}

// socketOwners maps each live socket of the fake to the replica holding
// it: replicas started in order, each with its sockets connected before
// the next (newReplicaRigOn).
func (r *replicaRig) socketOwners() map[int]int {
	owners := map[int]int{}
	for k, s := range r.fake.Sockets() {
		owners[s.ID] = k / r.conns
	}
	return owners
}

// lastSocket returns the socket that got the envelope sent since before
// (a snapshot of Sockets), or 0 when none or several did.
func (r *replicaRig) lastSocket(before []slackfake.SocketInfo) int {
	got := 0
	for _, s := range r.fake.Sockets() {
		for _, o := range before {
			if o.ID == s.ID && s.Delivered > o.Delivered {
				if got != 0 {
					return 0
				}
				got = s.ID
			}
		}
	}
	return got
}

func twoSelects() interaction.AskInput {
	return ask1(question("a", "Go?", "yes", "no"), question("b", "Where?", "dev", "prod"))
}

func runReplicaBench(b *testing.B, db string, n int, size replicaBenchSize) replicaBenchRow {
	b.Helper()
	const conns = 2 // SLACKASK_SOCKET_CONNECTIONS' default
	r := newReplicaRigOn(b, db, n, conns)
	row := replicaBenchRow{replicas: n}
	var people []string
	for k := range max(size.clickers, 4) {
		id := fmt.Sprintf("U0BENCH%02d", k)
		r.fake.AddUser(id, fmt.Sprintf("person%d", k))
		people = append(people, id)
	}
	r.fake.AddUser("U0ANSWER", "answerer")

	// Asks created per second.
	asks, took := r.createMany(b, size.creates, size.creators, func(int) interaction.AskInput { return twoSelects() })
	row.created, row.createMS = len(asks), took

	// Ack latency: people change the selects of the asks, each waiting for
	// the ack of a click before the next, as people do.
	ctx := benchCtx(b, 2*time.Minute)
	before := len(r.fake.AckLatencies())
	var wg sync.WaitGroup
	var clickErr atomic.Value
	for w := range size.clickers {
		wg.Go(func() {
			p := r.fake.Person(people[w])
			for k := range size.clicksEach {
				i := w*size.clicksEach + k
				a := asks[(i*7)%len(asks)]
				if _, err := p.Select(ctx, channel, a.TS, control(i%2, "select"), []string{"yes", "no", "dev", "prod"}[i%2*2+i/2%2]); err != nil {
					clickErr.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := clickErr.Load().(error); err != nil {
		b.Fatal("ack phase: ", err)
	}
	row.acks = r.fake.AckLatencies()[before:]

	// Answer latency: one person at a time picks in both selects and
	// presses Submit; the caller long-polls on the replica after the one
	// whose socket gets the Submit (the fake's round robin: the next live
	// socket after the one that got the previous envelope).
	owners := r.socketOwners()
	answerer := r.fake.Person("U0ANSWER")
	for k := range size.answers {
		a := asks[len(asks)-1-k]
		if _, err := answerer.Select(ctx, channel, a.TS, control(0, "select"), "yes"); err != nil {
			b.Fatal(err)
		}
		snap := r.fake.Sockets()
		if _, err := answerer.Select(ctx, channel, a.TS, control(1, "select"), "prod"); err != nil {
			b.Fatal(err)
		}
		pollOn := 0
		if n > 1 {
			last := r.lastSocket(snap)
			socks := r.fake.Sockets() // in id order, as the fake's round robin goes
			nextSock := socks[0].ID
			for _, s := range socks {
				if s.ID > last {
					nextSock = s.ID
					break
				}
			}
			pollOn = (owners[nextSock] + 1) % n
		}
		type polled struct {
			at  time.Time
			ask interaction.Ask
			err error
		}
		done := make(chan polled, 1)
		go func() {
			got, err := r.get(pollOn, a.ID, 20*time.Second)
			done <- polled{time.Now(), got, err}
		}()
		time.Sleep(20 * time.Millisecond) // people pause before Submit; the poll parks meanwhile
		snap = r.fake.Sockets()
		if _, err := answerer.Click(ctx, channel, a.TS, control(-1, "submit")); err != nil {
			b.Fatal(err)
		}
		sent := r.fake.LastSent()
		got := <-done
		if got.err != nil || got.ask.Status != interaction.StatusAnswered {
			b.Fatalf("answer %d: %s %v", k, got.ask.Status, got.err)
		}
		if s := r.lastSocket(snap); n > 1 && s != 0 && owners[s] != pollOn {
			row.crossAns++
		}
		row.answers = append(row.answers, max(got.at.Sub(sent), 0))
	}

	// An end on one replica → a long-poll on another returning: the polls
	// park first, then the asks are withdrawn one after another.
	ends, _ := r.createMany(b, size.endPolls, size.creators, func(int) interaction.AskInput { return oneTap("wait") })
	returned := make([]chan time.Time, len(ends))
	for k, a := range ends {
		returned[k] = make(chan time.Time, 1)
		go func() {
			got, err := r.get(k%n, a.ID, 30*time.Second)
			if err != nil || got.Status != interaction.StatusAborted {
				b.Errorf("long-poll %d: %s %v", k, got.Status, err)
			}
			returned[k] <- time.Now()
		}()
	}
	time.Sleep(300 * time.Millisecond) // the polls park (one that did not yet would read the ended ask: a shorter figure)
	for k, a := range ends {
		start := time.Now()
		if err := r.withdraw((k+1)%n, a.ID); err != nil {
			b.Fatal(err)
		}
		row.deleteRT = append(row.deleteRT, time.Since(start))
		row.endPoll = append(row.endPoll, max((<-returned[k]).Sub(start), 0))
	}

	// Failover: asks with a short deadline created through the last
	// replica, which is killed a second before they come due: their
	// expiry must fire on the others (found by their due-dispatcher's
	// poll; none was claimed yet).
	if n > 1 {
		const timeout = 3 * time.Second
		dead := n - 1
		var timed []interaction.Ask
		for range size.timers {
			in := oneTap("late")
			in.Timeout = interaction.Duration(timeout)
			timed = append(timed, r.create(dead, in))
		}
		time.Sleep(time.Until(timed[0].ExpiresAt.Add(-time.Second)))
		r.kill9(dead)
		killed := time.Now()
		late := make([]time.Duration, len(timed))
		var lastRead time.Time
		var mu sync.Mutex
		for k, a := range timed {
			wg.Go(func() {
				got, err := r.get(k%dead, a.ID, 40*time.Second)
				at := time.Now()
				if err != nil || got.Status != interaction.StatusExpired {
					b.Errorf("timed ask %d of the killed replica: %s %v", k, got.Status, err)
					return
				}
				mu.Lock()
				late[k] = max(at.Sub(*a.ExpiresAt), 0)
				if at.After(lastRead) {
					lastRead = at
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		row.timerLate, row.sinceKill = late, lastRead.Sub(killed)
		// The survivors also bring the messages in step: none shows its
		// controls any more.
		if err := r.fake.WaitFor(benchCtx(b, 40*time.Second), func() bool {
			for _, a := range timed {
				if m, _ := r.fake.Message(channel, a.TS); strings.Contains(string(m.Blocks), `"type":"actions"`) {
					return false
				}
			}
			return true
		}); err != nil {
			b.Fatal("the expired asks' messages were never updated")
		}
		row.timerMsgs = time.Since(*timed[len(timed)-1].ExpiresAt)
		r.start(r.reps[dead])
		if err := r.fake.WaitConnected(benchCtx(b, 20*time.Second), n*conns); err != nil {
			b.Fatal(err)
		}
	}

	// Rolling restart: people keep answering one-tap asks (a click is the
	// answer) at a steady pace while each replica in turn is stopped
	// (SIGTERM) and started again; a click the person saw fail is clicked
	// again, as people do.
	pool, _ := r.createMany(b, size.restartAsks, size.creators, func(int) interaction.AskInput { return oneTap("ship") })
	clicked := make([]string, len(pool)) // the answer of each acked click
	var (
		next, clicks, acked, slowest atomic.Int64
		handledUnacked               atomic.Int64 // failed clicks whose answer the retry found stored
		otherErrs                    atomic.Int64
		otherErr                     atomic.Value
		ranOut                       atomic.Bool
		stop                         = make(chan struct{})
		unackedBefore                = r.fake.UnackedInteractions()
		failedBefore                 = len(r.fake.FailedInteractions())
		restartCtx                   = benchCtx(b, 3*time.Minute)
	)
	const clickers = 4
	interval := time.Duration(clickers) * time.Second / time.Duration(size.restartRate)
	for w := range clickers {
		wg.Go(func() {
			p := r.fake.Person(people[w])
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				k := int(next.Add(1)) - 1
				if k >= len(pool) {
					ranOut.Store(true)
					return
				}
				want := []string{"yes", "no"}[k%2]
				for try := 0; try < 5; try++ {
					t0 := time.Now()
					_, err := p.Select(restartCtx, channel, pool[k].TS, control(0, "select"), want)
					for d := int64(time.Since(t0)); ; {
						if old := slowest.Load(); d <= old || slowest.CompareAndSwap(old, d) {
							break
						}
					}
					if try > 0 && errors.Is(err, slackfake.ErrNoMatch) {
						// The click the person saw fail was handled after
						// all: the message shows the answer, not the select.
						handledUnacked.Add(1)
						clicked[k] = want
						break
					}
					clicks.Add(1)
					if err == nil {
						acked.Add(1)
						clicked[k] = want
						break
					}
					if !errors.Is(err, slackfake.ErrAckTimeout) {
						otherErrs.Add(1)
						otherErr.Store(err)
					}
				}
			}
		})
	}
	// Clicks go on for a second before the first restart, between
	// restarts and after the last.
	wait := func(d time.Duration) { time.Sleep(d) }
	wait(time.Second)
	for i := range r.reps {
		t0 := time.Now()
		r.stop(i)
		t1 := time.Now()
		r.start(r.reps[i])
		if err := r.fake.WaitConnected(restartCtx, n*conns); err != nil {
			b.Fatal(err)
		}
		row.restartStop = append(row.restartStop, t1.Sub(t0))
		row.restartStart = append(row.restartStart, time.Since(t1))
		wait(time.Second)
	}
	close(stop)
	wg.Wait()
	if ranOut.Load() {
		b.Fatalf("rolling restart: the %d asks ran out before the restarts ended", len(pool))
	}
	if err, _ := otherErr.Load().(error); err != nil {
		row.restartOther = fmt.Sprintf("%d, e.g. %v", otherErrs.Load(), err)
	}
	row.restartClicks, row.restartAcked, row.restartHandledUnacked = int(clicks.Load()), int(acked.Load()), int(handledUnacked.Load())
	row.restartFailed = r.fake.UnackedInteractions() - unackedBefore
	for _, f := range r.fake.FailedInteractions()[failedBefore:] {
		if !f.Delivered {
			row.restartUndelivered++
		}
	}
	row.restartAckMax = time.Duration(slowest.Load())
	// Every acked click's answer is stored, with the value clicked.
	var lost, stored atomic.Int64
	var check atomic.Int64
	for range size.creators {
		wg.Go(func() {
			for {
				k := int(check.Add(1)) - 1
				if k >= len(pool) {
					return
				}
				if clicked[k] == "" {
					continue
				}
				got, err := r.get(k%n, pool[k].ID, 10*time.Second)
				if err == nil && got.Status == interaction.StatusAnswered && got.Answer != nil && got.Answer.Answers[0].Selected[0] == clicked[k] {
					stored.Add(1)
				} else {
					lost.Add(1)
				}
			}
		})
	}
	wg.Wait()
	row.restartLost, row.restartStored = int(lost.Load()), int(stored.Load())
	posted := size.creates + size.endPolls + len(pool)
	if n > 1 {
		posted += size.timers
	}
	if got := len(r.fake.Messages(channel)); got != posted {
		b.Errorf("%d messages posted for %d asks: one was posted twice or not at all", got, posted)
	}
	return row
}
