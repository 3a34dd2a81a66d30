package bot

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/memory"
)

// manyRig is one bot serving several workspaces in HTTP mode: each
// workspace is a fake Slack of its own (its token works only there), with
// the same channel and user ids in each, so that a call routed to the
// wrong workspace lands where the test sees it.
type manyRig struct {
	t     *testing.T
	fakes map[string]*slackfake.Server // by team
	ins   *testInstalls
	b     *running
	st    *memory.Store

	mu      sync.Mutex
	clients map[string]int    // clients made, by team
	urls    map[string]string // each token's fake (its API URL)
}

func newManyRig(t *testing.T, teams ...string) *manyRig {
	t.Helper()
	m := &manyRig{t: t, fakes: map[string]*slackfake.Server{}, ins: newTestInstalls(), clients: map[string]int{}, urls: map[string]string{}}
	urls := m.urls
	var bot *Bot
	h := &HTTP{Handler: lazyHandler{&bot}, SigningSecret: []byte("fake-signing-secret"), Log: zerolog.Nop()}
	mux := http.NewServeMux()
	mux.Handle("POST /slack/interactivity", h.Interactivity())
	mux.Handle("POST /slack/events", h.Events())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for i, team := range teams {
		token, botUser := "xoxb-"+strings.ToLower(team), fmt.Sprintf("U0BOT%d", i)
		fake, err := slackfake.New(slackfake.Config{TeamID: team, BotToken: token, BotUserID: botUser})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fake.Close)
		fake.AddUser(alice, "alice")
		fake.AddUser(bob, "bob")
		fake.AddChannel(chanID, "test")
		fake.UseHTTP(srv.URL+"/slack/interactivity", srv.URL+"/slack/events")
		m.fakes[team] = fake
		urls[token] = fake.APIURL()
		urls[token+"-rotated"] = fake.APIURL() // a token the fake does not know
		m.ins.m[team] = installs.Installation{Team: team, AppID: "A0FAKE", BotUserID: botUser, BotToken: token}
	}
	st := memory.New()
	m.st = st
	b, err := New(context.Background(), Config{Installs: m.ins, Uninstalls: m.ins, HTTPMode: true, Secrets: st,
		Clock: clock.Real{}, Logger: zerolog.Nop(),
		NewClient: func(token string) *slack.Client {
			m.mu.Lock()
			m.clients[strings.ToUpper(strings.TrimPrefix(token, "xoxb-"))]++
			url := urls[token]
			m.mu.Unlock()
			return slack.New(token, slack.OptionAPIURL(url))
		}})
	if err != nil {
		t.Fatal(err)
	}
	bot = b
	svc, err := asks.New(asks.Config{Store: st, Surface: b, DefaultChannel: chanID, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	m.b = &running{Service: svc, bot: b}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runWith(ctx, b, svc)
	}()
	t.Cleanup(func() { cancel(); <-done })
	wctx := m.ctx()
	for b.Ready(wctx) != nil {
		if wctx.Err() != nil {
			t.Fatal("bot never ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return m
}

// lazyHandler hands the HTTP transport's payloads to the bot made after it.
type lazyHandler struct{ b **Bot }

func (l lazyHandler) Hello(string)                 {}
func (l lazyHandler) Accept(env *Envelope) bool    { return (*l.b).Accept(env) }
func (l lazyHandler) AcceptEvent(ev EventCallback) { (*l.b).AcceptEvent(ev) }

func (m *manyRig) any() *slackfake.Server {
	for _, f := range m.fakes {
		return f
	}
	return nil
}

func (m *manyRig) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	m.t.Cleanup(cancel)
	return ctx
}

func (m *manyRig) waitFor(team, what string, cond func() bool) {
	m.t.Helper()
	if err := m.fakes[team].WaitFor(m.ctx(), cond); err != nil {
		m.t.Fatalf("never: %s", what)
	}
}

// eventually waits until cond holds (the store's changes are not the
// fake's, which WaitFor follows), or fails the test when ctx ends.
func (m *manyRig) eventually(what string, cond func() bool) {
	m.t.Helper()
	ctx := m.ctx()
	for !cond() {
		if ctx.Err() != nil {
			m.t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (m *manyRig) ask(team string, responders ...string) interaction.Ask {
	m.t.Helper()
	a, err := m.b.Create(m.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("go")}}, Workspace: team, Responders: responders})
	if err != nil {
		m.t.Fatal(err)
	}
	if a.TS == "" {
		m.t.Fatalf("the ask in %s was not posted: %+v", team, a)
	}
	return a
}

// Two workspaces, one bot: each ask is posted, clicked and updated in its
// own workspace with its own token (the other workspace's fake never sees
// it), an ask naming a workspace without an installation (or none) is
// refused at create, and uninstalling one workspace ends only its asks.
func TestManyWorkspacesRouteByInstallation(t *testing.T) {
	m := newManyRig(t, "T0ONE", "T0TWO")
	one, two := m.ask("T0ONE"), m.ask("T0TWO")
	for team, f := range m.fakes {
		if n := f.CallCount("chat.postMessage"); n != 1 {
			t.Fatalf("%d messages posted in %s, want its own ask's", n, team)
		}
	}
	if rec, _ := m.st.Get(m.ctx(), two.ID); rec.TeamID != "T0TWO" {
		t.Fatalf("the ask of T0TWO is stamped %q", rec.TeamID)
	}
	for _, c := range []struct {
		ws   string
		code interaction.Code
	}{{"T0NONE", interaction.InvalidQuestion}, {"", interaction.InvalidQuestion}} {
		_, err := m.b.Create(m.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("go")}}, Workspace: c.ws})
		if interaction.ErrorCode(err) != c.code {
			t.Errorf("ask in %q: %v, want %s", c.ws, err, c.code)
		}
	}

	// Alice answers in T0ONE: that ask ends, its message (in T0ONE) says so.
	if _, err := m.fakes["T0ONE"].Person(alice).Click(m.ctx(), chanID, one.TS, pick(0, 1)); err != nil {
		t.Fatal(err)
	}
	m.waitFor("T0ONE", "T0ONE's ask's message updated", func() bool {
		msg, ok := m.fakes["T0ONE"].Message(chanID, one.TS)
		return ok && strings.Contains(string(msg.Blocks), "Answered by")
	})
	if rec, _ := m.st.Get(m.ctx(), one.ID); rec.Status != interaction.StatusAnswered {
		t.Fatalf("T0ONE's ask is %s", rec.Status)
	}
	if n := m.fakes["T0TWO"].CallCount("chat.update"); n != 0 {
		t.Errorf("%d chat.update calls reached T0TWO for T0ONE's ask", n)
	}
	if rec, _ := m.b.Get(m.ctx(), two.ID); rec.Status != interaction.StatusPending {
		t.Fatalf("T0TWO's ask is %s", rec.Status)
	}

	// T0TWO uninstalls the app: its pending ask ends aborted, saying why;
	// T0ONE keeps working.
	pending := m.ask("T0ONE")
	if status, err := m.fakes["T0TWO"].DeliverEvent(m.ctx(), "T0TWO", "", map[string]any{"type": "app_uninstalled"}); err != nil || status != http.StatusOK {
		t.Fatalf("app_uninstalled: %d %v", status, err)
	}
	m.eventually("T0TWO's ask aborted", func() bool {
		rec, _ := m.st.Get(context.Background(), two.ID)
		return rec.Status == interaction.StatusAborted
	})
	rec, _ := m.st.Get(m.ctx(), two.ID)
	if rec.Error == nil || !strings.Contains(rec.Error.Message, "uninstalled") {
		t.Errorf("aborted with %+v", rec.Error)
	}
	if got := m.ins.removedKeys(); len(got) != 1 || got[0] != "T0TWO" {
		t.Errorf("removed %v, want [T0TWO]", got)
	}
	if err := m.b.bot.Ready(m.ctx()); err != nil {
		t.Errorf("not ready after one workspace of two uninstalled: %v", err)
	}
	if _, err := m.fakes["T0ONE"].Person(bob).Click(m.ctx(), chanID, pending.TS, pick(0, 1)); err != nil {
		t.Fatal(err)
	}
	m.eventually("T0ONE still answered after T0TWO left", func() bool {
		rec, _ := m.st.Get(context.Background(), pending.ID)
		return rec.Status == interaction.StatusAnswered
	})
	_, err := m.b.Create(m.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("go")}}, Workspace: "T0TWO"})
	if interaction.ErrorCode(err) != interaction.InvalidQuestion {
		t.Errorf("ask in the uninstalled workspace: %v", err)
	}
}

// A token handed out anew (rotation) is used from the next call on: the
// cached client of the old one is replaced, not kept.
func TestManyWorkspacesFollowANewToken(t *testing.T) {
	m := newManyRig(t, "T0ONE")
	m.ask("T0ONE")
	m.mu.Lock()
	made := m.clients["T0ONE"]
	m.mu.Unlock()
	if made != 1 {
		t.Fatalf("%d clients made for one installation", made)
	}
	m.ins.mu.Lock()
	in := m.ins.m["T0ONE"]
	in.BotToken = "xoxb-t0one-rotated"
	m.ins.m["T0ONE"] = in
	m.ins.mu.Unlock()
	_, err := m.b.Create(m.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("go")}}, Workspace: "T0ONE"})
	// The fake knows only the first token: Slack refusing the new one
	// shows that it was the one sent.
	if err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Fatalf("post with the rotated token: %v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.clients["T0ONE-ROTATED"] != 1 || m.clients["T0ONE"] != 1 {
		t.Errorf("clients made: %v", m.clients)
	}
}

// Homes are kept per workspace: each person's Home lists only the asks of
// their workspace, and a workspace whose views.publish tokens are spent
// (many Homes due) does not hold another's Home back.
func TestManyWorkspacesHomesApart(t *testing.T) {
	m := newManyRig(t, "T0BUSY", "T0CALM")
	busy, calm := m.fakes["T0BUSY"], m.fakes["T0CALM"]
	const people = 4 * homeBurst
	for i := range people {
		busy.AddUser(fmt.Sprintf("U0P%03d", i), "p")
	}
	a, b := m.ask("T0BUSY", alice, "U0P000"), m.ask("T0CALM", alice)
	for i := range people {
		if err := busy.Person(fmt.Sprintf("U0P%03d", i)).OpenHome(m.ctx()); err != nil {
			t.Fatal(err)
		}
	}
	if err := calm.Person(alice).OpenHome(m.ctx()); err != nil {
		t.Fatal(err)
	}
	m.waitFor("T0CALM", "alice's Home in T0CALM", func() bool {
		h, ok := calm.Home(alice)
		return ok && strings.Contains(string(h.Blocks), b.ID)
	})
	if h, _ := calm.Home(alice); strings.Contains(string(h.Blocks), a.ID) {
		t.Error("T0BUSY's ask on a Home in T0CALM")
	}
	// One publisher for every workspace, first come first served, would
	// have published all of T0BUSY's (people/homeRate seconds) first.
	if n := busy.CallCount("views.publish"); n >= people {
		t.Errorf("T0CALM's Home waited for all %d of T0BUSY's", n)
	}
	if err := m.any().WaitFor(m.ctx(), func() bool { return busy.CallCount("views.publish") >= homeBurst }); err != nil {
		t.Fatal(err)
	}
	if h, ok := busy.Home("U0P000"); !ok || !strings.Contains(string(h.Blocks), a.ID) {
		t.Errorf("a T0BUSY Home: published %v, without its ask", ok)
	}
}

// pick finds option opt (1-based) of question q drawn as buttons.
func pick(q, opt int) slackfake.Finder {
	return func(_, actionID string, _ map[string]any) bool {
		return strings.HasSuffix(actionID, fmt.Sprintf(".%d.select.%d", q, opt))
	}
}

// An act names the installation it came through, as asks are stamped: an
// org-wide install's payload (which may carry no team) its enterprise, any
// other its team; the payload's ids are read from Slack's shapes.
func TestPayloadKey(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`{"type":"block_actions","team":{"id":"T1"},"user":{"id":"U1"}}`, "T1"},
		{`{"type":"block_actions","team":{"id":"T1"},"enterprise":{"id":"E1"},"is_enterprise_install":false,"user":{"id":"U1"}}`, "T1"},
		{`{"type":"block_actions","team":{"id":"T1"},"enterprise":{"id":"E1"},"is_enterprise_install":true,"user":{"id":"U1"}}`, "E1"},
		{`{"type":"block_actions","team":null,"enterprise":{"id":"E1"},"is_enterprise_install":true,"user":{"id":"U1"}}`, "E1"},
		{`{"type":"block_actions","team":null,"enterprise":{"id":"E1"},"user":{"id":"U1"}}`, "E1"},
	} {
		cb, err := decodeCallback([]byte(c.raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := actOf(cb, "a1", 1, false).Workspace; got != c.want {
			t.Errorf("%s: act from %q, want %q", c.raw, got, c.want)
		}
	}
	ev := EventCallback{Team: "T1", Enterprise: "E1", OrgWide: true}
	if ev.key() != "E1" {
		t.Errorf("org-wide event's key %q", ev.key())
	}
}

// An org admin adding the org-wide install to a workspace, or taking it
// from one (team_access_granted, team_access_revoked, naming the
// enterprise), has the bot list the installation's workspaces again; an
// event naming no enterprise, or another event, does not.
func TestManyWorkspacesTeamAccessRelearns(t *testing.T) {
	m := newManyRig(t, "T0A")
	m.ins.learned = make(chan string, 4)
	ctx := m.ctx()
	b := m.b.bot
	b.Event(ctx, EventCallback{Type: "team_access_granted"})
	b.Event(ctx, EventCallback{Type: "app_home_opened", Enterprise: "E0X"})
	b.Event(ctx, EventCallback{Type: "team_access_granted", Enterprise: "E0G"})
	b.Event(ctx, EventCallback{Type: "team_access_revoked", Enterprise: "E0G"})
	for range 2 {
		select {
		case e := <-m.ins.learned:
			if e != "E0G" {
				t.Errorf("Learn(%q), want E0G", e)
			}
		case <-ctx.Done():
			t.Fatal("no Learn after team_access_*")
		}
	}
	// The others returned before starting any work: nothing more comes.
	if len(m.ins.learned) != 0 {
		t.Errorf("Learn called for an event that names no enterprise (or is not team_access_*): %q", <-m.ins.learned)
	}
}

// An ask is stamped with the installation serving the workspace it names
// and, when the name says, the workspace it is posted in: a team's own
// install its team, a team of an org-wide install's org that team, the org
// itself none. An org admin taking the org-wide install from a team
// (team_access_revoked, team_ids) ends the install's asks posted there,
// aborted, saying why; the org's other teams' asks and the team's asks
// through its own install stay pending. An ask whose team is unknown is
// not ended by the team's name: it is left to Slack's answer about its
// conversation (TestTeamAccessRevokedProbesOrgAsks), which this rig's
// org-wide token, reaching none of its single-workspace fakes, never gets.
func TestManyWorkspacesTeamAccessRevokedEndsItsAsks(t *testing.T) {
	m := newManyRig(t, "T0A")
	m.ins.mu.Lock()
	m.ins.m["E0G"] = installs.Installation{Enterprise: "E0G", OrgWide: true, AppID: "A0FAKE", BotUserID: "U0BOTG", BotToken: "xoxb-e0g"}
	m.ins.orgOf = map[string]string{"T0G1": "E0G", "T0G2": "E0G"}
	m.ins.mu.Unlock()
	ctx := m.ctx()
	for _, c := range []struct{ ws, key, in string }{
		{"T0A", "T0A", "T0A"}, {"T0G1", "E0G", "T0G1"}, {"E0G", "E0G", ""},
	} {
		key, in, app, err := m.b.bot.Workspace(ctx, c.ws)
		if err != nil || key != c.key || in != c.in || app != "A0FAKE" {
			t.Errorf("Workspace(%s) = %q, %q, %q, %v; want %q, %q", c.ws, key, in, app, err, c.key, c.in)
		}
	}
	own := m.ask("T0A")
	if rec, _ := m.st.Get(ctx, own.ID); rec.Workspace != "T0A" {
		t.Fatalf("an ask of T0A's own install is posted in %q", rec.Workspace)
	}
	// The org's asks, as Create stamps them (the rig's fakes are single
	// workspaces: the org-wide token reaches none of them).
	for i, ws := range []string{"T0G1", "T0G2", ""} {
		rec := asks.Record{Ask: interaction.Ask{ID: fmt.Sprintf("aorg%d", i), Status: interaction.StatusPending,
			Questions: []interaction.Question{yesNo("go")}, Channel: chanID, TS: fmt.Sprintf("1700000000.00000%d", i), CreatedAt: time.Now()},
			TeamID: "E0G", Workspace: ws, Rev: 1, Synced: true}
		if _, _, err := m.st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if status, err := m.fakes["T0A"].DeliverEvent(ctx, "", "E0G", map[string]any{"type": "team_access_revoked", "team_ids": []string{"T0G1", "T0A"}}); err != nil || status != http.StatusOK {
		t.Fatalf("team_access_revoked: %d %v", status, err)
	}
	m.eventually("T0G1's ask through the org-wide install aborted", func() bool {
		rec, _ := m.st.Get(context.Background(), "aorg0")
		return rec.Status == interaction.StatusAborted
	})
	if rec, _ := m.st.Get(ctx, "aorg0"); rec.Error == nil || rec.Error.Code != interaction.AskAborted || !strings.Contains(rec.Error.Message, "org-wide installation was removed from this workspace") || !rec.Synced {
		t.Errorf("aborted with %+v, synced %v", rec.Error, rec.Synced)
	}
	for _, id := range []string{"aorg1", "aorg2", own.ID} {
		if rec, _ := m.st.Get(ctx, id); rec.Status != interaction.StatusPending {
			t.Errorf("%s (%s in %q): %s, want pending", id, rec.TeamID, rec.Workspace, rec.Status)
		}
	}
}

// An org-wide install is taken from one team of its org: its asks whose
// team is unknown (they named the org) are asked of Slack
// (conversations.info with the org-wide token, no team_id). While Slack
// fails (503) nothing ends; once it answers, the ask whose channel is in
// the team taken (channel_not_found) ends aborted, saying why, and the
// one whose channel is in a team the install keeps stays pending.
func TestTeamAccessRevokedProbesOrgAsks(t *testing.T) {
	m := newManyRig(t, "T0A")
	f := m.fakes["T0A"]
	ctx := m.ctx()
	for _, team := range []string{"T0G1", "T0G2"} {
		f.AddTeam(team, team, "E0G")
		f.AddChannelIn(team, "C"+team[1:], strings.ToLower(team))
	}
	q := neturl.Values{"client_id": {"fake-client-id"}, "scope": {"chat:write"}, "redirect_uri": {"https://app.example.test/r"}, "state": {"s"}}
	to, err := f.Approve(f.URL()+"/oauth/v2/authorize?"+q.Encode(), slackfake.Approval{Team: "T0G1", OrgWide: true})
	if err != nil {
		t.Fatal(err)
	}
	redirect, _ := neturl.Parse(to)
	org, err := slack.GetOAuthV2ResponseContext(ctx, http.DefaultClient, "fake-client-id", "fake-client-secret",
		redirect.Query().Get("code"), "https://app.example.test/r", slack.OAuthOptionAPIURL(f.APIURL()))
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.urls[org.AccessToken] = f.APIURL()
	m.mu.Unlock()
	m.ins.mu.Lock()
	m.ins.m["E0G"] = installs.Installation{Enterprise: "E0G", OrgWide: true, AppID: "A0FAKE", BotUserID: org.BotUserID, BotToken: org.AccessToken}
	m.ins.orgOf = map[string]string{"T0G1": "E0G", "T0G2": "E0G"}
	m.ins.mu.Unlock()
	for i, ch := range []string{"C0G1", "C0G2"} {
		rec := asks.Record{Ask: interaction.Ask{ID: "aorg" + ch, Status: interaction.StatusPending,
			Questions: []interaction.Question{yesNo("go")}, Channel: ch, TS: fmt.Sprintf("1700000000.00000%d", i), CreatedAt: time.Now()},
			TeamID: "E0G", Rev: 1, Synced: true}
		if _, _, err := m.st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	probes := func() int { return f.CallCount("conversations.info") }

	f.FailNext("conversations.info", 2, slackfake.Failure{Status: http.StatusServiceUnavailable})
	if _, err := f.SetTeamAccess(ctx, "E0G", "T0G1", false); err != nil {
		t.Fatal(err)
	}
	m.waitFor("T0A", "both asks probed", func() bool { return probes() == 2 })
	// Slack answers again: the revoke comes once more (as Slack retries an
	// event). Both asks are probed again: the first pass ended neither.
	revoke := map[string]any{"type": "team_access_revoked", "team_ids": []string{"T0G1"}}
	if status, err := f.DeliverEvent(ctx, "", "E0G", revoke); err != nil || status != http.StatusOK {
		t.Fatalf("team_access_revoked: %d %v", status, err)
	}
	m.eventually("the ask in the revoked team aborted, after 4 probes", func() bool {
		rec, _ := m.st.Get(context.Background(), "aorgC0G1")
		return rec.Status == interaction.StatusAborted && probes() == 4
	})
	if rec, _ := m.st.Get(ctx, "aorgC0G1"); rec.Error == nil || rec.Error.Code != interaction.AskAborted || !strings.Contains(rec.Error.Message, "org-wide installation was removed from this workspace") {
		t.Errorf("aborted with %+v", rec.Error)
	}
	if rec, _ := m.st.Get(ctx, "aorgC0G2"); rec.Status != interaction.StatusPending {
		t.Errorf("the ask in the team the install keeps: %s, want pending", rec.Status)
	}
	for _, c := range f.Calls() {
		if c.Method == "conversations.info" && (c.Params["team_id"] != "" || c.Params["channel"] == "") {
			t.Errorf("conversations.info with %v", c.Params)
		}
	}
}
