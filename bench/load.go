package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/proccpu"
	"github.com/slackask/slackask/internal/slackfake"
)

// typicalAsk is the README's example: a single select, a multi-select and
// a free-text question, from an agent.
func typicalAsk(n int) interaction.AskInput {
	return interaction.AskInput{Request: interaction.Request{
		Agent: &interaction.Agent{ID: "bench", Name: "Bench agent"},
		Questions: []interaction.Question{
			{ID: "db", Header: "Database", Question: fmt.Sprintf("Which database should service %d use?", n),
				Options: []interaction.Option{{Label: "PostgreSQL", Description: "what we run elsewhere"}, {Label: "SQLite", Description: "one file, no server"}}},
			{ID: "envs", Question: "Deploy to which environments?", MultiSelect: true,
				Options: []interaction.Option{{Label: "dev"}, {Label: "staging"}, {Label: "prod"}}},
			{ID: "notes", Question: "Anything else I should know?"},
		},
	}}
}

// control finds the element of question q (−1: the bottom bar) of kind
// ("select", "other", "skip", "submit", "cancel") in an ask's message.
func control(q int, kind string) slackfake.Finder {
	suffix := fmt.Sprintf(".%d.%s", q, kind)
	return func(blockID, actionID string, el map[string]any) bool {
		t, _ := el["type"].(string)
		if kind == "select" && !strings.Contains(t, "select") {
			return false
		}
		return strings.HasSuffix(actionID, suffix) && strings.HasSuffix(blockID, fmt.Sprintf(".%d.controls", q))
	}
}

// msgRef is a posted ask message.
type msgRef struct {
	id, channel, ts string
}

// selectAction is the i-th envelope of a load: a person changes a select
// of one of the asks (the single select or the multi-select, so the ask
// stays pending and slackask records the selection after the ack).
func selectAction(fake *slackfake.Server, msgs []msgRef, i int) func(context.Context) error {
	m := msgs[i%len(msgs)]
	p := fake.Person(personID(i / len(msgs)))
	return func(ctx context.Context) error {
		var err error
		if (i/3)%2 == 0 {
			_, err = p.Select(ctx, m.channel, m.ts, control(0, "select"), []string{"PostgreSQL", "SQLite"}[(i/7)%2])
		} else {
			choice := [][]string{{"dev"}, {"dev", "staging"}, {"staging", "prod"}, {"dev", "staging", "prod"}}[(i/5)%4]
			_, err = p.Select(ctx, m.channel, m.ts, control(1, "select"), choice...)
		}
		return err
	}
}

// loadResult is what an open-loop load produced.
type loadResult struct {
	lat      latency
	samples  []time.Duration
	sent     int
	errors   int
	firstErr error
	lag      time.Duration // how far the sender fell behind its schedule at worst
	// CPU time used during the load by the target process and by this
	// one (the fake and the senders).
	targetCPU, driverCPU time.Duration
}

// maxInFlight bounds the envelopes awaiting their ack during a load.
const maxInFlight = 8192

// runLoad sends rate envelopes per second for d, open loop: envelope i is
// sent at start + i/rate whatever happened to the earlier ones. The
// latencies are the fake's, from writing each envelope to reading its ack.
func runLoad(ctx context.Context, fake *slackfake.Server, targetPID, rate int, d time.Duration, action func(i int) func(context.Context) error) loadResult {
	return runLoads(ctx, rate, d, []loadSpec{{fake: fake, pid: targetPID, action: action}})[0]
}

// loadSpec is one target of runLoads: the fake it is connected to, its
// process, whose CPU time is measured (0: this one), and the envelopes
// to send it.
type loadSpec struct {
	fake   *slackfake.Server
	pid    int
	action func(i int) func(context.Context) error
}

// runLoads is runLoad for several targets at once, their envelopes
// interleaved: each target gets rate envelopes per second, its own i-th
// at start + (i + k/n)/rate for target k of n, so their schedules are
// offset by 1/(n·rate) and one sender keeps their order. Each target's
// latencies come from its own fake; the driver's CPU time and the
// sender's worst lag are theirs together and are given to each.
func runLoads(ctx context.Context, rate int, d time.Duration, specs []loadSpec) []loadResult {
	n := len(specs)
	per := int(float64(rate) * d.Seconds())
	before := make([]int, n)
	cpu0 := make([]time.Duration, n)
	for k, s := range specs {
		before[k], cpu0[k] = len(s.fake.AckLatencies()), proccpu.Of(s.pid)
	}
	self0 := proccpu.Of(0)
	var (
		wg       sync.WaitGroup
		errs     = make([]atomic.Int64, n)
		firstErr = make([]atomic.Pointer[error], n)
		res      = make([]loadResult, n)
		lag      time.Duration
	)
	sem := make(chan struct{}, maxInFlight)
	start := time.Now()
	for j := 0; j < per*n && ctx.Err() == nil; j++ {
		k, i := j%n, j/n
		due := start.Add(time.Duration(float64(j) / float64(n*rate) * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		} else if -wait > lag {
			lag = -wait
		}
		sem <- struct{}{}
		act := specs[k].action(i)
		res[k].sent++
		wg.Go(func() {
			defer func() { <-sem }()
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := act(actx); err != nil {
				errs[k].Add(1)
				firstErr[k].CompareAndSwap(nil, &err)
			}
		})
	}
	wg.Wait()
	driver := proccpu.Of(0) - self0
	for k, s := range specs {
		r := &res[k]
		r.targetCPU, r.driverCPU, r.lag = proccpu.Of(s.pid)-cpu0[k], driver, lag
		all := s.fake.AckLatencies()
		r.samples = all[min(before[k], len(all)):]
		r.lat = summarize(r.samples)
		r.errors = int(errs[k].Load())
		if p := firstErr[k].Load(); p != nil {
			r.firstErr = *p
		}
	}
	return res
}

// createAsks creates n asks through the HTTP API with conc callers and
// returns where their messages are and how long it took.
func createAsks(ctx context.Context, a *api, n, conc int, in func(i int) interaction.AskInput) ([]msgRef, time.Duration, error) {
	out := make([]msgRef, n)
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		first atomic.Pointer[error]
	)
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil || first.Load() != nil {
					return
				}
				ask, err := a.create(ctx, in(i))
				if err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				out[i] = msgRef{id: ask.ID, channel: ask.Channel, ts: ask.TS}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if p := first.Load(); p != nil {
		return nil, took, *p
	}
	return out, took, ctx.Err()
}

// cpuPer is the target's CPU time per envelope sent.
func (r loadResult) cpuPer() time.Duration { return r.targetCPU / time.Duration(max(1, r.sent)) }

// waitIdle waits until process pid has been (almost) idle for a while —
// under 5 % of a CPU over 250 ms, twice in a row — then for pause; at most
// 30 s in all.
func waitIdle(pid int, pause time.Duration) {
	deadline := time.Now().Add(30 * time.Second)
	quiet := 0
	for quiet < 2 && time.Now().Before(deadline) {
		before := proccpu.Of(pid)
		time.Sleep(250 * time.Millisecond)
		if proccpu.Of(pid)-before <= 12*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
	}
	time.Sleep(pause)
}
