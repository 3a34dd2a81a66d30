package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
)

// BenchmarkTeamAskTenPeople is one ask with responses=10 answered by ten
// people at once, through the HTTP API, Socket Mode and the Slack fake. It
// reports the answer latency (from the clicks to the API's long poll
// returning the answered ask), the mean time a Submit takes to be acked,
// and the Slack Web API calls the service made per ask (post, updates,
// ephemerals, and the final update).
func BenchmarkTeamAskTenPeople(b *testing.B) {
	h := start(b)
	var people []string
	for i := range 10 {
		id := fmt.Sprintf("U0TEAM%02d", i)
		h.fake.AddUser(id, fmt.Sprintf("person%d", i))
		people = append(people, id)
	}
	var answer, ack time.Duration
	calls, updates := 0, 0
	b.ResetTimer()
	for range b.N {
		before := len(h.fake.Calls())
		in := ask1(interaction.Question{ID: "deploy", Question: "Deploy v1.4.2?",
			Options: []interaction.Option{{Label: "Yes"}, {Label: "No"}}})
		in.Responses, in.Responders = interaction.ResponseCount{N: len(people)}, people
		ask := h.create(in)
		ctx := ctxT(b)
		start := time.Now()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, who := range people {
			wg.Go(func() {
				p := h.fake.Person(who)
				if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), "Yes"); err != nil {
					b.Error(err)
					return
				}
				t0 := time.Now()
				if _, err := p.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
					b.Error(err)
				}
				mu.Lock()
				ack += time.Since(t0)
				mu.Unlock()
			})
		}
		got := h.waitAsk(ask.ID)
		answer += time.Since(start)
		wg.Wait()
		if len(got.Responses) != len(people) {
			b.Fatalf("%d responses", len(got.Responses))
		}
		// The Slack calls an ask costs include what follows its end: the
		// final update and every person's confirmation.
		if err := h.fake.WaitFor(ctx, func() bool {
			m, _ := h.fake.Message(channel, ask.TS)
			eph := 0
			for _, c := range h.fake.Calls()[before:] {
				if c.Method == "chat.postEphemeral" {
					eph++
				}
			}
			return eph == len(people) && !strings.Contains(string(m.Blocks), `"type":"actions"`)
		}); err != nil {
			b.Fatal("the end never reached Slack")
		}
		for _, c := range h.fake.Calls()[before:] {
			calls++
			if c.Method == "chat.update" {
				updates++
			}
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(answer.Microseconds())/1000/n, "ms/answer")
	b.ReportMetric(float64(ack.Microseconds())/1000/n/float64(len(people)), "ms/submit-ack")
	b.ReportMetric(float64(calls)/n, "slack-calls/ask")
	b.ReportMetric(float64(updates)/n, "chat.update/ask")
	noPicksShown(b, h.fake)
}
