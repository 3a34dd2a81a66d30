package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/httpapi/openapitest"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/webhook"
)

// hookReceiver is a callback endpoint: it verifies each signature, checks
// each callback against the OpenAPI document, and answers 503 while down,
// 204 otherwise.
type hookReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	down bool
	// tries counts the requests per ask id; ok holds the bodies answered
	// 200; bad counts bad signatures.
	tries map[string]int
	ok    map[string][]interaction.Ask
	bad   int
	// undocumented holds how callbacks differ from the OpenAPI document.
	undocumented []string
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	hr := &hookReceiver{tries: map[string]int{}, ok: map[string][]interaction.Ask{}}
	hr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var a interaction.Ask
		_ = json.Unmarshal(body, &a)
		hr.mu.Lock()
		defer hr.mu.Unlock()
		if err := webhook.Verify([]byte(secret), r.Header, body, time.Now(), 5*time.Minute); err != nil {
			hr.bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		hr.tries[a.ID]++
		if err := openapitest.CheckCallback(r.Context(), r, body); err != nil {
			hr.undocumented = append(hr.undocumented, err.Error())
		}
		if hr.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		hr.ok[a.ID] = append(hr.ok[a.ID], a)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		hr.srv.Close()
		hr.mu.Lock()
		defer hr.mu.Unlock()
		for _, u := range hr.undocumented {
			t.Error(u)
		}
	})
	return hr
}

func (hr *hookReceiver) state(id string) (tries int, ok []interaction.Ask, bad int) {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return hr.tries[id], append([]interaction.Ask(nil), hr.ok[id]...), hr.bad
}

func (hr *hookReceiver) setDown(down bool) {
	hr.mu.Lock()
	hr.down = down
	hr.mu.Unlock()
}

func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestE2ECallbackDelivered: an ask with a callbackUrl is posted back,
// signed, when it ends; a reused idempotencyKey with another body is 409
// IDEMPOTENCY_MISMATCH; bad callback URLs are 400 INVALID_QUESTION.
func TestE2ECallbackDelivered(t *testing.T) {
	const secret = "e2e-callback-secret"
	h := start(t, withConfig(func(c *config.Config) { c.CallbackSecret, c.CallbackAllowPrivate = secret, true }))
	hr := newHookReceiver(t, secret)
	in := ask1(question("go", "Ship it?", "yes", "no"))
	in.IdempotencyKey, in.CallbackURL = "ship-1", hr.srv.URL+"/hook"
	ask := h.create(in)
	if ask.CallbackURL != in.CallbackURL || !strings.HasPrefix(ask.Permalink, "https://") {
		t.Fatalf("created ask: callbackUrl %q permalink %q", ask.CallbackURL, ask.Permalink)
	}

	other := in
	other.Questions = []interaction.Question{question("go", "Ship it today?", "yes", "no")}
	var e errorBody
	if code := h.do("POST", "/v1/asks", other, &e); code != http.StatusConflict || e.Error.Code != interaction.IdempotencyMismatch {
		t.Fatalf("reused key, other body: %d %+v", code, e.Error)
	}
	var same interaction.Ask
	if code := h.do("POST", "/v1/asks", in, &same); code != http.StatusOK || same.ID != ask.ID {
		t.Fatalf("reused key, same body: %d %+v", code, same)
	}
	for _, u := range []string{"ftp://hooks.test/x", "http://user:pw@hooks.test/x"} {
		bad := ask1(question("go", "Ship it?", "yes", "no"))
		bad.CallbackURL = u
		if code := h.do("POST", "/v1/asks", bad, &e); code != http.StatusBadRequest || e.Error.Code != interaction.InvalidQuestion || !strings.Contains(e.Error.Message, "callbackUrl") {
			t.Fatalf("%s: %d %+v", u, code, e.Error)
		}
	}

	if _, err := h.fake.Person(alice).Select(ctxT(t), channel, ask.TS, control(0, "select"), "yes"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the callback delivered", 10*time.Second, func() bool { _, ok, _ := hr.state(ask.ID); return len(ok) == 1 })
	_, ok, bad := hr.state(ask.ID)
	if bad != 0 || ok[0].Status != interaction.StatusAnswered || ok[0].Answer == nil || ok[0].Answer.Answers[0].Selected[0] != "yes" {
		t.Fatalf("delivered %+v, %d bad signatures", ok[0], bad)
	}
}

// errorBody is the API's error shape.
type errorBody struct {
	Error *interaction.Error `json:"error"`
}

// TestE2ECallbackRefusals: without a secret a per-ask callbackUrl is
// refused, saying why; without SLACKASK_CALLBACK_ALLOW_PRIVATE a loopback
// one is refused by the address guard.
func TestE2ECallbackRefusals(t *testing.T) {
	noSecret := start(t)
	in := ask1(question("go", "Ship it?", "yes", "no"))
	in.CallbackURL = "https://hooks.example.com/x"
	var e errorBody
	if code := noSecret.do("POST", "/v1/asks", in, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "SLACKASK_CALLBACK_SECRET") {
		t.Fatalf("no secret: %d %+v", code, e.Error)
	}
	strict := start(t, withConfig(func(c *config.Config) { c.CallbackSecret = "s" }))
	in.CallbackURL = "http://127.0.0.1:9/hook"
	if code := strict.do("POST", "/v1/asks", in, &e); code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "SLACKASK_CALLBACK_ALLOW_PRIVATE") {
		t.Fatalf("loopback: %d %+v", code, e.Error)
	}
	if n := len(strict.fake.Messages(channel)) + len(noSecret.fake.Messages(channel)); n != 0 {
		t.Fatalf("%d refused asks posted", n)
	}
}

// TestProcessCallbackSurvivesKill9: a callback that failed (503) before a
// kill -9 is delivered after the restart, signed, exactly once: a later
// restart and another ask's delivery do not send it again.
func TestProcessCallbackSurvivesKill9(t *testing.T) {
	const secret = "proc-callback-secret"
	r := newProcRig(t)
	hr := newHookReceiver(t, secret)
	hr.setDown(true)
	r.serveEnv = []string{"SLACKASK_CALLBACK_SECRET=" + secret, "SLACKASK_CALLBACK_ALLOW_PRIVATE=true", "SLACKASK_CALLBACK_URL=" + hr.srv.URL}
	p1 := r.serve()
	ask, code := r.post(ask1(question("go", "Ship it?", "yes", "no")))
	if code != 201 {
		t.Fatalf("create: %d", code)
	}
	if _, err := r.fake.Person(alice).Select(r.ctx(), channel, ask.TS, control(0, "select"), "yes"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a first, failed attempt", 10*time.Second, func() bool { n, _, _ := hr.state(ask.ID); return n >= 1 })
	p1.kill9(t)
	hr.setDown(false)

	p2 := r.serve()
	// The retry is due by the stored schedule (10 s ±20 % after the first).
	waitUntil(t, "the callback delivered after the restart", 30*time.Second, func() bool { _, ok, _ := hr.state(ask.ID); return len(ok) == 1 })
	p2.kill9(t)

	r.serve()
	next, _ := r.post(ask1(question("go", "Ship it again?", "yes", "no")))
	if _, err := r.fake.Person(alice).Select(r.ctx(), channel, next.TS, control(0, "select"), "no"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the second ask delivered", 10*time.Second, func() bool { _, ok, _ := hr.state(next.ID); return len(ok) == 1 })
	_, ok, bad := hr.state(ask.ID)
	if len(ok) != 1 || bad != 0 || ok[0].ID != ask.ID || ok[0].Status != interaction.StatusAnswered {
		t.Fatalf("first ask delivered %d times (%d bad signatures): %+v", len(ok), bad, ok)
	}
}

// TestE2ESlowPostKeepsTheAsk: Slack applies chat.postMessage but answers
// after the post's timeout. The create answers 201 with the ask pending and
// no ts yet; the message is found and adopted (GET shows its ts), a retry
// with the key returns the same ask without a second message, and a click
// on the message answers the ask.
func TestE2ESlowPostKeepsTheAsk(t *testing.T) {
	h := start(t, func(h *harness) { h.postTimeout = 300 * time.Millisecond })
	h.fake.DelayNext("chat.postMessage", 1, 5*time.Second)
	in := ask1(question("go", "Ship it?", "yes", "no"))
	in.IdempotencyKey = "slow-1"
	var ask interaction.Ask
	if code := h.do("POST", "/v1/asks", in, &ask); code != http.StatusCreated || ask.TS != "" || ask.Status != interaction.StatusPending {
		t.Fatalf("create: %d %+v", code, ask)
	}
	var got interaction.Ask
	waitUntil(t, "the message adopted", 10*time.Second, func() bool { got = h.get(ask.ID); return got.TS != "" })
	var again interaction.Ask
	if code := h.do("POST", "/v1/asks", in, &again); code != http.StatusOK || again.ID != ask.ID {
		t.Fatalf("retry: %d %+v", code, again)
	}
	if n := len(h.fake.Messages(channel)); n != 1 {
		t.Fatalf("%d messages", n)
	}
	if _, err := h.fake.Person(alice).Select(ctxT(t), channel, got.TS, control(0, "select"), "yes"); err != nil {
		t.Fatal(err)
	}
	if end := h.waitAsk(ask.ID); end.Status != interaction.StatusAnswered {
		t.Fatalf("after the click: %+v", end)
	}
	if n := h.fake.CallCount("chat.postMessage"); n != 1 {
		t.Fatalf("%d chat.postMessage calls", n)
	}
}
