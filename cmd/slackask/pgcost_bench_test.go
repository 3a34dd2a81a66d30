package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/proccpu"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// BenchmarkPostgresCost measures what an ask and a click cost on
// PostgreSQL with one and three replicas against one process on SQLite,
// with real `slackask serve` processes and one Slack fake:
//
//   - CPU per ask created and per click, summed over every slackask process
//     and the PostgreSQL backends serving them (found by application_name
//     in pg_stat_activity, read from /proc; the fake and the load are left
//     out);
//   - round trips to the database per ask created and per click, from the
//     driver (slackask_store_round_trips_total on each replica's /metrics:
//     statements, a pipelined batch as one), background work included;
//   - asks created per second by 16 clients, and the click capacity: the
//     highest open-loop rate of select clicks whose ack p99 stays under
//     100 ms;
//   - CPU per click at equal load, as a multiple of SQLite's: at each
//     open-loop rate, and over the whole sweep (every rate's clicks
//     together). The closed loop runs each store at its own rate (SQLite's
//     acks come from its journal, several times faster), and CPU per click
//     falls as the rate rises, so its ratio compares unequal loads. The
//     configurations take turns at each rate of the sweep, their processes
//     all up (the others idle), so that they share the box's speed of the
//     moment.
//
// It prints a Markdown table. Run it with:
//
//	SLACKASK_TEST_DATABASE_URL=postgres://… go test ./cmd/slackask -run '^$' -bench BenchmarkPostgresCost -benchtime 1x
//
// SLACKASK_BENCH_REPLICAS_SMALL=1 shrinks every phase (a smoke run).
func BenchmarkPostgresCost(b *testing.B) {
	if os.Getenv(pgtest.EnvVar) == "" {
		b.Skip(pgtest.EnvVar + " not set: the PostgreSQL cost benchmark compares SQLite with PostgreSQL")
	}
	size := pgCostSize{creates: 400, creators: 16, clickers: 8, clicksEach: 250, rates: []int{50, 100, 200, 300, 400, 600, 800, 1000, 1200}, rateFor: 4 * time.Second}
	if os.Getenv("SLACKASK_BENCH_REPLICAS_SMALL") != "" {
		size = pgCostSize{creates: 60, creators: 8, clickers: 4, clicksEach: 10, rates: []int{50, 100}, rateFor: time.Second}
	}
	ctx := benchCtx(b, 40*time.Minute)
	var runs []*pgCostRun
	for _, c := range replicaBenchConfigs {
		p := startPgCost(b, ctx, c.postgres, c.n)
		p.row.name = c.name
		p.measure(b, ctx, size)
		b.ReportMetric(p.row.create.cpu.Seconds()*1e6/float64(p.row.created), c.name+"-cpu-µs/ask")
		b.ReportMetric(p.row.click.cpu.Seconds()*1e6/float64(p.row.clicks), c.name+"-cpu-µs/click")
		runs = append(runs, p)
	}
	// The open-loop sweep, interleaved: each rate runs on every
	// configuration in turn, the order rotating from rate to rate, so that
	// a change in this shared box's speed over the minutes of a run falls
	// on all of them alike (run one after another, their multiples moved
	// with it).
	for k, rate := range size.rates {
		for j := range runs {
			if p := runs[(j+k)%len(runs)]; !p.swept {
				p.openLoop(b, ctx, size, rate)
			}
		}
	}
	rows := make([]pgCostRow, len(runs))
	for i, p := range runs {
		rows[i] = p.row
	}
	fmt.Print("\n" + pgCostTable(rows, size) + "\n")
}

type pgCostSize struct {
	creates, creators    int
	clickers, clicksEach int
	rates                []int // open-loop click rates tried, per second, in order
	rateFor              time.Duration
}

type pgCostRow struct {
	name        string
	replicas    int
	created     int
	createWall  time.Duration
	create      pgCostSpent
	createTrips int64
	clicks      int
	click       pgCostSpent
	clickTrips  int64
	clickP99    time.Duration // of the closed-loop clicks
	clickWall   time.Duration // how long the closed-loop clicks took
	capacity    int           // highest rate with ack p99 < 100 ms (0: none)
	rateP99     map[int]time.Duration
	rateUse     map[int]pgCostSpent // what each rate's clicks used, with the second after
	rateClicks  map[int]int
	rateFor     map[int]time.Duration // how long each rate's phase took, with the second after
	idle        pgCostSpent           // what the processes used idle, over idleFor
	idleFor     time.Duration
	createWaits string // what the backends of the creates were seen waiting on
	createStmts string // with SLACKASK_BENCH_PG_LOG: the statements of the creates
	clickStmts  string // and of the clicks
}

// pgCostCPU sums the CPU time and context switches of the replicas'
// processes and of the PostgreSQL backends whose application_name is app
// ("" on SQLite).
type pgCostCPU struct {
	r   *replicaRig
	app string
	db  *pgx.Conn
}

// pgCostUse is what the replicas and their backends have used so far:
// CPU time and context switches (a thread leaving a CPU), per backend pid
// (backends come and go with the pools; a phase counts those alive at its
// end, from zero for the ones that were not at its start).
type pgCostUse struct {
	replicas  time.Duration
	replicaSw int64
	backends  map[int]time.Duration
	backendSw map[int]int64
}

// read returns what the replicas and their backends have used so far.
func (c pgCostCPU) read(ctx context.Context) pgCostUse {
	u := pgCostUse{backends: map[int]time.Duration{}, backendSw: map[int]int64{}}
	for _, rep := range c.r.reps {
		u.replicas += proccpu.Of(rep.p.cmd.Process.Pid)
		u.replicaSw += proccpu.Switches(rep.p.cmd.Process.Pid)
	}
	if c.db == nil {
		return u
	}
	rows, err := c.db.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", c.app)
	if err != nil {
		return u
	}
	pids, _ := pgx.CollectRows(rows, pgx.RowTo[int32])
	for _, pid := range pids {
		u.backends[int(pid)] = proccpu.Of(int(pid))
		u.backendSw[int(pid)] = proccpu.Switches(int(pid))
	}
	return u
}

// pgCostSpent is what a phase used: CPU and context switches of every
// process, and of PostgreSQL's backends among them.
type pgCostSpent struct {
	cpu, pgCPU time.Duration
	sw, pgSw   int64
}

// since returns what was used since u0.
func (c pgCostCPU) since(ctx context.Context, u0 pgCostUse) pgCostSpent {
	u1 := c.read(ctx)
	var d pgCostSpent
	for pid, t := range u1.backends {
		d.pgCPU += t - u0.backends[pid]
		d.pgSw += u1.backendSw[pid] - u0.backendSw[pid]
	}
	d.cpu = u1.replicas - u0.replicas + d.pgCPU
	d.sw = u1.replicaSw - u0.replicaSw + d.pgSw
	return d
}

// sampleWaits samples, every 10 ms until the returned func is called,
// what the replicas' backends that are running a statement wait on
// (pg_stat_activity's wait_event_type:wait_event, "CPU" for none), and
// that func returns the tally, most seen first ("" on SQLite).
func (c pgCostCPU) sampleWaits(ctx context.Context) (stop func() string) {
	if c.db == nil {
		return func() string { return "" }
	}
	counts := map[string]int{}
	samples := 0
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			rows, err := c.db.Query(ctx, `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
				WHERE application_name = $1 AND state = 'active'`, c.app)
			if err != nil {
				return
			}
			waits, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return
			}
			samples++
			for _, w := range waits {
				counts[w]++
			}
		}
	})
	return func() string {
		close(done)
		wg.Wait()
		type kv struct {
			k string
			n int
		}
		var all []kv
		for k, n := range counts {
			all = append(all, kv{k, n})
		}
		sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
		var out []string
		for _, x := range all {
			out = append(out, fmt.Sprintf("%s %.2f", x.k, float64(x.n)/float64(max(samples, 1))))
		}
		return fmt.Sprintf("%d samples, backends active per sample: %s", samples, strings.Join(out, ", "))
	}
}

// perfDir, from SLACKASK_BENCH_PERF, is where perfPhase records the click
// phase: perf must be on PATH and allowed to attach to these processes.
var perfDir = os.Getenv("SLACKASK_BENCH_PERF")

// perfPhase records, with perfDir set, the replicas and their backends
// until the returned func is called: CPU samples with call stacks
// (<config>.cpu.data) and every context switch with the stack that left
// the CPU (<config>.sched.data), to read with perf report.
func perfPhase(b *testing.B, cpu pgCostCPU, u pgCostUse, postgres bool, n int) (stop func()) {
	if perfDir == "" {
		return func() {}
	}
	var pids []string
	for _, rep := range cpu.r.reps {
		pids = append(pids, strconv.Itoa(rep.p.cmd.Process.Pid))
	}
	for pid := range u.backends {
		pids = append(pids, strconv.Itoa(pid))
	}
	name := fmt.Sprintf("sqlite-%d", n)
	if postgres {
		name = fmt.Sprintf("postgres-%d", n)
	}
	var cmds []*exec.Cmd
	for kind, event := range map[string]string{"cpu": "cpu-clock", "sched": "sched:sched_switch"} {
		c := exec.Command("perf", "record", "-e", event, "-g", "-o", filepath.Join(perfDir, name+"."+kind+".data"), "-p", strings.Join(pids, ","))
		if err := c.Start(); err != nil {
			b.Fatalf("SLACKASK_BENCH_PERF: %v", err)
		}
		cmds = append(cmds, c)
	}
	time.Sleep(500 * time.Millisecond) // perf attaches before the phase starts
	return func() {
		for _, c := range cmds {
			_ = c.Process.Signal(os.Interrupt)
			_ = c.Wait()
		}
	}
}

// trips sums slackask_store_round_trips_total over the replicas.
func (r *replicaRig) trips(postgres bool) int64 {
	if !postgres {
		return 0
	}
	var n int64
	for i := range r.reps {
		n += int64(r.metric(i, "slackask_store_round_trips_total"))
	}
	return n
}

// pgLog, from SLACKASK_BENCH_PG_LOG, is the server's log file (readable
// here: a server on this machine): the replicas' connections then log
// every statement, and the table says which statements the creates and the
// clicks sent (to find where round trips go).
var pgLog = os.Getenv("SLACKASK_BENCH_PG_LOG")

// logMark returns the size of the server's log ("" pgLog: 0).
func logMark() int64 {
	if st, err := os.Stat(pgLog); pgLog != "" && err == nil {
		return st.Size()
	}
	return 0
}

// statements counts the statements logged since off by their first words,
// most frequent first.
func statements(off int64) string {
	if pgLog == "" {
		return ""
	}
	raw, err := os.ReadFile(pgLog)
	if err != nil || int64(len(raw)) < off {
		return ""
	}
	counts := map[string]int{}
	for _, line := range strings.Split(string(raw[off:]), "\n") {
		_, stmt, ok := strings.Cut(line, "LOG:  statement: ")
		if !ok {
			if _, rest, ok2 := strings.Cut(line, "LOG:  execute "); ok2 {
				_, stmt, ok = strings.Cut(rest, ": ")
			}
		}
		if ok {
			f := strings.Fields(stmt)
			counts[strings.Join(f[:min(len(f), 6)], " ")]++
		}
	}
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range counts {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	var out []string
	for _, x := range all {
		out = append(out, fmt.Sprintf("%d× %s", x.n, x.k))
	}
	return strings.Join(out, "; ")
}

// pgCostRun is one configuration of BenchmarkPostgresCost: its processes
// stay up from its first phase to the sweep's last rate.
type pgCostRun struct {
	postgres bool
	n        int
	r        *replicaRig
	cpu      pgCostCPU
	people   []string
	asks     []interaction.Ask // the asks clicked on
	row      pgCostRow
	swept    bool // its ack p99 passed 100 ms: no higher rate is tried
}

// startPgCost starts a configuration's processes (n replicas, on
// PostgreSQL or SQLite) and warms them up.
func startPgCost(b *testing.B, ctx context.Context, postgres bool, n int) *pgCostRun {
	b.Helper()
	row := pgCostRow{replicas: n, rateP99: map[int]time.Duration{}, rateUse: map[int]pgCostSpent{}, rateClicks: map[int]int{}, rateFor: map[int]time.Duration{}}
	db := filepath.Join(b.TempDir(), "slackask.db")
	cpu := pgCostCPU{}
	if postgres {
		buf := make([]byte, 6)
		_, _ = rand.Read(buf)
		cpu.app = "slackask_bench_" + hex.EncodeToString(buf)
		u, err := url.Parse(pgtest.URL(b))
		if err != nil {
			b.Fatal(err)
		}
		q := u.Query()
		q.Set("application_name", cpu.app)
		if pgLog != "" {
			q.Set("log_statement", "all") // a runtime parameter of these connections only
		}
		u.RawQuery = q.Encode()
		db = u.String()
		conn, err := pgx.Connect(ctx, os.Getenv(pgtest.EnvVar))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = conn.Close(context.Background()) })
		cpu.db = conn
	}
	const conns = 2
	r := newReplicaRigOn(b, db, n, conns)
	cpu.r = r
	var people []string
	for k := range 32 {
		id := fmt.Sprintf("U0COST%02d", k)
		r.fake.AddUser(id, fmt.Sprintf("person%d", k))
		people = append(people, id)
	}
	// Warm up: statement caches, connections, the fake's users.
	warm, _ := r.createMany(b, 40, 8, func(int) interaction.AskInput { return twoSelects() })
	for k, a := range warm {
		if _, err := r.fake.Person(people[k%len(people)]).Select(ctx, channel, a.TS, control(0, "select"), "yes"); err != nil {
			b.Fatal(err)
		}
	}
	return &pgCostRun{postgres: postgres, n: n, r: r, cpu: cpu, people: people, row: row}
}

// settle waits for the background work of the phase before (message
// updates) to end: it is that phase's.
func settle() { time.Sleep(time.Second) }

// measure runs the configuration's creates, closed-loop clicks and idle
// phases.
func (p *pgCostRun) measure(b *testing.B, ctx context.Context, size pgCostSize) {
	b.Helper()
	r, cpu, postgres, n, people, row := p.r, p.cpu, p.postgres, p.n, p.people, &p.row

	// Asks created.
	settle()
	u0 := cpu.read(ctx)
	t0 := r.trips(postgres)
	log0 := logMark()
	stopWaits := cpu.sampleWaits(ctx)
	asks, took := r.createMany(b, size.creates, size.creators, func(int) interaction.AskInput { return twoSelects() })
	p.asks = asks
	row.createWaits = stopWaits()
	settle() // the creates' own background work (permalinks, updates) is theirs
	row.created, row.createWall = len(asks), took
	row.create = cpu.since(ctx, u0)
	row.createTrips = r.trips(postgres) - t0
	row.createStmts = statements(log0)

	// Clicks, closed loop: people change selects, each waiting for the ack
	// of a click before the next.
	u0 = cpu.read(ctx)
	stopPerf := perfPhase(b, cpu, u0, postgres, n)
	t0 = r.trips(postgres)
	log0 = logMark()
	before := len(r.fake.AckLatencies())
	clicksFrom := time.Now()
	var wg sync.WaitGroup
	var clickErr error
	var mu sync.Mutex
	for w := range size.clickers {
		wg.Go(func() {
			p := r.fake.Person(people[w])
			for k := range size.clicksEach {
				i := w*size.clicksEach + k
				a := asks[(i*7)%len(asks)]
				if _, err := p.Select(ctx, channel, a.TS, control(i%2, "select"), []string{"yes", "no", "dev", "prod"}[i%2*2+i/2%2]); err != nil {
					mu.Lock()
					clickErr = err
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	row.clickWall = time.Since(clicksFrom)
	if clickErr != nil {
		b.Fatal("clicks: ", clickErr)
	}
	settle() // the clicks' message updates are theirs
	stopPerf()
	row.clicks = size.clickers * size.clicksEach
	row.click = cpu.since(ctx, u0)
	row.clickTrips = r.trips(postgres) - t0
	row.clickStmts = statements(log0)
	row.clickP99 = pct(r.fake.AckLatencies()[before:], 99)

	// Idle: what the processes use with nothing to do (pings, leases,
	// polls), to tell the rates' per-click cost from it.
	u0 = cpu.read(ctx)
	idleFrom := time.Now()
	time.Sleep(2 * time.Second)
	row.idle = cpu.since(ctx, u0)
	row.idleFor = time.Since(idleFrom)
}

// openLoop runs one rate of the click capacity sweep: open-loop clicks at
// rate for size.rateFor; the sweep stops for this configuration once the
// ack p99 passes 100 ms.
func (p *pgCostRun) openLoop(b *testing.B, ctx context.Context, size pgCostSize, rate int) {
	b.Helper()
	r, cpu, asks, people, row := p.r, p.cpu, p.asks, p.people, &p.row
	before := len(r.fake.AckLatencies())
	total := int(float64(rate) * size.rateFor.Seconds())
	u0 := cpu.read(ctx)
	from := time.Now()
	var failed sync.Map
	tick := time.NewTicker(time.Second / time.Duration(rate))
	var load sync.WaitGroup
	for i := range total {
		<-tick.C
		load.Go(func() {
			a := asks[(i*13)%len(asks)]
			p := r.fake.Person(people[i%len(people)])
			if _, err := p.Select(ctx, channel, a.TS, control(i%2, "select"), []string{"yes", "no", "dev", "prod"}[i%2*2+i/3%2]); err != nil {
				failed.Store(i, err)
			}
		})
	}
	tick.Stop()
	load.Wait()
	p99 := pct(r.fake.AckLatencies()[before:], 99)
	nFailed := 0
	failed.Range(func(any, any) bool { nFailed++; return true })
	if nFailed > 0 {
		p99 = time.Hour // a click not acked at all
	}
	row.rateP99[rate] = p99
	settle() // the rate's message updates are its own
	row.rateUse[rate] = cpu.since(ctx, u0)
	row.rateFor[rate] = time.Since(from)
	row.rateClicks[rate] = total
	if p99 >= 100*time.Millisecond {
		p.swept = true
		return
	}
	row.capacity = rate
}

func pgCostTable(rows []pgCostRow, size pgCostSize) string {
	var sb strings.Builder
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.name
	}
	sb.WriteString("| | " + strings.Join(names, " | ") + " |\n|---|" + strings.Repeat("---:|", len(rows)) + "\n")
	line := func(label string, f func(r pgCostRow) string) {
		cells := make([]string, len(rows))
		for i, r := range rows {
			cells[i] = f(r)
		}
		sb.WriteString("| " + label + " | " + strings.Join(cells, " | ") + " |\n")
	}
	us := func(d time.Duration, n int) string { return fmt.Sprintf("%.0f", d.Seconds()*1e6/float64(max(n, 1))) }
	line(fmt.Sprintf("asks created/s (%d asks, %d clients)", size.creates, size.creators), func(r pgCostRow) string {
		return fmt.Sprintf("%.0f", float64(r.created)/r.createWall.Seconds())
	})
	line("CPU µs per ask created, every process (of which PostgreSQL's backends)", func(r pgCostRow) string {
		return us(r.create.cpu, r.created) + " (" + us(r.create.pgCPU, r.created) + ")"
	})
	line("round trips per ask created", func(r pgCostRow) string {
		if r.createTrips == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", float64(r.createTrips)/float64(r.created))
	})
	line(fmt.Sprintf("CPU µs per click, every process (of which PostgreSQL's) (%d people × %d select clicks)", size.clickers, size.clicksEach), func(r pgCostRow) string {
		return us(r.click.cpu, r.clicks) + " (" + us(r.click.pgCPU, r.clicks) + ")"
	})
	line("context switches per click, every process (of which PostgreSQL's)", func(r pgCostRow) string {
		per := func(n int64) string { return fmt.Sprintf("%.1f", float64(n)/float64(max(r.clicks, 1))) }
		return per(r.click.sw) + " (" + per(r.click.pgSw) + ")"
	})
	line("round trips per click", func(r pgCostRow) string {
		if r.clickTrips == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", float64(r.clickTrips)/float64(r.clicks))
	})
	line("ack p99 of those clicks, ms", func(r pgCostRow) string { return fmt.Sprintf("%.1f", ms(r.clickP99)) })
	line("closed-loop clicks/s", func(r pgCostRow) string { return fmt.Sprintf("%.0f", float64(r.clicks)/r.clickWall.Seconds()) })
	line(fmt.Sprintf("click capacity: highest open-loop rate (of %v, %v each) with ack p99 < 100 ms, clicks/s", size.rates, size.rateFor), func(r pgCostRow) string {
		var parts []string
		for _, rate := range size.rates {
			if p, ok := r.rateP99[rate]; ok {
				if p == time.Hour {
					parts = append(parts, fmt.Sprintf("%d/s: a click not acked", rate))
				} else {
					parts = append(parts, fmt.Sprintf("%d/s: %.0f ms", rate, ms(p)))
				}
			}
		}
		return fmt.Sprintf("%d (p99 %s)", r.capacity, strings.Join(parts, ", "))
	})
	line("CPU ms per second idle, every process (of which PostgreSQL's)", func(r pgCostRow) string {
		per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / r.idleFor.Seconds() }
		return fmt.Sprintf("%.1f (%.1f)", per(r.idle.cpu), per(r.idle.pgCPU))
	})
	line("CPU µs per click at each open-loop rate, every process (of which PostgreSQL's), the second after included; then less the idle CPU of that time", func(r pgCostRow) string {
		var gross, net []string
		for _, rate := range size.rates {
			u, ok := r.rateUse[rate]
			if !ok {
				continue
			}
			n := r.rateClicks[rate]
			idle := func(d time.Duration) time.Duration {
				return time.Duration(float64(d) * r.rateFor[rate].Seconds() / r.idleFor.Seconds())
			}
			gross = append(gross, fmt.Sprintf("%d/s: %s (%s)", rate, us(u.cpu, n), us(u.pgCPU, n)))
			net = append(net, fmt.Sprintf("%d/s: %s (%s)", rate, us(u.cpu-idle(r.idle.cpu), n), us(u.pgCPU-idle(r.idle.pgCPU), n)))
		}
		return strings.Join(gross, ", ") + "; less idle: " + strings.Join(net, ", ")
	})
	// The ratio at equal load: CPU per click falls as the rate rises (a
	// busier process wakes less per click), so stores are compared at one
	// rate, not the closed loop's, where each runs at its own.
	var base *pgCostRow
	for i := range rows {
		if rows[i].name == "sqlite-1" {
			base = &rows[i]
		}
	}
	// The sweep: every rate's clicks together, so that no one 4 s rate
	// (a GC cycle, a checkpoint) decides the comparison; only the rates
	// every configuration ran, so that each sums the same load.
	var common []int
	for _, rate := range size.rates {
		all := true
		for _, r := range rows {
			_, ok := r.rateUse[rate]
			all = all && ok
		}
		if all {
			common = append(common, rate)
		}
	}
	sweep := func(r pgCostRow) (cpu time.Duration, clicks int) {
		for _, rate := range common {
			cpu += r.rateUse[rate].cpu
			clicks += r.rateClicks[rate]
		}
		return cpu, clicks
	}
	// times is CPU per click (cpu over n) as a multiple of base's (bcpu
	// over bn).
	times := func(cpu time.Duration, n int, bcpu time.Duration, bn int) string {
		per := func(d time.Duration, n int) float64 { return float64(d) / float64(max(n, 1)) }
		return fmt.Sprintf("%.2f", per(cpu, n)/per(bcpu, bn))
	}
	line("CPU µs per click over the open-loop rates every configuration ran, all their clicks together (as a multiple of sqlite-1's)", func(r pgCostRow) string {
		cpu, n := sweep(r)
		out := us(cpu, n)
		if base != nil {
			if bcpu, bn := sweep(*base); bcpu > 0 && n > 0 {
				out += " (" + times(cpu, n, bcpu, bn) + "×)"
			}
		}
		return out
	})
	if base != nil {
		line("CPU per click at each open-loop rate, as a multiple of sqlite-1's at that rate", func(r pgCostRow) string {
			var parts []string
			for _, rate := range size.rates {
				u, ok := r.rateUse[rate]
				b, okb := base.rateUse[rate]
				if !ok || !okb || b.cpu <= 0 {
					continue
				}
				parts = append(parts, fmt.Sprintf("%d/s: %s", rate, times(u.cpu, r.rateClicks[rate], b.cpu, base.rateClicks[rate])))
			}
			return strings.Join(parts, ", ")
		})
	}
	line("PostgreSQL backends during the creates, by what they wait on (mean count per 10 ms sample)", func(r pgCostRow) string {
		return cmp.Or(r.createWaits, "–")
	})
	for _, r := range rows {
		if r.createStmts != "" {
			fmt.Fprintf(&sb, "\n%s, statements of the %d creates: %s\n\n%s, statements of the %d clicks: %s\n", r.name, r.created, r.createStmts, r.name, r.clicks, r.clickStmts)
		}
	}
	return sb.String()
}
