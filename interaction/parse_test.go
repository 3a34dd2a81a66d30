package interaction

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second}, {"1h30m", 90 * time.Minute}, {"90", 90 * time.Second},
		{"1.5", 1500 * time.Millisecond}, {"0", 0}, {" 2m ", 2 * time.Minute},
	} {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for in, want := range map[string]string{
		"NaN": "want a duration", "Inf": "want a duration", "-Inf": "want a duration",
		"1e308": "at most", "-5s": "negative", "-1": "negative", "soon": "want a duration",
		"": "want a duration", "1000000h": "at most",
	} {
		_, err := ParseDuration(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDuration(%q) error = %v, want it to say %q", in, err, want)
		}
	}
}

func TestCheckFields(t *testing.T) {
	var in AskInput
	for body, want := range map[string]string{
		`{"questions":[{"id":"a","question":"x","optionz":[{"label":"A"}]}]}`:                `questions[0].optionz: unknown field (did you mean "options"?)`,
		`{"questions":[],"agnet":{"id":"x"}}`:                                                `agnet: unknown field (did you mean "agent"?)`,
		`{"questions":[{"id":"a","question":"x","options":[{"label":"A","colour":"red"}]}]}`: `questions[0].options[0].colour: unknown field`,
		`{"questions":[],"agent":{"id":"x","zzzzzzzzzz":1}}`:                                 `agent.zzzzzzzzzz: unknown field (known: id, name)`,
		`{"questions":[],"Channel":"C1"}`:                                                    `Channel: unknown field (did you mean "channel"?)`,
		`{"questions":[{"id":"a","question":"x","MultiSelect":true}]}`:                       `questions[0].MultiSelect: unknown field (did you mean "multiSelect"?)`,
	} {
		err := CheckFields([]byte(body), &in)
		var ie *Error
		if !errors.As(err, &ie) || ie.Code != InvalidQuestion || !strings.Contains(ie.Message, want) {
			t.Errorf("CheckFields(%s) = %v, want INVALID_QUESTION containing %q", body, err, want)
		}
	}
	for _, body := range []string{
		`{"questions":[{"id":"a","question":"x","options":[{"label":"A"}],"multiSelect":true}],"timeout":"5m","channel":"C1"}`,
		`{"questions":[{"id":"a","question":"x","multi_select":true}]}`, // the one alias
		`not json`, `[1,2]`, `{"questions":null}`,
	} {
		if err := CheckFields([]byte(body), &in); err != nil {
			t.Errorf("CheckFields(%s) = %v, want nil", body, err)
		}
	}
}

// ResolveAliases renames multi_select to multiSelect in questions, and
// multiSelect wins when both are given.
func TestResolveAliases(t *testing.T) {
	for body, want := range map[string]bool{
		`{"questions":[{"id":"a","question":"x","multi_select":true}]}`:                     true,
		`{"questions":[{"id":"a","question":"x","multi_select":false}]}`:                    false,
		`{"questions":[{"id":"a","question":"x","multiSelect":false,"multi_select":true}]}`: false,
		`{"questions":[{"id":"a","question":"x","multiSelect":true}]}`:                      true,
	} {
		var in AskInput
		if err := json.Unmarshal(ResolveAliases([]byte(body)), &in); err != nil || in.Questions[0].MultiSelect != want {
			t.Errorf("%s: %v, multiSelect %v, want %v", body, err, in.Questions[0].MultiSelect, want)
		}
	}
	same := `{"questions":[{"id":"a","question":"x"}], "timeout": "5m"}`
	if got := string(ResolveAliases([]byte(same))); got != same {
		t.Errorf("without aliases the body changed: %s", got)
	}
}

func TestIsLinkURL(t *testing.T) {
	for u, want := range map[string]bool{
		"https://example.com/x?y=1": true, "http://a.b": true, "mailto:ops@example.com": true,
		"javascript:alert(1)": false, "/relative": false, "https://": false, "mailto:": false,
		"https://a.b/x y": false, "https://a.b/\x00": false, "data:text/html,x": false, "": false,
	} {
		if IsLinkURL(u) != want {
			t.Errorf("IsLinkURL(%q) = %v, want %v", u, !want, want)
		}
	}
}
