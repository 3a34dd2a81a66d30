package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/internal/syncbuf"
	"github.com/slackask/slackask/internal/tcpfault"
)

const channel = "C0CHAOS"

// buildBinary builds cmd/slackask into a temporary directory, or returns
// SLACKASK_CHAOS_BIN (a slackask binary built elsewhere) when set.
func buildBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SLACKASK_CHAOS_BIN"); bin != "" {
		return bin
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "slackask")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/slackask")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// child is one `slackask serve` process.
type child struct {
	gen  int
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and its output is read
}

// killRec is one SIGKILL (or SIGTERM of a rolling restart): when, at
// which kill point, and which child.
type killRec struct {
	at    time.Time
	point string
	gen   int
}

// slot is one replica: its children, one at a time, keep its HTTP address
// and its way to the database.
type slot struct {
	i    int
	addr string
	db   string          // SLACKASK_DATABASE of its children
	pg   *tcpfault.Proxy // between its children and PostgreSQL (nil on SQLite)
	cur  *child          // the running child, nil while none
}

// proxyFault is what the Web API proxy does to the next calls of a method.
type proxyFault struct {
	// kind: "kill" (kill the child once the fake applied the call), "fail"
	// (answer 502 after the fake applied it), "late" (answer delay after
	// the fake applied it), "slow" (delay the call before the fake sees it),
	// "kill-before" (kill the sender of a call that match accepts before
	// the fake sees it).
	kind  string
	point string // kill point name, for "kill" and "kill-before"
	delay time.Duration
	left  int
	fired chan struct{}                // closed when a "kill" or "kill-before" fired
	match func(params url.Values) bool // for "kill-before"
	what  string                       // the matched call's thread, once fired
}

// rig runs slackask serve against the fake through a Web API proxy that can
// act between a call being applied by the fake and its answer reaching the
// child.
type rig struct {
	t     *testing.T
	bin   string
	fake  *slackfake.Server
	slots []*slot
	pgURL string // the run's schema on PostgreSQL ("" on SQLite)
	extra []string
	proxy *http.Server
	purl  string
	hc    *http.Client
	logs  *syncbuf.Buffer
	rr    atomic.Uint64 // round robin of the HTTP API over the live replicas

	mu     sync.Mutex
	rng    *rand.Rand // which replica a fault hits
	gen    int
	kills  []killRec
	faults map[string][]*proxyFault // API method → queued faults
	down   map[string]time.Time     // API method → answers 500 until then

	failures     []string // every failure reported, repeated after the logs
	restarts     int
	slowestStart time.Duration
	lateCalls    int // calls passed on after their sender died
}

// errorf reports a failure and keeps it, so that the end of the output
// (all a CI page may show) repeats it after the children's logs.
func (r *rig) errorf(format string, args ...any) {
	r.t.Helper()
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.failures = append(r.failures, msg)
	r.mu.Unlock()
	r.t.Error(msg)
}

// fatalf is errorf, then the end of the test.
func (r *rig) fatalf(format string, args ...any) {
	r.t.Helper()
	r.errorf(format, args...)
	r.t.FailNow()
}

// reported is every failure errorf kept.
func (r *rig) reported() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.failures...)
}

// newRig makes a rig of one replica on a SQLite file, or, with pgURL (a
// postgres:// URL of the run's own schema), of n replicas on PostgreSQL,
// each reaching it through a fault proxy of its own. extra is added to
// every child's environment.
func newRig(t *testing.T, bin, pgURL string, n int, seed uint64, extra ...string) *rig {
	t.Helper()
	fake, err := slackfake.New(slackfake.Config{PingInterval: time.Second, ConnectionsOpenPerMinute: 240, ConnectionsOpenBurst: 40})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{
		t: t, bin: bin, fake: fake, pgURL: pgURL, extra: extra,
		hc:     &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 60 * time.Second},
		logs:   &syncbuf.Buffer{},
		faults: map[string][]*proxyFault{},
		down:   map[string]time.Time{},
		rng:    rand.New(rand.NewPCG(seed, 5)),
	}
	t.Cleanup(func() {
		r.killAll("cleanup")
		for _, s := range r.slots {
			if s.pg != nil {
				_ = s.pg.Close()
			}
		}
		_ = r.proxy.Close()
		r.hc.CloseIdleConnections()
		fake.Close()
	})
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := &slot{i: i, addr: ln.Addr().String()}
		ln.Close()
		if pgURL == "" {
			s.db = filepath.Join(t.TempDir(), "slackask.db")
		} else {
			u, err := url.Parse(pgURL)
			if err != nil {
				t.Fatal(err)
			}
			if s.pg, err = tcpfault.New(u.Host); err != nil {
				t.Fatal(err)
			}
			u.Host = s.pg.Addr()
			s.db = u.String()
		}
		r.slots = append(r.slots, s)
	}
	r.startProxy()
	return r
}

// replicated reports whether the rig runs replicas on PostgreSQL.
func (r *rig) replicated() bool { return r.pgURL != "" }

// startProxy serves the Web API on another port, forwarding to the fake.
func (r *rig) startProxy() {
	target, _ := url.Parse(r.fake.URL())
	rp := httputil.NewSingleHostReverseProxy(target)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	rp.Transport = tr
	r.t.Cleanup(tr.CloseIdleConnections)
	rp.ModifyResponse = func(resp *http.Response) error {
		method := strings.TrimPrefix(resp.Request.URL.Path, "/api/")
		f := r.takeFault(method, func(f *proxyFault) bool { return f.kind != "slow" && f.kind != "kill-before" })
		if f == nil {
			return nil
		}
		// The fake has applied the call; its answer has not reached the child.
		switch f.kind {
		case "kill":
			if r.killSender(resp.Request, f.point) {
				close(f.fired)
			}
			return errors.New("chaos: child killed")
		case "late":
			close(f.fired)
			select {
			case <-time.After(f.delay):
			case <-resp.Request.Context().Done():
			}
			return nil
		default: // "fail"
			return errors.New("chaos: answer lost after the call was applied")
		}
	}
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		w.WriteHeader(http.StatusBadGateway)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sender, method, ok := senderPath(req.URL.Path)
		if !ok {
			http.NotFound(w, req)
			return
		}
		req.URL.Path, req.URL.RawPath = "/api/"+method, ""
		arrived := time.Now() // before any slow fault holds it
		r.mu.Lock()
		down := time.Now().Before(r.down[method])
		r.mu.Unlock()
		if down {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"ok":false,"error":"internal_error"}`)
			return
		}
		if f := r.takeFault(method, func(f *proxyFault) bool { return f.kind == "slow" }); f != nil {
			select {
			case <-time.After(f.delay):
			case <-req.Context().Done():
				return
			}
		}
		if r.killBefore(method, sender, req) {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		q := req.URL.Query()
		q.Set(senderParam, strconv.Itoa(sender))
		q.Set(arrivedParam, arrived.Format(time.RFC3339Nano))
		if !r.alive(sender) {
			// The child died while its call was held here (a slow
			// fault; a server does not notice a gone client before it
			// reads the body): Slack still applies such a call, after
			// the child's successor may have made newer ones. The fake
			// records the mark among the call's params.
			r.mu.Lock()
			r.lateCalls++
			r.mu.Unlock()
			q.Set(deadSenderParam, "1")
		}
		req.URL.RawQuery = q.Encode()
		rp.ServeHTTP(w, req)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	r.proxy = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	r.purl = "http://" + ln.Addr().String()
	go func() { _ = r.proxy.Serve(ln) }()
}

// Params the proxy adds to each call, which the fake records with it:
// the child that sent it, when the call reached the proxy (before a slow
// fault held it), and (deadSenderParam) that the proxy passed it on after
// that child had been killed.
const (
	senderParam     = "chaos_sender"
	arrivedParam    = "chaos_arrived"
	deadSenderParam = "chaos_dead_sender"
)

// senderPath splits a proxied path, /c<gen>/api/<method>.
func senderPath(p string) (gen int, method string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/c")
	if !ok {
		return 0, "", false
	}
	g, method, ok := strings.Cut(rest, "/api/")
	if !ok {
		return 0, "", false
	}
	gen, err := strconv.Atoi(g)
	return gen, method, err == nil
}

// killBefore kills the sender of a call a "kill-before" fault matches,
// before the fake sees it, and reports whether it did.
func (r *rig) killBefore(method string, sender int, req *http.Request) bool {
	r.mu.Lock()
	n := len(r.faults[method])
	r.mu.Unlock()
	if n == 0 {
		return false
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return false
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	params, _ := url.ParseQuery(string(body))
	f := r.takeFault(method, func(f *proxyFault) bool { return f.kind == "kill-before" && f.match(params) })
	if f == nil {
		return false
	}
	f.what = params.Get("thread_ts")
	if r.killGen(sender, f.point) {
		close(f.fired)
		return true
	}
	r.addFault(method, f) // its sender was dead already: wait for the next
	return false
}

// alive reports whether child gen is running.
func (r *rig) alive(gen int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.slots {
		if s.cur != nil && s.cur.gen == gen {
			return true
		}
	}
	return false
}

// addFault queues f for method.
func (r *rig) addFault(method string, f *proxyFault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[method] = append(r.faults[method], f)
}

// outage makes every call of method answer HTTP 500 for d.
func (r *rig) outage(method string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down[method] = time.Now().Add(d)
}

// dropFault removes f if it is still queued (it did not fire).
func (r *rig) dropFault(method string, f *proxyFault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.faults[method]
	for i, x := range q {
		if x == f {
			r.faults[method] = append(q[:i:i], q[i+1:]...)
			return
		}
	}
}

func (r *rig) takeFault(method string, match func(*proxyFault) bool) *proxyFault {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.faults[method]
	for i, f := range q {
		if !match(f) {
			continue
		}
		if f.left--; f.left <= 0 {
			r.faults[method] = append(q[:i:i], q[i+1:]...)
		}
		return f
	}
	return nil
}

// env is the environment of child gen of slot s. Its Web API calls go
// through the proxy under /c<gen>/, so that the proxy knows which child
// sent each call.
func (r *rig) env(gen int, s *slot) []string {
	env := append(os.Environ(),
		"SLACK_BOT_TOKEN=xoxb-fake", "SLACK_APP_TOKEN=xapp-fake", fmt.Sprintf("SLACK_API_URL=%s/c%d/api/", r.purl, gen),
		"SLACKASK_CHANNEL="+channel, "SLACKASK_HTTP_ADDR="+s.addr, "SLACKASK_DATABASE="+s.db,
		"SLACKASK_LOG_LEVEL=info", "SLACKASK_URL=http://"+s.addr)
	return append(env, r.extra...)
}

// start starts a new child of slot s (its previous one must be dead).
func (r *rig) start(s *slot) *child {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	c := &child{gen: r.gen, done: make(chan struct{})}
	c.cmd = exec.Command(r.bin, "serve")
	c.cmd.Env = r.env(c.gen, s)
	prefix := fmt.Sprintf("[%d] ", c.gen)
	if len(r.slots) > 1 {
		prefix = fmt.Sprintf("[%d r%d] ", c.gen, s.i)
	}
	w := &prefixWriter{prefix: prefix, w: r.logs}
	c.cmd.Stdout, c.cmd.Stderr = w, w
	if err := c.cmd.Start(); err != nil {
		r.errorf("starting slackask serve: %v", err)
		close(c.done)
		return c
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.done)
	}()
	s.cur = c
	return c
}

// kill kills a child with SIGKILL: the one child on SQLite, a running
// replica drawn at random on PostgreSQL. It reports whether one ran.
func (r *rig) kill(point string) bool {
	r.mu.Lock()
	var live []*slot
	for _, s := range r.slots {
		if s.cur != nil {
			live = append(live, s)
		}
	}
	var s *slot
	if len(live) > 0 {
		s = live[r.rng.IntN(len(live))]
	}
	r.mu.Unlock()
	return s != nil && r.killSlot(s, point)
}

// killAll kills every running child.
func (r *rig) killAll(point string) {
	for _, s := range r.slots {
		r.killSlot(s, point)
	}
}

// killGen kills child gen if it is running.
func (r *rig) killGen(gen int, point string) bool {
	r.mu.Lock()
	var at *slot
	for _, s := range r.slots {
		if s.cur != nil && s.cur.gen == gen {
			at = s
		}
	}
	r.mu.Unlock()
	return at != nil && r.killSlot(at, point)
}

// killSender kills the child that sent req (through the proxy): on
// SQLite, the running child whichever sent it.
func (r *rig) killSender(req *http.Request, point string) bool {
	if !r.replicated() {
		return r.kill(point)
	}
	gen, err := strconv.Atoi(req.URL.Query().Get(senderParam))
	return err == nil && r.killGen(gen, point)
}

// killSlot sends SIGKILL to slot s's child, waits for it to exit and
// records the kill point; false when it had none running.
func (r *rig) killSlot(s *slot, point string) bool {
	return r.signal(s, syscall.SIGKILL, point, 0)
}

// signal sends sig to slot s's child and waits up to wait for it to
// exit (0: for ever), then kills it; false when it had none running.
func (r *rig) signal(s *slot, sig syscall.Signal, point string, wait time.Duration) bool {
	r.mu.Lock()
	c := s.cur
	s.cur = nil
	if c != nil && c.cmd.Process != nil {
		r.kills = append(r.kills, killRec{at: time.Now(), point: point, gen: c.gen})
	}
	r.mu.Unlock()
	if c == nil || c.cmd.Process == nil {
		return false
	}
	_ = c.cmd.Process.Signal(sig)
	if wait > 0 {
		select {
		case <-c.done:
			return true
		case <-time.After(wait):
			r.errorf("child %d did not stop within %v of %v", c.gen, wait, sig)
			_ = c.cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	<-c.done
	return true
}

// running reports whether every replica has a child running.
func (r *rig) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.slots {
		if s.cur == nil {
			return false
		}
	}
	return true
}

// base is the HTTP API of a running replica, in turn ("" for slot 0's
// address when none runs).
func (r *rig) base() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.slots)
	k := int(r.rr.Add(1))
	for j := range n {
		if s := r.slots[(k+j)%n]; s.cur != nil {
			return s.addr
		}
	}
	return r.slots[0].addr
}

func (r *rig) killLog() []killRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]killRec(nil), r.kills...)
}

// readyz returns slot s's GET /readyz status and its count of Socket Mode
// connections up (0, -1 when it did not answer).
func (r *rig) readyz(ctx context.Context, s *slot) (code, sockets int) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+s.addr+"/readyz", nil)
	resp, err := r.hc.Do(req)
	if err != nil {
		return 0, -1
	}
	defer resp.Body.Close()
	var body struct {
		Sockets int `json:"sockets"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return resp.StatusCode, -1
	}
	return resp.StatusCode, body.Sockets
}

// waitReady polls slot s's /readyz until it answers 200, its child c dies
// or ctx ends.
func (r *rig) waitReady(ctx context.Context, s *slot, c *child) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+"/readyz", nil)
		resp, err := r.hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("slackask serve (child %d) exited before it was ready", c.gen)
		case <-ctx.Done():
			return fmt.Errorf("slackask serve (child %d) not ready: %w", c.gen, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// restart starts a child for every replica without one and waits until
// each is ready.
func (r *rig) restart(ctx context.Context) error {
	var errs []error
	for _, s := range r.slots {
		r.mu.Lock()
		dead := s.cur == nil
		r.mu.Unlock()
		if dead {
			errs = append(errs, r.restartSlot(ctx, s))
		}
	}
	return errors.Join(errs...)
}

// restartSlot starts a child of slot s and waits until it is ready.
func (r *rig) restartSlot(ctx context.Context, s *slot) error {
	start := time.Now()
	c := r.start(s)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := r.waitReady(ctx, s, c)
	took := time.Since(start)
	r.mu.Lock()
	r.restarts++
	if took > r.slowestStart {
		r.slowestStart = took
	}
	r.mu.Unlock()
	return err
}

// tallies is how many restarts waited for readiness and the longest wait
// (a slow machine shows here before restarts time out), and how many calls
// the proxy passed on after their sender died.
func (r *rig) tallies() (restarts int, slowest time.Duration, late int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restarts, r.slowestStart, r.lateCalls
}

// postAsk sends POST /v1/asks; code 0 means the request failed.
func (r *rig) postAsk(ctx context.Context, in interaction.AskInput) (interaction.Ask, int, error) {
	b, _ := json.Marshal(in)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.base()+"/v1/asks", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	return r.doAsk(req)
}

// getAsk sends GET /v1/asks/{id}?wait=.
func (r *rig) getAsk(ctx context.Context, id string, wait time.Duration) (interaction.Ask, int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/v1/asks/%s?wait=%s", r.base(), id, wait), nil)
	return r.doAsk(req)
}

func (r *rig) doAsk(req *http.Request) (interaction.Ask, int, error) {
	var a interaction.Ask
	resp, err := r.hc.Do(req)
	if err != nil {
		return a, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return a, 0, err
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(body, &a); err != nil {
			return a, resp.StatusCode, fmt.Errorf("decoding %s: %w", body, err)
		}
	}
	return a, resp.StatusCode, nil
}

// listAsks returns every ask in the database. Pages overlap by the asks
// created at the boundary's instant (before is exclusive) and are merged
// by id.
func (r *rig) listAsks(ctx context.Context) ([]interaction.Ask, error) {
	var all []interaction.Ask
	seen := map[string]bool{}
	before := ""
	for range 1000 {
		u := fmt.Sprintf("http://%s/v1/asks?limit=100", r.base())
		if before != "" {
			u += "&before=" + url.QueryEscape(before)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := r.hc.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET /v1/asks: %d %s", resp.StatusCode, body)
		}
		var page struct {
			Asks []interaction.Ask `json:"asks"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("GET /v1/asks: %w: %.300s", err, body)
		}
		fresh := 0
		for _, a := range page.Asks {
			if !seen[a.ID] {
				seen[a.ID] = true
				all = append(all, a)
				fresh++
			}
		}
		if len(page.Asks) < 100 || fresh == 0 {
			return all, nil
		}
		before = page.Asks[len(page.Asks)-1].CreatedAt.Add(time.Microsecond).Format(time.RFC3339Nano)
	}
	return all, nil
}

// prefixWriter prefixes each line with the child's generation.
type prefixWriter struct {
	prefix string
	w      io.Writer
	mu     sync.Mutex
	part   []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.part = append(p.part, b...)
	for {
		i := bytes.IndexByte(p.part, '\n')
		if i < 0 {
			break
		}
		line := append([]byte(p.prefix), p.part[:i+1]...)
		_, _ = p.w.Write(line)
		p.part = p.part[i+1:]
	}
	return len(b), nil
}

// newFormRequest is a Web API call with the bot token, form-encoded.
func newFormRequest(ctx context.Context, u string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer xoxb-fake")
	return req, nil
}
