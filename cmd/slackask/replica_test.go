package main

import (
	"bufio"
	"bytes"
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
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// These tests run several `slackask serve` processes on one PostgreSQL
// database against one Slack fake, as replicas behind a load balancer.
// They skip without SLACKASK_TEST_DATABASE_URL.

type replicaRig struct {
	t     *testing.T
	fake  *slackfake.Server
	db    string
	conns int // SLACKASK_SOCKET_CONNECTIONS of each replica
	reps  []*replica
	http  *http.Client
}

// replica is one serve process; addr stays the replica's across restarts.
type replica struct {
	addr string
	p    *proc
}

func newReplicaRig(t *testing.T, n, conns int) *replicaRig {
	t.Helper()
	db := pgtest.URL(t) // skips without SLACKASK_TEST_DATABASE_URL
	binary(t)
	fake, err := slackfake.New(slackfake.Config{PingInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fake.AddUser(alice, "alice")
	fake.AddUser(bob, "bob")
	fake.AddChannel(channel, "asks")
	r := &replicaRig{t: t, fake: fake, db: db, conns: conns,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}}
	t.Cleanup(func() {
		r.http.CloseIdleConnections()
		fake.Close()
	})
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		rep := &replica{addr: addr}
		r.reps = append(r.reps, rep)
		r.start(rep)
	}
	return r
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
	p.cmd.Stderr, p.cmd.Stdout = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	rep.p = p
	r.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if r.t.Failed() {
			r.t.Logf("replica %s log (tail):\n%s", rep.addr, tail(p.logs.String(), 40))
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
		// Both skips are stored; now both submit at once.
		for k, who := range []string{alice, bob} {
			wg.Go(func() {
				_, errs[k] = r.fake.Person(who).Click(ctx, channel, ask.TS, control(-1, "submit"))
			})
		}
		wg.Wait()
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
