package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// These tests run several `slackask serve` processes on one PostgreSQL
// database against one Slack fake, as replicas behind a load balancer.
// They skip without SLACKASK_TEST_DATABASE_URL.

type replicaRig struct {
	t     testing.TB
	fake  *slackfake.Server
	db    string
	conns int      // SLACKASK_SOCKET_CONNECTIONS of each replica
	env   []string // added to each replica's environment
	reps  []*replica
	http  *http.Client
}

// replica is one serve process; addr and env (added to the rig's) stay
// the replica's across restarts.
type replica struct {
	addr string
	env  []string
	p    *proc
}

func newReplicaRig(t testing.TB, n, conns int, env ...string) *replicaRig {
	t.Helper()
	return newReplicaRigOn(t, pgtest.URL(t), n, conns, env...) // skips without SLACKASK_TEST_DATABASE_URL
}

// newReplicaRigOn starts n replicas on the database db (a postgres:// URL,
// or a SQLite file for one replica), one after another, each with its
// sockets connected before the next starts: the fake numbers sockets in
// connection order, so replica i holds sockets i*conns+1 … (i+1)*conns
// until one is restarted. env is added to each replica's environment.
func newReplicaRigOn(t testing.TB, db string, n, conns int, env ...string) *replicaRig {
	t.Helper()
	return newReplicaRigFake(t, db, n, conns, slackfake.Config{PingInterval: time.Second}, env...)
}

// newReplicaRigFake is newReplicaRigOn with the fake configured by cfg.
func newReplicaRigFake(t testing.TB, db string, n, conns int, cfg slackfake.Config, env ...string) *replicaRig {
	t.Helper()
	binary(t)
	fake, err := slackfake.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fake.AddUser(alice, "alice")
	fake.AddUser(bob, "bob")
	fake.AddChannel(channel, "asks")
	r := &replicaRig{t: t, fake: fake, db: db, conns: conns, env: env,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}}
	t.Cleanup(func() {
		r.http.CloseIdleConnections()
		fake.Close()
	})
	for range n {
		r.add()
	}
	return r
}

// add starts one more replica, with env added to the rig's, and waits
// until its sockets are connected.
func (r *replicaRig) add(env ...string) {
	r.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rep := &replica{addr: addr, env: env}
	r.reps = append(r.reps, rep)
	r.start(rep)
	if err := r.fake.WaitConnected(ctxT(r.t), len(r.reps)*r.conns); err != nil {
		r.t.Fatalf("replica %d: sockets never connected: %v", len(r.reps)-1, err)
	}
}

// start runs (or runs again) the replica's serve process and waits until
// it is ready.
func (r *replicaRig) start(rep *replica) {
	r.t.Helper()
	p := &proc{logs: &syncBuffer{}, base: "http://" + rep.addr}
	p.cmd = exec.Command(binary(r.t), "serve")
	p.cmd.Env = append(r.envBase(),
		"SLACKASK_HTTP_ADDR="+rep.addr, "SLACKASK_URL=http://"+rep.addr, "SLACKASK_DATABASE="+r.db,
		"SLACKASK_SOCKET_CONNECTIONS="+strconv.Itoa(r.conns))
	p.cmd.Env = append(append(p.cmd.Env, r.env...), rep.env...)
	p.cmd.Stderr, p.cmd.Stdout = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	rep.p = p
	r.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if r.t.Failed() {
			r.t.Logf("replica %s log (tail):\n%s", rep.addr, tail(p.logs.String(), 60))
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := r.http.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	r.t.Fatalf("replica %s never became ready:\n%s", rep.addr, p.logs.String())
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (r *replicaRig) envBase() []string {
	return append(cleanEnv(), "SLACK_BOT_TOKEN=xoxb-fake", "SLACK_APP_TOKEN=xapp-fake", "SLACK_API_URL="+r.fake.APIURL(),
		"SLACKASK_CHANNEL="+channel, "SLACKASK_LOG_LEVEL=info")
}

// cleanEnv is the test's environment without slackask's own variables.
func cleanEnv() []string {
	var out []string
	for _, kv := range (&exec.Cmd{}).Environ() {
		if !strings.HasPrefix(kv, "SLACKASK_") && !strings.HasPrefix(kv, "SLACK_") {
			out = append(out, kv)
		}
	}
	return out
}

// create posts an ask to replica i.
func (r *replicaRig) create(i int, in interaction.AskInput) interaction.Ask {
	r.t.Helper()
	b, _ := json.Marshal(in)
	resp, err := r.http.Post("http://"+r.reps[i].addr+"/v1/asks", "application/json", bytes.NewReader(b))
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a interaction.Ask
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 201 {
		r.t.Fatalf("create on replica %d: %d %v", i, resp.StatusCode, err)
	}
	return a
}

// get reads an ask from replica i, long-polling up to wait.
func (r *replicaRig) get(i int, id string, wait time.Duration) (interaction.Ask, error) {
	resp, err := r.http.Get(fmt.Sprintf("http://%s/v1/asks/%s?wait=%s", r.reps[i].addr, id, wait))
	if err != nil {
		return interaction.Ask{}, err
	}
	defer resp.Body.Close()
	var a interaction.Ask
	if resp.StatusCode != 200 {
		return a, fmt.Errorf("GET %s: %d", id, resp.StatusCode)
	}
	return a, json.NewDecoder(resp.Body).Decode(&a)
}

func (r *replicaRig) withdraw(i int, id string) error {
	req, _ := http.NewRequest(http.MethodDelete, fmt.Sprintf("http://%s/v1/asks/%s", r.reps[i].addr, id), nil)
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("withdraw %s: %d", id, resp.StatusCode)
	}
	return nil
}

// metric reads one unlabelled metric from replica i's /metrics.
func (r *replicaRig) metric(i int, name string) float64 {
	r.t.Helper()
	resp, err := r.http.Get("http://" + r.reps[i].addr + "/metrics")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	r.t.Fatalf("replica %d: no metric %s", i, name)
	return 0
}

func oneTap(id string) interaction.AskInput {
	return ask1(question(id, "Ship it?", "yes", "no"))
}

// Three replicas behave as one service: asks created on any replica are
// answered through whichever replica Slack hands each click to; each
// replica gets clicks; two people submitting at once on two replicas end
// the ask once (the other is told); a long-poll on one replica returns as
// soon as another ends the ask.
func TestReplicasActAsOne(t *testing.T) {
	r := newReplicaRig(t, 3, 1)
	ctx := ctxT(t)
	if err := r.fake.WaitConnected(ctx, 3); err != nil {
		t.Fatal(err)
	}
	p := r.fake.Person(alice)
	for i := range 12 {
		ask := r.create(i%3, oneTap("ship"))
		if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), []string{"yes", "no"}[i%2]); err != nil {
			t.Fatal(err)
		}
		got, err := r.get((i+1)%3, ask.ID, 10*time.Second)
		if err != nil || got.Status != interaction.StatusAnswered || got.Answer.Answers[0].Selected[0] != []string{"yes", "no"}[i%2] {
			t.Fatalf("ask %d: %+v %v", i, got, err)
		}
	}
	for i := range 3 {
		if up, kept := r.metric(i, "slackask_socket_connections"), r.metric(i, "slackask_socket_connections_kept"); up != 1 || kept != 1 {
			t.Fatalf("replica %d: /metrics says %v of %v sockets up, want 1 of 1", i, up, kept)
		}
		resp, err := r.http.Get("http://" + r.reps[i].addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		var ready struct {
			Status               string
			Sockets, SocketsKept int
		}
		err = json.NewDecoder(resp.Body).Decode(&ready)
		resp.Body.Close()
		if err != nil || ready.Status != "ok" || ready.Sockets != 1 || ready.SocketsKept != 1 {
			t.Fatalf("replica %d /readyz: %+v %v", i, ready, err)
		}
		if n := r.metric(i, "slackask_envelopes_total"); n < 2 {
			t.Fatalf("replica %d handled %v clicks of 12: not spread", i, n)
		}
	}
	if n := len(r.fake.Messages(channel)); n != 12 {
		t.Fatalf("%d messages for 12 asks", n)
	}

	// The last two submits, by two people at once: Slack's round robin
	// over three replicas' sockets hands consecutive envelopes to two
	// different replicas.
	for round := range 3 {
		ask := r.create(round%3, ask1(question("a", "Go?", "yes", "no"), question("b", "Where?", "dev", "prod")))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for k, who := range []string{alice, bob} {
			wg.Go(func() {
				_, errs[k] = r.fake.Person(who).Click(ctx, channel, ask.TS, control(0, "skip"))
			})
		}
		wg.Wait()
		// Both skips are stored; now both submit at once, each from the
		// message as their client shows it: the first submit's end may be
		// drawn before the second click leaves.
		var thaws []func()
		for _, who := range []string{alice, bob} {
			thaw, err := r.fake.Person(who).Freeze(channel, ask.TS)
			if err != nil {
				t.Fatal(err)
			}
			thaws = append(thaws, thaw)
		}
		for k, who := range []string{alice, bob} {
			wg.Go(func() {
				_, errs[k] = r.fake.Person(who).Click(ctx, channel, ask.TS, control(-1, "submit"))
			})
		}
		wg.Wait()
		for _, thaw := range thaws {
			thaw()
		}
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: submits %v", round, errs)
		}
		got, err := r.get(round%3, ask.ID, 10*time.Second)
		if err != nil || got.Status != interaction.StatusAnswered || got.AnsweredBy == nil {
			t.Fatalf("round %d: %+v %v", round, got, err)
		}
		loser := alice
		if got.AnsweredBy.ID == alice {
			loser = bob
		}
		if err := r.fake.WaitFor(ctx, func() bool {
			return slices.ContainsFunc(r.fake.Ephemerals(loser), func(e slackfake.Ephemeral) bool {
				return strings.Contains(strings.ToLower(e.Text+string(e.Blocks)), "already")
			})
		}); err != nil {
			t.Fatalf("round %d: %s was not told the ask had ended: %+v", round, loser, r.fake.Ephemerals(loser))
		}
	}

	// A long-poll on one replica, the end on another.
	var lat []time.Duration
	for i := range 30 {
		a, b := i%3, (i+1)%3
		ask := r.create(a, oneTap("wait"))
		type polled struct {
			at  time.Time
			ask interaction.Ask
			err error
		}
		done := make(chan polled, 1)
		go func() {
			got, err := r.get(a, ask.ID, 20*time.Second)
			done <- polled{time.Now(), got, err}
		}()
		// Give the GET time to park on replica a (were it not parked yet,
		// it would read the ended ask: correct, and a shorter figure).
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		if err := r.withdraw(b, ask.ID); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil || got.ask.Status != interaction.StatusAborted {
			t.Fatalf("long-poll on replica %d: %+v %v", a, got.ask, got.err)
		}
		lat = append(lat, max(got.at.Sub(start), 0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("end on replica B (DELETE sent) → long-poll on replica A returned, over %d asks: p50 %v, p99 %v, max %v",
		len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
}

// kill9 kills replica i with SIGKILL and waits for it.
func (r *replicaRig) kill9(i int) {
	r.t.Helper()
	p := r.reps[i].p
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// stop stops replica i as a deploy does (SIGTERM) and waits for it.
func (r *replicaRig) stop(i int) {
	r.t.Helper()
	p := r.reps[i].p
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		r.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		r.t.Fatalf("replica %d did not stop on SIGTERM", i)
	}
}

// One replica killed with SIGKILL while people answer 100 asks: every
// answer Slack saw acknowledged is stored, right; no message is posted
// twice; the deadlines of asks the dead replica created fire on the
// others.
func TestReplicaKilledWhileAnswering(t *testing.T) {
	r := newReplicaRig(t, 3, 2)
	ctx := ctxT(t)
	if err := r.fake.WaitConnected(ctx, 6); err != nil {
		t.Fatal(err)
	}
	const n = 100
	asks := make([]interaction.Ask, n)
	want := make([]string, n)
	for i := range asks {
		asks[i] = r.create(i%3, oneTap("ship"))
		want[i] = []string{"yes", "no"}[i%2]
	}
	var timed []interaction.Ask
	for range 6 {
		in := oneTap("late")
		in.Timeout = interaction.Duration(4 * time.Second)
		timed = append(timed, r.create(2, in))
	}
	deadline := time.Now().Add(4 * time.Second)

	var (
		acked, refused atomic.Int64
		killedAt       time.Time
		wg             sync.WaitGroup
		next           atomic.Int64
	)
	killed := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			p := r.fake.Person(alice)
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if i == n/3 {
					r.kill9(2)
					killedAt = time.Now()
					close(killed)
				}
				// The person clicks again until Slack shows the click
				// went through (an unacked click shows them an error).
				for try := 0; ; try++ {
					_, err := p.Select(ctx, channel, asks[i].TS, control(0, "select"), want[i])
					if err == nil {
						acked.Add(1)
						break
					}
					refused.Add(1)
					if try == 5 {
						t.Errorf("ask %d: click never acked: %v", i, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	<-killed
	for i, a := range asks {
		got, err := r.get(i%2, a.ID, 10*time.Second)
		if err != nil || got.Status != interaction.StatusAnswered || got.Answer.Answers[0].Selected[0] != want[i] {
			t.Fatalf("ask %d after the kill: %s %+v %v", i, got.Status, got.Answer, err)
		}
	}
	var expiredAt []time.Duration
	for _, a := range timed {
		got, err := r.get(0, a.ID, 30*time.Second)
		if err != nil || got.Status != interaction.StatusExpired {
			t.Fatalf("timed ask of the dead replica: %s %v", got.Status, err)
		}
		expiredAt = append(expiredAt, time.Since(deadline))
	}
	if msgs := len(r.fake.Messages(channel)); msgs != n+len(timed) {
		t.Fatalf("%d messages for %d asks: one was posted twice (or lost)", msgs, n+len(timed))
	}
	t.Logf("kill -9 of 1 of 3 replicas during %d answers: %d clicks acked, %d shown an error and clicked again; "+
		"deadlines of the dead replica's asks fired elsewhere %v after they passed (%v after the kill)",
		n, acked.Load(), refused.Load(), slices.Max(expiredAt), time.Since(killedAt).Round(time.Millisecond))
}

// A rolling restart of all three replicas (SIGTERM, start again, next)
// while people keep clicking: every click is acked within Slack's 3 s.
func TestRollingRestartLosesNoClick(t *testing.T) {
	r := newReplicaRig(t, 3, 2)
	ctx := ctxT(t)
	if err := r.fake.WaitConnected(ctx, 6); err != nil {
		t.Fatal(err)
	}
	var asks []interaction.Ask
	for i := range 12 {
		asks = append(asks, r.create(i%3, ask1(question("a", "Go?", "yes", "no"), question("b", "Where?", "dev", "prod"))))
	}
	stopClicks := make(chan struct{})
	var clicks, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			p := r.fake.Person([]string{alice, bob, alice}[w])
			for i := w; ; i++ {
				select {
				case <-stopClicks:
					return
				default:
				}
				a := asks[i%len(asks)]
				if _, err := p.Select(ctx, channel, a.TS, control(i%2, "select"), []string{"yes", "no", "dev", "prod"}[i%2*2+i/2%2]); err != nil {
					failed.Add(1)
				}
				clicks.Add(1)
			}
		})
	}
	for i := range r.reps {
		before := clicks.Load()
		if err := r.fake.WaitFor(ctx, func() bool { return clicks.Load() > before+20 }); err != nil {
			t.Fatal("clicks stalled")
		}
		r.stop(i)
		r.start(r.reps[i])
	}
	before := clicks.Load()
	if err := r.fake.WaitFor(ctx, func() bool { return clicks.Load() > before+20 }); err != nil {
		t.Fatal("clicks stalled after the restarts")
	}
	close(stopClicks)
	wg.Wait()
	unacked := r.fake.UnackedInteractions()
	t.Logf("rolling restart of 3 replicas × 2 sockets: %d clicks, %d not acked within 3 s, %d failed",
		clicks.Load(), unacked, failed.Load())
	// A stopping replica acks everything it read, on the connection it
	// came on, and closes its connections one at a time, each with a
	// close handshake right after its last ack. An envelope Slack writes
	// in the instant before it reads a close frame cannot be acked on that
	// connection (a websocket sends nothing after its close frame): its
	// ack goes out on the replica's next connection or, for its last one,
	// through the database on another replica's (bot/relay.go).
	for _, f := range r.fake.FailedInteractions() {
		if !f.Delivered {
			t.Fatalf("a click found no connection for 3 s during the restarts: %+v", f)
		}
	}
	if unacked != 0 || failed.Load() != 0 {
		t.Fatalf("%d clicks not acked within 3 s (%d failed) over %d restarts: %+v", unacked, failed.Load(), len(r.reps), r.fake.FailedInteractions())
	}
}

// A burst of asks to one rate-limited channel through two replicas on one
// PostgreSQL database: every create answers at once, and every ask is
// posted once, in the order created, though the replica draining the
// queue is killed (-9) on the way (issue 29 item 0).
func TestReplicasDrainARateLimitedBurstInOrder(t *testing.T) {
	r := newReplicaRigFake(t, pgtest.URL(t), 2, 1, slackfake.Config{PingInterval: time.Second, PostsPerSecondPerChannel: 2})
	const n = 16
	var created []interaction.Ask
	firstQueued := -1
	for i := range n {
		a := r.create(i%2, oneTap(fmt.Sprintf("burst %d", i)))
		switch {
		case a.Posting == interaction.PostingQueued && a.TS == "":
			if firstQueued < 0 {
				firstQueued = i
			}
		case firstQueued >= 0:
			t.Fatalf("ask %d posted at once (ts %q) after ask %d was queued: it overtook the queue", i, a.TS, firstQueued)
		}
		created = append(created, a)
	}
	if firstQueued < 0 || firstQueued > n/2 {
		t.Fatalf("first queued ask: %d; the channel takes 2 posts a second after a burst of 3", firstQueued)
	}
	time.Sleep(2 * time.Second) // a few of the queue's turns
	r.kill9(0)
	posted := func() []string {
		var ids []string
		for _, m := range r.fake.Messages(channel) {
			if id := blocks.MessageAskID(m.Blocks); id != "" {
				ids = append(ids, id)
			}
		}
		return ids
	}
	// After a kill mid-post the head waits out postGrace (45 s) before it
	// is looked for and posted.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.fake.WaitFor(ctx, func() bool { return len(posted()) >= n }); err != nil {
		t.Fatalf("%d of %d posted", len(posted()), n)
	}
	// One more ask, posted after them: anything late (a duplicate) would
	// have landed before it.
	last := r.create(1, oneTap("after the burst"))
	created = append(created, last)
	if err := r.fake.WaitFor(ctx, func() bool { return slices.Contains(posted(), last.ID) }); err != nil {
		t.Fatal("the ask after the burst was never posted")
	}
	want := make([]string, len(created))
	for i, a := range created {
		want[i] = a.ID
	}
	if got := posted(); !slices.Equal(got, want) {
		t.Fatalf("posted %v,\nwant each once, in creation order, %v", got, want)
	}
	for _, a := range created {
		got, err := r.get(1, a.ID, 0)
		if err != nil || got.TS == "" || got.Posting != "" {
			t.Fatalf("%s: %+v (%v)", a.ID, got, err)
		}
	}
}
