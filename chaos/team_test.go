package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// Team asks (shapeTeam, responses: 2): one single-select question drawn as
// buttons, where a tap is the tapper's whole response. The ask's person
// taps (now and then twice, the second replacing the first), then another
// person taps, which ends the ask.

// answerTeam plays both people of the team ask a. p is a's person.
func (ru *run) answerTeam(ctx context.Context, p *slackfake.Person, a *askModel, pick func(q int) []string, rng *rand.Rand, final bool) {
	tap := func(who *slackfake.Person) act {
		labels := pick(0)
		return act{what: fmt.Sprintf("%s taps %v", who.ID(), labels), by: who.ID(), q: 0,
			prog: interaction.Progress{Selected: labels},
			do: func(ctx context.Context) error {
				_, err := who.Select(ctx, channel, a.ts, control(0, "select"), labels...)
				return err
			}}
	}
	taps := []act{tap(p)}
	if !final && rng.IntN(4) == 0 {
		taps = append(taps, tap(p)) // a change of mind: the response is replaced, not added
	}
	firstIn := true
	for _, x := range taps {
		if !ru.perform(ctx, a, x, final) {
			firstIn = false
			break
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
	}
	last := tap(ru.r.fake.Person(a.second))
	if firstIn {
		// With the first response acknowledged, the second's must end
		// the ask (perform marks an unacknowledged one as a try).
		last.end = interaction.StatusAnswered
	}
	ru.perform(ctx, a, last, final)
}

// compareTeam checks an answered team ask against the acknowledged taps:
// each person's response is in once, as their last acknowledged tap made
// it, and the ask ended at the response that brought the count to
// teamSize (answeredBy is that response's person), not before or after.
// a.mu held.
func (a *askModel) compareTeam(ru *run, got interaction.Ask) []violation {
	var vs []violation
	bad := func(inv string, lost int, format string, args ...any) {
		vs = append(vs, violation{invariant: inv, ask: a.id, lost: lost, detail: fmt.Sprintf(format, args...)})
	}
	people := map[string]int{}
	for _, r := range got.Responses {
		people[r.User.ID]++
	}
	for u, n := range people {
		if n > 1 {
			bad("each response counted once", 0, "%s has %d responses", u, n)
		}
	}
	if len(got.Responses) != teamSize || got.Wanted != teamSize {
		bad("a team ask ends once, at its last response", 0, "answered with %d responses, %d wanted (want %d)", len(got.Responses), got.Wanted, teamSize)
	} else if last := got.Responses[len(got.Responses)-1].User.ID; got.AnsweredBy == nil || got.AnsweredBy.ID != last {
		bad("a team ask ends once, at its last response", 0, "answered by %v, yet the last response is %s's", got.AnsweredBy, last)
	}
	for _, u := range slices.Sorted(maps.Keys(a.team)) {
		m := a.team[u]
		if m.lastAck == "" || m.unsure {
			continue // never acknowledged, or a later tap's outcome unknown
		}
		i := slices.IndexFunc(got.Responses, func(r interaction.Response) bool { return r.User.ID == u })
		var g interaction.AnswerItem
		if i >= 0 && len(got.Responses[i].Answer.Answers) > 0 {
			g = got.Responses[i].Answer.Answers[0]
		}
		if want := (interaction.AnswerItem{ID: g.ID, Selected: m.p.Selected}); i < 0 || !sameItem(g, want) {
			desc, point := ru.nearestKill(m.lastAt)
			bad("acknowledged answer present and right", 1, "%s's response: got %s, want %v (last acknowledged: %s at %s, %s)",
				u, mustJSON(g), m.p.Selected, m.lastAck, m.lastAt.Format("15:04:05.000"), desc)
			vs[len(vs)-1].point = point
		}
	}
	return vs
}

// checkTeamEnds checks that every answered team ask has one "ended" event
// in its audit trail and a "response" event for each response it kept,
// and tells how many team asks there were and how they ended.
func (ru *run) checkTeamEnds(ctx context.Context, asks []*askModel, byID map[string]interaction.Ask) (string, []violation) {
	var vs []violation
	teams, answered, responses, other := 0, 0, 0, 0
	for _, a := range asks {
		got, ok := byID[a.id]
		if a.shape != shapeTeam || !ok {
			continue
		}
		teams++
		if got.Status != interaction.StatusAnswered {
			other++
			continue
		}
		answered++
		responses += len(got.Responses)
		evs, err := ru.events(ctx, a.id)
		if err != nil {
			vs = append(vs, violation{invariant: "a team ask ends once, at its last response", ask: a.id, detail: fmt.Sprintf("events unreadable: %v", err)})
			continue
		}
		ended, responded := 0, 0
		for _, e := range evs {
			switch e.Kind {
			case interaction.EventEnded:
				ended++
			case interaction.EventResponse:
				responded++
			}
		}
		if ended != 1 || responded < len(got.Responses) {
			vs = append(vs, violation{invariant: "a team ask ends once, at its last response", ask: a.id,
				detail: fmt.Sprintf("%d ended events, %d response events for %d responses", ended, responded, len(got.Responses))})
		}
	}
	return fmt.Sprintf("team asks %d (answered %d with %d responses, ended otherwise %d)", teams, answered, responses, other), vs
}
