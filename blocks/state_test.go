package blocks

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// statePayload is a block_actions state as Slack sends it, for
// progressView (ask a1B2c3, rev 7): question 0 single, 1 multi, 2 free
// text, 3 single with a cleared menu; plus blocks of another revision,
// another ask and another app, and values that are not option indexes.
const statePayload = `{"values":{
 "sa.a1B2c3.7.0.controls":{"sa.a1B2c3.7.0.select":{"type":"static_select","selected_option":{"text":{"type":"plain_text","text":"SQLite"},"value":"1"}}},
 "sa.a1B2c3.7.1.controls":{"sa.a1B2c3.7.1.select":{"type":"multi_static_select","selected_options":[
   {"text":{"type":"plain_text","text":"ap"},"value":"2"},{"text":{"type":"plain_text","text":"eu"},"value":"0"},
   {"value":"0"},{"value":"7"},{"value":"-1"},{"value":"01"},{"value":"x"},{"value":"SQLite"}]}},
 "sa.a1B2c3.7.3.controls":{"sa.a1B2c3.7.3.select":{"type":"static_select","selected_option":null}},
 "sa.a1B2c3.6.1.controls":{"sa.a1B2c3.6.1.select":{"type":"static_select","selected_option":{"value":"1"}}},
 "sa.other.7.2.controls":{"sa.other.7.2.select":{"type":"static_select","selected_option":{"value":"0"}}},
 "sa.a1B2c3.7.9.controls":{"sa.a1B2c3.7.9.select":{"type":"static_select","selected_option":{"value":"0"}}},
 "sa.a1B2c3.7.2.controls":{"sa.a1B2c3.7.2.select":{"type":"static_select","selected_option":{"value":"0"}}},
 "sa.a1B2c3.7.0.question":{"sa.a1B2c3.7.0.select":{"type":"static_select","selected_option":{"value":"0"}}},
 "xyz":{"abc":{"type":"plain_text_input","value":"hello"}}
}}`

func TestSelectionsFromState(t *testing.T) {
	var state slack.BlockActionStates
	if err := json.Unmarshal([]byte(statePayload), &state); err != nil {
		t.Fatal(err)
	}
	got := SelectionsFromState(progressView(), &state)
	want := map[int][]string{0: {"SQLite"}, 1: {"eu-west-1", "ap-southeast-2"}, 3: {}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := SelectionsFromState(progressView(), nil); len(got) != 0 {
		t.Errorf("nil state: %v", got)
	}
}

func TestLabelsFromAction(t *testing.T) {
	v := progressView()
	opt := func(value string) slack.OptionBlockObject { return slack.OptionBlockObject{Value: value} }
	sel := func(q string) string { return "sa.a1B2c3.3." + q + ".select" }
	ok := []struct {
		q    int
		a    slack.BlockAction
		want []string
	}{
		{0, slack.BlockAction{ActionID: sel("0"), Type: "static_select", SelectedOption: opt("0")}, []string{"PostgreSQL"}},
		{0, slack.BlockAction{ActionID: sel("0"), Type: "static_select"}, []string{}},
		{1, slack.BlockAction{ActionID: sel("1"), Type: "multi_static_select", SelectedOptions: []slack.OptionBlockObject{opt("2"), opt("0"), opt("2")}}, []string{"eu-west-1", "ap-southeast-2"}},
		{1, slack.BlockAction{ActionID: sel("1"), Type: "multi_static_select"}, []string{}},
		{3, slack.BlockAction{ActionID: sel("3"), Type: "button", Value: "1"}, []string{"no"}},
	}
	for _, c := range ok {
		got, err := LabelsFromAction(v, c.q, &c.a)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("LabelsFromAction(%d, %+v) = %q, %v; want %q", c.q, c.a, got, err, c.want)
		}
	}
	bad := []struct {
		q       int
		a       *slack.BlockAction
		notOurs bool
	}{
		{0, nil, false},
		{-1, &slack.BlockAction{ActionID: sel("0"), Type: "static_select", SelectedOption: opt("0")}, false},
		{4, &slack.BlockAction{ActionID: sel("0"), Type: "static_select", SelectedOption: opt("0")}, false},
		{0, &slack.BlockAction{ActionID: "approve", Type: "button", Value: "0"}, true},
		{0, &slack.BlockAction{ActionID: "sa.other.3.0.select", Type: "static_select", SelectedOption: opt("0")}, false},
		{0, &slack.BlockAction{ActionID: sel("1"), Type: "static_select", SelectedOption: opt("0")}, false},
		{0, &slack.BlockAction{ActionID: "sa.a1B2c3.3.0.skip", Type: "button"}, false},
		{0, &slack.BlockAction{ActionID: sel("0"), Type: "static_select", SelectedOption: opt("2")}, false},
		{0, &slack.BlockAction{ActionID: sel("0"), Type: "static_select", SelectedOption: opt("PostgreSQL")}, false},
		{0, &slack.BlockAction{ActionID: sel("0"), Type: "static_select", SelectedOption: opt("01")}, false},
		{0, &slack.BlockAction{ActionID: sel("0"), Type: "static_select", SelectedOption: opt("-1")}, false},
		{0, &slack.BlockAction{ActionID: sel("0"), Type: "multi_static_select", SelectedOptions: []slack.OptionBlockObject{opt("0"), opt("1")}}, false},
		{0, &slack.BlockAction{ActionID: sel("0"), Type: "users_select"}, false},
		{0, &slack.BlockAction{ActionID: sel("0"), Type: "button", Value: ""}, false},
		{2, &slack.BlockAction{ActionID: sel("2"), Type: "static_select", SelectedOption: opt("0")}, false},
	}
	for _, c := range bad {
		got, err := LabelsFromAction(v, c.q, c.a)
		if err == nil {
			t.Errorf("LabelsFromAction(%d, %+v) = %q, want an error", c.q, c.a, got)
		} else if c.notOurs != errors.Is(err, ErrNotOurs) {
			t.Errorf("LabelsFromAction(%d, %+v): %v; ErrNotOurs should be %v", c.q, c.a, err, c.notOurs)
		}
	}
}

func TestCustomText(t *testing.T) {
	state := func(v string) *slack.ViewState {
		return &slack.ViewState{Values: map[string]map[string]slack.BlockAction{CustomBlockID: {CustomActionID: {Value: v}}}}
	}
	for _, c := range []struct {
		state *slack.ViewState
		want  string
		ok    bool
	}{
		{nil, "", false},
		{&slack.ViewState{}, "", false},
		{state(""), "", false},
		{state(" \n\t "), "", false},
		{state("  orders-api \n"), "orders-api", true},
		{state(injection), injection, true},
	} {
		got, ok := CustomText(c.state)
		if got != c.want || ok != c.ok {
			t.Errorf("CustomText = %q, %v; want %q, %v", got, ok, c.want, c.ok)
		}
	}
}

func TestOneTap(t *testing.T) {
	q := func(multi bool, n int) interaction.Question {
		return interaction.Question{ID: "q", Question: "?", MultiSelect: multi, Options: opts([]string{"a", "b"}[:n]...)}
	}
	for _, c := range []struct {
		qs   []interaction.Question
		want bool
	}{
		{nil, false},
		{[]interaction.Question{q(false, 2)}, true},
		{[]interaction.Question{q(false, 1)}, true},
		{[]interaction.Question{q(true, 2)}, false},
		{[]interaction.Question{q(false, 0)}, false},
		{[]interaction.Question{q(false, 2), q(false, 2)}, false},
		{planRequest().Questions, true},
	} {
		if got := interaction.OneTap(interaction.Request{Questions: c.qs}); got != c.want {
			t.Errorf("interaction.OneTap(%d questions) = %v, want %v", len(c.qs), got, c.want)
		}
	}
}

// TestRevisionChangesEveryID checks that an update (new Rev) gives every
// block a new block_id, so Slack clients reset the menus to initial_option.
func TestRevisionChangesEveryID(t *testing.T) {
	v := progressView()
	_, before := Message(v)
	v.Rev++
	_, after := Message(v)
	ids := map[string]bool{}
	for _, b := range before {
		ids[b.ID()] = true
	}
	for _, b := range after {
		if ids[b.ID()] || !strings.Contains(b.ID(), ".8.") {
			t.Errorf("block_id %q survives a revision", b.ID())
		}
	}
}
