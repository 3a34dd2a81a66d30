package slackfake

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/slack-go/slack"
)

func TestWorkspaceAccessors(t *testing.T) {
	srv := newServer(t, Config{})
	srv.AddUserGroup("S1", "U1")
	if got := srv.BotUserID(); got != "U0BOT" {
		t.Errorf("BotUserID = %q", got)
	}
	users := srv.Users()
	want := []UserInfo{{ID: "U1", Name: "alice"}, {ID: "U2", Name: "bob"}, {ID: "U0BOT", Name: "slackfake-bot", IsBot: true}}
	if !reflect.DeepEqual(users, want) {
		t.Errorf("Users = %+v", users)
	}
	api := newAPI(t, srv)
	if _, _, err := api.PostMessage("U1", slack.MsgOptionText("hi", false)); err != nil {
		t.Fatal(err)
	}
	chans := srv.Channels()
	if len(chans) != 2 || chans[0].ID != "C1" || chans[0].IsIM || len(chans[0].Members) != 3 ||
		chans[1].ID != DMChannelID("U1") || !chans[1].IsIM || chans[1].User != "U1" {
		t.Errorf("Channels = %+v", chans)
	}
	groups := srv.UserGroups()
	groups["S1"][0] = "changed"
	if got := srv.UserGroups(); !reflect.DeepEqual(got, map[string][]string{"S1": {"U1"}}) {
		t.Errorf("UserGroups = %v (a copy must not alias)", got)
	}
}

func TestMessageState(t *testing.T) {
	srv := newServer(t, Config{})
	startBot(t, srv, nil)
	api := newAPI(t, srv)
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("Pick"), "pick", opt("a", "A"), opt("b", "B"))
	sel.InitialOption = opt("a", "A")
	_, ts, err := api.PostMessage("C1", slack.MsgOptionBlocks(slack.NewActionBlock("blk", sel)))
	if err != nil {
		t.Fatal(err)
	}
	state := func(user string) string {
		t.Helper()
		raw, err := srv.Person(user).MessageState("C1", ts)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Values map[string]map[string]struct {
				SelectedOption struct{ Value string } `json:"selected_option"`
			} `json:"values"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return v.Values["blk"]["pick"].SelectedOption.Value
	}
	if got := state("U1"); got != "a" {
		t.Errorf("untouched state: %q, want the initial option", got)
	}
	if _, err := srv.Person("U1").Select(testCtx(t), "C1", ts, ByActionID("pick"), "b"); err != nil {
		t.Fatal(err)
	}
	if got := state("U1"); got != "b" {
		t.Errorf("alice's state after choosing: %q", got)
	}
	if got := state("U2"); got != "a" {
		t.Errorf("bob's state: %q (each person has their own)", got)
	}
	if _, err := srv.Person("U1").MessageState("C1", "1.2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown message: %v", err)
	}
	if _, err := srv.Person("U9").MessageState("C1", ts); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("unknown user: %v", err)
	}
	// An ephemeral message of the person has state too.
	eph, err := api.PostEphemeral("C1", "U2", slack.MsgOptionBlocks(slack.NewActionBlock("blk", sel)))
	if err != nil {
		t.Fatal(err)
	}
	if raw, err := srv.Person("U2").MessageState("C1", eph); err != nil || len(raw) == 0 {
		t.Errorf("ephemeral state: %s %v", raw, err)
	}
	if _, err := srv.Person("U1").MessageState("C1", eph); !errors.Is(err, ErrNotFound) {
		t.Errorf("someone else's ephemeral: %v", err)
	}
}
