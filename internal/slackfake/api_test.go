package slackfake

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestAuth(t *testing.T) {
	srv := newServer(t, Config{})
	api := newAPI(t, srv)
	resp, err := api.AuthTestContext(testCtx(t))
	if err != nil || resp.UserID != "U0BOT" || resp.TeamID != "T0FAKE" || resp.BotID == "" {
		t.Fatalf("auth.test = %+v, %v", resp, err)
	}
	bad := slack.New("xoxb-wrong", slack.OptionAPIURL(srv.APIURL()))
	if _, err := bad.AuthTest(); err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("wrong token: %v, want invalid_auth", err)
	}
	appAsBot := slack.New(srv.cfg.AppToken, slack.OptionAPIURL(srv.APIURL()))
	if _, _, err := appAsBot.PostMessage("C1", slack.MsgOptionText("hi", false)); err == nil || err.Error() != "not_allowed_token_type" {
		t.Fatalf("app token on chat.postMessage: %v", err)
	}
	if _, body := rawCall(t, srv, "chat.postMessage", url.Values{"token": {"xoxb-nope"}, "channel": {"C1"}, "text": {"x"}}); body["error"] != "invalid_auth" {
		t.Fatalf("invalid token: %v", body)
	}
	if _, body := rawCall(t, srv, "chat.fly", url.Values{}); body["error"] != "unknown_method" {
		t.Fatalf("unknown method: %v", body)
	}
	if srv.CallCount("auth.test") != 2 || srv.CallCount("chat.fly") != 1 {
		t.Fatalf("call counts: %v", srv.Calls())
	}
	for _, c := range srv.Calls() {
		if _, leaked := c.Params["token"]; leaked {
			t.Fatal("token recorded in Calls")
		}
	}
}

var tsPattern = regexp.MustCompile(`^\d{10}\.\d{6}$`)

func TestPostUpdateEphemeral(t *testing.T) {
	clock := newClock()
	srv := newServer(t, Config{Now: clock.Now})
	api := newAPI(t, srv)
	blocks := slack.MsgOptionBlocks(slack.NewSectionBlock(md("*Question?*"), nil, nil))
	ch, ts, err := api.PostMessage("C1", slack.MsgOptionText("Question?", false), blocks)
	if err != nil || ch != "C1" || !tsPattern.MatchString(ts) {
		t.Fatalf("post = %q %q %v", ch, ts, err)
	}
	_, ts2, _ := api.PostMessage("C1", slack.MsgOptionText("second", false))
	if ts2 <= ts {
		t.Fatalf("ts not increasing under a frozen clock: %s then %s", ts, ts2)
	}
	_, reply, err := api.PostMessage("C1", slack.MsgOptionText("in thread", false), slack.MsgOptionTS(ts))
	if err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages("C1")
	if len(msgs) != 3 || msgs[2].ThreadTS != ts || msgs[2].TS != reply {
		t.Fatalf("messages: %+v", msgs)
	}
	if !strings.Contains(string(msgs[0].Blocks), `"block_id"`) {
		t.Fatalf("stored blocks lack generated block_id: %s", msgs[0].Blocks)
	}

	clock.Advance(time.Minute)
	_, _, _, err = api.UpdateMessage("C1", ts, slack.MsgOptionText("Answered", false))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := srv.Message("C1", ts)
	if !ok || m.Text != "Answered" || m.Updates != 1 || !m.Edited.Equal(clock.Now()) || !strings.Contains(string(m.Blocks), "Question?") {
		t.Fatalf("updated message (blocks must be kept when not sent): %+v", m)
	}
	_, _, _, err = api.UpdateMessage("C1", ts, slack.MsgOptionText(strings.Repeat("x", 4001), false))
	if err == nil || err.Error() != "msg_too_long" {
		t.Fatalf("update with 4001 chars: %v", err)
	}
	_, _, _, err = api.UpdateMessage("C1", "1.000000", slack.MsgOptionText("x", false))
	if err == nil || err.Error() != "message_not_found" {
		t.Fatalf("update unknown ts: %v", err)
	}
	if _, _, err := api.PostMessage("C404", slack.MsgOptionText("x", false)); err == nil || err.Error() != "channel_not_found" {
		t.Fatalf("unknown channel: %v", err)
	}
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText(strings.Repeat("x", 40001), false)); err == nil || err.Error() != "msg_too_long" {
		t.Fatalf("post 40001 chars: %v", err)
	}

	ets, err := api.PostEphemeral("C1", "U2", slack.MsgOptionText("only you", false))
	if err != nil || !tsPattern.MatchString(ets) {
		t.Fatalf("ephemeral: %q %v", ets, err)
	}
	if e := srv.Ephemerals("U2"); len(e) != 1 || e[0].Text != "only you" || e[0].Channel != "C1" {
		t.Fatalf("ephemerals: %+v", e)
	}
	srv.AddUser("U3", "carol")
	if _, err := api.PostEphemeral("C1", "U3", slack.MsgOptionText("x", false)); err == nil || err.Error() != "user_not_in_channel" {
		t.Fatalf("ephemeral to non-member: %v", err)
	}
	link, err := api.GetPermalink(&slack.PermalinkParameters{Channel: "C1", Ts: ts})
	if err != nil || !strings.HasSuffix(link, "/archives/C1/p"+strings.ReplaceAll(ts, ".", "")) {
		t.Fatalf("permalink %q %v", link, err)
	}
}

func TestWorkspaceMethods(t *testing.T) {
	srv := newServer(t, Config{})
	srv.AddUserGroup("S1", "U1", "U2")
	api := newAPI(t, srv)
	ctx := testCtx(t)
	dm, _, already, err := api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{"U1"}})
	if err != nil || dm.ID != "D1" || already {
		t.Fatalf("conversations.open = %+v %v %v", dm, already, err)
	}
	dm2, _, already, _ := api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{"U1"}})
	if dm2.ID != dm.ID || !already {
		t.Fatalf("DM id not stable: %s vs %s", dm.ID, dm2.ID)
	}
	if _, _, err := api.PostMessage(dm.ID, slack.MsgOptionText("hi", false)); err != nil {
		t.Fatalf("post to DM: %v", err)
	}
	if ch, _, err := api.PostMessage("U2", slack.MsgOptionText("hi", false)); err != nil || ch != DMChannelID("U2") {
		t.Fatalf("post to a user id goes to the DM: %q %v", ch, err)
	}
	u, err := api.GetUserInfoContext(ctx, "U2")
	if err != nil || u.Name != "bob" || u.TeamID != "T0FAKE" {
		t.Fatalf("users.info = %+v %v", u, err)
	}
	if _, err := api.GetUserInfoContext(ctx, "U9"); err == nil || err.Error() != "user_not_found" {
		t.Fatalf("unknown user: %v", err)
	}
	members, err := api.GetUserGroupMembersContext(ctx, "S1")
	if err != nil || strings.Join(members, ",") != "U1,U2" {
		t.Fatalf("usergroups.users.list = %v %v", members, err)
	}
	if _, err := api.GetUserGroupMembersContext(ctx, "S9"); err == nil || err.Error() != "no_such_subteam" {
		t.Fatalf("unknown group: %v", err)
	}
}

func TestFailNextAndRateLimit(t *testing.T) {
	clock := newClock()
	srv := newServer(t, Config{Now: clock.Now, PostsPerSecondPerChannel: 1})
	api := newAPI(t, srv)
	srv.FailNext("chat.postMessage", 1, Failure{Status: 429, RetryAfter: 1500 * time.Millisecond})
	_, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("injected 429: %T %v", err, err)
	}
	srv.FailNext("chat.update", 2, Failure{Error: "cant_update_message"})
	for range 2 {
		if _, _, _, err := api.UpdateMessage("C1", "1.1", slack.MsgOptionText("x", false)); err == nil || err.Error() != "cant_update_message" {
			t.Fatalf("injected error: %v", err)
		}
	}
	srv.FailNext("auth.test", 1, Failure{Status: 503})
	if _, err := api.AuthTest(); !errors.As(err, new(slack.StatusCodeError)) {
		t.Fatalf("injected 503: %T %v", err, err)
	}

	for i := range 3 { // burst of 3
		if _, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false)); err != nil {
			t.Fatalf("post %d within burst: %v", i, err)
		}
	}
	_, _, err = api.PostMessage("C1", slack.MsgOptionText("x", false))
	if !errors.As(err, &rl) || rl.RetryAfter != time.Second {
		t.Fatalf("4th post: %v", err)
	}
	if _, _, err := api.PostMessage(DMChannelID("U1"), slack.MsgOptionText("x", false)); err != nil {
		t.Fatalf("other channel has its own bucket: %v", err)
	}
	clock.Advance(time.Second)
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("x", false)); err != nil {
		t.Fatalf("after refill: %v", err)
	}
	calls := srv.Calls()
	if calls[3].Error != "internal_error" || calls[4].Error != "" || calls[7].Error != "ratelimited" || calls[9].Error != "" {
		t.Fatalf("calls: %+v", calls)
	}
}

func TestMalformedRequests(t *testing.T) {
	srv := newServer(t, Config{})
	cases := []struct {
		name, method, ctype, body, want string
	}{
		{"json not an object", "views.open", "application/json", `[1,2]`, "invalid_json"},
		{"broken json", "views.update", "application/json", `{"view":`, "invalid_json"},
		{"broken form", "chat.postMessage", "application/x-www-form-urlencoded", "token=%zz", "invalid_form_data"},
		{"no token", "chat.postMessage", "application/x-www-form-urlencoded", "channel=C1&text=x", "not_authed"},
		{"blocks not json", "chat.postMessage", "application/x-www-form-urlencoded", "token=xoxb-fake&channel=C1&blocks=%7Bnope", "invalid_blocks_format"},
		{"blocks an object", "chat.postMessage", "application/x-www-form-urlencoded", "token=xoxb-fake&channel=C1&blocks=%7B%7D", "invalid_blocks_format"},
		{"no text", "chat.postMessage", "application/x-www-form-urlencoded", "token=xoxb-fake&channel=C1", "no_text"},
		{"view not json", "views.update", "application/x-www-form-urlencoded", "token=xoxb-fake&view_id=V1&view=nope", "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := rawPost(t, srv.APIURL()+c.method, c.ctype, c.body)
			if status != 200 || body["ok"] != false || body["error"] != c.want {
				t.Fatalf("%d %v, want %s", status, body, c.want)
			}
		})
	}
}

// With PermalinkBase (slackask dev), chat.getPermalink links into the
// emulator's page at the message: ?c=&msg=, with thread= for a reply and
// as= for a DM.
func TestPermalinkBase(t *testing.T) {
	srv := newServer(t, Config{PermalinkBase: "http://127.0.0.1:8090/"})
	srv.AddUser("U1", "alice")
	srv.AddChannel("C1", "dev")
	api := newAPI(t, srv)
	_, ts, err := api.PostMessage("C1", slack.MsgOptionText("Question?", false))
	if err != nil {
		t.Fatal(err)
	}
	_, reply, err := api.PostMessage("C1", slack.MsgOptionText("in thread", false), slack.MsgOptionTS(ts))
	if err != nil {
		t.Fatal(err)
	}
	dm, _, _, err := api.OpenConversation(&slack.OpenConversationParameters{Users: []string{"U1"}})
	if err != nil {
		t.Fatal(err)
	}
	_, dts, err := api.PostMessage(dm.ID, slack.MsgOptionText("just you", false))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ channel, ts, want string }{
		{"C1", ts, "http://127.0.0.1:8090/?c=C1&msg=" + ts},
		{"C1", reply, "http://127.0.0.1:8090/?c=C1&msg=" + reply + "&thread=" + ts},
		{dm.ID, dts, "http://127.0.0.1:8090/?as=U1&c=" + dm.ID + "&msg=" + dts},
	} {
		if link, err := api.GetPermalink(&slack.PermalinkParameters{Channel: tc.channel, Ts: tc.ts}); err != nil || link != tc.want {
			t.Errorf("permalink %q %v, want %q", link, err, tc.want)
		}
	}
}
