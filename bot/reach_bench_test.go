package bot

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/memory"
)

// benchWorld is a fake workspace with a Bot and a lifecycle on the wall
// clock (the post queue and the Home publisher pace in real time).
type benchWorld struct {
	fake *slackfake.Server
	svc  *asks.Service
	bot  *Bot
	stop func()
}

func newBenchWorld(b *testing.B, cfg slackfake.Config, setup func(*slackfake.Server), clk clock.Clock) *benchWorld {
	b.Helper()
	cfg.PingInterval = time.Second
	fake, err := slackfake.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	setup(fake)
	st := memory.New()
	api := slack.New("xoxb-fake", slack.OptionAppLevelToken("xapp-fake"), slack.OptionAPIURL(fake.APIURL()))
	bt, err := New(context.Background(), Config{API: api, Secrets: st, Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := asks.New(asks.Config{Store: st, Surface: bt, DefaultChannel: chanID, Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = runWith(ctx, bt, svc) }()
	w := &benchWorld{fake: fake, svc: svc, bot: bt}
	w.stop = func() { cancel(); <-done; fake.Close() }
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	for bt.Ready(wctx) != nil {
		if wctx.Err() != nil {
			b.Fatal("bot never connected")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return w
}

// BenchmarkEscalationSlackCalls: the Web API calls one ask makes, by
// method, from its post to its answer, with three escalation steps (a
// thread notice; a thread notice and a DM copy; a thread notice and a
// copy in another channel), reported per ask.
func BenchmarkEscalationSlackCalls(b *testing.B) {
	const asksPerRun = 20
	for b.Loop() {
		clk := clock.NewFake(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
		w := newBenchWorld(b, slackfake.Config{}, func(f *slackfake.Server) {
			for _, u := range []string{alice, bob, "U0CAROL", "U0DAVE"} {
				f.AddUser(u, strings.ToLower(u[2:]))
			}
			f.AddChannel(chanID, "asks")
			f.AddChannel("C0OPS", "ops")
		}, clk)
		before := map[string]int{}
		for _, c := range w.fake.Calls() {
			before[c.Method]++
		}
		var ids []interaction.Ask
		for range asksPerRun {
			a, err := w.svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions(), Responders: []string{alice},
				Timeout: interaction.Duration(2 * time.Hour),
				Escalation: []interaction.EscalationStep{
					{After: interaction.Duration(10 * time.Minute), Responders: []string{bob}},
					{After: interaction.Duration(20 * time.Minute), Responders: []string{"U0CAROL"}, Notify: interaction.NotifyDM},
					{After: interaction.Duration(30 * time.Minute), Responders: []string{"U0DAVE"}, Channel: "C0OPS"},
				}})
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, a)
		}
		for _, step := range []int{1, 2, 3} {
			clk.Advance(10 * time.Minute)
			waitUntil(b, w.fake, func() bool {
				n := 0
				for _, a := range ids {
					rec, _ := w.svc.Get(context.Background(), a.ID)
					if len(rec.Escalation) == 3 && rec.Escalation[step-1].FiredAt != nil {
						n++
					}
				}
				return n == len(ids) && len(w.fake.Messages("C0OPS")) == map[int]int{1: 0, 2: 0, 3: len(ids)}[step]
			})
		}
		for _, a := range ids {
			if _, err := w.fake.Person("U0DAVE").Select(context.Background(), a.Channel, a.TS, selectFinder(0), "yes"); err != nil {
				b.Fatal(err)
			}
			if _, err := w.fake.Person("U0DAVE").Select(context.Background(), a.Channel, a.TS, selectFinder(1), "no"); err != nil {
				b.Fatal(err)
			}
			if _, err := w.fake.Person("U0DAVE").Click(context.Background(), a.Channel, a.TS, buttonFinder(-1, "submit")); err != nil {
				b.Fatal(err)
			}
		}
		// Every copy drawn ended: the main message, the DM and the ops copy.
		waitUntil(b, w.fake, func() bool {
			for _, ch := range []string{chanID, slackfake.DMChannelID("U0CAROL"), "C0OPS"} {
				for _, m := range w.fake.Messages(ch) {
					if m.ThreadTS == "" && strings.Contains(string(m.Blocks), `"actions"`) {
						return false
					}
				}
			}
			return true
		})
		time.Sleep(500 * time.Millisecond)
		after := map[string]int{}
		for _, c := range w.fake.Calls() {
			after[c.Method]++
		}
		total := 0
		var methods []string
		for m, n := range after {
			if d := n - before[m]; d > 0 && m != "apps.connections.open" && m != "auth.test" {
				methods = append(methods, m)
				total += d
			}
		}
		slices.Sort(methods)
		for _, m := range methods {
			b.ReportMetric(float64(after[m]-before[m])/asksPerRun, m+"/ask")
		}
		b.ReportMetric(float64(total)/asksPerRun, "calls/ask")
		w.stop()
	}
}

func waitUntil(b *testing.B, fake *slackfake.Server, cond func() bool) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := fake.WaitFor(ctx, cond); err != nil {
		// WaitFor wakes on the fake's changes; the store's are polled.
		for ctx.Err() == nil && !cond() {
			time.Sleep(50 * time.Millisecond)
		}
		if !cond() {
			b.Fatal("condition never held")
		}
	}
}

// BenchmarkHomeBurst: 200 people, each of whom opened their Home; a burst
// of 1,000 asks (5 per person, notify "dm", in 50 channels), each answered
// by its person as soon as it is posted (so a DM copy whose turn comes
// after the answer is never posted). Slack's limits as the fake
// enforces them: chat.postMessage 1 a second per conversation, views.publish
// 100 a minute per workspace. It reports the most views.publish calls in
// any minute and chat.postMessage calls in any second per conversation
// (calls Slack accepted), 429s answered, and the time until every ask was
// answered, every copy drawn ended and every Home current (nothing waiting).
func BenchmarkHomeBurst(b *testing.B) {
	people, perPerson, channels := 200, 5, 50
	if v := os.Getenv("BENCH_HOME_PEOPLE"); v != "" { // a smaller run while trying it
		people, _ = strconv.Atoi(v)
		channels = max(people/4, 1)
	}
	for b.Loop() {
		user := func(i int) string { return fmt.Sprintf("U0P%03d", i) }
		w := newBenchWorld(b, slackfake.Config{PostsPerSecondPerChannel: 1, ViewsPublishPerMinute: 100}, func(f *slackfake.Server) {
			for i := range people {
				f.AddUser(user(i), fmt.Sprintf("p%03d", i))
			}
			for c := range channels {
				f.AddChannel(fmt.Sprintf("C0CH%02d", c), fmt.Sprintf("ch%02d", c))
			}
		}, clock.Real{})
		for i := range people {
			if err := w.fake.Person(user(i)).OpenHome(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		var wg sync.WaitGroup
		ids := make([]string, people*perPerson)
		for i := range people * perPerson {
			wg.Go(func() {
				a, err := w.svc.Create(context.Background(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("x")}},
					Channel: fmt.Sprintf("C0CH%02d", i%channels), Responders: []string{user(i % people)}, Notify: interaction.NotifyDM})
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = a.ID
			})
		}
		wg.Wait()
		// Each person answers each ask as soon as it is posted, from the
		// form their Home's Answer opens (as SubmitForm does).
		answered := make([]bool, len(ids))
		for left := len(ids); left > 0; {
			for i, id := range ids {
				if answered[i] {
					continue
				}
				rec, err := w.svc.Get(context.Background(), id)
				if err != nil || rec.TS == "" {
					continue
				}
				act := asks.Act{AskID: id, By: interaction.User{ID: user(i % people)}, Workspace: "T0FAKE", App: "A0FAKE", Form: true}
				if _, err := w.svc.SubmitForm(context.Background(), act, []interaction.Progress{{Selected: []string{"yes"}}}); err != nil {
					b.Fatalf("answer %s: %v", id, err)
				}
				answered[i] = true
				left--
			}
			time.Sleep(50 * time.Millisecond)
		}
		var why string
		ended := func() bool {
			for c := range channels {
				for _, m := range w.fake.Messages(fmt.Sprintf("C0CH%02d", c)) {
					if strings.Contains(string(m.Blocks), `"actions"`) {
						why = "a channel message still live"
						return false
					}
				}
			}
			for i := range people {
				// A DM copy of an ask answered before the copy's turn
				// is never posted: fewer than perPerson is right.
				ms := w.fake.Messages(slackfake.DMChannelID(user(i)))
				if len(ms) > perPerson {
					why = fmt.Sprintf("%s has %d DM copies", user(i), len(ms))
					return false
				}
				for _, m := range ms {
					if strings.Contains(string(m.Blocks), `"actions"`) {
						why = "a DM copy still live"
						return false
					}
				}
				h, ok := w.fake.Home(user(i))
				// Recently answered looks among the newest 500 asks: a
				// person's oldest answers of the 1,000 may be past it.
				if !ok || !strings.Contains(string(h.Blocks), "Nothing is waiting") || strings.Count(string(h.Blocks), `"answered.`) == 0 {
					why = user(i) + "'s Home is behind"
					return false
				}
			}
			return true
		}
		defer func() {
			if b.Failed() {
				b.Logf("last unmet: %s", why)
			}
		}()
		waitUntil(b, w.fake, ended)
		took := time.Since(start)
		perMinute, perSecond := 0, 0
		limited := map[string]int{}
		var pubs []time.Time
		posts := map[string][]time.Time{}
		for _, c := range w.fake.Calls() {
			switch {
			case c.Error == "ratelimited":
				limited[c.Method]++
			case c.Error != "":
			case c.Method == "views.publish":
				pubs = append(pubs, c.At)
			case c.Method == "chat.postMessage":
				posts[c.Params["channel"]] = append(posts[c.Params["channel"]], c.At)
			}
		}
		perMinute = maxInWindow(pubs, time.Minute)
		for _, ts := range posts {
			perSecond = max(perSecond, maxInWindow(ts, time.Second))
		}
		dms := 0
		for i := range people {
			dms += len(w.fake.Messages(slackfake.DMChannelID(user(i))))
		}
		b.ReportMetric(float64(dms), "dm-copies")
		b.ReportMetric(float64(len(pubs)), "views.publish")
		b.ReportMetric(float64(perMinute), "publish-max/min")
		b.ReportMetric(float64(perSecond), "post-max/s/conv")
		b.ReportMetric(float64(limited["views.publish"]), "publish-429s")
		b.ReportMetric(float64(limited["chat.postMessage"]), "post-429s")
		b.ReportMetric(took.Seconds(), "s-to-all-current")
		w.stop()
	}
}

// maxInWindow is the most times in any window of length d (ts sorted in
// place).
func maxInWindow(ts []time.Time, d time.Duration) int {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= d {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}
