package mcp

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
)

// approvalArgs is a 2-of-3 deploy approval where a No vetoes.
func approvalArgs() map[string]any {
	return map[string]any{
		"questions": []any{
			map[string]any{
				"id": "deploy", "question": "Deploy v2.3?", "required": true, "allowOther": false,
				"options": []any{map[string]any{"label": "Yes"}, map[string]any{"label": "No", "veto": true}},
			},
			map[string]any{"id": "notes", "question": "Anything to add?"},
		},
		"responders": []any{"U0AAA", "U0BBB", "S0CCC"},
		"responses":  2,
		"onTimeout":  "answer",
	}
}

// answerTeam ends a pending ask as a team ask answered by responses, the
// last of them ending it.
func (f *fakeService) answerTeam(t *testing.T, id string, wanted int, ans interaction.Answer, responses []interaction.Response, by *interaction.User) {
	t.Helper()
	if !f.Finish(id, func(a *interaction.Ask) {
		a.Status = interaction.StatusAnswered
		a.Answer = &ans
		a.AnsweredBy = by
		a.Wanted = wanted
		a.Responses = responses
	}) {
		t.Fatalf("ask %s is not pending", id)
	}
}

func teamResponses() []interaction.Response {
	now := time.Now()
	return []interaction.Response{
		{User: interaction.User{ID: "U0AAA", Name: "alice"}, At: now, Answer: interaction.Answer{Answers: []interaction.AnswerItem{
			{ID: "deploy", Selected: []string{"Yes"}}, {ID: "notes", Selected: []string{}, Custom: "ship it"}}}},
		{User: interaction.User{ID: "U0BBB", Name: "bob"}, At: now, Answer: interaction.Answer{Answers: []interaction.AnswerItem{
			{ID: "deploy", Selected: []string{"No"}}, {ID: "notes", Selected: []string{}}}}},
	}
}

// TestTeamArguments: responses, responders, onTimeout, veto, required and
// allowOther reach the AskInput; the result of a team ask is the team's
// answer followed by who answered what, and says who vetoed.
func TestTeamArguments(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			c := connect(t, tr, svc, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			done := c.start(ctx, approvalArgs(), nil)
			id := recv(t, svc.created, "the ask")

			in := svc.input(t, 0)
			no := false
			wantQ := []interaction.Question{
				{ID: "deploy", Question: "Deploy v2.3?", Required: true, AllowOther: &no,
					Options: []interaction.Option{{Label: "Yes"}, {Label: "No", Veto: true}}},
				{ID: "notes", Question: "Anything to add?"},
			}
			if !reflect.DeepEqual(in.Questions, wantQ) {
				t.Errorf("questions\n got %+v\nwant %+v", in.Questions, wantQ)
			}
			if in.Responses != (interaction.ResponseCount{N: 2}) || in.OnTimeout != interaction.OnTimeoutAnswer ||
				strings.Join(in.Responders, ",") != "U0AAA,U0BBB,S0CCC" {
				t.Errorf("responses %+v onTimeout %q responders %v", in.Responses, in.OnTimeout, in.Responders)
			}

			rs := teamResponses()
			veto := interaction.Answer{Answers: []interaction.AnswerItem{{ID: "deploy", Selected: []string{"No"}}, {ID: "notes", Selected: []string{}}}}
			svc.answerTeam(t, id, 2, veto, rs, &rs[1].User)
			r := recv(t, done, "the result")
			if r.err != nil || r.res.IsError {
				t.Fatalf("%v %+v", r.err, r.res)
			}
			got := text(t, r.res)
			const wantJSON = `{"answers":[{"id":"deploy","selected":["No"]},{"id":"notes","selected":[]}]}`
			head, summary, ok := strings.Cut(got, "\n\n")
			if !ok || head != wantJSON {
				t.Fatalf("text does not start with the answer JSON and a blank line:\n%s", got)
			}
			for _, want := range []string{
				"Team answer from 2 of 2 wanted responses",
				"\n- alice: deploy: Yes; notes: \"ship it\"",
				"\n- bob: deploy: No; notes: skipped",
				"\nbob vetoed (deploy: No)",
			} {
				if !strings.Contains(summary, want) {
					t.Errorf("summary lacks %q:\n%s", want, summary)
				}
			}
			if strings.Contains(summary, "deadline") {
				t.Errorf("a vetoed ask's summary speaks of the deadline:\n%s", summary)
			}
			b, _ := json.Marshal(r.res.StructuredContent)
			if string(b) != wantJSON {
				t.Errorf("structured content %s, want the answer alone", b)
			}
		})
	}
}

// TestTeamGetAnswer: get_answer of a team ask left open returns the team's
// answer and the summary too; an ask answered at its deadline short of
// its count says so.
func TestTeamGetAnswer(t *testing.T) {
	svc := newFakeService()
	c := connect(t, "stdio", svc, Options{})
	args := approvalArgs()
	args["responses"] = "all"
	args["waitSeconds"] = 0.05
	id := pendingID(t, c.call(t, args))
	<-svc.created
	if in := svc.input(t, 0); in.Responses != (interaction.ResponseCount{All: true}) {
		t.Errorf("responses %+v, want all", in.Responses)
	}
	rs := teamResponses()[:1]
	svc.Change(id, func(a *interaction.Ask) { a.Wanted, a.Responses = 3, rs })
	pending := c.getAnswer(t, map[string]any{"id": id, "waitSeconds": 0.05})
	pendingID(t, pending)
	if got := text(t, pending); !strings.Contains(got, "1 of the 3 people it waits for have answered (alice)") {
		t.Errorf("pending text does not say who answered so far:\n%s", got)
	}
	team := interaction.Answer{Answers: []interaction.AnswerItem{{ID: "deploy", Selected: []string{"Yes"}}, {ID: "notes", Selected: []string{}, Custom: "alice: ship it"}}}
	svc.answerTeam(t, id, 3, team, rs, nil)
	res := c.getAnswer(t, map[string]any{"id": id})
	if res.IsError {
		t.Fatalf("get_answer: %s", text(t, res))
	}
	got := text(t, res)
	for _, want := range []string{
		`{"answers":[{"id":"deploy","selected":["Yes"]},{"id":"notes","selected":[],"custom":"alice: ship it"}]}` + "\n\n",
		"Team answer from 1 of 3 wanted responses",
		"\n- alice: deploy: Yes",
		"\nThe deadline passed before everyone answered",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("get_answer text lacks %q:\n%s", want, got)
		}
	}
}

// TestOneResponseHasNoSummary: an ask that collects one response keeps
// today's result, the answer JSON alone.
func TestOneResponseHasNoSummary(t *testing.T) {
	ask := interaction.Ask{Status: interaction.StatusAnswered, Questions: []interaction.Question{{ID: "go", Question: "?"}},
		Responses: teamResponses()[:1]}
	if s := teamSummary(ask); s != "" {
		t.Errorf("summary %q for a one-person ask", s)
	}
	ask.Wanted = 2
	if s := teamSummary(ask); !strings.Contains(s, "1 of 2") {
		t.Errorf("summary %q", s)
	}
}

// TestTeamInvalidInput: wrong team arguments are INVALID_QUESTION tool
// errors naming the argument, and no ask is created.
func TestTeamInvalidInput(t *testing.T) {
	with := func(k string, v any) map[string]any {
		a := approvalArgs()
		if v == nil {
			delete(a, k)
		} else {
			a[k] = v
		}
		return a
	}
	allNoResponders := with("responses", "all")
	delete(allNoResponders, "responders")
	noAnswerPossible := simpleArgs()
	noAnswerPossible["questions"] = []any{map[string]any{"id": "a", "question": "Why?", "required": true, "allowOther": false}}
	for _, tc := range []struct {
		name     string
		args     map[string]any
		contains string
	}{
		{"zero responses", with("responses", 0), "responses"},
		{"negative responses", with("responses", -2), "responses"},
		{"too many responses", with("responses", 51), "at most 50"},
		{"responses word", with("responses", "some"), "responses"},
		{"responses object", with("responses", map[string]any{}), "responses must be a number"},
		{"all without responders", allNoResponders, "needs responders"},
		{"bad onTimeout", with("onTimeout", "never"), "onTimeout"},
		{"bad responder", with("responders", []any{"alice"}), "responders[0]"},
		{"required, no Other, no options", noAnswerPossible, "nobody could answer"},
		{"veto is a string", func() map[string]any {
			a := simpleArgs()
			a["questions"] = []any{map[string]any{"id": "a", "question": "?", "options": []any{map[string]any{"label": "x", "veto": "yes"}}}}
			return a
		}(), "veto must be a boolean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := newFakeService()
			c := connect(t, "stdio", svc, Options{})
			wantToolError(t, c.call(t, tc.args), interaction.InvalidQuestion, tc.contains)
			if n := svc.creates(); n != 0 {
				t.Errorf("%d asks created", n)
			}
		})
	}
}

// TestTeamUnknownFields: misspelt team arguments are refused, naming the
// one meant.
func TestTeamUnknownFields(t *testing.T) {
	svc := newFakeService()
	c := connect(t, "stdio", svc, Options{})
	for _, tc := range []struct {
		args       map[string]any
		path, hint string
	}{
		{map[string]any{"questions": []any{map[string]any{"id": "a", "question": "x", "requird": true}}}, "questions[0].requird", "required"},
		{map[string]any{"questions": []any{map[string]any{"id": "a", "question": "x", "options": []any{map[string]any{"label": "A", "vetoo": true}}}}},
			"questions[0].options[0].vetoo", "veto"},
		{map[string]any{"questions": []any{map[string]any{"id": "a", "question": "x"}}, "response": 2}, "response", "responses"},
		{map[string]any{"questions": []any{map[string]any{"id": "a", "question": "x"}}, "on_timeout": "answer"}, "on_timeout", "onTimeout"},
	} {
		res := c.call(t, tc.args)
		wantToolError(t, res, interaction.InvalidQuestion, tc.path)
		if !strings.Contains(text(t, res), tc.hint) {
			t.Errorf("%q does not hint %q", text(t, res), tc.hint)
		}
	}
	if n := svc.creates(); n != 0 {
		t.Errorf("%d asks created", n)
	}
}

// TestTeamSchema: the input schema takes the team arguments and refuses
// what the domain refuses; its bound on responses is the domain's.
func TestTeamSchema(t *testing.T) {
	in := compileSchema(t, inputSchema)
	b, _ := json.Marshal(approvalArgs())
	for _, ok := range []string{string(b),
		`{"questions":[{"id":"a","question":"?"}],"responses":"all","responders":["S01"],"onTimeout":"expire"}`} {
		if err := validates(t, in, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		`{"questions":[{"id":"a","question":"?"}],"responses":0}`,
		`{"questions":[{"id":"a","question":"?"}],"responses":"some"}`,
		`{"questions":[{"id":"a","question":"?"}],"onTimeout":"never"}`,
		`{"questions":[{"id":"a","question":"?","required":"yes"}]}`,
		`{"questions":[{"id":"a","question":"?","options":[{"label":"x","veto":1}]}]}`,
	} {
		if err := validates(t, in, bad); err == nil {
			t.Errorf("%s validates", bad)
		}
	}
	var s struct {
		Properties struct {
			Responses struct {
				OneOf []struct {
					Maximum int `json:"maximum"`
				} `json:"oneOf"`
			} `json:"responses"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(inputSchema), &s); err != nil {
		t.Fatal(err)
	}
	if o := s.Properties.Responses.OneOf; len(o) == 0 || o[0].Maximum != interaction.MaxResponders {
		t.Errorf("responses maximum %+v, want %d", o, interaction.MaxResponders)
	}
	for _, want := range []string{`"responses"`, `"responders"`, `"veto"`, `"required"`, `"allowOther"`, `"onTimeout"`, "2 of these 3 people"} {
		if !strings.Contains(toolDescription, want) {
			t.Errorf("the tool description does not explain %s", want)
		}
	}
}
