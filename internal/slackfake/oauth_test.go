package slackfake

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

const testRedirect = "https://app.example.test/slack/oauth_redirect"

func authorizeURL(srv *Server, state, challenge string) string {
	return scopedAuthorizeURL(srv, state, challenge, "chat:write,users:read")
}

func scopedAuthorizeURL(srv *Server, state, challenge, scope string) string {
	q := url.Values{"client_id": {"fake-client-id"}, "scope": {scope}, "redirect_uri": {testRedirect}, "state": {state}}
	if challenge != "" {
		q.Set("code_challenge", challenge)
		q.Set("code_challenge_method", "S256")
	}
	return srv.URL() + "/oauth/v2/authorize?" + q.Encode()
}

// install approves an install and exchanges its code, as an app does.
func install(t *testing.T, srv *Server, a Approval) *slack.OAuthV2Response {
	t.Helper()
	return installScoped(t, srv, a, "chat:write,users:read")
}

// installScoped is install asking for scope.
func installScoped(t *testing.T, srv *Server, a Approval, scope string) *slack.OAuthV2Response {
	t.Helper()
	to, err := srv.Approve(scopedAuthorizeURL(srv, "st", "", scope), a)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	if u.Query().Get("state") != "st" || u.Query().Get("code") == "" {
		t.Fatalf("redirect %s lacks the state or a code", to)
	}
	resp, err := slack.GetOAuthV2ResponseContext(t.Context(), http.DefaultClient, "fake-client-id", "fake-client-secret",
		u.Query().Get("code"), testRedirect, slack.OAuthOptionAPIURL(srv.APIURL()))
	if err != nil {
		t.Fatalf("oauth.v2.access: %v", err)
	}
	return resp
}

func gridServer(t *testing.T, cfg Config) *Server {
	srv := newServer(t, cfg)
	srv.AddTeam("T0B", "Beta", "")
	srv.AddEnterprise("E0G", "Grid Org")
	srv.AddTeam("T0G1", "Grid One", "E0G")
	srv.AddTeam("T0G2", "Grid Two", "E0G")
	srv.AddUser("U0A", "alice")
	srv.AddUserIn("T0B", "U0B", "bob")
	srv.AddUserIn("T0G2", "U0G", "gina")
	srv.AddChannel("C0A", "alpha")
	srv.AddChannelIn("T0B", "C0B", "beta")
	srv.AddChannelIn("T0G1", "C0G1", "grid-one")
	srv.AddChannelIn("T0G2", "C0G2", "grid-two")
	return srv
}

// Each install gets a token of its own team: it posts there, and a channel
// or user of another team does not exist for it. An org-wide install's
// token reaches every team of its enterprise, and nothing outside it.
func TestOAuthInstallsAreScopedToTheirTeam(t *testing.T) {
	srv := gridServer(t, Config{})
	ctx := t.Context()
	beta := install(t, srv, Approval{Team: "T0B"})
	if beta.TokenType != "bot" || beta.Team.ID != "T0B" || beta.Team.Name != "Beta" || beta.Enterprise.ID != "" || beta.IsEnterpriseInstall ||
		beta.AuthedUser.ID != "U0B" || beta.BotUserID != srv.BotUserOf("T0B") || beta.AppID != "A0FAKE" || beta.Scope != "chat:write,users:read" ||
		!strings.HasPrefix(beta.AccessToken, "xoxb-") || beta.RefreshToken != "" || beta.ExpiresIn != 0 {
		t.Fatalf("team install answer: %+v", beta)
	}
	org := install(t, srv, Approval{Team: "T0G1", OrgWide: true})
	if !org.IsEnterpriseInstall || org.Enterprise.ID != "E0G" || org.Enterprise.Name != "Grid Org" || org.Team.ID != "" {
		t.Fatalf("org-wide install answer: %+v", org)
	}
	api := func(tok string) *slack.Client { return slack.New(tok, slack.OptionAPIURL(srv.APIURL())) }
	for _, c := range []struct {
		token, channel, want string
	}{
		{beta.AccessToken, "C0B", ""}, {beta.AccessToken, "C0A", "channel_not_found"}, {beta.AccessToken, "C0G1", "channel_not_found"},
		{org.AccessToken, "C0G1", ""}, {org.AccessToken, "C0G2", ""}, {org.AccessToken, "C0B", "channel_not_found"},
		{"xoxb-fake", "C0A", ""}, {"xoxb-fake", "C0B", "channel_not_found"},
		{beta.AccessToken, "U0B", ""}, {beta.AccessToken, "U0A", "channel_not_found"},
	} {
		_, _, err := api(c.token).PostMessageContext(ctx, c.channel, slack.MsgOptionText("hi", false))
		if got := errCode(err); got != c.want {
			t.Errorf("post to %s with the token of %s: %q, want %q", c.channel, c.token[:8], got, c.want)
		}
	}
	hist, err := api(beta.AccessToken).GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C0B"})
	if err != nil || len(hist.Messages) == 0 || hist.Messages[0].Team != "T0B" || hist.Messages[0].User != srv.BotUserOf("T0B") {
		t.Errorf("Beta's message as history shows it: %+v, %v; want team T0B, its bot user", hist, err)
	}
	if _, err := api(beta.AccessToken).GetUserInfoContext(ctx, "U0A"); errCode(err) != "user_not_found" {
		t.Errorf("users.info of another team's person: %v, want user_not_found", err)
	}
	at, err := api(beta.AccessToken).AuthTestContext(ctx)
	if err != nil || at.TeamID != "T0B" || at.UserID != srv.BotUserOf("T0B") {
		t.Errorf("auth.test of the Beta token = %+v, %v", at, err)
	}
	// A person's payloads name their team and, in Grid, its enterprise;
	// is_enterprise_install says the app reaches that team org-wide.
	srv.mu.Lock()
	pb := srv.basePayload("block_actions", srv.ws.users["U0B"])
	pg := srv.basePayload("block_actions", srv.ws.users["U0G"])
	srv.mu.Unlock()
	if pb["team"].(map[string]any)["id"] != "T0B" || pb["enterprise"] != nil || pb["is_enterprise_install"] != false {
		t.Errorf("Beta person's payload: %v", pb)
	}
	if pg["team"].(map[string]any)["id"] != "T0G2" || pg["enterprise"].(map[string]any)["id"] != "E0G" || pg["is_enterprise_install"] != true {
		t.Errorf("Grid person's payload: %v", pg)
	}
}

func errCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// oauth.v2.access refuses what Slack refuses: a replayed or expired code,
// another redirect_uri, wrong credentials, a PKCE verifier that does not
// match the challenge.
func TestOAuthCodeExchangeRefusals(t *testing.T) {
	clk := newClock()
	srv := gridServer(t, Config{Now: clk.Now})
	ctx := t.Context()
	code := func(challenge string) string {
		to, err := srv.Approve(authorizeURL(srv, "s", challenge), Approval{Team: "T0B"})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(to)
		return u.Query().Get("code")
	}
	exchange := func(id, secret, c, redirect string, opts ...slack.OAuthOption) string {
		_, err := slack.GetOAuthV2ResponseContext(ctx, http.DefaultClient, id, secret, c, redirect, append(opts, slack.OAuthOptionAPIURL(srv.APIURL()))...)
		return errCode(err)
	}
	c := code("")
	if got := exchange("fake-client-id", "wrong", c, testRedirect); got != "bad_client_secret" {
		t.Errorf("wrong secret: %q", got)
	}
	if got := exchange("other-id", "fake-client-secret", c, testRedirect); got != "invalid_client_id" {
		t.Errorf("wrong client id: %q", got)
	}
	if got := exchange("fake-client-id", "fake-client-secret", c, testRedirect); got != "" {
		t.Errorf("a good exchange: %q", got)
	}
	if got := exchange("fake-client-id", "fake-client-secret", c, testRedirect); got != "invalid_code" {
		t.Errorf("the code replayed: %q, want invalid_code", got)
	}
	if got := exchange("fake-client-id", "fake-client-secret", code(""), "https://evil.example.test/cb"); got != "bad_redirect_uri" {
		t.Errorf("another redirect_uri: %q", got)
	}
	old := code("")
	clk.Advance(11 * time.Minute)
	if got := exchange("fake-client-id", "fake-client-secret", old, testRedirect); got != "invalid_code" {
		t.Errorf("a code 11 minutes old: %q, want invalid_code", got)
	}
	verifier := "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	for name, c := range map[string]struct {
		opts []slack.OAuthOption
		want string
	}{
		"no verifier":    {nil, "invalid_grant"},
		"wrong verifier": {[]slack.OAuthOption{slack.OAuthOptionCodeVerifier(verifier + "x")}, "invalid_grant"},
		"its verifier":   {[]slack.OAuthOption{slack.OAuthOptionCodeVerifier(verifier)}, ""},
	} {
		if got := exchange("fake-client-id", "fake-client-secret", code(challenge), testRedirect, c.opts...); got != c.want {
			t.Errorf("PKCE, %s: %q, want %q", name, got, c.want)
		}
	}
	if _, err := srv.Approve(strings.Replace(authorizeURL(srv, "s", ""), "fake-client-id", "nope", 1), Approval{}); !errors.Is(err, ErrAuthorize) {
		t.Errorf("an authorize URL of another client: %v", err)
	}
	to, err := srv.Approve(authorizeURL(srv, "s9", ""), Approval{Deny: true})
	if err != nil || !strings.Contains(to, "error=access_denied") || !strings.Contains(to, "state=s9") || strings.Contains(to, "code=") {
		t.Errorf("a denied install redirects to %s, %v", to, err)
	}
}

// With rotation a token expires (token_expired on every method) and its
// refresh token, used once, gives a new one.
func TestOAuthTokenRotation(t *testing.T) {
	clk := newClock()
	srv := gridServer(t, Config{Now: clk.Now, TokenRotation: true})
	ctx := t.Context()
	in := install(t, srv, Approval{Team: "T0B"})
	if !strings.HasPrefix(in.AccessToken, "xoxe.xoxb-1-") || !strings.HasPrefix(in.RefreshToken, "xoxe-1-") || in.ExpiresIn != 12*3600 {
		t.Fatalf("rotating install: %+v", in)
	}
	api := slack.New(in.AccessToken, slack.OptionAPIURL(srv.APIURL()))
	if _, _, err := api.PostMessageContext(ctx, "C0B", slack.MsgOptionText("hi", false)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(12 * time.Hour)
	for _, call := range []func() error{
		func() error {
			_, _, err := api.PostMessageContext(ctx, "C0B", slack.MsgOptionText("hi", false))
			return err
		},
		func() error { _, err := api.AuthTestContext(ctx); return err },
		func() error { _, err := api.GetUserInfoContext(ctx, "U0B"); return err },
	} {
		if got := errCode(call()); got != "token_expired" {
			t.Errorf("a call with an expired token: %q, want token_expired", got)
		}
	}
	next, err := slack.RefreshOAuthV2TokenContext(ctx, http.DefaultClient, "fake-client-id", "fake-client-secret", in.RefreshToken, slack.OAuthOptionAPIURL(srv.APIURL()))
	if err != nil || next.AccessToken == in.AccessToken || next.RefreshToken == in.RefreshToken || next.ExpiresIn != 12*3600 || next.Team.ID != "T0B" ||
		next.Scope != in.Scope || next.TokenType != "bot" || next.BotUserID != in.BotUserID {
		t.Fatalf("refresh = %+v, %v", next, err)
	}
	if _, _, err := slack.New(next.AccessToken, slack.OptionAPIURL(srv.APIURL())).PostMessageContext(ctx, "C0B", slack.MsgOptionText("hi", false)); err != nil {
		t.Fatalf("the refreshed token: %v", err)
	}
	if _, err := slack.RefreshOAuthV2TokenContext(ctx, http.DefaultClient, "fake-client-id", "fake-client-secret", in.RefreshToken, slack.OAuthOptionAPIURL(srv.APIURL())); errCode(err) != "invalid_refresh_token" {
		t.Fatalf("a refresh token used twice: %v, want invalid_refresh_token", err)
	}
}

// Uninstalling revokes the team's tokens and delivers app_uninstalled;
// revoking delivers tokens_revoked naming the bot.
func TestOAuthUninstallAndRevoke(t *testing.T) {
	srv := gridServer(t, Config{})
	ctx := t.Context()
	events := eventSink(t, srv)
	beta := install(t, srv, Approval{Team: "T0B"})
	org := install(t, srv, Approval{Team: "T0G1", OrgWide: true})
	if status, err := srv.Uninstall(ctx, "", "T0B"); err != nil || status != 200 {
		t.Fatal(status, err)
	}
	ev := <-events
	if ev["team_id"] != "T0B" || ev["event"].(map[string]any)["type"] != "app_uninstalled" {
		t.Errorf("uninstall event: %v", ev)
	}
	if srv.TokenValid(beta.AccessToken) || !srv.TokenValid(org.AccessToken) {
		t.Error("Uninstall(T0B) revoked the wrong tokens")
	}
	if _, err := slack.New(beta.AccessToken, slack.OptionAPIURL(srv.APIURL())).AuthTestContext(ctx); errCode(err) != "token_revoked" {
		t.Errorf("an uninstalled team's token: %v, want token_revoked", err)
	}
	if _, err := srv.RevokeTokens(ctx, "E0G", ""); err != nil {
		t.Fatal(err)
	}
	ev = <-events
	inner := ev["event"].(map[string]any)
	if ev["enterprise_id"] != "E0G" || ev["is_enterprise_install"] != true || inner["type"] != "tokens_revoked" ||
		inner["tokens"].(map[string]any)["bot"].([]any)[0] != org.BotUserID {
		t.Errorf("tokens_revoked event: %v", ev)
	}
	if srv.TokenValid(org.AccessToken) {
		t.Error("the org-wide token works after RevokeTokens(E0G)")
	}
}

// The authorize page over HTTP redirects as a person who clicks Allow.
func TestOAuthAuthorizePageRedirects(t *testing.T) {
	srv := gridServer(t, Config{})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, authorizeURL(srv, "abc", "")+"&team=T0G2&fake_org_wide=1", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc.String(), testRedirect+"?") || loc.Query().Get("state") != "abc" || loc.Query().Get("code") == "" {
		t.Fatalf("authorize answered %d to %s", resp.StatusCode, loc)
	}
	r, err := slack.GetOAuthV2ResponseContext(t.Context(), http.DefaultClient, "fake-client-id", "fake-client-secret", loc.Query().Get("code"), testRedirect, slack.OAuthOptionAPIURL(srv.APIURL()))
	if err != nil || !r.IsEnterpriseInstall || r.Enterprise.ID != "E0G" {
		t.Fatalf("exchange = %+v, %v", r, err)
	}
}

// An org-wide token lists its organization's workspaces with
// auth.teams.list (a workspace token, its own alone), and must name the
// workspace (team_id, one of them) to methods that act in one, as Slack's
// Enterprise docs say; a workspace token needs none.
func TestOrgWideTokenTeams(t *testing.T) {
	srv := gridServer(t, Config{})
	ctx := t.Context()
	events := eventSink(t, srv)
	srv.AddUserGroup("S0G", "U0G")
	beta := install(t, srv, Approval{Team: "T0B"})
	org := install(t, srv, Approval{Team: "T0G1", OrgWide: true})
	api := func(tok string) *slack.Client { return slack.New(tok, slack.OptionAPIURL(srv.APIURL())) }
	ids := func(tok string) []string {
		t.Helper()
		teams, next, err := api(tok).ListTeamsContext(ctx, slack.ListTeamsParameters{})
		if err != nil || next != "" {
			t.Fatalf("auth.teams.list: %v (next %q)", err, next)
		}
		var out []string
		for _, tm := range teams {
			out = append(out, tm.ID)
		}
		return out
	}
	if got := ids(org.AccessToken); !slices.Equal(got, []string{"T0G1", "T0G2"}) {
		t.Errorf("auth.teams.list with the org-wide token = %v, want T0G1, T0G2", got)
	}
	if got := ids(beta.AccessToken); !slices.Equal(got, []string{"T0B"}) {
		t.Errorf("auth.teams.list with Beta's token = %v, want T0B", got)
	}
	// An org admin takes the app from T0G1: the token no longer lists it
	// nor reaches it, and is given it back.
	if _, err := srv.SetTeamAccess(ctx, "E0G", "T0G1", false); err != nil {
		t.Fatal(err)
	}
	if ev := <-events; (ev["team_id"] != nil && ev["team_id"] != "") || ev["enterprise_id"] != "E0G" || ev["event"].(map[string]any)["type"] != "team_access_revoked" ||
		fmt.Sprint(ev["event"].(map[string]any)["team_ids"]) != "[T0G1]" {
		t.Errorf("team_access_revoked event: %v", ev)
	}
	if got := ids(org.AccessToken); !slices.Equal(got, []string{"T0G2"}) {
		t.Errorf("auth.teams.list after T0G1's access was revoked = %v, want T0G2", got)
	}
	if _, _, err := api(org.AccessToken).PostMessageContext(ctx, "C0G1", slack.MsgOptionText("hi", false)); errCode(err) != "channel_not_found" {
		t.Errorf("post in T0G1 after its access was revoked: %v, want channel_not_found", err)
	}
	if _, err := api(org.AccessToken).GetUserGroupMembersContext(ctx, "S0G", slack.GetUserGroupMembersOptionTeamID("T0G1")); errCode(err) != "team_access_not_granted" {
		t.Errorf("usergroups.users.list in T0G1 after its access was revoked: %v, want team_access_not_granted", err)
	}
	if _, err := srv.SetTeamAccess(ctx, "E0G", "T0G1", true); err != nil {
		t.Fatal(err)
	}
	if got := ids(org.AccessToken); !slices.Equal(got, []string{"T0G1", "T0G2"}) {
		t.Errorf("auth.teams.list after T0G1's access was granted again = %v", got)
	}
	for _, c := range []struct {
		token, team, want string
	}{
		{org.AccessToken, "", "missing_argument"}, {org.AccessToken, "T0B", "team_access_not_granted"}, {org.AccessToken, "T0G2", ""},
		{beta.AccessToken, "", ""}, {beta.AccessToken, "T0G2", ""}, // ignored for a workspace token
	} {
		var opts []slack.GetUserGroupMembersOption
		if c.team != "" {
			opts = append(opts, slack.GetUserGroupMembersOptionTeamID(c.team))
		}
		_, err := api(c.token).GetUserGroupMembersContext(ctx, "S0G", opts...)
		if got := errCode(err); got != c.want {
			t.Errorf("usergroups.users.list team_id %q with %s: %q, want %q", c.team, c.token[:8], got, c.want)
		}
	}
}

// eventSink has srv deliver its HTTP-mode requests to a server of the test
// and returns the events it received, decoded.
func eventSink(t *testing.T, srv *Server) <-chan map[string]any {
	events := make(chan map[string]any, 4)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &ev)
		events <- ev
	}))
	t.Cleanup(hs.Close)
	srv.UseHTTP(hs.URL, hs.URL)
	return events
}

// conversations.info answers a conversation by its id in the shape Slack
// draws it, with its workspace (context_team_id), and channel_not_found
// for an unknown id, a name, or a conversation the token does not reach:
// another team's, or one of a team an org admin took the org-wide app
// from. It is limited per workspace (Tier 3, bursts of 20) and refuses a
// flag that is not a boolean.
func TestConversationsInfo(t *testing.T) {
	clk := newClock()
	srv := gridServer(t, Config{Now: clk.Now})
	ctx := t.Context()
	_ = eventSink(t, srv)
	const read = "chat:write,channels:read,groups:read,im:read"
	beta := installScoped(t, srv, Approval{Team: "T0B"}, read)
	org := installScoped(t, srv, Approval{Team: "T0G1", OrgWide: true}, read)
	api := func(tok string) *slack.Client { return slack.New(tok, slack.OptionAPIURL(srv.APIURL())) }
	info := func(tok, id string) (*slack.Channel, string) {
		t.Helper()
		ch, err := api(tok).GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: id, IncludeNumMembers: true})
		return ch, errCode(err)
	}
	ch, code := info(org.AccessToken, "C0G1")
	if code != "" || ch.ID != "C0G1" || ch.Name != "grid-one" || !ch.IsChannel || ch.IsIM || ch.IsPrivate || ch.ContextTeamID != "T0G1" {
		t.Fatalf("conversations.info C0G1 with the org-wide token: %q %+v", code, ch)
	}
	dm, _, _, err := api(org.AccessToken).OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{"U0G"}})
	if err != nil {
		t.Fatal(err)
	}
	if ch, code := info(org.AccessToken, dm.ID); code != "" || !ch.IsIM || ch.User != "U0G" || ch.ContextTeamID != "T0G2" {
		t.Errorf("conversations.info of the DM with U0G: %q %+v", code, ch)
	}
	dmB := DMChannelID("U0B")
	for _, c := range []struct{ token, id, want string }{
		{org.AccessToken, "C0G2", ""}, {org.AccessToken, "C0B", "channel_not_found"}, {org.AccessToken, "C0NONE", "channel_not_found"},
		{org.AccessToken, "grid-one", "channel_not_found"}, {org.AccessToken, "#grid-one", "channel_not_found"},
		{beta.AccessToken, "C0B", ""}, {beta.AccessToken, "C0G1", "channel_not_found"},
	} {
		if _, code := info(c.token, c.id); code != c.want {
			t.Errorf("conversations.info %s with %s: %q, want %q", c.id, c.token[:8], code, c.want)
		}
	}
	// A token without the read scope of the conversation's kind.
	for _, c := range []struct{ scope, id string }{{"chat:write,im:read", "C0B"}, {"chat:write,channels:read", dmB}} {
		tok := installScoped(t, srv, Approval{Team: "T0B"}, c.scope).AccessToken
		if _, code := info(tok, c.id); code != "missing_scope" {
			t.Errorf("conversations.info %s with %s: %q, want missing_scope", c.id, c.scope, code)
		}
	}
	if _, err := srv.SetTeamAccess(ctx, "E0G", "T0G1", false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, want string }{{"C0G1", "channel_not_found"}, {"C0G2", ""}, {dm.ID, ""}} {
		if _, code := info(org.AccessToken, c.id); code != c.want {
			t.Errorf("conversations.info %s with the org-wide token after T0G1's access was revoked: %q, want %q", c.id, code, c.want)
		}
	}
	resp, err := http.PostForm(srv.APIURL()+"conversations.info", url.Values{"token": {beta.AccessToken}, "channel": {"C0B"}, "include_locale": {"yes"}})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || body.OK || body.Error != "invalid_arguments" {
		t.Errorf("include_locale=yes: %+v %v, want invalid_arguments", body, err)
	}
	// Tier 3: Beta's burst (20, less the one call answered above; refused
	// calls spend none, and the clock stands still) then 429; the org's
	// calls are counted apart.
	n := callsBefore429(t, 30, func() error {
		_, err := api(beta.AccessToken).GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C0B"})
		return err
	})
	if n != tierBurst-1 {
		t.Errorf("%d calls before the 429, want %d", n, tierBurst-1)
	}
	if _, code := info(org.AccessToken, "C0G2"); code != "" {
		t.Errorf("the org-wide token's call after Beta's 429: %q", code)
	}
}
