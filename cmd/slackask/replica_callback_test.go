package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackask/slackask/client"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/postgres"
)

// These tests deliver callbacks from three `slackask serve` replicas on
// one PostgreSQL database (see replica_test.go): the delivery is a duty of
// the due dispatcher, claimed through the store, so any replica may make
// any attempt. They skip without SLACKASK_TEST_DATABASE_URL.

const replicaCallbackSecret = "replica-callback-secret"

// callbackEnv lets each replica sign callbacks and reach the test's
// receiver on 127.0.0.1.
func callbackEnv() []string {
	return []string{"SLACKASK_CALLBACK_SECRET=" + replicaCallbackSecret, "SLACKASK_CALLBACK_ALLOW_PRIVATE=true"}
}

// callbackSink is a callback receiver for replica tests. It checks every
// signature with client.VerifyCallback, tells which replica sent each
// request (the process holding the client end of its connection), and
// answers what answer returns for it (which may block until the request's
// context ends).
type callbackSink struct {
	srv    *httptest.Server
	pids   []int // the replicas' process ids, by replica index
	answer func(r *http.Request, h sinkHit) int

	mu        sync.Mutex
	hits      map[string][]sinkHit         // every signed request, by ask id
	delivered map[string][]interaction.Ask // the bodies answered 2xx, by ask id
	bad       []string                     // the refused signatures, why
}

// sinkHit is one request the sink received.
type sinkHit struct {
	attempt int // 1 for the ask's first request
	from    int // the sending replica's index, -1 when not found
	status  int // what the sink answered; 0 while it is held
}

// newCallbackSink starts a receiver for the replicas of r; answer nil
// answers 204 to every request.
func newCallbackSink(t *testing.T, r *replicaRig, answer func(*http.Request, sinkHit) int) *callbackSink {
	t.Helper()
	s := newCallbackSinkUnstarted(t, answer)
	s.start(r)
	return s
}

// newCallbackSinkUnstarted is newCallbackSink for replicas that start
// later, with its URL: start it with them.
func newCallbackSinkUnstarted(t *testing.T, answer func(*http.Request, sinkHit) int) *callbackSink {
	if answer == nil {
		answer = func(*http.Request, sinkHit) int { return http.StatusNoContent }
	}
	s := &callbackSink{answer: answer, hits: map[string][]sinkHit{}, delivered: map[string][]interaction.Ask{}}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// start serves requests from the replicas of r.
func (s *callbackSink) start(r *replicaRig) {
	for _, rep := range r.reps {
		s.pids = append(s.pids, rep.p.cmd.Process.Pid)
	}
	s.srv.Start()
}

func (s *callbackSink) url() string { return "http://" + s.srv.Listener.Addr().String() + "/hook" }

func (s *callbackSink) serve(w http.ResponseWriter, r *http.Request) {
	body, err := client.VerifyCallback([]byte(replicaCallbackSecret), r)
	var a interaction.Ask
	if err == nil {
		err = json.Unmarshal(body, &a)
	}
	if err == nil && (a.ID == "" || a.ID != r.Header.Get("X-Slackask-Delivery")) {
		err = fmt.Errorf("body id %q, delivery header %q", a.ID, r.Header.Get("X-Slackask-Delivery"))
	}
	if err != nil {
		s.mu.Lock()
		s.bad = append(s.bad, err.Error())
		s.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	h := sinkHit{from: s.sender(r)}
	s.mu.Lock()
	h.attempt = len(s.hits[a.ID]) + 1
	s.hits[a.ID] = append(s.hits[a.ID], h)
	s.mu.Unlock()

	code := s.answer(r, h)

	s.mu.Lock()
	s.hits[a.ID][h.attempt-1].status = code
	if code/100 == 2 {
		s.delivered[a.ID] = append(s.delivered[a.ID], a)
	}
	s.mu.Unlock()
	w.WriteHeader(code)
}

// sender is the index of the replica whose process holds the client end
// of r's connection, -1 when none does (or not on Linux).
func (s *callbackSink) sender(r *http.Request) int {
	pid, err := connOwner(r.RemoteAddr, r.Host, s.pids)
	if err != nil {
		return -1
	}
	for i, p := range s.pids {
		if p == pid {
			return i
		}
	}
	return -1
}

// state returns copies of what the sink saw of the ask id.
func (s *callbackSink) state(id string) (hits []sinkHit, delivered []interaction.Ask) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sinkHit(nil), s.hits[id]...), append([]interaction.Ask(nil), s.delivered[id]...)
}

func (s *callbackSink) refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bad...)
}

// waitDelivered waits until the ask id was delivered (answered 2xx) at
// least once and returns its first delivered body.
func (s *callbackSink) waitDelivered(t *testing.T, id string, within time.Duration) interaction.Ask {
	t.Helper()
	waitUntil(t, "the callback of "+id+" delivered", within, func() bool { _, d := s.state(id); return len(d) > 0 })
	_, d := s.state(id)
	return d[0]
}

// connOwner returns which of pids holds the client end of the TCP
// connection from client to server (host:port on 127.0.0.1), found through
// /proc: the socket's inode in /proc/net/tcp, then a descriptor of that
// inode in /proc/PID/fd.
func connOwner(client, server string, pids []int) (int, error) {
	if runtime.GOOS != "linux" {
		return 0, errors.New("conn owner: needs Linux's /proc")
	}
	_, cport, err := net.SplitHostPort(client)
	if err != nil {
		return 0, fmt.Errorf("conn owner: %w", err)
	}
	_, sport, err := net.SplitHostPort(server)
	if err != nil {
		return 0, fmt.Errorf("conn owner: %w", err)
	}
	port := func(addr string) string { // "0100007F:1F90" → "8080"
		i := strings.LastIndexByte(addr, ':')
		n, _ := strconv.ParseUint(addr[i+1:], 16, 16)
		return strconv.FormatUint(n, 10)
	}
	var inode string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			fs := strings.Fields(line)
			if len(fs) > 9 && strings.Contains(fs[1], ":") && port(fs[1]) == cport && port(fs[2]) == sport {
				inode = fs[9]
			}
		}
	}
	if inode == "" || inode == "0" {
		return 0, fmt.Errorf("conn owner: no socket from port %s to %s", cport, sport)
	}
	want := "socket:[" + inode + "]"
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, _ := os.ReadDir(dir) // a dead process has none
		for _, fd := range fds {
			if l, _ := os.Readlink(dir + "/" + fd.Name()); l == want {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("conn owner: socket %s held by none of %v", inode, pids)
}

// storedCallback reads the delivery state of ask id from the replicas'
// database.
func storedCallback(t *testing.T, db, id string) store.Callback {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Callback == nil {
		t.Fatalf("ask %s: no callback state stored", id)
	}
	return *rec.Callback
}

// envelopes is how many Socket Mode envelopes each replica handled.
func (r *replicaRig) envelopes() []float64 {
	out := make([]float64, len(r.reps))
	for i := range r.reps {
		out[i] = r.metric(i, "slackask_envelopes_total")
	}
	return out
}

// TestReplicasDeliverCallbackOnce: asks with a callbackUrl are created on
// replica 0 and answered through clicks that Slack hands to whichever
// replica; each callback arrives signed, with the ask as GET returns it,
// exactly once: a later ask's callback, made after them, arrives while no
// second delivery of theirs has.
func TestReplicasDeliverCallbackOnce(t *testing.T) {
	r := newReplicaRig(t, 3, 1, callbackEnv()...)
	sink := newCallbackSink(t, r, nil)
	ctx := ctxT(t)
	p := r.fake.Person(alice)

	var asks []interaction.Ask
	for i := range 3 {
		in := oneTap("ship")
		in.CallbackURL = sink.url()
		ask := r.create(0, in)
		before := r.envelopes()
		if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), "yes"); err != nil {
			t.Fatal(err)
		}
		clicked := -1
		for k, n := range r.envelopes() {
			if n > before[k] {
				clicked = k
			}
		}
		got := sink.waitDelivered(t, ask.ID, 20*time.Second)
		want, err := r.get(2, ask.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if mustJSON(t, got) != mustJSON(t, want) {
			t.Fatalf("ask %d delivered\n%s\nGET /v1/asks/%s\n%s", i, mustJSON(t, got), ask.ID, mustJSON(t, want))
		}
		if got.Status != interaction.StatusAnswered || got.Answer.Answers[0].Selected[0] != "yes" ||
			got.AnsweredBy == nil || got.AnsweredBy.ID != alice || got.CallbackURL != sink.url() {
			t.Fatalf("ask %d delivered %+v", i, got)
		}
		hits, _ := sink.state(ask.ID)
		t.Logf("ask %d: created on replica 0, click handled by replica %d, callback sent by replica %d", i, clicked, hits[0].from)
		asks = append(asks, ask)
	}

	// A later ask's callback: the dispatchers have claimed and handled
	// what was due since the first ones were delivered.
	in := oneTap("later")
	in.CallbackURL = sink.url()
	later := r.create(1, in)
	if err := r.withdraw(2, later.ID); err != nil {
		t.Fatal(err)
	}
	if got := sink.waitDelivered(t, later.ID, 20*time.Second); got.Status != interaction.StatusAborted {
		t.Fatalf("later ask delivered %+v", got)
	}
	for i, a := range append(asks, later) {
		hits, delivered := sink.state(a.ID)
		if len(hits) != 1 || len(delivered) != 1 {
			t.Fatalf("ask %d: %d requests, %d delivered, want exactly one: %+v", i, len(hits), len(delivered), hits)
		}
		if cb := storedCallback(t, r.db, a.ID); cb.Delivered.IsZero() || cb.Attempts != 1 {
			t.Fatalf("ask %d: stored delivery state %+v", i, cb)
		}
	}
	if bad := sink.refused(); len(bad) > 0 {
		t.Fatalf("refused callbacks: %v", bad)
	}
}

// TestReplicaKilledWhileDeliveringCallback: the receiver answers 500 to
// the first attempt and holds the second; the replica that makes the
// second attempt (the one that claimed the record) is killed with kill -9
// while the receiver holds it. Another replica delivers the callback once
// the dead replica's attempt and claim have run out, and the stored
// delivery state says delivered.
func TestReplicaKilledWhileDeliveringCallback(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the replica that sends an attempt through Linux's /proc")
	}
	r := newReplicaRig(t, 3, 1, callbackEnv()...)
	held := make(chan sinkHit, 1)
	release := make(chan struct{})
	sink := newCallbackSink(t, r, func(req *http.Request, h sinkHit) int {
		switch h.attempt {
		case 1:
			return http.StatusInternalServerError
		case 2:
			held <- h
			select {
			case <-req.Context().Done(): // the sender died
			case <-release:
			}
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	t.Cleanup(func() { close(release) }) // before the sink closes: it waits for held requests
	ctx := ctxT(t)

	in := oneTap("ship")
	in.CallbackURL = sink.url()
	ask := r.create(0, in)
	ended := time.Now()
	if _, err := r.fake.Person(alice).Select(ctx, channel, ask.TS, control(0, "select"), "no"); err != nil {
		t.Fatal(err)
	}
	// The retry after the 500 is due 10 s ±20 % after it (the default
	// schedule; the processes have no setting for it).
	var h sinkHit
	select {
	case h = <-held:
	case <-time.After(30 * time.Second):
		hits, _ := sink.state(ask.ID)
		t.Fatalf("no second attempt within 30 s: %+v", hits)
	}
	if h.from < 0 {
		t.Fatal("could not tell which replica sends the second attempt")
	}
	first, _ := sink.state(ask.ID)
	r.kill9(h.from)
	killedAt := time.Now()
	t.Logf("attempt 1 (500) sent by replica %d; attempt 2 sent by replica %d %v after the end, which was killed while it waited",
		first[0].from, h.from, killedAt.Sub(ended).Round(time.Millisecond))

	// The dead replica's attempt blocks others until the deliverer's
	// timeout (10 s) and 5 s have passed since it started; then any
	// replica's claim makes the next.
	got := sink.waitDelivered(t, ask.ID, 45*time.Second)
	hits, delivered := sink.state(ask.ID)
	var after int
	for _, x := range hits[2:] {
		if x.status/100 == 2 {
			after++
		}
		if x.from == h.from {
			t.Fatalf("the killed replica %d sent again: %+v", h.from, hits)
		}
	}
	if after < 1 || got.ID != ask.ID || got.Status != interaction.StatusAnswered || got.Answer.Answers[0].Selected[0] != "no" {
		t.Fatalf("after the kill: %d delivered, %+v; requests %+v", after, got, hits)
	}
	cb := storedCallback(t, r.db, ask.ID)
	if cb.Delivered.IsZero() || cb.GaveUp || !cb.Next.IsZero() {
		t.Fatalf("stored delivery state after the delivery: %+v", cb)
	}
	t.Logf("delivered by replica %d %v after the kill; %d requests, %d delivered; stored: %d attempts recorded, delivered at %v",
		hits[len(hits)-1].from, time.Since(killedAt).Round(time.Millisecond), len(hits), len(delivered), cb.Attempts, cb.Delivered.Format(time.RFC3339Nano))
}

// TestReplicasDeliverManyCallbacks: asks created on three replicas end at
// once, half through clicks (handed to any replica), half withdrawn on a
// replica other than the one that created them; the receiver answers 500
// to the first attempt of every fourth. Each callback is delivered, with
// its ask's end; duplicates (which at least once allows) are counted.
func TestReplicasDeliverManyCallbacks(t *testing.T) {
	r := newReplicaRig(t, 3, 1, callbackEnv()...)
	const n = 36
	var failFirst sync.Map // ask id → struct{}: answer 500 to its first attempt
	sink := newCallbackSink(t, r, func(req *http.Request, h sinkHit) int {
		if _, ok := failFirst.Load(req.Header.Get("X-Slackask-Delivery")); ok && h.attempt == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	asks := make([]interaction.Ask, n)
	for i := range asks {
		in := oneTap("ship")
		in.CallbackURL = sink.url()
		asks[i] = r.create(i%3, in)
		if i%4 == 3 {
			failFirst.Store(asks[i].ID, struct{}{})
		}
	}

	ctx := ctxT(t)
	begin := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := range 6 {
		wg.Go(func() {
			<-begin
			for i := w; i < n; i += 6 {
				var err error
				if i%2 == 0 {
					_, err = r.fake.Person([]string{alice, bob}[w%2]).Select(ctx, channel, asks[i].TS, control(0, "select"), "yes")
				} else {
					err = r.withdraw((i+1)%3, asks[i].ID)
				}
				if err != nil {
					failed.Add(1)
					t.Errorf("ending ask %d: %v", i, err)
				}
			}
		})
	}
	start := time.Now()
	close(begin)
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}

	// The retried ones are due 10 s ±20 % after their first attempt.
	for _, a := range asks {
		sink.waitDelivered(t, a.ID, 45*time.Second)
	}
	all := time.Since(start)
	in := oneTap("later")
	in.CallbackURL = sink.url()
	later := r.create(2, in)
	if err := r.withdraw(0, later.ID); err != nil {
		t.Fatal(err)
	}
	sink.waitDelivered(t, later.ID, 20*time.Second)

	var dups, requests int
	by := make([]int, len(r.reps))
	for i, a := range asks {
		hits, delivered := sink.state(a.ID)
		requests += len(hits)
		dups += len(delivered) - 1
		want := interaction.StatusAnswered
		if i%2 == 1 {
			want = interaction.StatusAborted
		}
		for _, d := range delivered {
			if d.ID != a.ID || d.Status != want {
				t.Fatalf("ask %d delivered %s %s, want %s %s", i, d.ID, d.Status, a.ID, want)
			}
		}
		for _, h := range hits {
			if h.status/100 == 2 && h.from >= 0 {
				by[h.from]++
			}
		}
		if _, retried := failFirst.Load(a.ID); retried && len(hits) < 2 {
			t.Fatalf("ask %d: its first attempt was answered 500, yet %d requests", i, len(hits))
		}
		if cb := storedCallback(t, r.db, a.ID); cb.Delivered.IsZero() {
			t.Fatalf("ask %d: stored delivery state %+v", i, cb)
		}
	}
	if bad := sink.refused(); len(bad) > 0 {
		t.Fatalf("refused callbacks: %v", bad)
	}
	t.Logf("%d asks ended at once on 3 replicas (%d with a first attempt answered 500): all delivered within %v; "+
		"%d requests, %d duplicate deliveries; deliveries by replica %v",
		n, n/4, all.Round(time.Millisecond), requests, dups, by)
}

// TestReplicasWithLaggingCallbackSettings: a deploy that sets
// SLACKASK_CALLBACK_URL, half rolled out: replica 0 has it, replica 1 not
// yet (it has the secret, for asks that name their callbackUrl). An ask
// that names none ends on replica 0, whose first attempt fails (500);
// replica 0 dies. Replica 1 retries to the URL fixed when the ask ended and
// delivers it (it used to give the delivery up: "no callback URL").
func TestReplicasWithLaggingCallbackSettings(t *testing.T) {
	r := newReplicaRig(t, 0, 1, callbackEnv()...)
	sink := newCallbackSinkUnstarted(t, func(_ *http.Request, h sinkHit) int {
		if h.attempt == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	r.add("SLACKASK_CALLBACK_URL=" + sink.url())
	r.add()
	sink.start(r)

	ask := r.create(0, oneTap("ship"))
	if err := r.withdraw(0, ask.ID); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a first attempt", 20*time.Second, func() bool { hits, _ := sink.state(ask.ID); return len(hits) > 0 })
	r.kill9(0)
	// The retry is due 10 s ±20 % after the first attempt.
	got := sink.waitDelivered(t, ask.ID, 30*time.Second)
	hits, _ := sink.state(ask.ID)
	if got.ID != ask.ID || got.Status != interaction.StatusAborted || hits[len(hits)-1].from != 1 {
		t.Fatalf("delivered %+v; requests %+v", got, hits)
	}
	if cb := storedCallback(t, r.db, ask.ID); cb.Delivered.IsZero() || cb.GaveUp || cb.URL != sink.url() {
		t.Fatalf("stored delivery state %+v", cb)
	}
}
