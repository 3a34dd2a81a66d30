package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/asktest"
	"github.com/slackask/slackask/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSvc is the shared fake AskService (internal/asktest) as this
// package's tests use it: a plain AskService (notifySvc adds Notifier,
// idemSvc IdempotentCreator), fixed times, every call failing while
// createErr is set, a hook on Get, and a signal when a Wait returns.
type fakeSvc struct {
	fake *asktest.Fake

	mu        sync.Mutex
	createErr error           // returned by Create, Get, Wait, Withdraw, List and Feed when set
	getHook   func(id string) // called by Get, outside the lock, when set

	waiting  chan string // an id each time a Wait blocks or a long-poll parks
	waitDone chan string // an id each time Wait returns
}

func newFake() *fakeSvc {
	var tick atomic.Int64 // the fake's clock: 2024-01-02 03:04:05, a nanosecond more each reading
	f := &fakeSvc{fake: asktest.New(asktest.Config{Now: func() time.Time {
		return time.Date(2024, 1, 2, 3, 4, 5, int(tick.Add(1)-1), time.UTC)
	}}), waitDone: make(chan string, 100)}
	f.waiting = f.fake.Waiting
	f.fake.SetHook(func(_ context.Context, c asktest.Call) error {
		f.mu.Lock()
		err, hook := f.createErr, f.getHook
		f.mu.Unlock()
		if err != nil {
			return err
		}
		if c.Op == asktest.OpGet && hook != nil {
			hook(c.ID)
		}
		return nil
	})
	return f
}

func (f *fakeSvc) fail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.createErr
}

func (f *fakeSvc) Create(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	return f.fake.Create(ctx, in)
}

func (f *fakeSvc) create(ctx context.Context, in interaction.AskInput) (interaction.Ask, bool, error) {
	return f.fake.CreateIdempotent(ctx, in)
}

func (f *fakeSvc) Get(ctx context.Context, id string) (interaction.Ask, error) {
	return f.fake.Get(ctx, id)
}

func (f *fakeSvc) Wait(ctx context.Context, id string) (interaction.Ask, error) {
	a, err := f.fake.Wait(ctx, id)
	if interaction.ErrorCode(err) != interaction.NotFound {
		f.waitDone <- id
	}
	return a, err
}

func (f *fakeSvc) Withdraw(ctx context.Context, id string) (interaction.Ask, error) {
	return f.fake.Withdraw(ctx, id)
}

func (f *fakeSvc) List(ctx context.Context, lf interaction.ListFilter) ([]interaction.Ask, error) {
	return f.fake.List(ctx, lf)
}

// Events implements EventLog.
func (f *fakeSvc) Events(ctx context.Context, id string) ([]store.Event, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.fake.Events(ctx, id)
}

// Feed implements EventLog.
func (f *fakeSvc) Feed(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.fake.Feed(ctx, after, limit)
}

// end finishes the ask with status (answered gets the first option, by U1).
func (f *fakeSvc) end(id string, st interaction.Status) {
	var by *interaction.User
	if st == interaction.StatusAnswered {
		by = &interaction.User{ID: "U1"}
	}
	f.fake.End(id, st, nil, by)
}

func (f *fakeSvc) status(id string) interaction.Status {
	a, _ := f.fake.Ask(id)
	return a.Status
}

func (f *fakeSvc) withdrawCount() int { return len(f.fake.Withdrawals()) }

// notifications returns how many Notify callbacks are registered.
func (f *fakeSvc) notifications() int { return f.fake.Notifications() }

// idemSvc adds IdempotentCreator to fakeSvc.
type idemSvc struct{ *fakeSvc }

func (s idemSvc) CreateIdempotent(ctx context.Context, in interaction.AskInput) (interaction.Ask, bool, error) {
	return s.create(ctx, in)
}

const askBody = `{"questions":[{"id":"q1","question":"Ship it?","options":[{"label":"Yes"},{"label":"No"}]}]}`

// do serves one request in-process and returns the recorder.
func do(h http.Handler, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decodeAsk(t *testing.T, rec *httptest.ResponseRecorder) interaction.Ask {
	t.Helper()
	var a interaction.Ask
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatalf("decoding ask %q: %v", rec.Body.String(), err)
	}
	return a
}

type errResp struct {
	Error struct {
		Name    string `json:"name"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantError checks the status and the coded error body.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code interaction.Code, msgPart string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	var e errResp
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q: %v", rec.Body, err)
	}
	if e.Error.Name != "UserInteractionError" || e.Error.Code != string(code) || !strings.Contains(e.Error.Message, msgPart) {
		t.Fatalf("error = %+v, want code %s, message containing %q", e.Error, code, msgPart)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q", ct)
	}
}

func TestCreate(t *testing.T) {
	f := newFake()
	h := New(f, Options{})
	body := `{"questions":[{"id":"q1","question":"Ship it?"}],"agent":{"id":"ci","name":"CI"},
		"channel":"C1","user":"U2","threadTs":"1.2","mention":["U3"],"responders":["S4"],
		"timeout":"90s","remindAfter":60,"idempotencyKey":"k1"}`
	rec := do(h, "POST", "/v1/asks", body)
	if rec.Code != http.StatusCreated {
		t.Fatalf("status = %d: %s", rec.Code, rec.Body)
	}
	a := decodeAsk(t, rec)
	if a.ID != "ask-1" || a.Status != interaction.StatusPending || a.Channel != "C1" || a.Agent.Name != "CI" {
		t.Fatalf("ask = %+v", a)
	}
	in := f.fake.Inputs()[0]
	if in.User != "U2" || in.ThreadTS != "1.2" || in.Mention[0] != "U3" || in.Responders[0] != "S4" ||
		time.Duration(in.Timeout) != 90*time.Second || time.Duration(in.RemindAfter) != time.Minute || in.IdempotencyKey != "k1" {
		t.Fatalf("input = %+v", in)
	}
	// The create must not be cut short by the client hanging up.
	if f.fake.CreateContext().Done() != nil {
		t.Fatal("Create got a cancellable context")
	}
}

// An unknown field is refused with its path and the nearest known name,
// and nothing is created.
func TestCreateUnknownFields(t *testing.T) {
	f := newFake()
	h := New(f, Options{})
	for body, msg := range map[string]string{
		`{"questions":[{"id":"a","question":"x","optionz":[{"label":"A"}]}]}`:              `questions[0].optionz: unknown field (did you mean "options"?)`,
		`{"questions":[{"id":"q1","question":"?"}],"timout":"1m"}`:                         `timout: unknown field (did you mean "timeout"?)`,
		`{"questions":[{"id":"q1","question":"?","options":[{"label":"A","lable":"B"}]}]}`: `questions[0].options[0].lable: unknown field (did you mean "label"?)`,
		`{"questions":[{"id":"q1","question":"?"}],"agent":{"id":"x","nmae":"y"}}`:         `agent.nmae: unknown field (did you mean "name"?)`,
		`{"questions":[{"id":"q1","question":"?","color":"red"}]}`:                         `questions[0].color: unknown field`,
	} {
		wantError(t, do(h, "POST", "/v1/asks", body), 400, interaction.InvalidQuestion, msg)
	}
	if f.fake.Len() != 0 {
		t.Fatalf("%d asks created from bodies with unknown fields", f.fake.Len())
	}
	// Keys match exactly, though encoding/json would match them whatever
	// their case: the README promises strict bodies.
	wantError(t, do(h, "POST", "/v1/asks", `{"questions":[{"ID":"q1","question":"?"}]}`), 400, interaction.InvalidQuestion,
		`questions[0].ID: unknown field (did you mean "id"?)`)
	if f.fake.Len() != 0 {
		t.Fatalf("%d asks created from a body with a key in the wrong case", f.fake.Len())
	}
}

// A service that finds the idempotency key used for another request
// answers IDEMPOTENCY_MISMATCH, which is 409.
func TestIdempotencyMismatch(t *testing.T) {
	f := newFake()
	f.createErr = fmt.Errorf("create: %w", interaction.Errorf(interaction.IdempotencyMismatch,
		`idempotencyKey "k" was used for a different request`))
	for _, svc := range []interaction.AskService{f, idemSvc{f}} {
		wantError(t, do(New(svc, Options{}), "POST", "/v1/asks", askBody), 409, interaction.IdempotencyMismatch, "different request")
	}
}

func TestCreateWait(t *testing.T) {
	t.Run("ends by answer", func(t *testing.T) {
		f := newFake()
		h := New(f, Options{})
		go func() { f.end(<-f.waiting, interaction.StatusAnswered) }()
		rec := do(h, "POST", "/v1/asks?wait=10s", askBody)
		a := decodeAsk(t, rec)
		if rec.Code != http.StatusCreated || a.Status != interaction.StatusAnswered || a.Answer == nil {
			t.Fatalf("%d %+v", rec.Code, a)
		}
	})
	t.Run("wait elapses", func(t *testing.T) {
		f := newFake()
		start := time.Now()
		rec := do(New(f, Options{}), "POST", "/v1/asks?wait=50ms", askBody)
		a := decodeAsk(t, rec)
		if rec.Code != http.StatusCreated || a.Status != interaction.StatusPending {
			t.Fatalf("%d %+v", rec.Code, a)
		}
		if el := time.Since(start); el < 50*time.Millisecond {
			t.Fatalf("returned after %v", el)
		}
		if f.withdrawCount() != 0 {
			t.Fatal("elapsed wait withdrew the ask")
		}
	})
	t.Run("wait in seconds", func(t *testing.T) {
		f := newFake()
		rec := do(New(f, Options{}), "POST", "/v1/asks?wait=0.05", askBody)
		if rec.Code != http.StatusCreated || decodeAsk(t, rec).Status != interaction.StatusPending {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
	t.Run("capped by MaxWait", func(t *testing.T) {
		start := time.Now()
		rec := do(New(newFake(), Options{MaxWait: 50 * time.Millisecond}), "POST", "/v1/asks?wait=1h", askBody)
		if rec.Code != http.StatusCreated || time.Since(start) > 5*time.Second {
			t.Fatalf("%d after %v", rec.Code, time.Since(start))
		}
	})
	t.Run("bad wait creates nothing", func(t *testing.T) {
		f := newFake()
		for w, msg := range map[string]string{
			"soon":  `wait: duration "soon": want a duration`,
			"-1s":   `wait: duration "-1s": must not be negative`,
			"NaN":   `wait: duration "NaN": want a duration`,
			"Inf":   `wait: duration "Inf": want a duration`,
			"-Inf":  `wait: duration "-Inf": want a duration`,
			"1e308": `wait: duration "1e308": at most`,
		} {
			wantError(t, do(New(f, Options{}), "POST", "/v1/asks?wait="+w, askBody), 400, interaction.InvalidRequest, msg)
			wantError(t, do(New(f, Options{}), "GET", "/v1/asks/x?wait="+w, ""), 400, interaction.InvalidRequest, msg)
		}
		if len(f.fake.Inputs()) != 0 {
			t.Fatal("a bad wait still created an ask")
		}
	})
}

func TestGet(t *testing.T) {
	f := newFake()
	h := New(f, Options{})
	do(h, "POST", "/v1/asks", askBody)

	rec := do(h, "GET", "/v1/asks/ask-1", "")
	if rec.Code != 200 || decodeAsk(t, rec).ID != "ask-1" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	wantError(t, do(h, "GET", "/v1/asks/nope", ""), 404, interaction.NotFound, "nope")
	wantError(t, do(h, "GET", "/v1/asks/nope?wait=1s", ""), 404, interaction.NotFound, "nope")
	wantError(t, do(h, "GET", "/v1/asks/ask-1?wait=x", ""), 400, interaction.InvalidRequest, "wait")

	start := time.Now()
	rec = do(h, "GET", "/v1/asks/ask-1?wait=50ms", "")
	if rec.Code != 200 || decodeAsk(t, rec).Status != interaction.StatusPending || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("elapsed wait: %d %s after %v", rec.Code, rec.Body, time.Since(start))
	}

	go func() { f.end(<-f.waiting, interaction.StatusCancelled) }()
	rec = do(h, "GET", "/v1/asks/ask-1?wait=10s", "")
	if rec.Code != 200 || decodeAsk(t, rec).Status != interaction.StatusCancelled {
		t.Fatalf("ended wait: %d %s", rec.Code, rec.Body)
	}
}

// TestClientDisconnectDoesNotWithdraw drops the connection while GET and
// POST ?wait= are waiting: the wait ends, the ask stays pending.
func TestClientDisconnectDoesNotWithdraw(t *testing.T) {
	for _, tc := range []struct{ method, target, body string }{
		{"GET", "/v1/asks/ask-1?wait=1m", ""},
		{"POST", "/v1/asks?wait=1m", askBody},
	} {
		t.Run(tc.method, func(t *testing.T) {
			f := newFake()
			h := New(f, Options{})
			do(h, "POST", "/v1/asks", askBody) // ask-1 for the GET case
			ts := httptest.NewServer(h)
			defer ts.Close()

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var rd io.Reader
			if tc.body != "" {
				rd = strings.NewReader(tc.body)
			}
			req, _ := http.NewRequestWithContext(ctx, tc.method, ts.URL+tc.target, rd)
			errc := make(chan error, 1)
			go func() {
				resp, err := ts.Client().Do(req)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					err = fmt.Errorf("response %d %s", resp.StatusCode, b)
				}
				errc <- err
			}()
			var id string
			select {
			case id = <-f.waiting:
			case err := <-errc:
				t.Fatalf("request ended before the server waited: %v", err)
			}
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("client err = %v", err)
			}
			select {
			case <-f.waitDone:
			case <-time.After(5 * time.Second):
				t.Fatal("server kept waiting after the client went away")
			}
			if st := f.status(id); st != interaction.StatusPending {
				t.Fatalf("status = %s after disconnect", st)
			}
			if f.withdrawCount() != 0 {
				t.Fatal("disconnect withdrew the ask")
			}
		})
	}
}

func TestWithdraw(t *testing.T) {
	f := newFake()
	h := New(f, Options{})
	do(h, "POST", "/v1/asks", askBody)
	for i := 0; i < 2; i++ { // idempotent
		rec := do(h, "DELETE", "/v1/asks/ask-1", "")
		a := decodeAsk(t, rec)
		if rec.Code != 200 || a.Status != interaction.StatusAborted || a.Error == nil || a.Error.Code != interaction.AskAborted {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	wantError(t, do(h, "DELETE", "/v1/asks/nope", ""), 404, interaction.NotFound, "")
}

func TestList(t *testing.T) {
	f := newFake()
	h := New(f, Options{})

	rec := do(h, "GET", "/v1/asks", "")
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"asks":[]}` {
		t.Fatalf("empty list: %d %s", rec.Code, rec.Body)
	}
	do(h, "POST", "/v1/asks", askBody)
	do(h, "POST", "/v1/asks", askBody)
	f.end("ask-1", interaction.StatusAnswered)

	rec = do(h, "GET", "/v1/asks?status=pending&limit=5&before=2024-02-03T04:05:06Z", "")
	var got struct{ Asks []interaction.Ask }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s %v", rec.Code, rec.Body, err)
	}
	if len(got.Asks) != 1 || got.Asks[0].ID != "ask-2" {
		t.Fatalf("asks = %+v", got.Asks)
	}
	want := interaction.ListFilter{Status: interaction.StatusPending, Limit: 5, Before: time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC)}
	if lf := f.fake.Filter(); !lf.Before.Equal(want.Before) || lf.Status != want.Status || lf.Limit != want.Limit {
		t.Fatalf("filter = %+v", lf)
	}

	for _, q := range []string{"status=done", "limit=0", "limit=-1", "limit=x", "limit=1001", "before=yesterday", "before=2024-01-02"} {
		t.Run(q, func(t *testing.T) {
			name, _, _ := strings.Cut(q, "=")
			wantError(t, do(h, "GET", "/v1/asks?"+q, ""), 400, interaction.InvalidRequest, name)
		})
	}
}

func TestIdempotency(t *testing.T) {
	body := `{"questions":[{"id":"q1","question":"?"}],"idempotencyKey":"same"}`
	t.Run("plain service", func(t *testing.T) {
		f := newFake()
		h := New(f, Options{})
		a1, a2 := do(h, "POST", "/v1/asks", body), do(h, "POST", "/v1/asks", body)
		if a1.Code != 201 || a2.Code != 201 || decodeAsk(t, a1).ID != decodeAsk(t, a2).ID || f.fake.Len() != 1 {
			t.Fatalf("%d %s / %d %s", a1.Code, a1.Body, a2.Code, a2.Body)
		}
	})
	t.Run("IdempotentCreator", func(t *testing.T) {
		f := newFake()
		h := New(idemSvc{f}, Options{})
		a1, a2 := do(h, "POST", "/v1/asks", body), do(h, "POST", "/v1/asks", body)
		if a1.Code != 201 || a2.Code != 200 || decodeAsk(t, a1).ID != decodeAsk(t, a2).ID || f.fake.Len() != 1 {
			t.Fatalf("%d %s / %d %s", a1.Code, a1.Body, a2.Code, a2.Body)
		}
		if f.fake.CreateContext().Done() != nil {
			t.Fatal("CreateIdempotent got a cancellable context")
		}
	})
}

func TestErrorCodes(t *testing.T) {
	cases := []struct {
		code   interaction.Code
		status int
	}{
		{interaction.EmptyQuestions, 400},
		{interaction.InvalidQuestion, 400},
		{interaction.InvalidRequest, 400},
		{interaction.BadIntent, 400},
		{interaction.Unauthorized, 401},
		{interaction.NotFound, 404},
		{interaction.AskAborted, 409},
		{interaction.AskCancelled, 409},
		{interaction.AskTimeout, 409},
		{interaction.IdempotencyMismatch, 409},
		{interaction.SlackError, 502},
		{interaction.NoProvider, 503},
	}
	for _, tc := range cases {
		t.Run(string(tc.code), func(t *testing.T) {
			f := newFake()
			// Wrapped, as services are allowed to return them.
			f.createErr = fmt.Errorf("svc: %w", interaction.Errorf(tc.code, "detail of %s", tc.code))
			h := New(f, Options{})
			for _, r := range [][2]string{{"POST", "/v1/asks"}, {"GET", "/v1/asks/x"}, {"GET", "/v1/asks/x?wait=1s"}, {"DELETE", "/v1/asks/x"}, {"GET", "/v1/asks"}} {
				wantError(t, do(h, r[0], r[1], askBody), tc.status, tc.code, "detail of "+string(tc.code))
			}
			if got := StatusOf(f.createErr); got != tc.status {
				t.Fatalf("StatusOf = %d", got)
			}
		})
	}
	for _, err := range []error{
		errors.New("db password=hunter2 refused"),
		interaction.Errorf(interaction.Internal, "db password=hunter2 refused"),
		interaction.Errorf(interaction.DuplicateProvider, "db password=hunter2 refused"),
		interaction.Errorf("WHATEVER", "db password=hunter2 refused"),
	} {
		t.Run("500 "+err.Error(), func(t *testing.T) {
			f := newFake()
			f.createErr = err
			var logs bytes.Buffer
			h := New(f, Options{Logger: zerolog.New(&logs)})
			rec := do(h, "POST", "/v1/asks", askBody)
			wantError(t, rec, 500, interaction.Internal, "internal error")
			if strings.Contains(rec.Body.String(), "hunter2") {
				t.Fatal("500 body leaks the error")
			}
			if !strings.Contains(logs.String(), "hunter2") {
				t.Fatal("the real error was not logged")
			}
		})
	}
	if StatusOf(nil) != 200 {
		t.Fatal("StatusOf(nil)")
	}
}

func TestBodyLimit(t *testing.T) {
	h := New(newFake(), Options{})
	// Exactly 1 MiB (padding is whitespace) is accepted.
	body := askBody + strings.Repeat(" ", MaxBodyBytes-len(askBody))
	if rec := do(h, "POST", "/v1/asks", body); rec.Code != 201 {
		t.Fatalf("1 MiB body: %d %s", rec.Code, rec.Body)
	}
	rec := do(h, "POST", "/v1/asks", body+" ")
	wantError(t, rec, 413, interaction.InvalidRequest, "request body larger than 1 MiB")
}

func TestBadBodies(t *testing.T) {
	h := New(newFake(), Options{})
	// What is not a question at all is INVALID_REQUEST.
	for _, tc := range []struct{ name, body, msg string }{
		{"malformed", `{"questions":[`, "malformed JSON"},
		{"trailing garbage", askBody + `}`, "malformed JSON"},
		{"empty", ` `, "empty"},
		{"not an object", `[1,2]`, "JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, do(h, "POST", "/v1/asks", tc.body), 400, interaction.InvalidRequest, tc.msg)
		})
	}
	cases := []struct{ name, body, msg string }{
		{"questions type", `{"questions":"what?"}`, "questions"},
		{"question id type", `{"questions":[{"id":5,"question":"?"}]}`, "questions[0].id: must be a string, not number"},
		{"options type", `{"questions":[{"id":"q","question":"?"},{"id":"r","question":"?","options":{}}]}`, "questions[1].options: must be an array"},
		{"label type", `{"questions":[{"id":"q","question":"?","options":[{"label":"a"},{"label":true}]}]}`, "questions[0].options[1].label: must be a string"},
		{"option type", `{"questions":[{"id":"q","question":"?","options":[{"label":"a"},"b"]}]}`, "questions[0].options[1]: must be an object"},
		{"multiSelect type", `{"questions":[{"id":"q","question":"?","multiSelect":"yes"}]}`, "questions[0].multiSelect: must be a boolean"},
		{"multi_select type", `{"questions":[{"id":"q","question":"?","multi_select":"yes"}]}`, "questions[0].multiSelect: must be a boolean"},
		// Names match exactly, though encoding/json would take these.
		{"upper-case field", `{"QUESTIONS":[{"id":"q","question":"?"}]}`, `QUESTIONS: unknown field (did you mean "questions"?)`},
		{"upper-case timeout", `{"questions":[{"id":"q","question":"?"}],"TIMEOUT":"5m"}`, `TIMEOUT: unknown field (did you mean "timeout"?)`},
		{"lower-case multiselect", `{"questions":[{"id":"q","question":"?","multiselect":true}]}`, `questions[0].multiselect: unknown field (did you mean "multiSelect"?)`},
		{"camel alias", `{"questions":[{"id":"q","question":"?","Multi_Select":true}]}`, `questions[0].Multi_Select: unknown field`},
		{"agent id type", `{"questions":[{"id":"q","question":"?"}],"agent":{"id":7}}`, "agent.id: must be a string"},
		{"selected type", `{"questions":[{"id":"q","question":"?"}],"mention":[1]}`, "mention[0]: must be a string"},
		{"agent type", `{"questions":[{"id":"q","question":"?"}],"agent":"me"}`, "agent"},
		{"channel type", `{"questions":[{"id":"q","question":"?"}],"channel":5}`, "channel"},
		{"timeout text", `{"questions":[{"id":"q","question":"?"}],"timeout":"soon"}`, `timeout: duration "soon"`},
		{"timeout negative", `{"questions":[{"id":"q","question":"?"}],"timeout":-5}`, `timeout: duration "-5": must not be negative`},
		{"timeout bool", `{"questions":[{"id":"q","question":"?"}],"timeout":true}`, "timeout: duration must be"},
		{"remindAfter", `{"questions":[{"id":"q","question":"?"}],"remindAfter":"x"}`, "remindAfter"},
		{"timeout NaN", `{"questions":[{"id":"q","question":"?"}],"timeout":"NaN"}`, `timeout: duration "NaN"`},
		{"remindEvery text", `{"questions":[{"id":"q","question":"?"}],"remindAfter":"1m","remindEvery":"often"}`, `remindEvery: duration "often"`},
		{"escalation after text", `{"questions":[{"id":"q","question":"?"}],"escalation":[{"after":"30m","responders":["U1"]},{"after":"later","responders":["U2"]}]}`, `escalation[1].after: duration "later"`},
		{"escalation unknown field", `{"questions":[{"id":"q","question":"?"}],"escalation":[{"after":"30m","responders":["U2"],"pager":1}]}`, `pager`},
		{"timeout huge", `{"questions":[{"id":"q","question":"?"}],"timeout":1e308}`, `timeout: duration "1e308": at most`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, do(h, "POST", "/v1/asks", tc.body), 400, interaction.InvalidQuestion, tc.msg)
		})
	}
	// Validation errors of the service pass through with their own code.
	wantError(t, do(h, "POST", "/v1/asks", `{"questions":[]}`), 400, interaction.EmptyQuestions, "")
}

func TestAuth(t *testing.T) {
	const token = "s3cr3t-token-value"
	var logs bytes.Buffer
	f := newFake()
	h := New(f, Options{Token: token, Logger: zerolog.New(&logs)})
	h.Mount("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))

	cases := []struct {
		name   string
		header []string
		ok     bool
	}{
		{"missing", nil, false},
		{"wrong", []string{"Authorization", "Bearer nope"}, false},
		{"prefix of token", []string{"Authorization", "Bearer s3cr3t"}, false},
		{"token plus more", []string{"Authorization", "Bearer " + token + "x"}, false},
		{"wrong scheme", []string{"Authorization", "Basic " + token}, false},
		{"bare token", []string{"Authorization", token}, false},
		{"empty bearer", []string{"Authorization", "Bearer "}, false},
		{"ok", []string{"Authorization", "Bearer " + token}, true},
		{"ok lowercase scheme", []string{"Authorization", "bearer " + token}, true},
	}
	routes := [][2]string{{"POST", "/v1/asks"}, {"GET", "/v1/asks"}, {"GET", "/v1/asks/ask-1"}, {"DELETE", "/v1/asks/ask-1"}, {"GET", "/metrics"}, {"GET", "/nope"}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range routes {
				rec := do(h, r[0], r[1], askBody, tc.header...)
				if tc.ok {
					if rec.Code == 401 {
						t.Fatalf("%s %s: 401 with the right token", r[0], r[1])
					}
					continue
				}
				wantError(t, rec, 401, interaction.Unauthorized, "bearer token")
				if rec.Header().Get("WWW-Authenticate") == "" {
					t.Fatal("no WWW-Authenticate header")
				}
			}
		})
	}
	if n := f.fake.Len(); n != 2 {
		t.Fatalf("%d asks created, want 2 (only with the right token)", n)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if rec := do(h, "GET", p, ""); rec.Code != 200 {
			t.Fatalf("%s without token: %d", p, rec.Code)
		}
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), "s3cr3t") || strings.Contains(logs.String(), "Bearer") {
		t.Fatalf("logs mention the token: %s", logs.String())
	}
}

func TestHealthAndReady(t *testing.T) {
	rec := do(New(newFake(), Options{}), "GET", "/healthz", "")
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %s", rec.Code, rec.Body)
	}
	rec = do(New(newFake(), Options{}), "GET", "/readyz", "")
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"status":"ok"}` {
		t.Fatalf("readyz nil Ready: %d %s", rec.Code, rec.Body)
	}
	var ready error = errors.New("slack not connected")
	var mu sync.Mutex
	h := New(newFake(), Options{Ready: func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("Ready called without a deadline")
		}
		mu.Lock()
		defer mu.Unlock()
		return ready
	}})
	rec = do(h, "GET", "/readyz", "")
	if rec.Code != 503 || strings.TrimSpace(rec.Body.String()) != `{"status":"not ready","reason":"slack not connected"}` {
		t.Fatalf("readyz not ready: %d %s", rec.Code, rec.Body)
	}
	mu.Lock()
	ready = nil
	mu.Unlock()
	if rec = do(h, "GET", "/readyz", ""); rec.Code != 200 {
		t.Fatalf("readyz ready: %d %s", rec.Code, rec.Body)
	}
}

func TestNoRoute(t *testing.T) {
	h := New(newFake(), Options{})
	wantError(t, do(h, "GET", "/v2/asks", ""), 404, interaction.NotFound, "/v2/asks")
	for target, allowed := range map[string][]string{
		"/v1/asks/x": {"DELETE", "GET", "HEAD"},
		"/v1/asks":   {"GET", "HEAD", "POST"},
	} {
		rec := do(h, "PUT", target, "")
		wantError(t, rec, 405, interaction.MethodNotAllowed, "method PUT is not allowed on "+target)
		allow := rec.Header().Get("Allow")
		for _, m := range allowed {
			if !strings.Contains(allow, m) {
				t.Errorf("PUT %s: Allow = %q, want %s in it", target, allow, m)
			}
		}
	}
}

func TestMountStreamsAndRecovers(t *testing.T) {
	var logs bytes.Buffer
	h := New(newFake(), Options{Logger: zerolog.New(&logs)})
	h.Mount("/stream", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if _, ok := w.(http.Flusher); !ok {
			t.Error("mounted handler's writer is not an http.Flusher")
		}
		io.WriteString(w, "data: x\n\n")
		w.(http.Flusher).Flush()
	}))
	h.Mount("/boom", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("kaboom") }))
	if rec := do(h, "GET", "/stream", ""); rec.Code != 200 || !rec.Flushed {
		t.Fatalf("stream: %d flushed=%v", rec.Code, rec.Flushed)
	}
	wantError(t, do(h, "GET", "/boom", ""), 500, interaction.Internal, "internal error")
	if !strings.Contains(logs.String(), "kaboom") {
		t.Fatal("panic not logged")
	}
}

func TestRequestLog(t *testing.T) {
	var logs bytes.Buffer
	h := New(newFake(), Options{Logger: zerolog.New(&logs)})
	do(h, "POST", "/v1/asks?wait=1ms", `{"questions":[{"id":"q1","question":"SECRET QUESTION"}]}`, "X-Custom", "HEADERVALUE")
	var line struct {
		Method   string  `json:"method"`
		Path     string  `json:"path"`
		Status   int     `json:"status"`
		Duration float64 `json:"durationMs"`
		Message  string  `json:"message"`
	}
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if line.Method != "POST" || line.Path != "/v1/asks" || line.Status != 201 || line.Message != "http request" {
		t.Fatalf("log line = %+v", line)
	}
	if strings.Contains(logs.String(), "SECRET") || strings.Contains(logs.String(), "HEADERVALUE") {
		t.Fatalf("log has body or headers: %s", logs.String())
	}
}

func TestNewServer(t *testing.T) {
	h := New(newFake(), Options{})
	s := NewServer("127.0.0.1:0", h)
	if s.Addr != "127.0.0.1:0" || s.Handler != h || s.ReadHeaderTimeout != 10*time.Second ||
		s.ReadTimeout != 30*time.Second || s.IdleTimeout != 120*time.Second || s.WriteTimeout != 0 {
		t.Fatalf("server = %+v", s)
	}
}
