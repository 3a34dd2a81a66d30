package slackoauth

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.uber.org/goleak"

	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/internal/syncbuf"
	"github.com/slackask/slackask/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rig struct {
	t      *testing.T
	fake   *slackfake.Server
	clock  *clock.Fake
	db     *memory.Store
	stored *installs.Stored
	h      *Handler
	web    *httptest.Server
	logs   *syncbuf.Buffer
	key    []byte
}

const testScopes = "chat:write,im:write,users:read"

func newRig(t *testing.T, fakeCfg slackfake.Config, pkce bool) *rig {
	t.Helper()
	clk := clock.NewFake(time.Now())
	fakeCfg.Now = clk.Now
	fake, err := slackfake.New(fakeCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	fake.AddTeam("T0B", "Beta", "")
	fake.AddEnterprise("E0G", "Grid Org")
	fake.AddTeam("T0G1", "Grid One", "E0G")
	fake.AddTeam("T0G2", "Grid Two", "E0G")
	fake.AddUserIn("T0B", "U0B", "bob")
	fake.AddChannelIn("T0B", "C0B", "beta")
	fake.AddChannelIn("T0G2", "C0G2", "grid-two")

	r := &rig{t: t, fake: fake, clock: clk, db: memory.New(), logs: &syncbuf.Buffer{}, key: bytes.Repeat([]byte{9}, 32)}
	t.Cleanup(func() { r.db.Close() })
	sealKey := bytes.Repeat([]byte{5}, 32)
	sealer, _ := installs.NewSealer(sealKey, nil)
	log := zerolog.New(r.logs)
	r.stored = installs.NewStored(r.db, sealer, installs.StoredConfig{
		Now: clk.Now, Log: &log,
		Refresher: installs.SlackRefresher{ClientID: "fake-client-id", ClientSecret: "fake-client-secret", APIURL: fake.APIURL(), Now: clk.Now},
	})
	mux := http.NewServeMux()
	r.web = httptest.NewServer(mux)
	t.Cleanup(r.web.Close)
	r.h = r.handler(r.web.URL+RedirectPath, pkce)
	r.h.Mount(mux.Handle)
	return r
}

func (r *rig) handler(redirect string, pkce bool) *Handler {
	r.t.Helper()
	h, err := New(Config{
		ClientID: "fake-client-id", ClientSecret: "fake-client-secret", Scopes: strings.Split(testScopes, ","),
		RedirectURL: redirect, AuthorizeURL: r.fake.URL() + "/oauth/v2/authorize", APIURL: r.fake.APIURL(),
		PKCE: pkce, StateKey: r.key, Nonces: r.db, Saver: r.stored, Now: r.clock.Now, Log: zerolog.New(r.logs),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// browser is a person's browser: it keeps cookies and does not follow
// redirects, so each hop is seen.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// start opens the install link in c and returns Slack's authorize URL.
func (r *rig) start(c *http.Client) string {
	r.t.Helper()
	status, _, hdr := get(r.t, c, r.web.URL+InstallPath)
	if status != http.StatusFound {
		r.t.Fatalf("/slack/install answered %d", status)
	}
	return hdr.Get("Location")
}

// approve plays the person on Slack's page and returns the redirect URL.
func (r *rig) approve(authorize string, a slackfake.Approval) string {
	r.t.Helper()
	to, err := r.fake.Approve(authorize, a)
	if err != nil {
		r.t.Fatal(err)
	}
	return to
}

func (r *rig) installs() int {
	all, err := r.stored.List(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	return len(all)
}

// checkNoSecrets: no token, refresh token, code or client secret in the
// logs or in any page shown.
func (r *rig) checkNoSecrets(pages ...string) {
	r.t.Helper()
	all, _ := r.stored.List(r.t.Context())
	secrets := []string{"fake-client-secret", "xoxb-", "xoxe"}
	for _, in := range all {
		secrets = append(secrets, in.BotToken, in.RefreshToken)
	}
	for i, text := range append(pages, r.logs.String()) {
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				what := "the log"
				if i < len(pages) {
					what = "a page"
				}
				r.t.Errorf("%s shows %q", what, s)
			}
		}
	}
}

func TestInstallATeam(t *testing.T) {
	r := newRig(t, slackfake.Config{}, true)
	c := browser(t)
	authorize := r.start(c)
	u, _ := url.Parse(authorize)
	q := u.Query()
	if !strings.HasPrefix(authorize, r.fake.URL()+"/oauth/v2/authorize?") || q.Get("client_id") != "fake-client-id" || q.Get("scope") != testScopes ||
		q.Get("redirect_uri") != r.web.URL+RedirectPath || q.Get("state") == "" || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 {
		t.Fatalf("authorize URL %s", authorize)
	}
	status, body, _ := get(t, c, r.approve(authorize, slackfake.Approval{Team: "T0B"}))
	if status != http.StatusOK || !strings.Contains(body, "slackask keys create --name NAME --workspace T0B") || !strings.Contains(body, "/invite @slackask") || !strings.Contains(body, "Beta") {
		t.Fatalf("after install: %d\n%s", status, body)
	}
	in, err := r.stored.Lookup(t.Context(), "", "T0B")
	if err != nil || in.Team != "T0B" || in.OrgWide || in.BotUserID != r.fake.BotUserOf("T0B") || in.BotID == "" || in.InstalledBy != "U0B" ||
		strings.Join(in.Scopes, ",") != testScopes || in.AppID != "A0FAKE" || in.RefreshToken != "" || !in.ExpiresAt.IsZero() {
		t.Fatalf("stored: %+v, %v", in, err)
	}
	api := slack.New(in.BotToken, slack.OptionAPIURL(r.fake.APIURL()))
	if _, _, err := api.PostMessageContext(t.Context(), "C0B", slack.MsgOptionText("hello", false)); err != nil {
		t.Fatalf("the stored token does not post in its team: %v", err)
	}
	r.checkNoSecrets(body)
}

func TestInstallOrgWide(t *testing.T) {
	r := newRig(t, slackfake.Config{}, false)
	c := browser(t)
	authorize := r.start(c)
	if strings.Contains(authorize, "code_challenge") {
		t.Fatalf("PKCE off, yet the authorize URL has a challenge: %s", authorize)
	}
	status, body, _ := get(t, c, r.approve(authorize, slackfake.Approval{Team: "T0G1", OrgWide: true}))
	if status != http.StatusOK || !strings.Contains(body, "whole <strong>Grid Org</strong> organization") || !strings.Contains(body, "slackask keys create --name NAME --workspace E0G") ||
		!strings.Contains(body, `href="https://app.slack.com/manage/E0G/integrations/profile/A0FAKE/workspaces/add"`) {
		t.Fatalf("after an org-wide install: %d\n%s", status, body)
	}
	in, err := r.stored.Lookup(t.Context(), "E0G", "T0G2")
	if err != nil || !in.OrgWide || in.Enterprise != "E0G" || in.Team != "" {
		t.Fatalf("Lookup(E0G, T0G2) = %+v, %v", in, err)
	}
	if _, _, err := slack.New(in.BotToken, slack.OptionAPIURL(r.fake.APIURL())).PostMessageContext(t.Context(), "C0G2", slack.MsgOptionText("hi", false)); err != nil {
		t.Fatalf("the org-wide token in one of its teams: %v", err)
	}
	r.checkNoSecrets(body)
}

// With token rotation the installation keeps its refresh token and expiry,
// and Lookup refreshes it through oauth.v2.access before it runs out.
func TestInstallWithTokenRotationRefreshes(t *testing.T) {
	r := newRig(t, slackfake.Config{TokenRotation: true}, false)
	c := browser(t)
	if status, body, _ := get(t, c, r.approve(r.start(c), slackfake.Approval{Team: "T0B"})); status != http.StatusOK {
		t.Fatalf("install: %d %s", status, body)
	}
	first, err := r.stored.Lookup(t.Context(), "", "T0B")
	if err != nil || first.RefreshToken == "" || !first.ExpiresAt.After(r.clock.Now().Add(11*time.Hour)) {
		t.Fatalf("rotating install stored as %+v, %v", first.ExpiresAt, err)
	}
	r.clock.Advance(12*time.Hour - 2*time.Minute)
	next, err := r.stored.Lookup(t.Context(), "", "T0B")
	if err != nil || next.BotToken == first.BotToken || next.RefreshToken == first.RefreshToken {
		t.Fatalf("Lookup 2 minutes before expiry did not refresh: %v", err)
	}
	r.clock.Advance(3 * time.Minute) // the first token has expired
	if r.fake.TokenValid(first.BotToken) || !r.fake.TokenValid(next.BotToken) {
		t.Fatal("after the refresh the old token should have expired and the new one work")
	}
	if got, err := r.stored.Lookup(t.Context(), "", "T0B"); err != nil || got.BotToken != next.BotToken {
		t.Fatalf("a later Lookup = %v; want the refreshed token, no second refresh", err)
	}
	if n := r.fake.CallCount("oauth.v2.access"); n != 2 {
		t.Errorf("oauth.v2.access called %d times, want 2 (the install, one refresh)", n)
	}
	r.checkNoSecrets()
}
