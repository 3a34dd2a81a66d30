package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// economyResult is the Web API calls of the typical flow, per ask.
type economyResult struct {
	Asks    int
	PerAsk  map[string]float64 // method → calls per ask
	Visible int                // visible changes per ask in the flow
}

// economyBench runs the typical flow on asks one after another and counts
// the Web API calls slackask made for them: pick in the select, pick in
// the multi-select (the client shows both at once: no update due), type a
// note in the "Other…" modal (shown in the message: one update), Submit
// (the message shows the answer: one update).
func (r *rig) economyBench(ctx context.Context) (*economyResult, error) {
	n := r.cfg.economyAsks
	perAsk, err := r.callsPerAsk(ctx, "economy.db", n, func(ctx context.Context, fake *slackfake.Server, a *api, i int) error {
		return typicalFlow(ctx, fake, a, i)
	})
	if err != nil {
		return nil, err
	}
	return &economyResult{Asks: n, PerAsk: perAsk, Visible: 2}, nil
}

// callsPerAsk starts slackask on a fresh fake and database (file name db
// in the rig's folder), runs flow for asks 0..n-1 one after another and
// returns the Web API calls slackask made, per method and ask.
func (r *rig) callsPerAsk(ctx context.Context, db string, n int, flow func(context.Context, *slackfake.Server, *api, int) error) (map[string]float64, error) {
	fake, err := newFake(slackfake.Config{})
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	db = filepath.Join(r.dir, db)
	defer os.Remove(db)
	p, err := r.startSlackask(fake, slackaskOpts{db: db})
	if err != nil {
		return nil, err
	}
	defer p.stop() //nolint:errcheck
	if _, err := p.waitReady(30 * time.Second); err != nil {
		return nil, err
	}
	a := newAPI(p.base, 4)
	defer a.close()
	before := countCalls(fake)
	for i := range n {
		if err := flow(ctx, fake, a, i); err != nil {
			return nil, fmt.Errorf("flow %d: %w\n%s", i, err, p.tailText())
		}
	}
	time.Sleep(300 * time.Millisecond) // anything late would show up
	after := countCalls(fake)
	if os.Getenv("ECON_DEBUG") != "" {
		for _, c := range fake.Calls() {
			ref, _ := blocks.MessageRef([]byte(c.Params["blocks"]))
			fmt.Fprintf(os.Stderr, "%s %s ts=%s rev=%d err=%s\n", c.At.Format("05.000"), c.Method, c.Params["ts"], ref.Rev, c.Error)
		}
	}
	perAsk := map[string]float64{}
	for m, c := range after {
		if d := c - before[m]; d > 0 {
			perAsk[m] = float64(d) / float64(n)
		}
	}
	return perAsk, nil
}

func countCalls(fake *slackfake.Server) map[string]int {
	out := map[string]int{}
	for _, c := range fake.Calls() {
		out[c.Method]++
	}
	return out
}

func typicalFlow(ctx context.Context, fake *slackfake.Server, a *api, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ask, err := a.create(ctx, typicalAsk(i))
	if err != nil {
		return err
	}
	done := poll(ctx, a, ask.ID, time.Minute)
	ch, ts := ask.Channel, ask.TS
	p := fake.Person(personID(i))
	if _, err := p.Select(ctx, ch, ts, control(0, "select"), "PostgreSQL"); err != nil {
		return err
	}
	if _, err := p.Select(ctx, ch, ts, control(1, "select"), "staging", "prod"); err != nil {
		return err
	}
	if _, err := p.Click(ctx, ch, ts, control(2, "other")); err != nil {
		return err
	}
	view, err := p.WaitView(ctx)
	if err != nil {
		return fmt.Errorf("no modal: %w", err)
	}
	note := fmt.Sprintf("Wait for the 3pm freeze to end (%d)", i)
	if err := p.Type(ctx, view.ID, slackfake.ByActionID("text"), note); err != nil {
		return err
	}
	if _, err := p.Submit(ctx, view.ID); err != nil {
		return err
	}
	if err := fake.WaitFor(ctx, func() bool {
		m, ok := fake.Message(ch, ts)
		return ok && strings.Contains(string(m.Blocks), note)
	}); err != nil {
		return fmt.Errorf("the note never showed: %w", err)
	}
	if _, err := p.Click(ctx, ch, ts, control(-1, "submit")); err != nil {
		return err
	}
	res := <-done
	if res.err != nil {
		return res.err
	}
	if res.ask.Status != interaction.StatusAnswered || res.ask.Answer.Answers[2].Custom != note {
		return fmt.Errorf("caller got %+v", res.ask)
	}
	return fake.WaitFor(ctx, func() bool {
		m, ok := fake.Message(ch, ts)
		return ok && !strings.Contains(string(m.Blocks), `"type":"actions"`) && m.Updates >= 2
	})
}

// rateResult is one channel's run of the rate-limited benchmark.
type rateResult struct {
	Channel   string
	Asks      int
	Took      time.Duration // first POST sent → last message stored
	Minimum   time.Duration // (asks − burst) / rate
	Created   int           // 201 answers
	Failed    int           // other answers
	FirstErr  string
	Messages  int           // messages in the channel
	Lost      int           // created asks without a message
	Dupes     int           // messages beyond the first for one ask
	Strays    int           // messages of asks whose create failed
	Attempts  int           // chat.postMessage calls for the channel
	Limited   int           // of which answered 429
	MaxWaited time.Duration // longest POST
	Queued    int           // 201 answers that said "posting": "queued"
}

// rateLimitBench posts asks to channels limited to 1 message/s (the fake's
// token bucket, burst 3), all at once, one channel per repetition in
// parallel (the limit is per channel), and checks that every ask got
// exactly one message.
func (r *rig) rateLimitBench(ctx context.Context) ([]rateResult, error) {
	const rate = 1.0
	chans := make([]string, r.cfg.rlChannels)
	for i := range chans {
		chans[i] = fmt.Sprintf("C0RL%d", i+1)
	}
	fake, err := newFake(slackfake.Config{PostsPerSecondPerChannel: rate}, chans...)
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	db := filepath.Join(r.dir, "ratelimit.db")
	defer os.Remove(db)
	p, err := r.startSlackask(fake, slackaskOpts{db: db})
	if err != nil {
		return nil, err
	}
	defer p.stop() //nolint:errcheck
	if _, err := p.waitReady(30 * time.Second); err != nil {
		return nil, err
	}
	n := r.cfg.rlAsks
	burst := 3.0
	minimum := time.Duration(max(0, float64(n)-burst) / rate * float64(time.Second))

	// Time each channel's posts as the fake stores them.
	events, cancelEvents := fake.Subscribe()
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		last   = map[string]time.Time{}
	)
	evDone := make(chan struct{})
	go func() {
		defer close(evDone)
		for ev := range events {
			if ev.Type == slackfake.EventMessagePosted {
				mu.Lock()
				counts[ev.Channel]++
				last[ev.Channel] = time.Now()
				mu.Unlock()
			}
		}
	}()

	a := newAPI(p.base, n*len(chans))
	defer a.close()
	ctx, cancel := context.WithTimeout(ctx, 2*minimum+2*time.Minute)
	defer cancel()
	results := make([]rateResult, len(chans))
	created := make([][]string, len(chans)) // ask ids, per channel
	var wg sync.WaitGroup
	for ci, ch := range chans {
		res := &results[ci]
		res.Channel, res.Asks, res.Minimum = ch, n, minimum
		created[ci] = make([]string, n)
		var cmu sync.Mutex
		start := time.Now()
		for i := range n {
			wg.Go(func() {
				in := typicalAsk(i)
				in.Channel = ch
				t0 := time.Now()
				ask, err := a.createQueued(ctx, in)
				waited := time.Since(t0)
				cmu.Lock()
				defer cmu.Unlock()
				res.MaxWaited = max(res.MaxWaited, waited)
				if err != nil {
					res.Failed++
					if res.FirstErr == "" {
						res.FirstErr = err.Error()
					}
					return
				}
				res.Created++
				if ask.Posting == interaction.PostingQueued {
					res.Queued++
				}
				created[ci][i] = ask.ID
			})
		}
		wg.Go(func() {
			// Took: from the first POST to this channel's n-th message.
			for ctx.Err() == nil {
				mu.Lock()
				c, at := counts[ch], last[ch]
				mu.Unlock()
				if c >= n {
					res.Took = at.Sub(start)
					return
				}
				cmu.Lock()
				// Every create answered and every created ask (queued
				// ones too) has its message.
				settled := res.Created+res.Failed == n && c >= res.Created
				cmu.Unlock()
				if settled {
					res.Took = at.Sub(start)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // a late duplicate would show up
	cancelEvents()
	<-evDone
	for ci := range results {
		checkChannel(fake, &results[ci], created[ci])
	}
	for _, c := range fake.Calls() {
		if c.Method != "chat.postMessage" {
			continue
		}
		for i := range results {
			if c.Params["channel"] == results[i].Channel {
				results[i].Attempts++
				if c.Error != "" {
					results[i].Limited++
				}
			}
		}
	}
	return results, nil
}

// checkChannel counts the channel's messages and, against the asks
// created, the lost, duplicated and stray ones.
func checkChannel(fake *slackfake.Server, res *rateResult, created []string) {
	msgs := fake.Messages(res.Channel)
	res.Messages = len(msgs)
	seen := map[string]int{}
	for _, m := range msgs {
		if id := blocks.MessageAskID(m.Blocks); id != "" {
			seen[id]++
		}
	}
	want := map[string]bool{}
	for _, id := range created {
		if id != "" {
			want[id] = true
			if seen[id] == 0 {
				res.Lost++
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(seen)) {
		if seen[id] > 1 {
			res.Dupes += seen[id] - 1
		}
		if !want[id] {
			res.Strays += seen[id]
		}
	}
}

// dmResult is the Web API calls per ask with notify "dm" to five people.
type dmResult struct {
	Asks   int
	People int
	PerAsk map[string]float64 // method → calls per ask
}

// dmEconomyBench creates asks (one menu question) in the channel with
// notify "dm" to five responders, waits for the five DMs, has one person
// answer in their DM, waits until the channel message and every DM are
// drawn ended, and counts the Web API calls per ask.
func (r *rig) dmEconomyBench(ctx context.Context) (*dmResult, error) {
	const people = 5
	n := r.cfg.economyAsks
	perAsk, err := r.callsPerAsk(ctx, "dm.db", n, func(ctx context.Context, fake *slackfake.Server, a *api, i int) error {
		return dmFlow(ctx, fake, a, i, people)
	})
	if err != nil {
		return nil, err
	}
	return &dmResult{Asks: n, People: people, PerAsk: perAsk}, nil
}

func dmFlow(ctx context.Context, fake *slackfake.Server, a *api, i, people int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	in := interaction.AskInput{Request: interaction.Request{
		Agent: &interaction.Agent{ID: "bench", Name: "Bench agent"},
		Questions: []interaction.Question{{ID: "go", Question: fmt.Sprintf("Deploy build %d?", i), Display: interaction.DisplayMenu,
			Options: []interaction.Option{{Label: "Deploy"}, {Label: "Hold"}}}},
	}, Notify: interaction.NotifyDM}
	for k := range people {
		in.Responders = append(in.Responders, personID(i*people+k))
	}
	ask, err := a.create(ctx, in)
	if err != nil {
		return err
	}
	done := poll(ctx, a, ask.ID, time.Minute)
	// The DMs: one message of the ask in each responder's DM.
	dms := map[string]string{} // person → ts in their DM
	if err := fake.WaitFor(ctx, func() bool {
		for _, u := range in.Responders {
			for _, m := range fake.Messages(slackfake.DMChannelID(u)) {
				if blocks.MessageAskID(m.Blocks) == ask.ID {
					dms[u] = m.TS
				}
			}
		}
		return len(dms) == people
	}); err != nil {
		return fmt.Errorf("%d of %d DMs: %w", len(dms), people, err)
	}
	who := in.Responders[people-1]
	if _, err := fake.Person(who).Select(ctx, slackfake.DMChannelID(who), dms[who], control(0, "select"), "Deploy"); err != nil {
		return err
	}
	res := <-done
	if res.err != nil {
		return res.err
	}
	if res.ask.Status != interaction.StatusAnswered || res.ask.AnsweredBy == nil || res.ask.AnsweredBy.ID != who {
		return fmt.Errorf("caller got %+v", res.ask)
	}
	drawnEnded := func(ch, ts string) bool {
		m, ok := fake.Message(ch, ts)
		return ok && !strings.Contains(string(m.Blocks), `"type":"actions"`)
	}
	return fake.WaitFor(ctx, func() bool {
		if !drawnEnded(ask.Channel, ask.TS) {
			return false
		}
		for u, ts := range dms {
			if !drawnEnded(slackfake.DMChannelID(u), ts) {
				return false
			}
		}
		return true
	})
}
