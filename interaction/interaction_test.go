package interaction_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/slackask/slackask/interaction"
)

func q(id string, labels ...string) interaction.Question {
	qq := interaction.Question{ID: id, Question: "Pick " + id}
	for _, l := range labels {
		qq.Options = append(qq.Options, interaction.Option{Label: l})
	}
	return qq
}

func TestValidate(t *testing.T) {
	withDetail := q("plan", "Approve", "Reject")
	withDetail.Detail = "1. do it"
	cases := []struct {
		name string
		req  interaction.Request
		code interaction.Code
		text string
	}{
		{"valid", interaction.Request{Questions: []interaction.Question{q("a", "x", "y"), q("b")}}, "", ""},
		{"empty", interaction.Request{}, interaction.EmptyQuestions, ""},
		{"missing id", interaction.Request{Questions: []interaction.Question{{Question: "x"}}}, interaction.InvalidQuestion, "id is missing"},
		{"missing text", interaction.Request{Questions: []interaction.Question{{ID: "a", Question: "  "}}}, interaction.InvalidQuestion, "question text"},
		{"duplicate id", interaction.Request{Questions: []interaction.Question{q("a"), q("a")}}, interaction.InvalidQuestion, "duplicate id"},
		{"empty label", interaction.Request{Questions: []interaction.Question{q("a", "x", " ")}}, interaction.InvalidQuestion, "label is empty"},
		{"duplicate label", interaction.Request{Questions: []interaction.Question{q("a", "x", "x")}}, interaction.InvalidQuestion, "duplicate label"},
		{"label too long", interaction.Request{Questions: []interaction.Question{q("a", strings.Repeat("é", interaction.MaxLabelLen+1))}}, interaction.InvalidQuestion, "label is"},
		{"long label within limit", interaction.Request{Questions: []interaction.Question{q("a", strings.Repeat("é", interaction.MaxLabelLen))}}, "", ""},
		{"bad intent kind", interaction.Request{Questions: []interaction.Question{func() interaction.Question {
			x := withDetail
			x.Intent = &interaction.Intent{Kind: "nope", Approve: "Approve"}
			return x
		}()}}, interaction.BadIntent, "kind"},
		{"intent approve not a label", interaction.Request{Questions: []interaction.Question{func() interaction.Question {
			x := withDetail
			x.Intent = &interaction.Intent{Kind: "plan-review", Approve: "Yes"}
			return x
		}()}}, interaction.BadIntent, "approve"},
		{"intent without detail", interaction.Request{Questions: []interaction.Question{func() interaction.Question {
			x := q("plan", "Approve")
			x.Intent = &interaction.Intent{Kind: "plan-review", Approve: "Approve"}
			return x
		}()}}, interaction.BadIntent, "detail"},
		{"good intent", interaction.Request{Questions: []interaction.Question{func() interaction.Question {
			x := withDetail
			x.Intent = &interaction.Intent{Kind: "plan-review", Approve: "Approve"}
			return x
		}()}}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := interaction.Validate(c.req)
			if got := interaction.ErrorCode(err); got != c.code {
				t.Fatalf("code = %q (%v), want %q", got, err, c.code)
			}
			if c.text != "" && !strings.Contains(err.Error(), c.text) {
				t.Fatalf("error %q does not mention %q", err, c.text)
			}
		})
	}
}

// Control characters are refused with the field named; tabs and line
// breaks pass.
func TestValidateControlCharacters(t *testing.T) {
	withQ := func(f func(*interaction.Question)) interaction.Request {
		qq := q("a", "Yes", "No")
		f(&qq)
		return interaction.Request{Questions: []interaction.Question{qq}}
	}
	refused := map[string]struct {
		r    interaction.Request
		path string
	}{
		"NUL in id":           {withQ(func(q *interaction.Question) { q.ID = "a\x00b" }), "questions[0].id"},
		"NUL in question":     {withQ(func(q *interaction.Question) { q.Question = "ship\x00?" }), "questions[0].question"},
		"escape in detail":    {withQ(func(q *interaction.Question) { q.Detail = "\x1b[31mred" }), "questions[0].detail"},
		"NUL in header":       {withQ(func(q *interaction.Question) { q.Header = "H\x00" }), "questions[0].header"},
		"NUL in label":        {withQ(func(q *interaction.Question) { q.Options[1].Label = "N\x00o" }), "questions[0].options[1].label"},
		"DEL in label":        {withQ(func(q *interaction.Question) { q.Options[0].Label = "Y\x7fes" }), "questions[0].options[0].label"},
		"bell in description": {withQ(func(q *interaction.Question) { q.Options[0].Description = "ding\x07" }), "questions[0].options[0].description"},
		"NUL in agent id":     {interaction.Request{Questions: []interaction.Question{q("a")}, Agent: &interaction.Agent{ID: "x\x00"}}, "agent.id"},
		"ESC in agent name":   {interaction.Request{Questions: []interaction.Question{q("a")}, Agent: &interaction.Agent{ID: "x", Name: "A\x1bB"}}, "agent.name"},
	}
	for name, c := range refused {
		err := interaction.Validate(c.r)
		if interaction.ErrorCode(err) != interaction.InvalidQuestion || !strings.Contains(err.Error(), c.path+": control character") {
			t.Errorf("%s: %v, want INVALID_QUESTION naming %s", name, err, c.path)
		}
	}
	ok := withQ(func(q *interaction.Question) {
		q.ID = "a\tb"
		q.Question = "Ship?\r\nReally?"
		q.Detail = "line 1\n\tindented"
		q.Header = "H\tI"
		q.Options[0].Label = "Y\nes"
		q.Options[0].Description = "a\nb"
	})
	ok.Agent = &interaction.Agent{ID: "x\ty", Name: "A\nB"}
	if err := interaction.Validate(ok); err != nil {
		t.Errorf("tabs and line breaks: %v", err)
	}
}

func TestAnswerJSON(t *testing.T) {
	ans := interaction.Answer{Answers: []interaction.AnswerItem{{ID: "a"}, {ID: "b", Custom: "free"}, {ID: "c", Selected: []string{"x"}}}}
	b, err := json.Marshal(ans)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"answers":[{"id":"a","selected":[]},{"id":"b","selected":[],"custom":"free"},{"id":"c","selected":["x"]}]}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(interaction.Answer{}); string(b) != `{"answers":[]}` {
		t.Fatalf("empty answer = %s", b)
	}
}

func TestRequestJSONNames(t *testing.T) {
	var r interaction.Request
	in := `{"questions":[{"id":"a","question":"Q","detail":"D","header":"H","options":[{"label":"x","description":"d"}],"multiSelect":true}],"agent":{"id":"ag","name":"Bot"}}`
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Questions[0].MultiSelect || r.Questions[0].Options[0].Description != "d" || r.Agent.Name != "Bot" {
		t.Fatalf("decoded %+v", r)
	}
	out, _ := json.Marshal(r)
	if string(out) != in {
		t.Fatalf("round trip:\n got %s\nwant %s", out, in)
	}
}

func TestErrorJSONAndMatching(t *testing.T) {
	e := interaction.Errorf(interaction.AskTimeout, "too late")
	b, _ := json.Marshal(e)
	if string(b) != `{"name":"UserInteractionError","code":"ASK_TIMEOUT","message":"too late"}` {
		t.Fatalf("json = %s", b)
	}
	wrapped := fmt.Errorf("bot ask: %w", e)
	if interaction.ErrorCode(wrapped) != interaction.AskTimeout || !errors.Is(wrapped, &interaction.Error{Code: interaction.AskTimeout}) {
		t.Fatal("wrapped error lost its code")
	}
	if e.Name() != "UserInteractionError" {
		t.Fatal(e.Name())
	}
	if interaction.ErrorCode(errors.New("x")) != interaction.Internal || interaction.ErrorCode(nil) != "" {
		t.Fatal("ErrorCode defaults")
	}
	var back interaction.Error
	if err := json.Unmarshal(b, &back); err != nil || back.Code != interaction.AskTimeout || back.Message != "too late" {
		t.Fatalf("unmarshal: %v %+v", err, back)
	}
}

func TestDuration(t *testing.T) {
	var d interaction.Duration
	for in, ok := range map[string]bool{`"90s"`: true, `30`: true, `"x"`: false, `"-1s"`: false, `true`: false} {
		err := json.Unmarshal([]byte(in), &d)
		if (err == nil) != ok {
			t.Errorf("%s: err=%v, want ok=%v", in, err, ok)
		}
	}
}

func TestServiceOrder(t *testing.T) {
	var s interaction.Service
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := interaction.Request{Questions: []interaction.Question{q("a", "x")}}
	check := func(name string, ctx context.Context, r interaction.Request, want interaction.Code) {
		t.Helper()
		_, err := s.Ask(ctx, r)
		if got := interaction.ErrorCode(err); got != want {
			t.Errorf("%s: code %q, want %q", name, got, want)
		}
	}
	check("done ctx before empty", ctx, interaction.Request{}, interaction.AskAborted)
	check("empty before provider", context.Background(), interaction.Request{}, interaction.EmptyQuestions)
	check("no provider", context.Background(), req, interaction.NoProvider)

	p := interaction.ProviderFunc(func(ctx context.Context, r interaction.Request) (interaction.Answer, error) {
		return interaction.AnswerFrom(r, []interaction.Progress{{Selected: []string{"x"}}}), nil
	})
	unregister, err := s.Register(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Register(p); interaction.ErrorCode(err) != interaction.DuplicateProvider {
		t.Fatalf("second register: %v", err)
	}
	check("invalid", context.Background(), interaction.Request{Questions: []interaction.Question{{ID: "a"}}}, interaction.InvalidQuestion)
	ans, err := s.Ask(context.Background(), req)
	if err != nil || ans.Answers[0].Selected[0] != "x" {
		t.Fatalf("ask: %v %+v", err, ans)
	}
	unregister()
	unregister()
	check("after unregister", context.Background(), req, interaction.NoProvider)
	if _, err := s.Register(p); err != nil {
		t.Fatalf("register after unregister: %v", err)
	}
}

func TestAnswerFromAndCheck(t *testing.T) {
	r := interaction.Request{Questions: []interaction.Question{q("a", "x", "y"), q("b", "x"), q("c")}}
	ans := interaction.AnswerFrom(r, []interaction.Progress{{Selected: []string{"y"}}, {Custom: "mine", Selected: []string{"x"}}})
	if err := interaction.CheckAnswer(r, ans); err != nil {
		t.Fatal(err)
	}
	if ans.Answers[1].Custom != "mine" || len(ans.Answers[1].Selected) != 0 || !ans.Answers[2].Skipped() {
		t.Fatalf("%+v", ans)
	}
	bad := interaction.Answer{Answers: []interaction.AnswerItem{{ID: "a", Selected: []string{"x", "y"}}, {ID: "b"}, {ID: "c"}}}
	if interaction.CheckAnswer(r, bad) == nil {
		t.Fatal("two labels on single select accepted")
	}
}

func TestAskResult(t *testing.T) {
	for st, code := range map[interaction.Status]interaction.Code{
		interaction.StatusCancelled: interaction.AskCancelled,
		interaction.StatusExpired:   interaction.AskTimeout,
		interaction.StatusAborted:   interaction.AskAborted,
	} {
		if _, err := (interaction.Ask{Status: st}).Result(); interaction.ErrorCode(err) != code {
			t.Errorf("%s: %v", st, err)
		}
	}
	a := interaction.Ask{Status: interaction.StatusAnswered, Answer: &interaction.Answer{}}
	if _, err := a.Result(); err != nil {
		t.Fatal(err)
	}
}
