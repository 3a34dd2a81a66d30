package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

const (
	benchChannel = "C0BENCH"
	botToken     = "xoxb-fake"
	appToken     = "xapp-fake"
	numPersons   = 20
)

func personID(i int) string { return fmt.Sprintf("U0P%02d", i%numPersons) }

// newFake starts a Slack fake with the bench's people and channels.
func newFake(cfg slackfake.Config, channels ...string) (*slackfake.Server, error) {
	if cfg.PingInterval == 0 {
		cfg.PingInterval = 5 * time.Second
	}
	f, err := slackfake.New(cfg)
	if err != nil {
		return nil, err
	}
	for i := range numPersons {
		f.AddUser(personID(i), fmt.Sprintf("person%02d", i))
	}
	for _, c := range append([]string{benchChannel}, channels...) {
		f.AddChannel(c, strings.ToLower(c))
	}
	return f, nil
}

// moduleRoot finds the directory of go.mod from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = parent
	}
}

// binaries are the Go programs the benchmarks run as separate processes.
type binaries struct {
	root     string // module root
	slackask string // built from ./cmd/slackask
	floor    string // built from ./bench/floor
	wire     string // built from ./bench/wire
	// old is the build slackask is compared with (BENCH_OLD_BIN; A/B
	// runs), "" when none was given.
	old string
	// profiled is slackask with the pprof overlay (BENCH_PPROF only).
	profiled string
}

// bin is the slackask binary of variant (targetSlackask or targetOld).
func (b binaries) bin(variant string) string {
	if variant == targetOld {
		return b.old
	}
	return b.slackask
}

func buildBinaries(dir string) (binaries, error) {
	root, err := moduleRoot()
	if err != nil {
		return binaries{}, err
	}
	b := binaries{root: root, slackask: filepath.Join(dir, "slackask"), floor: filepath.Join(dir, "floor"), wire: filepath.Join(dir, "wire")}
	pkgs := map[string]string{"./cmd/slackask": b.slackask, "./bench/floor": b.floor, "./bench/wire": b.wire}
	if bin := os.Getenv("BENCH_SLACKASK_BIN"); bin != "" { // A/B runs against another build
		b.slackask = bin
		delete(pkgs, "./cmd/slackask")
	}
	if bin := os.Getenv("BENCH_OLD_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return b, fmt.Errorf("BENCH_OLD_BIN: %w", err)
		}
		b.old = bin
	}
	for pkg, out := range pkgs {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	return b, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// baseEnv is the environment without any Slack or slackask settings of
// the person running the benchmark.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLACK_") || strings.HasPrefix(kv, "SLACKASK_") || strings.HasPrefix(kv, "GODEBUG=") || strings.HasPrefix(kv, "GOTRACEBACK=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// proc is a benchmarked process: slackask, the floor or the Bolt app.
type proc struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	base    string // slackask's HTTP API, "http://127.0.0.1:PORT"
	// pprofAddr serves net/http/pprof when slackask was built with the
	// BENCH_PPROF overlay.
	pprofAddr string

	mu         sync.Mutex
	lineAt     map[string]time.Time // first time each watched message was logged
	goroutines int                  // goroutine headers in a SIGQUIT dump
	tail       []string             // last lines, for error reports
	done       chan struct{}        // closed when stderr is drained
	exited     chan struct{}
	waitErr    error
}

var goroutineHeader = regexp.MustCompile(`^goroutine [1-9][0-9]* `)

// watched are log messages whose first appearance is timed.
var watched = []string{"recovered asks from the store", "HTTP API listening"}

func startProc(name string, cmd *exec.Cmd) (*proc, error) {
	p := &proc{name: name, cmd: cmd, lineAt: map[string]time.Time{}, done: make(chan struct{}), exited: make(chan struct{})}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go p.read(stderr)
	go func() {
		<-p.done
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) read(r io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		now := time.Now()
		p.mu.Lock()
		if goroutineHeader.MatchString(line) {
			p.goroutines++
		} else {
			for _, m := range watched {
				if _, seen := p.lineAt[m]; !seen && strings.Contains(line, `"message":"`+m+`"`) {
					p.lineAt[m] = now
				}
			}
			if len(p.tail) >= 20 {
				p.tail = p.tail[1:]
			}
			p.tail = append(p.tail, line)
		}
		p.mu.Unlock()
	}
}

func (p *proc) logged(msg string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.lineAt[msg]
	return t, ok
}

func (p *proc) tailText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// stop ends the process with SIGTERM (SIGKILL after 15 s).
func (p *proc) stop() error {
	if p == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within 15 s of SIGTERM", p.name)
	}
	return nil
}

// countGoroutines sends SIGQUIT — the Go runtime then prints every
// goroutine's stack and exits — and counts the goroutines in the dump.
// The process is gone afterwards.
func (p *proc) countGoroutines() (int, error) {
	if err := p.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return 0, err
	}
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return 0, errors.New("no exit within 60 s of SIGQUIT")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.goroutines, nil
}

// procStatus reads fields (in kB, or counts) of /proc/PID/status.
func procStatus(pid int) (map[string]int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, nil
}

// slackaskOpts are the settings of one slackask serve process.
type slackaskOpts struct {
	db      string
	channel string
	extra   []string
	// variant is targetSlackask (default) or targetOld: which build runs.
	variant string
	// bin, if set, is the variant's binary to run instead of the one in
	// r.bins (a copy staged for the A/B).
	bin string
	// wrap runs the binary under another program (valgrind and its
	// options); the process is then that program.
	wrap []string
}

func (r *rig) startSlackask(fake *slackfake.Server, o slackaskOpts) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if o.channel == "" {
		o.channel = benchChannel
	}
	bin, pprofAddr := r.bins.bin(o.variant), ""
	if o.bin != "" {
		bin = o.bin
	}
	if bin == "" {
		return nil, fmt.Errorf("no %s build (BENCH_OLD_BIN)", o.variant)
	}
	// The old build serves pprof only if it was built with pprofOverlay
	// (by hand: go build -overlay in its tree); fetching from it fails
	// otherwise, and profiles are best effort.
	if r.bins.profiled != "" && len(o.wrap) == 0 {
		if o.variant != targetOld {
			bin = r.bins.profiled
		}
		if pprofAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		o.extra = append(o.extra, "SLACKASK_BENCH_PPROF_ADDR="+pprofAddr)
	}
	cmd := exec.Command(bin, "serve")
	if len(o.wrap) > 0 {
		cmd = exec.Command(o.wrap[0], append(o.wrap[1:], bin, "serve")...)
	}
	cmd.Env = append(baseEnv(),
		"SLACK_BOT_TOKEN="+botToken, "SLACK_APP_TOKEN="+appToken, "SLACK_API_URL="+fake.APIURL(),
		"SLACKASK_CHANNEL="+o.channel, "SLACKASK_HTTP_ADDR="+addr, "SLACKASK_DATABASE="+o.db,
		"SLACKASK_LOG_LEVEL=info", "SLACKASK_LOG_FORMAT=json",
		// One Socket Mode connection, as every other client here (and
		// every build before SLACKASK_SOCKET_CONNECTIONS, which ignores
		// it): the loads compare clients on one connection each.
		"SLACKASK_SOCKET_CONNECTIONS=1")
	cmd.Env = append(cmd.Env, o.extra...)
	p, err := startProc("slackask", cmd)
	if err != nil {
		return nil, err
	}
	p.base, p.pprofAddr = "http://"+addr, pprofAddr
	return p, nil
}

// waitReady polls /readyz every 2 ms until it answers 200.
func (p *proc) waitReady(timeout time.Duration) (time.Time, error) {
	c := &http.Client{Timeout: time.Second}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return time.Time{}, fmt.Errorf("%s exited: %v\n%s", p.name, p.waitErr, p.tailText())
		default:
		}
		resp, err := c.Get(p.base + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Now(), nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("%s not ready within %v\n%s", p.name, timeout, p.tailText())
}

// wrapped is exec.Command(bin) run under wrap (nil: directly).
func wrapped(wrap []string, bin string) *exec.Cmd {
	if len(wrap) == 0 {
		return exec.Command(bin)
	}
	return exec.Command(wrap[0], append(wrap[1:], bin)...)
}

// startFloor runs the bare slack-go acker.
func (r *rig) startFloor(fake *slackfake.Server, wrap ...string) (*proc, error) {
	cmd := wrapped(wrap, r.bins.floor)
	cmd.Env = append(baseEnv(), "SLACK_BOT_TOKEN="+botToken, "SLACK_APP_TOKEN="+appToken, "SLACK_API_URL="+fake.APIURL())
	return startProc("floor", cmd)
}

// startWire runs the read-and-ack-only client (the machine's floor).
func (r *rig) startWire(fake *slackfake.Server, wrap ...string) (*proc, error) {
	cmd := wrapped(wrap, r.bins.wire)
	cmd.Env = append(baseEnv(), "SLACK_BOT_TOKEN="+botToken, "SLACK_APP_TOKEN="+appToken, "SLACK_API_URL="+fake.APIURL())
	return startProc("wire", cmd)
}

// startBolt runs the Bolt for JavaScript app in bench/bolt.
func (r *rig) startBolt(fake *slackfake.Server) (*proc, error) {
	dir := filepath.Join(r.bins.root, "bench", "bolt")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@slack", "bolt")); err != nil {
		return nil, fmt.Errorf("bolt is not installed: run `npm install --no-audit --no-fund` in bench/bolt (make bench does): %w", err)
	}
	cmd := exec.Command("node", "app.js")
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), "SLACK_BOT_TOKEN="+botToken, "SLACK_APP_TOKEN="+appToken, "SLACK_API_URL="+fake.APIURL())
	return startProc("bolt", cmd)
}

// waitConnected waits until the fake has exactly n Socket Mode connections.
func waitConnections(ctx context.Context, fake *slackfake.Server, n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := fake.WaitFor(ctx, func() bool { return fake.Connections() == n }); err != nil {
		return fmt.Errorf("waiting for %d socket connection(s), have %d: %w", n, fake.Connections(), err)
	}
	return nil
}

// api is an HTTP client of slackask's API.
type api struct {
	base string
	c    *http.Client
}

func newAPI(base string, conns int) *api {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute}
	return &api{base: base, c: &http.Client{Transport: tr}}
}

func (a *api) close() { a.c.CloseIdleConnections() }

func (a *api) do(ctx context.Context, method, path string, body any) (interaction.Ask, int, error) {
	ask, code, _, err := a.doAt(ctx, method, path, body)
	return ask, code, err
}

// doAt is do that also returns when the whole response had been read,
// before it was decoded.
func (a *api) doAt(ctx context.Context, method, path string, body any) (ask interaction.Ask, code int, at time.Time, err error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return ask, 0, at, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return ask, 0, at, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.c.Do(req)
	if err != nil {
		return ask, 0, at, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	at = time.Now()
	if err != nil {
		return ask, resp.StatusCode, at, err
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, &ask); err != nil {
			return ask, resp.StatusCode, at, fmt.Errorf("decode %s: %w", raw, err)
		}
		return ask, resp.StatusCode, at, nil
	}
	return ask, resp.StatusCode, at, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
}

func (a *api) create(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	ask, code, err := a.do(ctx, "POST", "/v1/asks", in)
	if err == nil && (code != 201 || ask.TS == "") {
		err = fmt.Errorf("create: status %d, ts %q", code, ask.TS)
	}
	return ask, err
}

// createQueued is create that also accepts an ask queued for posting
// (201, pending, "posting": "queued", no ts yet): a rate-limited channel.
func (a *api) createQueued(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	ask, code, err := a.do(ctx, "POST", "/v1/asks", in)
	if err == nil && (code != 201 || (ask.TS == "" && ask.Posting != interaction.PostingQueued)) {
		err = fmt.Errorf("create: status %d, ts %q, posting %q", code, ask.TS, ask.Posting)
	}
	return ask, err
}

// machine describes where the benchmark ran.
type machine struct {
	CPUs     int
	CPUModel string
	MemTotal string
	Go       string
	Node     string
	Kernel   string
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		// The first processor's model name, family and model (lscpu's),
		// and whether it runs under a hypervisor.
		info := map[string]string{}
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.TrimSpace(line) == "" {
				break
			}
			if k, v, ok := strings.Cut(line, ":"); ok {
				info[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		m.CPUModel = info["model name"]
		if f, mo := info["cpu family"], info["model"]; f != "" && mo != "" {
			m.CPUModel += fmt.Sprintf(" (family %s, model %s)", f, mo)
		}
		if strings.Contains(" "+info["flags"]+" ", " hypervisor ") {
			m.CPUModel += ", virtual machine"
		}
	}
	if st, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				f := strings.Fields(line)
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
				}
			}
		}
	}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		m.Node = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	return m
}

// loadAvg returns /proc/loadavg's first three fields.
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func load1() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// pprofOverlay is added to package main of ./cmd/slackask (go build
// -overlay, the source tree is not touched) when BENCH_PPROF is set: it
// serves net/http/pprof on SLACKASK_BENCH_PPROF_ADDR so that the driver
// can take CPU profiles of slackask under load.
const pprofOverlay = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"strconv"
)

func init() {
	if n, err := strconv.Atoi(os.Getenv("BENCH_PPROF_MEMRATE")); err == nil && n > 0 {
		runtime.MemProfileRate = n
	}
	if addr := os.Getenv("SLACKASK_BENCH_PPROF_ADDR"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
`

// buildProfiled builds slackask with the pprof overlay.
func buildProfiled(b binaries, dir string) (string, error) {
	src := filepath.Join(dir, "zz_bench_pprof.go")
	if err := os.WriteFile(src, []byte(pprofOverlay), 0o644); err != nil {
		return "", err
	}
	ov, err := json.Marshal(map[string]any{"Replace": map[string]string{
		filepath.Join(b.root, "cmd", "slackask", "zz_bench_pprof.go"): src,
	}})
	if err != nil {
		return "", err
	}
	ovPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "slackask-pprof")
	cmd := exec.Command("go", "build", "-overlay", ovPath, "-o", out, "./cmd/slackask")
	cmd.Dir = b.root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build (pprof overlay): %v\n%s", err, msg)
	}
	return out, nil
}

// cpuProfile fetches a CPU profile of d from a slackask built with the
// overlay and writes it to path.
func (p *proc) cpuProfile(ctx context.Context, d time.Duration, path string) error {
	return p.fetch(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())), path)
}

// fetch saves a /debug/pprof/… resource of a slackask built with the overlay.
func (p *proc) fetch(ctx context.Context, resource, path string) error {
	if p.pprofAddr == "" {
		return errors.New("not built for profiling")
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+p.pprofAddr+resource, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
