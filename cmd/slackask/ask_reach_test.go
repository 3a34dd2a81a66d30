package main

import (
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// --notify, --remind-after, --remind-every and --escalate fill the
// request; bad values are refused naming the flag.
func TestAskReachFlags(t *testing.T) {
	f, err := parseAskFlags([]string{"--question", "Roll back?", "--responders", "U0A1", "--notify", "dm",
		"--remind-after", "10m", "--remind-every", "15m", "--timeout", "2h",
		"--escalate", "30m=U0A2,S0A3", "--escalate", "1h=U0A4@C0A5"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	in, err := f.input(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	want := []interaction.EscalationStep{
		{After: interaction.Duration(30 * time.Minute), Responders: []string{"U0A2", "S0A3"}, Notify: interaction.NotifyDM},
		{After: interaction.Duration(time.Hour), Responders: []string{"U0A4"}, Channel: "C0A5", Notify: interaction.NotifyDM},
	}
	if in.Notify != interaction.NotifyDM || time.Duration(in.RemindAfter) != 10*time.Minute || time.Duration(in.RemindEvery) != 15*time.Minute || !reflect.DeepEqual(in.Escalation, want) {
		t.Fatalf("input %+v", in)
	}
	if err := slackid.Check(in); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--notify", "pager"},
		{"--remind-every", "often"},
		{"--escalate", "30m"},
		{"--escalate", "soon=U0A1"},
		{"--escalate", "30m=@C0A1"},
	} {
		_, err := parseAskFlags(append([]string{"--question", "?"}, args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}

// The manifest enables the Home tab and subscribes to app_home_opened.
func TestManifestEnablesHome(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(t.Context(), []string{"manifest"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var m struct {
		Features struct {
			AppHome struct {
				Home bool `json:"home_tab_enabled"`
			} `json:"app_home"`
		} `json:"features"`
		Settings struct {
			Events struct {
				Bot []string `json:"bot_events"`
			} `json:"event_subscriptions"`
		} `json:"settings"`
	}
	if err := json.Unmarshal([]byte(out.String()), &m); err != nil {
		t.Fatal(err)
	}
	if !m.Features.AppHome.Home || !slices.Contains(m.Settings.Events.Bot, "app_home_opened") {
		t.Fatalf("manifest %s", out.String())
	}
}
