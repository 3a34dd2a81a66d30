package interaction

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestResponseCountJSON(t *testing.T) {
	for in, want := range map[string]ResponseCount{`2`: {N: 2}, `"all"`: {All: true}, `"ALL"`: {All: true}, `1`: {N: 1}} {
		var c ResponseCount
		if err := json.Unmarshal([]byte(in), &c); err != nil || c != want {
			t.Errorf("%s → %+v, %v; want %+v", in, c, err, want)
		}
	}
	for _, in := range []string{`0`, `-1`, `51`, `"some"`, `1.5`, `"2"`, `true`} {
		var c ResponseCount
		if err := json.Unmarshal([]byte(in), &c); err == nil {
			t.Errorf("%s accepted as %+v", in, c)
		}
	}
	var in AskInput
	if err := json.Unmarshal([]byte(`{"questions":[],"responses":"all"}`), &in); err != nil || !in.Responses.All {
		t.Fatalf("AskInput responses all: %+v %v", in.Responses, err)
	}
	b, _ := json.Marshal(AskInput{Responses: ResponseCount{N: 3}})
	if !strings.Contains(string(b), `"responses":3`) {
		t.Fatalf("marshal: %s", b)
	}
	b, _ = json.Marshal(AskInput{})
	if strings.Contains(string(b), "responses") {
		t.Fatalf("zero count marshalled: %s", b)
	}
}

func TestValidateInput(t *testing.T) {
	q := []Question{{ID: "d", Question: "Deploy?", Options: []Option{{Label: "Yes"}, {Label: "No", Veto: true}}}}
	ok := []AskInput{
		{Request: Request{Questions: q}},
		{Request: Request{Questions: q}, Responses: ResponseCount{N: 2}, OnTimeout: OnTimeoutAnswer},
		{Request: Request{Questions: q}, Responses: ResponseCount{All: true}, Responders: []string{"U1A", "S0TEAM"}},
		{Request: Request{Questions: q}, CallbackURL: "https://example.com/hook"},
	}
	for i, in := range ok {
		if err := ValidateInput(in); err != nil {
			t.Errorf("ok[%d]: %v", i, err)
		}
	}
	no := map[string]AskInput{
		"needs responders": {Request: Request{Questions: q}, Responses: ResponseCount{All: true}},
		"onTimeout":        {Request: Request{Questions: q}, OnTimeout: "later"},
		"callbackUrl":      {Request: Request{Questions: q}, CallbackURL: "ftp://x/y"},
		"needs options":    {Request: Request{Questions: []Question{{ID: "a", Question: "?", Required: true, AllowOther: new(false)}}}},
	}
	for want, in := range no {
		err := ValidateInput(in)
		if ErrorCode(err) != InvalidQuestion || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

func TestTeamAnswer(t *testing.T) {
	r := Request{Questions: []Question{
		{ID: "db", Question: "DB?", Options: []Option{{Label: "PG"}, {Label: "SQLite"}}},
		{ID: "env", Question: "Envs?", MultiSelect: true, Options: []Option{{Label: "dev"}, {Label: "prod"}}},
		{ID: "notes", Question: "Notes?"},
		{ID: "none", Question: "Unanswered", Options: []Option{{Label: "x"}}},
	}}
	resp := func(name string, items ...AnswerItem) Response {
		return Response{User: User{ID: "U" + strings.ToUpper(name), Name: name}, Answer: Answer{Answers: items}}
	}
	ans, tally := TeamAnswer(r, []Response{
		resp("alice", AnswerItem{ID: "db", Selected: []string{"PG"}}, AnswerItem{ID: "env", Selected: []string{"dev", "prod"}}, AnswerItem{ID: "notes", Custom: "ship it"}),
		resp("bob", AnswerItem{ID: "db", Selected: []string{"SQLite"}}, AnswerItem{ID: "env", Selected: []string{"dev"}}, AnswerItem{ID: "notes", Custom: "wait"}),
	})
	want := Answer{Answers: []AnswerItem{
		{ID: "db", Selected: []string{"PG", "SQLite"}},
		{ID: "env", Selected: []string{"dev"}},
		{ID: "notes", Selected: []string{}, Custom: "alice: ship it\nbob: wait"},
		{ID: "none", Selected: []string{}},
	}}
	if !reflect.DeepEqual(ans, want) {
		t.Fatalf("answer = %+v\nwant %+v", ans, want)
	}
	if tally["db"]["PG"] != 1 || tally["env"]["dev"] != 2 || tally["env"]["prod"] != 1 || tally["none"] != nil {
		t.Fatalf("tally = %v", tally)
	}
	if q, l, ok := Vetoed(Request{Questions: []Question{{ID: "d", Options: []Option{{Label: "Yes"}, {Label: "No", Veto: true}}}}},
		Answer{Answers: []AnswerItem{{ID: "d", Selected: []string{"No"}}}}); !ok || q != "d" || l != "No" {
		t.Fatalf("Vetoed = %q %q %v", q, l, ok)
	}
}
