package main

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// The workspaces of TestManyWorkspacesEndToEnd: two plain ones and an
// Enterprise Grid organization installed org-wide (ask in it as E…, or in
// its team as T…), one of whose teams also has an install of its own.
const (
	teamOne, teamTwo   = "T0ONE", "T0TWO"
	gridOrg, gridTeam  = "E0GRID", "T0GRIDA"
	gridOwn            = "T0GRIDB" // a team of the org with its own install
	gridGroup          = "S0GRID"
	chanOne, chanTwo   = "C0ONE", "C0TWO"
	chanGrid           = "C0GRID"
	oneAnn, twoBen     = "U0ANN", "U0BEN"
	gridCat            = "U0CAT"
	manyServerAPIToken = "server-token-many-workspaces"
)

// installVia installs the app as a person would: GET /slack/install
// (redirected to Slack's authorize page with a state and a cookie),
// approve it in the fake (team, org-wide or not), then follow Slack's
// redirect back to /slack/oauth_redirect, whose page says it worked.
func installVia(t *testing.T, h *harness, a slackfake.Approval) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer browser.CloseIdleConnections()
	resp, err := browser.Get(h.base + "/slack/install")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	authorize := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || authorize == "" {
		t.Fatalf("GET /slack/install: %d, Location %q", resp.StatusCode, authorize)
	}
	back, err := h.fake.Approve(authorize, a)
	if err != nil {
		t.Fatal(err)
	}
	// Slack sends the browser to the public URL: the harness's.
	resp, err = browser.Get(back)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("install of %+v: %d %s", a, resp.StatusCode, page)
	}
}

// TestManyWorkspacesEndToEnd is issue 31's "done when": two workspaces and
// one Grid organization installed through OAuth in the fake, slackask in
// HTTP mode; each asked with an API key scoped to it and answered by a
// person of it, the answer reaching the right ask and the message updated
// with the right installation's token (a token reaches only its own
// workspace's channels in the fake); a key asking outside its workspace is
// 403, another key's ask 404, a workspace without an installation 400;
// one workspace uninstalled (or the org's token revoked) ends only its
// asks; no token is ever logged.
func TestManyWorkspacesEndToEnd(t *testing.T) {
	t.Run("tokens that last", func(t *testing.T) { manyWorkspaces(t, false) })
	// Rotating tokens that expire within slackask's refresh margin: every
	// lookup refreshes its installation's token, so each call after the
	// first goes out with a token the bot never used before.
	t.Run("rotating tokens", func(t *testing.T) {
		manyWorkspaces(t, true, func(h *harness) { h.fakeCfg.TokenRotation, h.fakeCfg.TokenTTL = true, time.Minute })
	})
}

func manyWorkspaces(t *testing.T, rotating bool, opts ...option) {
	h := start(t, append([]option{httpMode(), withOAuth(), withConfig(func(c *config.Config) { c.APIToken = manyServerAPIToken })}, opts...)...)
	ctx := ctxT(t)
	f := h.fake
	f.AddTeam(teamOne, "One", "")
	f.AddTeam(teamTwo, "Two", "")
	f.AddTeam(gridTeam, "Grid A", gridOrg)
	f.AddUserIn(teamOne, oneAnn, "ann")
	f.AddUserIn(teamTwo, twoBen, "ben")
	f.AddUserIn(gridTeam, gridCat, "cat")
	f.AddChannelIn(teamOne, chanOne, "one")
	f.AddChannelIn(teamTwo, chanTwo, "two")
	f.AddChannelIn(gridTeam, chanGrid, "grid")
	f.AddTeam(gridOwn, "Grid B", gridOrg)
	f.AddUserIn(gridOwn, "U0DAN", "dan")
	f.AddChannelIn(gridOwn, "C0GRIDB", "grid-b")
	f.AddUserGroup(gridGroup, gridCat)

	installVia(t, h, slackfake.Approval{Team: teamOne})
	installVia(t, h, slackfake.Approval{Team: teamTwo})
	installVia(t, h, slackfake.Approval{Team: gridTeam, OrgWide: true})
	installVia(t, h, slackfake.Approval{Team: gridOwn})

	keyOne := strings.TrimSpace(keysCmd(t, h, "create", "--name", "one", "--workspace", teamOne))
	keyTwo := strings.TrimSpace(keysCmd(t, h, "create", "--name", "two", "--workspace", teamTwo))
	keyGrid := strings.TrimSpace(keysCmd(t, h, "create", "--name", "grid", "--workspace", gridOrg))
	// A key for the Grid team people see, named by its own id: its asks
	// go through the org-wide install serving it.
	keyGridTeam := strings.TrimSpace(keysCmd(t, h, "create", "--name", "grid-team", "--workspace", gridTeam))

	in := func(ch string, ws string) interaction.AskInput {
		a := ask1(question("deploy", "Deploy?", "Yes", "No"))
		a.Channel, a.Workspace = ch, ws
		return a
	}
	type ws struct {
		name, key, channel, person string
		ask                        interaction.Ask
	}
	spaces := []*ws{
		{name: teamOne, key: keyOne, channel: chanOne, person: oneAnn},
		{name: teamTwo, key: keyTwo, channel: chanTwo, person: twoBen},
		{name: gridOrg, key: keyGrid, channel: chanGrid, person: gridCat},
		{name: gridTeam, key: keyGridTeam, channel: chanGrid, person: gridCat},
	}
	for _, s := range spaces {
		// The key's one workspace is the ask's: it names none.
		a := in(s.channel, "")
		if s.name == gridTeam {
			// Only the org's user group may answer: the org-wide token
			// must name the team to usergroups.users.list.
			a.Responders = []string{gridGroup}
		}
		if code := h.doAs(s.key, "POST", "/v1/asks", a, &s.ask); code != 201 || s.ask.TS == "" {
			t.Fatalf("%s: create %d %+v", s.name, code, s.ask)
		}
	}

	// Outside the key's scope, and another key's ask.
	var e struct{ Error *interaction.Error }
	if code := h.doAs(keyOne, "POST", "/v1/asks", in(chanTwo, teamTwo), &e); code != 403 || e.Error.Code != interaction.Forbidden {
		t.Errorf("key of %s asking in %s: %d %+v, want 403 FORBIDDEN", teamOne, teamTwo, code, e.Error)
	}
	if code := h.doAs(keyTwo, "GET", "/v1/asks/"+spaces[0].ask.ID, nil, nil); code != 404 {
		t.Errorf("key of %s reading an ask of %s's key: %d, want 404", teamTwo, teamOne, code)
	}
	// A workspace the org adds the app to after the install is found by
	// its id at its first ask (auth.teams.list asked again; at most once a
	// minute, so before the unknown workspace below).
	f.AddTeam("T0GRIDC", "Grid C", gridOrg)
	f.AddChannelIn("T0GRIDC", "C0GRIDC", "grid-c")
	var later interaction.Ask
	if code := h.doAs(keyGrid, "POST", "/v1/asks", in("C0GRIDC", "T0GRIDC"), &later); code != 201 {
		t.Errorf("org key asking in a team added after the install: %d, want 201", code)
	}
	// `slackask installs list` names the workspaces the org-wide install
	// serves, as Slack listed them.
	t.Setenv("SLACKASK_DATABASE", h.cfg.Database)
	var listed, listErr bytes.Buffer
	if code := run(ctx, []string{"installs", "list"}, nil, &listed, &listErr); code != 0 ||
		!regexp.MustCompile(`(?m)^`+gridOrg+`\s+`+gridOrg+`\s+T0GRIDA,T0GRIDB,T0GRIDC\s+true`).MatchString(listed.String()) {
		t.Errorf("installs list: exit %d %s\n%s", code, listErr.String(), listed.String())
	}
	if code := h.doAs(manyServerAPIToken, "POST", "/v1/asks", in(chanOne, "T0NOTHERE"), &e); code != 400 || e.Error.Code != interaction.InvalidQuestion {
		t.Errorf("ask in a workspace without an installation: %d %+v, want 400 INVALID_QUESTION", code, e.Error)
	}
	// The org's key covers the team its org-wide install serves, named by
	// the team's id; the team's key does not cover the org, nor the org's
	// key a team with an install of its own.
	var viaOrg interaction.Ask
	if code := h.doAs(keyGrid, "POST", "/v1/asks", in(chanGrid, gridTeam), &viaOrg); code != 201 {
		t.Errorf("org key asking in its team %s: %d, want 201", gridTeam, code)
	}
	if code := h.doAs(keyGridTeam, "POST", "/v1/asks", in(chanGrid, gridOrg), &e); code != 403 || e.Error.Code != interaction.Forbidden {
		t.Errorf("team key asking in its org: %d %+v, want 403", code, e.Error)
	}
	if code := h.doAs(keyGrid, "POST", "/v1/asks", in("C0GRIDB", gridOwn), &e); code != 403 || e.Error.Code != interaction.Forbidden {
		t.Errorf("org key asking in %s (its own install): %d %+v, want 403", gridOwn, code, e.Error)
	}

	// Each is answered by a person of its workspace, over HTTP mode.
	for _, s := range spaces {
		if _, err := f.Person(s.person).Select(ctx, s.channel, s.ask.TS, control(0, "select"), "Yes"); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var got interaction.Ask
		if code := h.doAs(s.key, "GET", "/v1/asks/"+s.ask.ID+"?wait=15s", nil, &got); code != 200 || got.Status != interaction.StatusAnswered ||
			got.AnsweredBy == nil || got.AnsweredBy.ID != s.person {
			t.Fatalf("%s: %d %s by %+v", s.name, code, got.Status, got.AnsweredBy)
		}
		h.waitMessage(s.ask, s.name+"'s message answered", func(m slackfake.Message) bool {
			return strings.Contains(blocksText(m), "Answered by <@"+s.person+">")
		})
	}
	refreshed, groupCalls := 0, 0
	for _, c := range f.Calls() {
		if c.Method == "usergroups.users.list" && c.Params["team_id"] == gridTeam {
			groupCalls++
		}
		if c.Error != "" {
			t.Errorf("%s (%s) answered %s: a call went out with another workspace's (or an old) token", c.Method, c.Params["channel"], c.Error)
		}
		if c.Method == "oauth.v2.access" && c.Params["grant_type"] == "refresh_token" {
			refreshed++
		}
	}
	if groupCalls == 0 {
		t.Errorf("no usergroups.users.list named team_id %s: the org-wide token's call must", gridTeam)
	}
	if rotating != (refreshed > 0) {
		t.Errorf("%d tokens refreshed (rotating: %v)", refreshed, rotating)
	}

	// A person's own token revoked in One is not the bot's: One stays
	// installed (its ask below is answered after everything that follows).
	if status, err := f.DeliverEvent(ctx, teamOne, "", map[string]any{"type": "tokens_revoked",
		"tokens": map[string]any{"oauth": []string{oneAnn}, "bot": []string{}}}); err != nil || status != http.StatusOK {
		t.Fatalf("tokens_revoked of a person: %d %v", status, err)
	}
	// Two uninstalls the app: its pending ask ends aborted, the others'
	// carry on.
	var pendingTwo, pendingOne interaction.Ask
	if code := h.doAs(keyTwo, "POST", "/v1/asks", in(chanTwo, ""), &pendingTwo); code != 201 {
		t.Fatalf("create in %s: %d", teamTwo, code)
	}
	if code := h.doAs(keyOne, "POST", "/v1/asks", in(chanOne, ""), &pendingOne); code != 201 {
		t.Fatalf("create in %s: %d", teamOne, code)
	}
	if _, err := f.Uninstall(ctx, "", teamTwo); err != nil {
		t.Fatal(err)
	}
	var got interaction.Ask
	if code := h.doAs(keyTwo, "GET", "/v1/asks/"+pendingTwo.ID+"?wait=15s", nil, &got); code != 200 || got.Status != interaction.StatusAborted ||
		got.Error == nil || !strings.Contains(got.Error.Message, "uninstalled") {
		t.Fatalf("%s's ask after the uninstall: %d %s %+v", teamTwo, code, got.Status, got.Error)
	}
	if code := h.doAs(keyTwo, "POST", "/v1/asks", in(chanTwo, ""), &e); code != 400 || e.Error.Code != interaction.InvalidQuestion {
		t.Errorf("ask in the uninstalled workspace: %d %+v, want 400", code, e.Error)
	}
	if _, err := f.Person(oneAnn).Select(ctx, chanOne, pendingOne.TS, control(0, "select"), "No"); err != nil {
		t.Fatal(err)
	}
	if code := h.doAs(keyOne, "GET", "/v1/asks/"+pendingOne.ID+"?wait=15s", nil, &got); code != 200 || got.Status != interaction.StatusAnswered {
		t.Fatalf("%s after %s left: %d %s", teamOne, teamTwo, code, got.Status)
	}
	// The Grid organization revokes the org-wide install's token: its
	// asks end too, whichever team of the org they were in, named by the
	// org or by the team; the team of the org with its own install keeps
	// it (its own token, its own uninstall).
	var pendingGrid, pendingOwn interaction.Ask
	if code := h.doAs(keyGrid, "POST", "/v1/asks", in(chanGrid, ""), &pendingGrid); code != 201 {
		t.Fatalf("create in %s: %d", gridOrg, code)
	}
	if code := h.doAs(manyServerAPIToken, "POST", "/v1/asks", in("C0GRIDB", gridOwn), &pendingOwn); code != 201 {
		t.Fatalf("create in %s: %d", gridOwn, code)
	}
	if _, err := f.RevokeTokens(ctx, gridOrg, ""); err != nil {
		t.Fatal(err)
	}
	for _, a := range []interaction.Ask{pendingGrid, viaOrg, later} {
		if code := h.doAs(keyGrid, "GET", "/v1/asks/"+a.ID+"?wait=15s", nil, &got); code != 200 || got.Status != interaction.StatusAborted ||
			got.Error == nil || !strings.Contains(got.Error.Message, "revoked") {
			t.Fatalf("%s's ask after tokens_revoked: %d %s %+v", gridOrg, code, got.Status, got.Error)
		}
	}
	if code := h.doAs(keyGridTeam, "POST", "/v1/asks", in(chanGrid, ""), &e); code != 400 || e.Error.Code != interaction.InvalidQuestion {
		t.Errorf("ask in %s after its org's install was revoked: %d %+v, want 400", gridTeam, code, e.Error)
	}
	if _, err := f.Person("U0DAN").Select(ctx, "C0GRIDB", pendingOwn.TS, control(0, "select"), "Yes"); err != nil {
		t.Fatal(err)
	}
	if code := h.doAs(manyServerAPIToken, "GET", "/v1/asks/"+pendingOwn.ID+"?wait=15s", nil, &got); code != 200 || got.Status != interaction.StatusAnswered {
		t.Fatalf("%s (own install) after its org's revoke: %d %s %+v", gridOwn, code, got.Status, got.Error)
	}
	if tok := regexp.MustCompile(`xox[a-z][.-][0-9A-Za-z]+`).FindString(h.logs.String()); tok != "" {
		t.Errorf("a token in the log: %.12s…", tok)
	}
}

// An org admin takes the org-wide install from one team of the org
// (team_access_revoked naming it): the asks posted there through that
// install end aborted, saying why, as nobody there can see them any more,
// and so does an ask that named the org itself (its team unknown) whose
// channel is in that team (conversations.info: channel_not_found); the
// org's other teams' asks through the same install, an ask naming the org
// in a channel of another team and the team's asks through its own
// install carry on and are answered.
func TestOrgWideInstallRevokedFromTeam(t *testing.T) {
	h := start(t, httpMode(), withOAuth(), withConfig(func(c *config.Config) { c.APIToken = manyServerAPIToken }))
	ctx := ctxT(t)
	f := h.fake
	const gridC, gridD = "T0GRIDC", "T0GRIDD" // D: the revoked team's own install
	for _, ws := range []struct{ team, channel, user string }{
		{gridTeam, chanGrid, gridCat}, {gridC, "C0GRIDC", "U0EVE"}, {gridD, "C0GRIDD", "U0DAN"},
	} {
		f.AddTeam(ws.team, ws.team, gridOrg)
		f.AddUserIn(ws.team, ws.user, strings.ToLower(ws.user))
		f.AddChannelIn(ws.team, ws.channel, strings.ToLower(ws.channel))
	}
	installVia(t, h, slackfake.Approval{Team: gridTeam, OrgWide: true})
	installVia(t, h, slackfake.Approval{Team: gridD})

	ask := func(ch, ws string) interaction.Ask {
		t.Helper()
		a := ask1(question("deploy", "Deploy?", "Yes", "No"))
		a.Channel, a.Workspace = ch, ws
		var got interaction.Ask
		if code := h.do("POST", "/v1/asks", a, &got); code != 201 || got.TS == "" {
			t.Fatalf("create in %s (%s): %d %+v", ws, ch, code, got)
		}
		return got
	}
	inA := ask(chanGrid, gridTeam)      // through the org-wide install, in the team revoked
	inC := ask("C0GRIDC", gridC)        // through the org-wide install, in another team
	viaOrg := ask("C0GRIDC", gridOrg)   // naming the org: its team is not recorded
	viaOrgInA := ask(chanGrid, gridOrg) // naming the org, in the team revoked
	ownD := ask("C0GRIDD", gridD)       // a team of the org with its own install

	if _, err := f.SetTeamAccess(ctx, gridOrg, gridTeam, false); err != nil {
		t.Fatal(err)
	}
	var got interaction.Ask
	if code := h.do("GET", "/v1/asks/"+inA.ID+"?wait=15s", nil, &got); code != 200 || got.Status != interaction.StatusAborted ||
		got.Error == nil || got.Error.Code != interaction.AskAborted || !strings.Contains(got.Error.Message, "org-wide installation was removed from this workspace") {
		t.Fatalf("the ask in %s after team_access_revoked: %d %s %+v", gridTeam, code, got.Status, got.Error)
	}
	if code := h.do("GET", "/v1/asks/"+viaOrgInA.ID+"?wait=15s", nil, &got); code != 200 || got.Status != interaction.StatusAborted ||
		got.Error == nil || got.Error.Code != interaction.AskAborted || !strings.Contains(got.Error.Message, "org-wide installation was removed from this workspace") {
		t.Fatalf("the ask naming %s in %s's channel after team_access_revoked: %d %s %+v", gridOrg, gridTeam, code, got.Status, got.Error)
	}
	for _, c := range []struct {
		a            interaction.Ask
		person, what string
	}{{inC, "U0EVE", "another team of the org"}, {viaOrg, "U0EVE", "an ask naming the org"}, {ownD, "U0DAN", "the team's own install"}} {
		if _, err := f.Person(c.person).Select(ctx, c.a.Channel, c.a.TS, control(0, "select"), "Yes"); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if code := h.do("GET", "/v1/asks/"+c.a.ID+"?wait=15s", nil, &got); code != 200 || got.Status != interaction.StatusAnswered {
			t.Errorf("%s after the revoke from %s: %d %s %+v", c.what, gridTeam, code, got.Status, got.Error)
		}
	}
	// The revoked team's message was never updated: the install no longer
	// reaches it. The org-named asks were asked about, and Slack answered
	// (the install has the scopes conversations.info needs): not found in
	// the revoked team, found in the team kept.
	if err := f.WaitFor(ctx, func() bool { return f.CallCount("conversations.info") >= 2 }); err != nil {
		t.Fatalf("conversations.info: %d calls, want 2", f.CallCount("conversations.info"))
	}
	probed := map[string]string{}
	for _, c := range f.Calls() {
		if c.Method == "chat.update" && c.Params["channel"] == chanGrid {
			t.Errorf("chat.update in %s (revoked from the install): %s", chanGrid, c.Error)
		}
		if c.Method == "conversations.info" {
			probed[c.Params["channel"]] = c.Error
		}
	}
	if want := map[string]string{chanGrid: "channel_not_found", "C0GRIDC": ""}; !maps.Equal(probed, want) {
		t.Errorf("conversations.info answered %v, want %v", probed, want)
	}
}
