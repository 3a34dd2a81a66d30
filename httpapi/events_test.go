package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// eventsBody is what the event routes answer.
type eventsBody struct {
	Events []struct {
		Seq   int64             `json:"seq"`
		AskID string            `json:"askId"`
		At    time.Time         `json:"at"`
		Kind  string            `json:"kind"`
		By    *interaction.User `json:"by"`
		Data  json.RawMessage   `json:"data"`
	} `json:"events"`
	Next *int64 `json:"next"`
	Err  *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func getEvents(t *testing.T, api http.Handler, path string) (int, eventsBody) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer tok")
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	var b eventsBody
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatalf("GET %s: %d %s: %v", path, w.Code, w.Body, err)
	}
	return w.Code, b
}

// The events of an ask in order, and the feed of all asks resumed with
// after; bad parameters are refused with a coded 400, unknown asks 404,
// and the bearer token is required.
func TestEventRoutes(t *testing.T) {
	f := newFake()
	api := New(f, Options{Token: "tok"})
	t.Cleanup(func() { _ = api.Close(context.Background()) })
	ctx := context.Background()
	for range 3 {
		if _, err := f.Create(ctx, interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{{ID: "q", Question: "?"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	f.end("ask-2", interaction.StatusAnswered)
	f.end("ask-1", interaction.StatusCancelled)

	code, b := getEvents(t, api, "/v1/asks/ask-2/events")
	if code != 200 || len(b.Events) != 2 || b.Events[0].Kind != "created" || b.Events[1].Kind != "ended" || b.Next != nil {
		t.Fatalf("ask-2's events: %d %+v", code, b)
	}
	if e := b.Events[1]; e.AskID != "ask-2" || e.Seq != 4 || e.By == nil || e.By.ID != "U1" ||
		string(e.Data) != `{"by":{"id":"U1"},"status":"answered"}` || e.At.IsZero() {
		t.Fatalf("ended event %+v (data %s)", e, e.Data)
	}
	if code, b := getEvents(t, api, "/v1/asks/ask-3/events"); code != 200 || len(b.Events) != 1 {
		t.Fatalf("ask-3's events: %d %+v", code, b)
	}
	if code, b := getEvents(t, api, "/v1/asks/nope/events"); code != 404 || b.Err == nil || b.Err.Code != "NOT_FOUND" {
		t.Fatalf("unknown ask: %d %+v", code, b)
	}

	var seqs []int64
	for after := int64(0); ; {
		code, b := getEvents(t, api, fmt.Sprintf("/v1/events?after=%d&limit=2", after))
		if code != 200 || b.Next == nil {
			t.Fatalf("feed after %d: %d %+v", after, code, b)
		}
		if len(b.Events) == 0 {
			if *b.Next != after {
				t.Fatalf("an empty page's next is %d, want %d", *b.Next, after)
			}
			break
		}
		for _, e := range b.Events {
			seqs = append(seqs, e.Seq)
		}
		after = *b.Next
	}
	if !reflect.DeepEqual(seqs, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("the feed in pages of 2 gave seqs %v", seqs)
	}
	if code, b := getEvents(t, api, "/v1/events"); code != 200 || len(b.Events) != 5 || *b.Next != 5 {
		t.Fatalf("feed without parameters: %d %+v", code, b)
	}
	for _, q := range []string{"after=-1", "after=x", "after=1.5", "limit=0", "limit=1001", "limit=ten"} {
		code, b := getEvents(t, api, "/v1/events?"+q)
		if code != 400 || b.Err == nil || b.Err.Code != string(interaction.InvalidRequest) {
			t.Errorf("?%s: %d %+v, want 400 %s", q, code, b, interaction.InvalidRequest)
		}
	}
	for _, path := range []string{"/v1/events", "/v1/asks/ask-1/events"} {
		w := httptest.NewRecorder()
		api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != 401 {
			t.Errorf("GET %s without the token: %d, want 401", path, w.Code)
		}
	}
	// A service without an audit trail answers 404.
	plain := New(struct{ interaction.AskService }{f}, Options{Token: "tok"})
	t.Cleanup(func() { _ = plain.Close(context.Background()) })
	if code, b := getEvents(t, plain, "/v1/events"); code != 404 || b.Err == nil || b.Err.Code != "NOT_FOUND" {
		t.Fatalf("feed of a service without events: %d %+v", code, b)
	}
}

// waitingFake is the fake with FeedWaiter: it looks again every few
// milliseconds, saying on waiting when it first found nothing.
type waitingFake struct {
	*fakeSvc
	waiting chan int64
}

func (w waitingFake) WaitFeed(ctx context.Context, after int64, limit int, wait time.Duration) ([]store.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for first := true; ; first = false {
		evs, err := w.Feed(ctx, after, limit)
		if err != nil || len(evs) > 0 {
			return evs, err
		}
		if first {
			w.waiting <- after
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ?wait= long-polls the feed: the answer comes with the next event, or
// empty when the wait passes; a bad wait is 400.
func TestFeedLongPoll(t *testing.T) {
	f := waitingFake{newFake(), make(chan int64, 1)}
	api := New(f, Options{Token: "tok"})
	t.Cleanup(func() { _ = api.Close(context.Background()) })
	in := interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{{ID: "q", Question: "?"}}}}
	if _, err := f.Create(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	got := make(chan eventsBody, 1)
	go func() {
		_, b := getEvents(t, api, "/v1/events?after=1&wait=1m")
		got <- b
	}()
	if after := <-f.waiting; after != 1 {
		t.Fatalf("waited after %d", after)
	}
	f.end("ask-1", interaction.StatusCancelled)
	select {
	case b := <-got:
		if len(b.Events) != 1 || b.Events[0].Kind != "ended" || *b.Next != 2 {
			t.Fatalf("long-poll answered %+v", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long-poll did not answer with the new event")
	}
	if code, b := getEvents(t, api, "/v1/events?after=2&wait=20ms"); code != 200 || len(b.Events) != 0 || *b.Next != 2 {
		t.Fatalf("a wait that passes: %d %+v", code, b)
	}
	<-f.waiting
	if code, b := getEvents(t, api, "/v1/events?wait=NaN"); code != 400 || b.Err == nil || b.Err.Code != string(interaction.InvalidRequest) {
		t.Fatalf("a bad wait: %d %+v", code, b)
	}
	// Close answers a waiting long-poll at once, with what there is.
	closing := make(chan int, 1)
	go func() {
		code, _ := getEvents(t, api, "/v1/events?after=2&wait=1m")
		closing <- code
	}()
	<-f.waiting
	if err := api.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-closing:
		if code != 200 {
			t.Fatalf("the long-poll Close ended: %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the long-poll")
	}
}
