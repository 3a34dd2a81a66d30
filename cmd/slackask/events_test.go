package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/httpapi/openapitest"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/webhook"
)

// jsonLines decodes the events `slackask events` printed.
func jsonLines(t *testing.T, out string) []store.Event {
	t.Helper()
	var evs []store.Event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e store.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// End to end: an answered ask's events in order over the API, and
// `slackask events` printing the feed as JSON lines, resumed with --after,
// and followed until Ctrl-C.
func TestEventsEndToEnd(t *testing.T) {
	h := start(t)
	ask := h.create(interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{
		{ID: "go", Question: "Ship?", Options: []interaction.Option{{Label: "Yes"}, {Label: "No"}}},
		{ID: "env", Question: "Where?", Options: []interaction.Option{{Label: "dev"}, {Label: "prod"}}}}}, Responders: []string{alice}})
	h.answer(ask, alice, map[int]string{0: "Yes", 1: "dev"})
	if got := h.waitAsk(ask.ID); got.Status != interaction.StatusAnswered {
		t.Fatalf("status %s", got.Status)
	}
	var body struct {
		Events []store.Event `json:"events"`
	}
	if code := h.do("GET", "/v1/asks/"+ask.ID+"/events", nil, &body); code != 200 {
		t.Fatalf("GET events: %d", code)
	}
	var kinds []string
	for _, e := range body.Events {
		kinds = append(kinds, e.Kind)
	}
	if !reflect.DeepEqual(kinds, []string{"created", "posted", "response", "ended"}) {
		t.Fatalf("events %v", kinds)
	}
	if e := body.Events[2]; e.By == nil || e.By.ID != alice || !strings.Contains(string(e.Data), `"Yes"`) {
		t.Fatalf("response %+v data %s", e, e.Data)
	}

	t.Setenv("SLACKASK_URL", h.base)
	t.Setenv("SLACKASK_API_TOKEN", "")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"events", "--limit", "3"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("events: exit %d, %s", code, stderr.String())
	}
	if got := jsonLines(t, stdout.String()); !reflect.DeepEqual(got, body.Events) {
		t.Fatalf("slackask events printed %+v\nwant %+v", got, body.Events)
	}
	stdout.Reset()
	after := strconv.FormatInt(body.Events[1].Seq, 10)
	if code := run(context.Background(), []string{"events", "--after", after}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("events --after: exit %d, %s", code, stderr.String())
	}
	if got := jsonLines(t, stdout.String()); !reflect.DeepEqual(got, body.Events[2:]) {
		t.Fatalf("events --after %s printed %+v", after, got)
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"events", "--ask", ask.ID}, strings.NewReader(""), &stdout, &stderr); code != 0 || len(jsonLines(t, stdout.String())) != 4 {
		t.Fatalf("events --ask: exit %d, %s%s", code, stdout.String(), stderr.String())
	}

	// --follow prints what comes later, until Ctrl-C (exit 0).
	var followed syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		var errb bytes.Buffer
		done <- run(ctx, []string{"events", "--follow", "--every", "50ms", "--after", strconv.FormatInt(body.Events[3].Seq, 10)},
			strings.NewReader(""), &followed, &errb)
	}()
	later := h.create(interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{{ID: "q", Question: "Later?"}}}})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(followed.String(), `"kind":"posted"`) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("--follow printed %q", followed.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("--follow ended with %d", code)
	}
	got := jsonLines(t, followed.String())
	if len(got) != 2 || got[0].AskID != later.ID || got[0].Kind != "created" || got[1].Kind != "posted" {
		t.Fatalf("--follow printed %+v", got)
	}
	// Bad flags are usage errors.
	for _, args := range [][]string{{"events", "--after", "-1"}, {"events", "--limit", "0"}, {"events", "--ask", "x", "--follow"}} {
		if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// End to end: callbackEvents sends the chosen events, each signed and as
// the OpenAPI document's askEvent describes it, in seq order, and the
// ask resource at the end for "ended"; every callback validates.
func TestE2ECallbackEvents(t *testing.T) {
	const secret = "e2e-events-secret"
	h := start(t, withConfig(func(c *config.Config) { c.CallbackSecret, c.CallbackAllowPrivate = secret, true }))
	var (
		mu     sync.Mutex
		bodies []string
		issues []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := webhook.Verify([]byte(secret), r.Header, body, time.Now(), 5*time.Minute); err != nil {
			issues = append(issues, "bad signature: "+err.Error())
		}
		if err := openapitest.CheckCallback(r.Context(), r, body); err != nil {
			issues = append(issues, err.Error())
		}
		bodies = append(bodies, string(body))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	in := ask1(question("go", "Ship it?", "yes", "no"), question("env", "Where?", "dev", "prod"))
	in.CallbackURL, in.CallbackEvents = srv.URL+"/hook", []string{"created", "posted", "response", "ended"}
	ask := h.create(in)
	if !reflect.DeepEqual(ask.CallbackEvents, in.CallbackEvents) {
		t.Fatalf("callbackEvents %v", ask.CallbackEvents)
	}
	h.answer(ask, alice, map[int]string{0: "yes", 1: "dev"})
	waitUntil(t, "three events and the ask delivered", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) >= 4
	})
	mu.Lock()
	defer mu.Unlock()
	for _, is := range issues {
		t.Error(is)
	}
	var kinds []string
	var seq int64
	for _, b := range bodies {
		var e store.Event
		if err := json.Unmarshal([]byte(b), &e); err != nil {
			t.Fatal(err)
		}
		if e.Seq == 0 { // the ask resource
			var a interaction.Ask
			if err := json.Unmarshal([]byte(b), &a); err != nil || a.ID != ask.ID || a.Status != interaction.StatusAnswered {
				t.Fatalf("ask body %s: %v", b, err)
			}
			continue
		}
		if e.Seq <= seq || e.AskID != ask.ID {
			t.Fatalf("event %s after seq %d", b, seq)
		}
		seq = e.Seq
		kinds = append(kinds, e.Kind)
	}
	if !reflect.DeepEqual(kinds, []string{"created", "posted", "response"}) {
		t.Fatalf("events delivered: %v", kinds)
	}
}
