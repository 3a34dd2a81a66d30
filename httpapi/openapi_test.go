package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/httpapi"
	"github.com/slackask/slackask/httpapi/openapitest"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/webhook"
)

// The document loads as valid OpenAPI 3.1, and its ErrorCode enum is every
// code the API answers with, each listed with its status.
func TestOpenAPIDocument(t *testing.T) {
	doc, _, err := openapitest.Load(context.Background(), httpapi.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	schema := doc.Components.Schemas["ErrorCode"].Value
	var enum []string
	for _, v := range schema.Enum {
		enum = append(enum, v.(string))
	}
	var want []string
	for code, status := range httpapi.ErrorCodes() {
		want = append(want, string(code))
		if line := fmt.Sprintf("`%s` (%d)", code, status); !strings.Contains(schema.Description, line) {
			t.Errorf("ErrorCode's description lacks %s", line)
		}
	}
	slices.Sort(enum)
	slices.Sort(want)
	if !slices.Equal(enum, want) {
		t.Errorf("ErrorCode enum %v\nthe API answers %v", enum, want)
	}
}

// exchange is one request of TestOpenAPIExchanges and the status it gets.
type exchange struct {
	method, path, body string
	token              bool // send the bearer token
	status             int
}

// Every route, status and error of the API, sent through the validating
// transport: each request and response must match the document.
func TestOpenAPIExchanges(t *testing.T) {
	f := httpapi.NewFake()
	ready := errors.New("slack not connected")
	var notReady bool
	api := httpapi.New(f, httpapi.Options{Token: "tok", Ready: func(context.Context) error {
		if notReady {
			return ready
		}
		return nil
	}})
	ts := httptest.NewServer(api)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = api.Close(ctx)
		ts.Close()
	})
	tr := &http.Transport{}
	client := &http.Client{Transport: openapitest.Transport(t, tr)}
	defer client.CloseIdleConnections()
	send := func(x exchange) string {
		t.Helper()
		var rd io.Reader
		if x.body != "" {
			rd = strings.NewReader(x.body)
		}
		req, _ := http.NewRequest(x.method, ts.URL+x.path, rd)
		if x.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if x.token {
			req.Header.Set("Authorization", "Bearer tok")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", x.method, x.path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != x.status {
			t.Errorf("%s %s: %d %s, want %d", x.method, x.path, resp.StatusCode, b, x.status)
		}
		return string(b)
	}
	const q = `{"questions":[{"id":"q1","question":"Ship it?","header":"Ship","detail":"the plan","options":[{"label":"Yes","description":"now"},{"label":"No"}],"multiSelect":false,` +
		`"intent":{"kind":"plan-review","approve":"Yes"}}],"agent":{"id":"bot","name":"Bot"},"channel":"C1","mention":["U1"],"responders":["S1"],"timeout":"1h","remindAfter":60}`
	for _, x := range []exchange{
		{"GET", "/healthz", "", false, 200},
		{"GET", "/readyz", "", false, 200},
		{"GET", "/v1/openapi.json", "", false, 200},
		{"POST", "/v1/asks", q, true, 201}, // ask-1
		{"POST", "/v1/asks", `{"questions":[{"id":"a","question":"x"}],"idempotencyKey":"k"}`, true, 201}, // ask-2
		{"POST", "/v1/asks", `{"questions":[{"id":"a","question":"x"}],"idempotencyKey":"k"}`, true, 200},
		{"POST", "/v1/asks?wait=50ms", q, true, 201}, // ask-3, still pending
		{"POST", "/v1/asks", `{"questions":[{"id":"a","question":"x","required":true,"allowOther":false,"options":[{"label":"A","veto":true}]}],` +
			`"responders":["U1","U2"],"responses":"all","onTimeout":"answer","callbackUrl":"https://example.com/hook","callbackEvents":["response","ended"]}`, true, 201}, // ask-4
		{"POST", "/v1/asks", `{"questions":[{"id":"a","question":"x"}],"responses":2}`, true, 201}, // ask-5
		{"POST", "/v1/asks", `{"questions":[{"id":"a","question":"x"}],"responders":["U1"],"notify":"dm","remindAfter":"10m","remindEvery":"15m","timeout":"4h",` +
			`"escalation":[{"after":"30m","responders":["U2","S3"]},{"after":"1h","responders":["U4"],"channel":"C5","notify":"dm"}]}`, true, 201}, // ask-6
		{"GET", "/v1/asks/ask-1", "", true, 200},
		{"HEAD", "/v1/asks/ask-1", "", true, 200},
		{"GET", "/v1/asks/ask-1?wait=0.05", "", true, 200},
		{"HEAD", "/v1/asks/ask-1?wait=50ms", "", true, 200},
		{"GET", "/v1/asks?status=pending&limit=10&before=2030-01-02T15:04:05Z", "", true, 200},
		{"HEAD", "/v1/asks", "", true, 200},
		{"DELETE", "/v1/asks/ask-2", "", true, 200},
		{"DELETE", "/v1/asks/ask-2", "", true, 200},
		{"GET", "/v1/asks/ask-2/events", "", true, 200},
		{"HEAD", "/v1/asks/ask-2/events", "", true, 200},
		{"GET", "/v1/asks/nope/events", "", true, 404},
		{"GET", "/v1/events", "", true, 200},
		{"GET", "/v1/events?after=2&limit=10", "", true, 200},
		{"HEAD", "/v1/events?after=0", "", true, 200},
		{"GET", "/v1/events?after=100&wait=50ms", "", true, 200},
		{"GET", "/v1/events?wait=NaN", "", true, 400},
		{"GET", "/v1/events?limit=0", "", true, 400},
		{"GET", "/v1/events?after=-1", "", true, 400},
		{"GET", "/v1/events", "", false, 401},
		{"GET", "/v1/asks/nope", "", true, 404},
		{"HEAD", "/v1/asks/nope", "", true, 404},
		{"DELETE", "/v1/asks/nope", "", true, 404},
		{"GET", "/v1/asks/ask-1", "", false, 401},
		{"POST", "/v1/asks", q, false, 401},
		// Requests the document calls invalid, refused with a documented 4xx.
		{"POST", "/v1/asks", `{"questions":[{"id":"a","question":"x","optionz":[{"label":"A"}]}]}`, true, 400},
		{"POST", "/v1/asks", `{"questions":`, true, 400},
		{"POST", "/v1/asks", `{"questions":[]}`, true, 400},
		{"POST", "/v1/asks", `{"questions":[{"id":"a","question":"x"}],"timeout":"NaN"}`, true, 400},
		{"POST", "/v1/asks", `{"questions":[{"id":"a","question":"x"}],"escalation":[{"after":"30m","responders":["U2"],"pager":true}]}`, true, 400},
		{"POST", "/v1/asks?wait=NaN", q, true, 400},
		{"GET", "/v1/asks/ask-1?wait=1e308", "", true, 400},
		{"GET", "/v1/asks?limit=0", "", true, 400},
		{"GET", "/v1/asks?status=done", "", true, 400},
		{"GET", "/v1/asks?before=yesterday", "", true, 400},
		{"POST", "/v1/asks", `{"questions":[{"id":"q","question":"?"}],"pad":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`, true, 413},
	} {
		send(x)
	}

	// Long-polls answered when the ask ends (parked: GET, HEAD, POST).
	for _, m := range []string{"GET", "HEAD", "POST"} {
		send(exchange{"POST", "/v1/asks", q, true, 201})
		id := fmt.Sprintf("ask-%d", f.Created())
		path, body, status := "/v1/asks/"+id+"?wait=1m", "", 200
		if m == "POST" {
			id = fmt.Sprintf("ask-%d", f.Created()+1)
			path, body, status = "/v1/asks?wait=1m", q, 201
		}
		done := make(chan struct{})
		go func() { defer close(done); send(exchange{m, path, body, true, status}) }()
		for deadline := time.Now().Add(5 * time.Second); f.Notifications() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the long-poll never waited", m)
			}
		}
		f.End(id, interaction.StatusAnswered)
		<-done
	}
	send(exchange{"POST", "/v1/asks", q, true, 201})
	f.End(fmt.Sprintf("ask-%d", f.Created()), interaction.StatusAborted)
	send(exchange{"GET", "/v1/asks", "", true, 200})

	notReady = true
	send(exchange{"GET", "/readyz", "", false, 503})
	notReady = false

	// The error codes of the service, with their statuses.
	for _, c := range []struct {
		code         interaction.Code
		method, path string
		body         string
		status       int
	}{
		{interaction.EmptyQuestions, "POST", "/v1/asks", q, 400},
		{interaction.InvalidQuestion, "POST", "/v1/asks", q, 400},
		{interaction.BadIntent, "POST", "/v1/asks", q, 400},
		{interaction.IdempotencyMismatch, "POST", "/v1/asks", q, 409},
		{interaction.SlackError, "POST", "/v1/asks", q, 502},
		{interaction.NoProvider, "POST", "/v1/asks", q, 503},
		{interaction.Internal, "POST", "/v1/asks", q, 500},
		{interaction.SlackError, "DELETE", "/v1/asks/ask-1", "", 502},
		{interaction.NoProvider, "GET", "/v1/asks/ask-1", "", 503},
		{interaction.Internal, "GET", "/v1/asks", "", 500},
		{interaction.Internal, "GET", "/v1/events", "", 500},
		{interaction.Internal, "GET", "/v1/asks/ask-1/events", "", 500},
	} {
		f.Fail(interaction.Errorf(c.code, "from the service"))
		send(exchange{c.method, c.path, c.body, true, c.status})
	}
	f.Fail(nil)
}

// recordingTB is a testing.TB whose Errorf and Cleanup are recorded, to
// see what openapitest reports.
type recordingTB struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recordingTB) Helper()          {}
func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) end() []string {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r.errs
}

// The transport fails a test on what the document does not describe: a
// field, a status, a route, and a request the document calls invalid that
// was not refused.
func TestOpenAPITransportCatchesUndescribed(t *testing.T) {
	mux := http.NewServeMux()
	ask := `{"id":"a","status":"pending","questions":[{"id":"q","question":"?"}],"createdAt":"2024-01-02T03:04:05Z"`
	reply := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	mux.Handle("GET /v1/asks/ok", reply(200, ask+`}`))
	mux.Handle("GET /v1/asks/extra", reply(200, ask+`,"color":"red"}`))
	mux.Handle("GET /v1/asks/status", reply(418, `{"error":{"name":"UserInteractionError","code":"NOT_FOUND","message":"x"}}`))
	mux.Handle("GET /v1/asks/code", reply(404, `{"error":{"name":"UserInteractionError","code":"GONE","message":"x"}}`))
	mux.Handle("POST /v1/asks", reply(201, ask+`}`))
	mux.Handle("GET /v2/x", reply(200, `{}`))
	ts := httptest.NewServer(mux)
	defer ts.Close()

	for _, c := range []struct {
		name, method, path, body string
		want                     string // in the one error; "" for none
	}{
		{"described", "GET", "/v1/asks/ok", "", ""},
		{"undescribed field", "GET", "/v1/asks/extra", "", "color"},
		{"undescribed status", "GET", "/v1/asks/status", "", "418"},
		{"unknown error code", "GET", "/v1/asks/code", "", "GONE"},
		{"undescribed route", "GET", "/v2/x", "", "not in the document"},
		{"invalid request accepted", "POST", "/v1/asks", `{"questions":[{"id":"q","question":"?","optionz":[]}]}`, "calls the request invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: openapitest.Transport(rec, tr)}
			var rd io.Reader
			if c.body != "" {
				rd = strings.NewReader(c.body)
			}
			req, _ := http.NewRequest(c.method, ts.URL+c.path, rd)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			errs := rec.end()
			switch {
			case c.want == "" && len(errs) != 0:
				t.Fatalf("reported %q", errs)
			case c.want != "" && (len(errs) != 1 || !strings.Contains(errs[0], c.want)):
				t.Fatalf("reported %q, want one error about %q", errs, c.want)
			}
		})
	}
}

// CheckCallback accepts a callback as webhook.Deliverer sends it and
// refuses one without its signature or with a field the Ask schema does not
// describe.
func TestOpenAPICallback(t *testing.T) {
	ask := `{"id":"a","status":"answered","questions":[{"id":"q","question":"?"}],"createdAt":"2024-01-02T03:04:05Z","endedAt":"2024-01-02T03:05:05Z","answer":{"answers":[{"id":"q","selected":[],"custom":"ok"}]}`
	for _, c := range []struct {
		name, body string
		sign       bool
		want       string // in the error; "" for none
	}{
		{"as sent", ask + `}`, true, ""},
		{"unsigned", ask + `}`, false, "X-Slackask-Signature"},
		{"undescribed field", ask + `,"color":"red"}`, true, "color"},
		{"an event", `{"seq":7,"askId":"a","at":"2024-01-02T03:04:05Z","kind":"response","by":{"id":"U1"},"data":{"user":{"id":"U1"},"answer":{"answers":[]}}}`, true, ""},
		{"an event of no kind", `{"seq":7,"askId":"a","at":"2024-01-02T03:04:05Z","kind":"answered"}`, true, "answered"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "http://hooks.test/slackask", strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Slackask-Delivery", "a")
			if c.sign {
				ts, sig := webhook.Sign([]byte("s"), time.Now(), []byte(c.body))
				req.Header.Set(webhook.TimestampHeader, ts)
				req.Header.Set(webhook.SignatureHeader, sig)
			}
			err := openapitest.CheckCallback(context.Background(), req, []byte(c.body))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one about %q", err, c.want)
			}
		})
	}
}
