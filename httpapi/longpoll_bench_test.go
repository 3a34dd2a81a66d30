package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/asktest"
)

var longPollCallers = flag.Int("longpoll.callers", 2000,
	"concurrent long-polling callers in BenchmarkLongPollMemory (env HTTPAPI_LONGPOLL_CALLERS overrides)")

// serverEnv carries "MODE N" to the server subprocess of
// BenchmarkLongPollMemory; MODE is blocking or parked.
const serverEnv = "HTTPAPI_LONGPOLL_SERVER"

// BenchmarkLongPollMemory measures what one waiting long-poll caller costs
// the server: N pending asks, each with one GET /v1/asks/{id}?wait=10m from
// its own HTTP/1.1 connection (one Transport, no connection limit, every
// request in flight at once), held until every caller waits; then the asks
// end and every caller must get its answered ask.
//
// The server runs in a subprocess of its own for each round (this test
// binary re-executed as TestLongPollServer) and the callers in this
// process, so that the server's figures hold nothing of the clients' and
// nothing of an earlier round: the deltas of runtime.MemStats
// (HeapInuse+StackInuse, after two GCs), of the goroutine count and of
// VmRSS between "server up, N asks pending, no caller" and "every caller
// waiting". rss-B/caller is read after the GCs and rssSettle, so that the
// garbage of the burst that parked the callers is back with the OS (see
// snapshot). Sub-benchmarks: "blocking" is the handler blocked in
// AskService.Wait (a service without Notifier, as before parking existed),
// "parked" the hijacked connections of a Notifier service.
//
// Run it short, one round per sub-benchmark:
//
//	go test -run '^$' -bench LongPollMemory -benchtime 1x ./httpapi/ [-longpoll.callers 10000]
func BenchmarkLongPollMemory(b *testing.B) {
	n := *longPollCallers
	if v := os.Getenv("HTTPAPI_LONGPOLL_CALLERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("HTTPAPI_LONGPOLL_CALLERS=%q: want a positive number", v)
		}
	}
	for _, mode := range []string{"blocking", "parked"} {
		b.Run(mode, func(b *testing.B) {
			var sum memDelta
			for range b.N {
				sum = sum.add(longPollRound(b, mode, n))
			}
			per := func(v int64) float64 { return float64(v) / float64(n*b.N) }
			b.ReportMetric(per(sum.HeapStack), "B/caller")
			b.ReportMetric(per(sum.RSS), "rss-B/caller")
			b.ReportMetric(per(sum.Goroutines), "goroutines/caller")
			b.ReportMetric(0, "ns/op") // the time of a round says nothing
			b.Logf("%s, %d callers: heap+stack %.0f B/caller (heap %.0f, stack %.0f), %.2f goroutines/caller, RSS %.0f B/caller (%.0f right after the GC)",
				mode, n, per(sum.HeapStack), per(sum.Heap), per(sum.Stack), per(sum.Goroutines), per(sum.RSS), per(sum.RSSNow))
		})
	}
}

// memDelta is what the waiting callers added to the server process.
type memDelta struct {
	HeapStack, Heap, Stack, RSS, RSSNow, Goroutines int64
}

func (d memDelta) add(o memDelta) memDelta {
	return memDelta{d.HeapStack + o.HeapStack, d.Heap + o.Heap, d.Stack + o.Stack, d.RSS + o.RSS, d.RSSNow + o.RSSNow, d.Goroutines + o.Goroutines}
}

// memSnapshot is the server process's memory at one moment.
type memSnapshot struct {
	heap, stack, goroutines int64
	rssNow                  int64 // right after the GC
	rss                     int64 // rssSettle later
}

// rssSettle is how long snapshot lets the runtime's scavenger return freed
// memory to the OS before it reads VmRSS.
const rssSettle = 3 * time.Second

// snapshot runs two GCs and reads the heap and stacks in use, the
// goroutines and VmRSS, then VmRSS again after rssSettle. The second RSS
// is the one that says what the waiting callers cost: the first still holds
// the garbage of the burst of requests that parked them (net/http's bufio
// buffers of hijacked connections are not pooled), which the scavenger
// returns to the OS only after a GC has lowered the heap goal; a process
// that sees no GC after such a burst keeps it until the runtime's periodic
// GC (2 minutes).
func snapshot() memSnapshot {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := memSnapshot{heap: int64(ms.HeapInuse), stack: int64(ms.StackInuse), rssNow: vmRSS(), goroutines: int64(runtime.NumGoroutine())}
	time.Sleep(rssSettle)
	m.rss = vmRSS()
	return m
}

// vmRSS returns the resident set size of this process in bytes, or 0 where
// /proc/self/status cannot tell.
func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// longPollRound runs one round of BenchmarkLongPollMemory: it starts the
// server subprocess, sends the n long-polls once it listens, and returns
// the subprocess's figures once every caller has its answer.
func longPollRound(b *testing.B, mode string, n int) memDelta {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLongPollServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", serverEnv, mode, n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	next := func(prefix string) string {
		for lines.Scan() {
			if v, ok := strings.CutPrefix(lines.Text(), prefix); ok {
				return v
			}
		}
		cancel()
		_ = cmd.Wait()
		b.Fatalf("server subprocess said no %q: %v\n%s", prefix, lines.Err(), stderr.String())
		return ""
	}
	addr := next("longpoll-server addr=")

	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		errs  []error
	)
	for i := range n {
		wg.Go(func() {
			if err := longPollOnce(ctx, c, addr, i); err != nil {
				errMu.Lock()
				errs = append(errs, err)
				errMu.Unlock()
			}
		})
	}
	var d memDelta
	if err := json.Unmarshal([]byte(next("longpoll-server mem=")), &d); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("%d of %d callers failed: %v", len(errs), n, err)
	}
	next("longpoll-server done")
	return d
}

// longPollOnce sends GET /v1/asks/a{i}?wait=10m and checks that it comes
// back answered.
func longPollOnce(ctx context.Context, c *http.Client, addr string, i int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/v1/asks/a%d?wait=10m", addr, i), nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var a interaction.Ask
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return fmt.Errorf("a%d: %d: %w", i, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK || a.ID != fmt.Sprintf("a%d", i) || a.Status != interaction.StatusAnswered {
		return fmt.Errorf("a%d: %d %s %s", i, resp.StatusCode, a.ID, a.Status)
	}
	return nil
}

// TestLongPollServer is the server subprocess of BenchmarkLongPollMemory;
// run directly it skips. It serves N pending asks a0…a{N-1} (MODE blocking:
// without Notifier; parked: with it), prints its address, snapshots its
// memory, waits until N callers wait, snapshots again and prints the
// difference, then answers every ask and shuts down.
func TestLongPollServer(t *testing.T) {
	spec := os.Getenv(serverEnv)
	if spec == "" {
		t.Skip("server subprocess of BenchmarkLongPollMemory")
	}
	mode, nstr, _ := strings.Cut(spec, " ")
	n, err := strconv.Atoi(nstr)
	if err != nil || (mode != "blocking" && mode != "parked") {
		t.Fatalf("%s=%q: want MODE N", serverEnv, spec)
	}
	svc := seedPending(n)
	// The service as the server sees it: the AskService alone (blocking)
	// or with Notifier (parked), nothing else of the fake's.
	var as interaction.AskService = struct{ interaction.AskService }{svc}
	if mode == "parked" {
		as = struct {
			interaction.AskService
			Notifier
		}{svc, svc}
	}
	api := New(as, Options{MaxWait: time.Hour})
	srv := NewServer("127.0.0.1:0", api)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	waiting := func() int { return svc.Waiters() + api.parkedCount() }

	before := snapshot()
	fmt.Printf("longpoll-server addr=%s\n", ln.Addr())
	deadline := time.Now().Add(2 * time.Minute)
	for waiting() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d callers waiting after 2 minutes", waiting(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the last connections settle
	after := snapshot()
	d, _ := json.Marshal(memDelta{
		HeapStack:  (after.heap + after.stack) - (before.heap + before.stack),
		Heap:       after.heap - before.heap,
		Stack:      after.stack - before.stack,
		RSS:        after.rss - before.rss,
		RSSNow:     after.rssNow - before.rss,
		Goroutines: after.goroutines - before.goroutines,
	})
	fmt.Printf("longpoll-server mem=%s\n", d)

	for i := range n {
		svc.End(fmt.Sprintf("a%d", i), interaction.StatusAnswered, nil, nil) // "Yes"
	}
	for waiting() > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := api.Close(ctx); err != nil {
		t.Error(err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	<-served
	fmt.Println("longpoll-server done")
}

// seedPending returns the shared fake with n pending asks a0…a{n-1}, which
// end only when the test ends them.
func seedPending(n int) *asktest.Fake {
	f := asktest.New(asktest.Config{})
	created := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range n {
		f.Seed(interaction.Ask{
			ID: fmt.Sprintf("a%d", i), Status: interaction.StatusPending, CreatedAt: created, Channel: "C1",
			Questions: []interaction.Question{{ID: "q1", Question: "Ship it?", Options: []interaction.Option{{Label: "Yes"}, {Label: "No"}}}},
		}, "")
	}
	return f
}
