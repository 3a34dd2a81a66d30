package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/internal/slacksign"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// TestHTTPModeSuite runs the end-to-end tests of asking and answering with
// Slack in HTTP mode: every click, modal and submission reaches the
// service as a signed POST, acked by its 200 once stored.
func TestHTTPModeSuite(t *testing.T) {
	modeOpts = []option{httpMode()}
	defer func() { modeOpts = nil }()
	for name, fn := range map[string]func(*testing.T){
		"OneQuestionOneTap":      TestOneQuestionOneTap,
		"BatchOfThree":           TestBatchOfThree,
		"OtherReplacesSelection": TestOtherReplacesSelection,
		"Skip":                   TestSkip,
		"Cancel":                 TestCancel,
		"CallerWithdraws":        TestCallerWithdraws,
		"LateClick":              TestLateClick,
		"UnauthorizedClick":      TestUnauthorizedClick,
		"TwoPeopleSubmitAtOnce":  TestTwoPeopleSubmitAtOnce,
		"DMAsk":                  TestDMAsk,
		"TeamTwoOfThreeThenVeto": TestTeamTwoOfThreeThenVeto,
		"TeamResubmitReplaces":   TestTeamResubmitReplaces,
		"KeysEndToEnd":           TestKeysEndToEnd,
	} {
		t.Run(name, fn)
	}
}

// signedPost POSTs body to the service's path signed with secret at ts.
func signedPost(t *testing.T, h *harness, path string, secret string, ts time.Time, body []byte, mut func(http.Header)) int {
	t.Helper()
	req, err := http.NewRequest("POST", h.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	slacksign.SetHeaders(req.Header, []byte(secret), body, ts)
	if mut != nil {
		mut(req.Header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPModeRefusesUnsigned: forged, stale, truncated, re-signed with
// another secret and oversized requests are refused (401, 413) and change
// nothing; the same signed request twice is taken twice (a retry);
// url_verification echoes its challenge; neither the signing secret nor
// the bot token is ever logged.
func TestHTTPModeRefusesUnsigned(t *testing.T) {
	const botToken = "xoxb-SECRETbot-http-7777"
	h := start(t, httpMode(), withConfig(func(c *config.Config) { c.SlackBotToken = botToken }))
	ctx := ctxT(t)
	const secret = "harness-signing-secret"
	if err := h.fake.VerifyEventsURL(ctx); err != nil {
		t.Fatalf("url_verification: %v", err)
	}
	ask := h.create(ask1(question("deploy", "Deploy?", "Yes", "No")))

	// A real click, captured as the fake would send it: a select of Yes.
	click := `{"type":"block_actions","user":{"id":"` + alice + `","name":"alice","team_id":"T0FAKE"},"team":{"id":"T0FAKE"},"api_app_id":"A0FAKE",` +
		`"container":{"type":"message","channel_id":"` + channel + `","message_ts":"` + ask.TS + `"},"trigger_id":"1.2.3",` +
		`"actions":[{"type":"static_select","action_id":"X","block_id":"Y","selected_option":{"text":{"type":"plain_text","text":"Yes"},"value":"0"}}]}`
	body := []byte(url.Values{"payload": {click}}.Encode())
	now := time.Now()
	cases := []struct {
		name   string
		secret string
		at     time.Time
		body   []byte
		mut    func(http.Header)
		want   int
	}{
		{"forged (another secret)", "not-the-secret", now, body, nil, 401},
		{"stale (6 minutes old)", secret, now.Add(-6 * time.Minute), body, nil, 401},
		{"from the future", secret, now.Add(6 * time.Minute), body, nil, 401},
		{"unsigned", secret, now, body, func(h http.Header) { h.Del(slacksign.SignatureHeader) }, 401},
		{"no timestamp", secret, now, body, func(h http.Header) { h.Del(slacksign.TimestampHeader) }, 401},
		{"signature of another timestamp", secret, now, body, func(h http.Header) {
			h.Set(slacksign.TimestampHeader, strconv.FormatInt(now.Unix()-1, 10))
		}, 401},
	}
	for _, c := range cases {
		if got := signedPost(t, h, "/slack/interactivity", c.secret, c.at, c.body, c.mut); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// Truncated: signed whole, sent cut.
	req, _ := http.NewRequest("POST", h.base+"/slack/interactivity", bytes.NewReader(body[:len(body)/2]))
	slacksign.SetHeaders(req.Header, []byte(secret), body, now)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("truncated body: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	// Oversized: refused before its signature is even checked.
	big := bytes.Repeat([]byte("a"), 5<<20)
	if got := signedPost(t, h, "/slack/interactivity", secret, now, big, nil); got != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized: %d, want 413", got)
	}
	for _, p := range []string{"/slack/events"} {
		if got := signedPost(t, h, p, "not-the-secret", now, []byte(`{"type":"url_verification","challenge":"x"}`), nil); got != 401 {
			t.Errorf("forged %s: %d, want 401", p, got)
		}
	}
	if got := h.get(ask.ID); got.Status != interaction.StatusPending || len(h.fake.Ephemerals(alice)) != 0 {
		t.Fatalf("a refused request changed something: %s, %d ephemerals", got.Status, len(h.fake.Ephemerals(alice)))
	}
	// GET is not Slack's.
	if resp, err := http.Get(h.base + "/slack/interactivity"); err != nil || resp.StatusCode != 405 {
		t.Errorf("GET /slack/interactivity: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// The same timestamp and body twice is fine: Slack may retry. (Not a
	// block of ours: acked and ignored, both times.)
	other := []byte(url.Values{"payload": {`{"type":"view_closed","user":{"id":"` + alice + `"}}`}}.Encode())
	for i := range 2 {
		if got := signedPost(t, h, "/slack/interactivity", secret, now, other, nil); got != 200 {
			t.Errorf("signed view_closed, try %d: %d, want 200", i+1, got)
		}
	}
	// And the person's real click, over HTTP: no Socket Mode connection.
	if _, err := h.fake.Person(alice).Select(ctx, channel, ask.TS, control(0, "select"), "Yes"); err != nil {
		t.Fatal(err)
	}
	if got := h.waitAsk(ask.ID); got.Status != interaction.StatusAnswered {
		t.Fatalf("answered over HTTP: %s", got.Status)
	}
	if n := h.fake.Connections(); n != 0 {
		t.Errorf("%d Socket Mode connections in HTTP mode", n)
	}
	if !strings.Contains(h.logs.String(), `"path":"/slack/interactivity","status":200`) {
		t.Errorf("no click came over HTTP")
	}
	for _, k := range []string{secret, botToken, "SECRETbot"} {
		if strings.Contains(h.logs.String(), k) {
			t.Errorf("the log holds %q", k)
		}
	}
}

// TestHTTPModeConfig: serve refuses HTTP mode without a signing secret and
// needs no app token with one.
func TestHTTPModeConfig(t *testing.T) {
	c := config.Config{SlackBotToken: "xoxb-x", SlackMode: config.SlackModeHTTP, SlackAPIURL: "https://slack.com/api/",
		HTTPAddr: "127.0.0.1:8080", Database: "x.db", LogLevel: "info", LogFormat: "json", SocketConnections: 1}
	if err := c.ValidateServe(); err == nil || !strings.Contains(err.Error(), "SLACK_SIGNING_SECRET") {
		t.Fatalf("without a signing secret: %v", err)
	}
	c.SlackSigningSecret = "s"
	if err := c.ValidateServe(); err != nil {
		t.Fatalf("with one: %v", err)
	}
}

// TestManifestHTTPMode: `slackask manifest --mode http --url` turns Socket
// Mode off and points interactivity, events and the OAuth redirect at the
// URL, with org-wide installs allowed; a URL that is not https, or none,
// is refused.
func TestManifestHTTPMode(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(t.Context(), []string{"manifest", "--mode", "http", "--url", "https://ask.example.com/base/"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var m struct {
		Settings struct {
			SocketMode    bool `json:"socket_mode_enabled"`
			Interactivity struct {
				Enabled bool   `json:"is_enabled"`
				URL     string `json:"request_url"`
			} `json:"interactivity"`
			Events struct {
				URL    string   `json:"request_url"`
				Events []string `json:"bot_events"`
			} `json:"event_subscriptions"`
			OrgDeploy bool `json:"org_deploy_enabled"`
		} `json:"settings"`
		OAuth struct {
			RedirectURLs []string `json:"redirect_urls"`
		} `json:"oauth_config"`
	}
	if err := json.Unmarshal([]byte(out.String()), &m); err != nil {
		t.Fatal(err)
	}
	s := m.Settings
	if s.SocketMode || !s.Interactivity.Enabled || s.Interactivity.URL != "https://ask.example.com/base/slack/interactivity" ||
		s.Events.URL != "https://ask.example.com/base/slack/events" || !slices.Contains(s.Events.Events, "app_uninstalled") {
		t.Fatalf("manifest settings: %+v", s)
	}
	if !s.OrgDeploy || len(m.OAuth.RedirectURLs) != 1 || m.OAuth.RedirectURLs[0] != "https://ask.example.com/base/slack/oauth_redirect" {
		t.Fatalf("manifest for OAuth installs: org deploy %v, redirect URLs %v", s.OrgDeploy, m.OAuth.RedirectURLs)
	}
	for _, args := range [][]string{{"--mode", "http"}, {"--mode", "http", "--url", "http://ask.example.com"}, {"--mode", "ftp"}, {"--url", "https://x.example"}} {
		if code := run(t.Context(), append([]string{"manifest"}, args...), nil, &out, &errOut); code != 2 {
			t.Errorf("manifest %v: exit %d, want 2", args, code)
		}
	}
}

// TestHTTPModeHome: app_home_opened comes as a signed POST to
// /slack/events and the person's Home is published, as in Socket Mode.
func TestHTTPModeHome(t *testing.T) {
	h := start(t, httpMode())
	ctx := ctxT(t)
	in := ask1(question("deploy", "Deploy to prod?", "Yes", "No"))
	in.Responders = []string{alice}
	ask := h.create(in)
	if err := h.fake.Person(alice).OpenHome(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitFor(ctx, func() bool {
		v, ok := h.fake.Home(alice)
		return ok && strings.Contains(string(v.Blocks), ask.ID)
	}); err != nil {
		v, _ := h.fake.Home(alice)
		t.Fatalf("alice's Home never showed the ask: %s", v.Blocks)
	}
	if !strings.Contains(h.logs.String(), `"path":"/slack/events","status":200`) {
		t.Errorf("app_home_opened did not come over HTTP")
	}
}

// TestHTTPModeReplicasBehindABalancer: three `slackask serve` replicas in
// HTTP mode on one PostgreSQL database behind a round-robin balancer with
// no affinity. Every click and modal reaches whichever replica the
// balancer picks (consecutive requests of one person, a modal's opening
// and its submission, on different replicas) and each ask is answered
// and read right from any replica.
func TestHTTPModeReplicasBehindABalancer(t *testing.T) {
	// No Socket Mode connection to wait for (conns 0; the variable stays valid).
	r := newReplicaRigOn(t, pgtest.URL(t), 0, 0, "SLACKASK_SLACK_MODE=http", "SLACK_SIGNING_SECRET=fake-signing-secret", "SLACKASK_SOCKET_CONNECTIONS=1")
	for range 3 {
		r.add()
	}
	var (
		mu     sync.Mutex
		next   int
		served = map[int]int{}
	)
	proxies := make([]*httputil.ReverseProxy, len(r.reps))
	for i, rep := range r.reps {
		proxies[i] = httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: rep.addr})
	}
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		i := next % len(proxies)
		next++
		served[i]++
		mu.Unlock()
		proxies[i].ServeHTTP(w, req)
	}))
	defer lb.Close()
	r.fake.UseHTTP(lb.URL+"/slack/interactivity", lb.URL+"/slack/events")
	ctx := ctxT(t)
	if err := r.fake.VerifyEventsURL(ctx); err != nil {
		t.Fatal(err)
	}
	p := r.fake.Person(alice)
	for i := range 9 {
		ask := r.create(i%3, oneTap("ship"))
		if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), []string{"yes", "no"}[i%2]); err != nil {
			t.Fatal(err)
		}
		got, err := r.get((i+1)%3, ask.ID, 10*time.Second)
		if err != nil || got.Status != interaction.StatusAnswered || got.Answer.Answers[0].Selected[0] != []string{"yes", "no"}[i%2] {
			t.Fatalf("ask %d: %+v %v", i, got, err)
		}
	}
	// A modal opened through one replica and submitted through another.
	ask := r.create(0, ask1(question("db", "Which database?", "SQLite", "Postgres"), question("n", "Name?")))
	if _, err := p.Click(ctx, channel, ask.TS, control(0, "other")); err != nil {
		t.Fatal(err)
	}
	view, err := p.WaitView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Type(ctx, view.ID, slackfake.ByActionID("text"), "CockroachDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, view.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	got, err := r.get(2, ask.ID, 10*time.Second)
	if err != nil || got.Status != interaction.StatusAnswered || got.Answer.Answers[0].Custom != "CockroachDB" {
		t.Fatalf("the modal's ask: %+v %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range r.reps {
		if served[i] < 3 {
			t.Errorf("replica %d took %d of %d Slack requests: not spread", i, served[i], next)
		}
	}
	if f := r.fake.FailedInteractions(); len(f) != 0 {
		t.Errorf("interactions failed in front of the person: %+v", f)
	}
}

// TestHTTPModeUninstall: app_uninstalled (signed, over /slack/events) ends
// the workspace's pending asks aborted with a clear message: a waiting
// caller gets it at once, no message update is tried with the dead token,
// and /readyz says the app was uninstalled. A tokens_revoked of another
// bot, or an event of another workspace, changes nothing.
func TestHTTPModeUninstall(t *testing.T) {
	h := start(t, httpMode())
	ctx := ctxT(t)
	ask := h.create(ask1(question("deploy", "Deploy?", "Yes", "No")))
	waited := make(chan interaction.Ask, 1)
	go func() {
		var a interaction.Ask
		h.do("GET", "/v1/asks/"+ask.ID+"?wait=15s", nil, &a)
		waited <- a
	}()
	for _, ev := range []struct {
		team string
		body map[string]any
	}{
		{"T0FAKE", map[string]any{"type": "tokens_revoked", "tokens": map[string]any{"bot": []string{"U0SOMEONE"}}}},
		{"T0ELSE", map[string]any{"type": "app_uninstalled"}},
		{"T0FAKE", map[string]any{"type": "app_uninstalled"}},
	} {
		if code, err := h.fake.DeliverEvent(ctx, ev.team, "", ev.body); err != nil || code != 200 {
			t.Fatalf("%v: %d %v", ev.body, code, err)
		}
	}
	got := <-waited
	if got.Status != interaction.StatusAborted || got.Error == nil || !strings.Contains(got.Error.Message, "uninstalled from this workspace") {
		t.Fatalf("the waiting caller got %s %+v", got.Status, got.Error)
	}
	resp, err := http.Get(h.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "uninstalled") {
		t.Errorf("/readyz after the uninstall: %d %s", resp.StatusCode, body)
	}
	if m, _ := h.fake.Message(channel, ask.TS); m.Updates != 0 {
		t.Errorf("%d message updates tried with the uninstalled app's token", m.Updates)
	}
}
