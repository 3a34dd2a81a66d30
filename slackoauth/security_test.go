package slackoauth

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/memory"
)

type countSaver struct{ n atomic.Int64 }

func (s *countSaver) Save(context.Context, installs.Installation) error { s.n.Add(1); return nil }

// refused: the redirect answered 400 with want in its page, nothing was
// stored and Slack was never asked to exchange the code.
func (r *rig) refused(status int, body, want string) {
	r.t.Helper()
	if status != http.StatusBadRequest || !strings.Contains(body, want) || !strings.Contains(body, "INVALID_REQUEST") {
		r.t.Errorf("answered %d, want 400 saying %q:\n%s", status, want, body)
	}
	if n := r.installs(); n != 0 {
		r.t.Errorf("%d installations stored after a refused redirect", n)
	}
	if n := r.fake.CallCount("oauth.v2.access"); n != 0 {
		r.t.Errorf("oauth.v2.access called %d times for a refused redirect", n)
	}
	r.checkNoSecrets(body)
}

func withParam(u, key, value string) string {
	p, _ := url.Parse(u)
	q := p.Query()
	q.Set(key, value)
	p.RawQuery = q.Encode()
	return p.String()
}

func TestRedirectRefusesAForgedState(t *testing.T) {
	r := newRig(t, slackfake.Config{}, false)
	c := browser(t)
	back := r.approve(r.start(c), slackfake.Approval{Team: "T0B"})
	st := mustQuery(t, back, "state")
	for name, forged := range map[string]string{
		"one character changed":  flip(st, len(st)/2),
		"last character changed": flip(st, len(st)-1),
		"random":                 "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_",
		"empty":                  "",
		"not base64":             "%%%%",
		"too long":               strings.Repeat("A", 4000),
	} {
		status, body, _ := get(t, c, withParam(back, "state", forged))
		want := "not made by this slackask"
		if forged == "" {
			want = "has no state"
		}
		outer := r.t
		t.Run(name, func(t *testing.T) { r.t = t; r.refused(status, body, want) })
		r.t = outer
	}
	// A state signed with another key (another deployment) is refused too.
	other := r.handler(r.web.URL+RedirectPath, false)
	other.key = make([]byte, 32)
	s, _ := other.key.newState(r.web.URL+RedirectPath, r.clock.Now().Add(time.Minute))
	status, body, _ := get(t, c, withParam(back, "state", s))
	r.refused(status, body, "not made by this slackask")
}

func TestRedirectRefusesAnExpiredState(t *testing.T) {
	r := newRig(t, slackfake.Config{CodeTTL: time.Hour}, false)
	c := browser(t)
	back := r.approve(r.start(c), slackfake.Approval{Team: "T0B"})
	r.clock.Advance(StateTTL + time.Second)
	status, body, _ := get(t, c, back)
	r.refused(status, body, "expired")
}

// A state comes back once: the second redirect with it (a reload, a
// replay, another replica) is refused before Slack is asked.
func TestRedirectRefusesAReusedState(t *testing.T) {
	r := newRig(t, slackfake.Config{}, false)
	c := browser(t)
	back := r.approve(r.start(c), slackfake.Approval{Team: "T0B"})
	if status, body, _ := get(t, c, back); status != http.StatusOK {
		t.Fatalf("first use: %d %s", status, body)
	}
	status, body, _ := get(t, c, back)
	if status != http.StatusBadRequest || !strings.Contains(body, "used already") {
		t.Errorf("reuse answered %d:\n%s", status, body)
	}
	// The same state with a fresh code from Slack: still refused.
	fresh := r.approve(r.start(browser(t)), slackfake.Approval{Team: "T0B"})
	status, body, _ = get(t, c, withParam(fresh, "state", mustQuery(t, back, "state")))
	if status != http.StatusBadRequest || !strings.Contains(body, "used already") {
		t.Errorf("reuse with another code answered %d:\n%s", status, body)
	}
	if n := r.fake.CallCount("oauth.v2.access"); n != 1 {
		t.Errorf("oauth.v2.access called %d times, want 1", n)
	}
}

// A state made for another redirect URL (another deployment sharing the
// key, or a state lifted from another flow) does not verify here.
func TestRedirectRefusesAStateForAnotherRedirect(t *testing.T) {
	r := newRig(t, slackfake.Config{}, false)
	other := r.handler("https://elsewhere.example.test"+RedirectPath, false)
	rec := httptest.NewRecorder()
	other.Install(rec, httptest.NewRequest(http.MethodGet, InstallPath, nil))
	otherState := mustQuery(t, rec.Header().Get("Location"), "state")
	cookie := rec.Result().Cookies()[0]

	c := browser(t)
	back := r.approve(r.start(c), slackfake.Approval{Team: "T0B"})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, withParam(back, "state", otherState), nil)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r.refused(resp.StatusCode, string(b), "for another redirect URL")
}

// The state is bound to the browser the install link was opened in.
func TestRedirectRefusesAnotherBrowser(t *testing.T) {
	r := newRig(t, slackfake.Config{}, false)
	back := r.approve(r.start(browser(t)), slackfake.Approval{Team: "T0B"})
	status, body, _ := get(t, browser(t), back)
	r.refused(status, body, "another browser")
}

// A code exchanged once is refused by Slack when replayed under a fresh,
// valid state: the page says Slack refused it and nothing more is stored.
func TestRedirectCodeReplay(t *testing.T) {
	r := newRig(t, slackfake.Config{}, false)
	c := browser(t)
	back := r.approve(r.start(c), slackfake.Approval{Team: "T0B"})
	if status, body, _ := get(t, c, back); status != http.StatusOK {
		t.Fatalf("install: %d %s", status, body)
	}
	before, _ := r.stored.Lookup(t.Context(), "", "T0B")
	fresh := r.approve(r.start(c), slackfake.Approval{Team: "T0B"})
	status, body, _ := get(t, c, withParam(fresh, "code", mustQuery(t, back, "code")))
	if status != http.StatusBadGateway || !strings.Contains(body, "invalid_code") || !strings.Contains(body, "SLACK_ERROR") {
		t.Errorf("a replayed code answered %d:\n%s", status, body)
	}
	if after, _ := r.stored.Lookup(t.Context(), "", "T0B"); after.BotToken != before.BotToken || r.installs() != 1 {
		t.Error("a replayed code changed the stored installation")
	}
	r.checkNoSecrets(body)
}

func TestRedirectAccessDenied(t *testing.T) {
	r := newRig(t, slackfake.Config{}, true)
	c := browser(t)
	back := r.approve(r.start(c), slackfake.Approval{Team: "T0B", Deny: true})
	status, body, _ := get(t, c, back)
	if status != http.StatusOK || !strings.Contains(body, "cancelled") || r.installs() != 0 || r.fake.CallCount("oauth.v2.access") != 0 {
		t.Errorf("a denied install answered %d, stored %d:\n%s", status, r.installs(), body)
	}
	status, body, _ = get(t, c, r.web.URL+RedirectPath+"?error=%3Cscript%3Ealert(1)%3C/script%3E")
	if status != http.StatusBadRequest || strings.Contains(body, "<script>") {
		t.Errorf("another error answered %d, unescaped:\n%s", status, body)
	}
}

// PKCE: the verifier the exchange sends is the one the challenge was made
// from; the fake refuses any other (TestInstallATeam installs with PKCE
// on). A state whose nonce gives another verifier cannot pass.
func TestPKCEVerifierIsBoundToTheState(t *testing.T) {
	r := newRig(t, slackfake.Config{}, true)
	s1, st1 := r.h.key.newState("x", time.Now().Add(time.Minute))
	_, st2 := r.h.key.newState("x", time.Now().Add(time.Minute))
	v1 := r.h.key.verifier(st1)
	if len(v1) != 43 || v1 == r.h.key.verifier(st2) || strings.Contains(s1, v1) || strings.Contains(s1, challenge(v1)) {
		t.Fatalf("verifier %q: want 43 characters, one per state, not in the state", v1)
	}
}

func mustQuery(t *testing.T, u, key string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query().Get(key)
}

func flip(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// FuzzRedirect: whatever the query of /slack/oauth_redirect, the handler
// answers without panicking, stores nothing and asks Slack nothing (no
// input can carry a valid state), and echoes no markup.
func FuzzRedirect(f *testing.F) {
	key := make([]byte, 32)
	good, _ := stateKey(key).newState("http://127.0.0.1:1"+RedirectPath, time.Now().Add(time.Minute))
	for _, seed := range []string{
		"", "code=abc&state=" + good, "state=" + good, "error=access_denied&state=x", "error=%3Cb%3E", "code=&state=",
		"state=" + good[:len(good)-1] + "A&code=1", "code=" + strings.Repeat("x", 600) + "&state=" + good, "%zz", "state=%00%ff",
	} {
		f.Add(seed)
	}
	db := memory.New()
	f.Cleanup(func() { db.Close() })
	saver := &countSaver{}
	h, err := New(Config{
		ClientID: "id", ClientSecret: "secret", Scopes: []string{"chat:write"}, RedirectURL: "http://127.0.0.1:1" + RedirectPath,
		APIURL: "http://127.0.0.1:1/api/", StateKey: key, Nonces: db, Saver: saver, Log: zerolog.Nop(),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		req := httptest.NewRequest(http.MethodGet, RedirectPath, nil)
		req.URL.RawQuery = rawQuery
		rec := httptest.NewRecorder()
		h.Redirect(rec, req)
		q := req.URL.Query()
		switch {
		case q.Get("error") == "access_denied":
			if rec.Code != http.StatusOK {
				t.Fatalf("access_denied answered %d", rec.Code)
			}
		case rec.Code != http.StatusBadRequest:
			t.Fatalf("query %q answered %d, want 400", rawQuery, rec.Code)
		}
		if saver.n.Load() != 0 {
			t.Fatalf("query %q stored an installation", rawQuery)
		}
		body := rec.Body.String()
		for _, v := range q {
			for _, s := range v {
				// Markup of the input in the page, other than what the
				// template itself has, is input echoed unescaped.
				if strings.Contains(s, "<") && strings.Contains(body, s) && !strings.Contains(pageHTML, s) {
					t.Fatalf("the page echoes %q unescaped", s)
				}
			}
		}
	})
}

// Behind a proxy that serves slackask under a path prefix, the cookie goes
// to the redirect URL's path as the browser sees it.
func TestInstallCookieFollowsTheRedirectURLPath(t *testing.T) {
	r := newRig(t, slackfake.Config{}, false)
	h := r.handler("https://ask.example.test/base"+RedirectPath, false)
	rec := httptest.NewRecorder()
	h.Install(rec, httptest.NewRequest(http.MethodGet, InstallPath, nil))
	cs := rec.Result().Cookies()
	if len(cs) != 1 || cs[0].Path != "/base"+RedirectPath || !cs[0].HttpOnly || !cs[0].Secure || cs[0].SameSite != http.SameSiteLaxMode {
		t.Fatalf("cookie %+v", cs)
	}
}

// Only GET reaches the handlers: a HEAD of the redirect (a link checker)
// or a POST spends nothing, and the person's GET still installs.
func TestRedirectOnlyGet(t *testing.T) {
	r := newRig(t, slackfake.Config{}, false)
	c := browser(t)
	back := r.approve(r.start(c), slackfake.Approval{Team: "T0B"})
	for _, m := range []string{http.MethodHead, http.MethodPost} {
		req, _ := http.NewRequestWithContext(t.Context(), m, back, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" {
			t.Errorf("%s: %d, Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	if status, body, _ := get(t, c, back); status != http.StatusOK {
		t.Fatalf("the GET after a HEAD and a POST: %d\n%s", status, body)
	}
}

// FuzzState: only a state the key made verifies, in the one spelling
// the key gives it, and no input panics.
func FuzzState(f *testing.F) {
	key := stateKey(bytes.Repeat([]byte{3}, 32))
	now := time.Unix(1_800_000_000, 0)
	good, _ := key.newState("https://a.example.test"+RedirectPath, now.Add(time.Minute))
	for _, seed := range []string{good, good[:len(good)-1], good + "A", flip(good, 0), flip(good, 5), "", "AAAA", strings.Repeat("_", maxStateLen)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := key.verify(s, "https://a.example.test"+RedirectPath, now)
		if err == nil && key.encode(st, "https://a.example.test"+RedirectPath) != s {
			t.Fatalf("%q verified, but the key spells its state %q", s, key.encode(st, "https://a.example.test"+RedirectPath))
		}
		if s == good && err != nil {
			t.Fatalf("the key's own state: %v", err)
		}
	})
}
