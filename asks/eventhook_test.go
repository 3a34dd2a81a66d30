package asks

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/webhook"
)

func hookConfig(clk clock.Clock, secret []byte, defaultURL string) func(*Config) {
	return func(c *Config) {
		if clk != nil {
			c.Clock = clk
		}
		c.Callbacks = Callbacks{Secret: secret, Guard: webhook.Guard{AllowPrivate: true}, DefaultURL: defaultURL,
			Deliverer: webhook.NewDeliverer(webhook.Options{Guard: webhook.Guard{AllowPrivate: true}, Timeout: 2 * time.Second})}
	}
}

// received decodes what rc got as events (bodies with a seq) and asks.
func (rc *receiver) received(t *testing.T) (evs []store.Event, asks []interaction.Ask) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, b := range rc.got {
		var probe struct {
			Seq *int64 `json:"seq"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			t.Fatalf("body %s: %v", b, err)
		}
		if probe.Seq != nil {
			var e store.Event
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			evs = append(evs, e)
			continue
		}
		var a interaction.Ask
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		asks = append(asks, a)
	}
	return evs, asks
}

// The chosen events go out in order, each retried until a 2xx, and once
// delivered are not sent again; "ended" stays the ask resource at the end,
// and leaving it out sends no resource.
func TestEventHookDeliversInOrder(t *testing.T) {
	secret := []byte("s3cret")
	rc := newReceiver(t, secret)
	rc.statuses = []int{http.StatusInternalServerError}
	clk := clock.NewFake(time.Now())
	svc, _ := newReachRig(t, hookConfig(clk, secret, ""))
	ctx := context.Background()
	ask, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions(), CallbackURL: rc.srv.URL + "/hook",
		CallbackEvents: []string{"created", "response"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ask.CallbackEvents, []string{"created", "response"}) {
		t.Fatalf("the resource's callbackEvents %v", ask.CallbackEvents)
	}
	rec, _ := svc.store.Get(ctx, ask.ID)
	if h := rec.EventHook; h == nil || !h.Due() || h.URL != rc.srv.URL+"/hook" || rec.WakeAt.After(clk.Now()) {
		t.Fatalf("after create: hook %+v wake %v", h, rec.WakeAt)
	}
	// 500: retried later; not before its time.
	if more, err := svc.deliverEvent(ctx, ask.ID); more || err != nil {
		t.Fatalf("after a 500: more %v, %v", more, err)
	}
	rec, _ = svc.store.Get(ctx, ask.ID)
	if h := rec.EventHook; h.Attempts != 1 || h.Next.IsZero() || h.Sent != 0 || !h.Due() || rec.WakeAt.After(h.Next) {
		t.Fatalf("after a 500: %+v wake %v", h, rec.WakeAt)
	}
	if _, err := svc.deliverEvent(ctx, ask.ID); err != nil {
		t.Fatal(err)
	}
	if n, _ := rc.requests(); n != 1 {
		t.Fatalf("%d requests before the retry's time", n)
	}
	clk.Advance(time.Hour)
	if more, err := svc.deliverEvent(ctx, ask.ID); !more || err != nil {
		t.Fatalf("the retry: more %v, %v", more, err)
	}
	// Nothing else chosen yet: the hook rests.
	if more, err := svc.deliverEvent(ctx, ask.ID); more || err != nil {
		t.Fatalf("with nothing left: more %v, %v", more, err)
	}
	rec, _ = svc.store.Get(ctx, ask.ID)
	if h := rec.EventHook; h.Due() || h.Sent == 0 || h.Attempts != 0 || !rec.WakeAt.IsZero() && rec.WakeAt.Before(clk.Now()) {
		t.Fatalf("after the delivery: %+v wake %v", h, rec.WakeAt)
	}
	a := click(ask, alice)
	if _, err := svc.Submit(ctx, a, map[int][]int{0: {0}, 1: {1}}); err != nil {
		t.Fatal(err)
	}
	for more := true; more; {
		if more, err = svc.deliverEvent(ctx, ask.ID); err != nil {
			t.Fatal(err)
		}
	}
	evs, asks := rc.received(t)
	if len(asks) != 0 || len(evs) != 3 || evs[0].Seq != evs[1].Seq || evs[0].Kind != "created" || evs[2].Kind != "response" ||
		evs[2].Seq <= evs[1].Seq || evs[2].AskID != ask.ID || evs[2].By == nil || evs[2].By.ID != alice {
		t.Fatalf("received events %+v and asks %+v", evs, asks)
	}
	if _, bad := rc.requests(); bad != 0 {
		t.Fatalf("%d badly signed", bad)
	}
	// "ended" not chosen: the end arms no delivery of the resource.
	if rec, _ = svc.store.Get(ctx, ask.ID); rec.Callback != nil || rec.EventHook.Due() {
		t.Fatalf("after the end: callback %+v hook %+v", rec.Callback, rec.EventHook)
	}
}

// callbackEvents is checked at create: known kinds, each once, and a URL
// to send them to; absent, the callback is the ask at its end, as before.
func TestCallbackEventsChecked(t *testing.T) {
	svc, _ := newReachRig(t, hookConfig(nil, []byte("s"), ""))
	ctx := context.Background()
	for name, in := range map[string]interaction.AskInput{
		"unknown kind": {Request: twoQuestions(), CallbackURL: "https://example.com/h", CallbackEvents: []string{"answered"}},
		"twice":        {Request: twoQuestions(), CallbackURL: "https://example.com/h", CallbackEvents: []string{"ended", "ended"}},
		"no url":       {Request: twoQuestions(), CallbackEvents: []string{"response"}},
	} {
		if _, err := svc.Create(ctx, in); interaction.ErrorCode(err) != interaction.InvalidQuestion {
			t.Errorf("%s: %v, want INVALID_QUESTION", name, err)
		}
	}
	ask, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions(), CallbackURL: "https://example.com/h"})
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := svc.store.Get(ctx, ask.ID); rec.EventHook != nil || ask.CallbackEvents != nil {
		t.Fatalf("the default callback has an event hook %+v, callbackEvents %v", rec.EventHook, ask.CallbackEvents)
	}
	// With the server's default URL, events need no callbackUrl.
	svc2, _ := newReachRig(t, hookConfig(nil, []byte("s"), "https://example.com/default"))
	ask, err = svc2.Create(ctx, interaction.AskInput{Request: twoQuestions(), CallbackEvents: []string{"posted", "ended"}})
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := svc2.store.Get(ctx, ask.ID); rec.EventHook == nil || rec.EventHook.URL != "https://example.com/default" {
		t.Fatalf("hook %+v", rec.EventHook)
	}
}

// Running, the dispatcher delivers every chosen event and, for "ended",
// the ask resource as before.
func TestEventHookRunning(t *testing.T) {
	secret := []byte("s3cret")
	rc := newReceiver(t, secret)
	svc, _ := newReachRig(t, hookConfig(nil, secret, ""))
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	ask, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions(), CallbackURL: rc.srv.URL,
		CallbackEvents: []string{"created", "posted", "response", "ended"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Submit(ctx, click(ask, alice), map[int][]int{0: {0}, 1: {0}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three events and the ended ask delivered", func() bool { n, _ := rc.requests(); return n >= 4 })
	evs, asks := rc.received(t)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if !reflect.DeepEqual(kinds, []string{"created", "posted", "response"}) || len(asks) != 1 || asks[0].Status != interaction.StatusAnswered {
		t.Fatalf("received events %v and asks %+v", kinds, asks)
	}
}
