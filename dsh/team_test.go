package dsh

import (
	"reflect"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
)

// TestAsksCollectOneResponse: the bridge's asks are one person's: no
// responses count, onTimeout or responders, and a frame whose questions
// carry veto, required, allowOther or note (not fields of the seam) does
// not pass them on: a dsh question never gets a note.
func TestAsksCollectOneResponse(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	start(t, host, svc)

	no := false
	qs := widgetQuestions()
	qs[0].Required, qs[0].AllowOther = true, &no
	qs[0].Options[1].Veto = true
	qs[0].Options[0].Note = interaction.NoteRequired
	rpc := host.Ask("s1", qs)
	svc.askByKey(t, "dsh:"+rpc)
	calls := svc.createCalls()
	if len(calls) != 1 {
		t.Fatalf("%d Create calls, want 1", len(calls))
	}
	in := calls[0].In
	if !in.Responses.IsZero() || in.Responses.Many() || in.OnTimeout != "" || len(in.Responders) != 0 || in.CallbackURL != "" {
		t.Errorf("Create input %s: want one response, no team fields", mustJSONString(t, in))
	}
	if !reflect.DeepEqual(in.Questions, widgetQuestions()) {
		t.Errorf("questions\n got %s\nwant %s", mustJSONString(t, in.Questions), mustJSONString(t, widgetQuestions()))
	}
	if qs[0].Options[1].Veto != true || !qs[0].Required {
		t.Error("seamQuestions changed the host's request")
	}
}

// TestTeamAnswerReachesTheSeam: a team ask's answer (had one reached the
// bridge) is delivered in the seam's shape: a tie on a single-select
// question becomes custom text naming the tied labels and their votes,
// people's free text stays one custom, and multi-select labels stay.
func TestTeamAnswerReachesTheSeam(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	start(t, host, svc)

	qs := append(widgetQuestions(), interaction.Question{ID: "name", Question: "Name?"})
	rpc := host.Ask("s1", qs)
	ask := svc.askByKey(t, "dsh:"+rpc)
	now := time.Now()
	alice, bob := interaction.User{ID: "U0A", Name: "alice"}, interaction.User{ID: "U0B", Name: "bob"}
	svc.end(t, ask.ID, func(a *interaction.Ask) {
		a.Status = interaction.StatusAnswered
		a.Wanted = 2
		a.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{
			item("color", "Red (Recommended)", "Blue"), item("features", "Logging"), customItem("name", "alice: Ada\nbob: Bo"),
		}}
		a.Responses = []interaction.Response{
			{User: alice, At: now, Answer: interaction.Answer{Answers: []interaction.AnswerItem{item("color", "Red (Recommended)"), item("features", "Logging"), customItem("name", "Ada")}}},
			{User: bob, At: now, Answer: interaction.Answer{Answers: []interaction.AnswerItem{item("color", "Blue"), item("features", "Logging"), customItem("name", "Bo")}}},
		}
		a.Tally = map[string]map[string]int{"color": {"Red (Recommended)": 1, "Blue": 1}, "features": {"Logging": 2}}
		a.AnsweredBy = &bob
	})
	res := waitResult(t, host, rpc)
	const want = `{"answers":[{"id":"color","selected":[],"custom":"tie between \"Red (Recommended)\" (1), \"Blue\" (1)"},` +
		`{"id":"features","selected":["Logging"]},{"id":"name","selected":[],"custom":"alice: Ada\nbob: Bo"}]}`
	if res.Outcome != "answered" || res.ModelText != want {
		t.Errorf("result %+v\nwant model text %s", res, want)
	}
}
