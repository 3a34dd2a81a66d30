package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/asktest"
	"github.com/slackask/slackask/internal/syncbuf"
	"github.com/slackask/slackask/slackid"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const wait = 10 * time.Second // upper bound for anything a test waits for

// fakeService is the shared fake AskService, whose asks end when the
// test says so, with this package's hooks.
type fakeService struct {
	*asktest.Fake
	mu        sync.Mutex    // guards the hooks below
	createErr error         // returned by Create when set
	waitCap   time.Duration // > 0: Wait returns a pending ask after this long, as a long poll does
	waitFails int           // the next waitFails calls of Wait fail (< 0: all do)

	created   chan string // ids of created asks
	withdrawn chan string // ids of asks withdrawn while pending
}

func newFakeService() *fakeService {
	f := &fakeService{Fake: asktest.New(asktest.Config{})}
	f.created, f.withdrawn = f.Created, f.Withdrawn
	f.SetHook(func(_ context.Context, c asktest.Call) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case c.Op == asktest.OpCreate && f.createErr != nil:
			if err := asktest.CheckRequest(c.In.Request); err != nil {
				return err
			}
			return f.createErr
		case c.Op == asktest.OpWait && f.waitFails != 0:
			if f.waitFails > 0 {
				f.waitFails--
			}
			return errors.New("connection refused")
		}
		return nil
	})
	return f
}

// Wait is the fake's, cut at waitCap when set.
func (f *fakeService) Wait(ctx context.Context, id string) (interaction.Ask, error) {
	f.mu.Lock()
	capped := f.waitCap
	f.mu.Unlock()
	if capped > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, capped)
		defer cancel()
	}
	return f.Fake.Wait(ctx, id)
}

func (f *fakeService) answer(t *testing.T, id string, ans interaction.Answer) {
	t.Helper()
	if !f.End(id, interaction.StatusAnswered, &ans, &interaction.User{ID: "U1", Name: "ann"}) {
		t.Fatalf("ask %s is not pending", id)
	}
}

func (f *fakeService) endAs(t *testing.T, id string, st interaction.Status, e *interaction.Error) {
	t.Helper()
	if !f.Finish(id, func(a *interaction.Ask) { a.Status, a.Error = st, e }) {
		t.Fatalf("ask %s is not pending", id)
	}
}

// input is the input of the i-th Create that passed validation.
func (f *fakeService) input(t *testing.T, i int) interaction.AskInput {
	t.Helper()
	var ok []interaction.AskInput
	for _, c := range f.Creates() {
		if asktest.CheckRequest(c.In.Request) == nil {
			ok = append(ok, c.In)
		}
	}
	if i >= len(ok) {
		t.Fatalf("only %d asks were created", len(ok))
	}
	return ok[i]
}

// creates is how many Creates passed validation.
func (f *fakeService) creates() int {
	n := 0
	for _, c := range f.Creates() {
		if asktest.CheckRequest(c.In.Request) == nil {
			n++
		}
	}
	return n
}

func (f *fakeService) status(t *testing.T, id string) interaction.Ask {
	t.Helper()
	a, err := f.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// syncBuffer collects log lines from many goroutines.
type syncBuffer = syncbuf.Buffer

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// conn is an SDK client session connected to the server under test.
type conn struct {
	svc      *fakeService
	cs       *mcpsdk.ClientSession
	progress chan *mcpsdk.ProgressNotificationParams
	shutdown func() // ends the server's life (Options.Context or ServeStdio's ctx)

	// http only: the endpoint and the client to reach it with.
	url string
	hc  *http.Client

	// stdio only: the client's end of the server's input, and what
	// ServeStdio returned.
	stdin      io.Closer
	served     chan error
	servedOnce sync.Once
	servedErr  error
}

// serveResult waits for ServeStdio to return and returns its error.
func (c *conn) serveResult(t *testing.T) error {
	t.Helper()
	c.servedOnce.Do(func() { c.servedErr = recv(t, c.served, "ServeStdio to return") })
	return c.servedErr
}

// transports are the ways tests connect: streamable HTTP (the SDK client
// falls back to the 2025-11-25 protocol there), stdio with the latest
// protocol (2026-07-28) and stdio with 2025-06-18, as most MCP hosts speak.
var transports = []string{"http", "stdio", "stdio-2025-06-18"}

// connect starts a server for svc over transport ("http": Handler behind an
// httptest.Server on 127.0.0.1; "stdio": ServeStdio over io.Pipe pairs) and
// connects an SDK client to it. Everything is closed at the end of the test.
func connect(t *testing.T, transport string, svc *fakeService, opts Options) *conn {
	t.Helper()
	c := &conn{svc: svc, progress: make(chan *mcpsdk.ProgressNotificationParams, 1000)}
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-client", Title: "Test Agent", Version: "v0"},
		&mcpsdk.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
				select {
				case c.progress <- req.Params:
				default:
				}
			},
		})
	if opts.DefaultChannel == "" {
		opts.DefaultChannel = "C0DEFAULT"
	}
	life, end := context.WithCancel(context.Background())
	c.shutdown = end

	switch transport {
	case "http":
		opts.Context = life
		srv := httptest.NewServer(Handler(svc, opts))
		hc := &http.Client{Transport: &http.Transport{}}
		cs, err := client.Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
		if err != nil {
			srv.Close()
			end()
			t.Fatalf("connect: %v", err)
		}
		c.cs, c.url, c.hc = cs, srv.URL, hc
		t.Cleanup(func() {
			if err := cs.Close(); err != nil {
				t.Errorf("closing the client session: %v", err)
			}
			hc.CloseIdleConnections()
			srv.Close()
			end()
		})
	case "stdio", "stdio-2025-06-18":
		var copts *mcpsdk.ClientSessionOptions
		if v, ok := strings.CutPrefix(transport, "stdio-"); ok {
			copts = &mcpsdk.ClientSessionOptions{ProtocolVersion: v}
		}
		c2sR, c2sW := io.Pipe()
		s2cR, s2cW := io.Pipe()
		c.stdin = c2sW
		c.served = make(chan error, 1)
		go func() { c.served <- ServeStdio(life, svc, opts, c2sR, s2cW) }()
		cs, err := client.Connect(context.Background(), &mcpsdk.IOTransport{Reader: s2cR, Writer: c2sW}, copts)
		if err != nil {
			end()
			t.Fatalf("connect: %v", err)
		}
		if copts != nil && cs.InitializeResult().ProtocolVersion != copts.ProtocolVersion {
			t.Fatalf("protocol %s, want %s", cs.InitializeResult().ProtocolVersion, copts.ProtocolVersion)
		}
		c.cs = cs
		t.Cleanup(func() {
			if err := cs.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
				t.Errorf("closing the client session: %v", err)
			}
			if err := c.serveResult(t); err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
			s2cW.Close()
			end()
		})
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	return c
}

type callResult struct {
	res *mcpsdk.CallToolResult
	err error
}

// start calls the tool in the background.
func (c *conn) start(ctx context.Context, args any, meta mcpsdk.Meta) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		res, err := c.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: ToolName, Arguments: args, Meta: meta})
		out <- callResult{res, err}
	}()
	return out
}

// call calls the tool and returns its result.
func (c *conn) call(t *testing.T, args any) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	r := recv(t, c.start(ctx, args, nil), "the tool call")
	if r.err != nil {
		t.Fatalf("CallTool: %v", r.err)
	}
	return r.res
}

func text(t *testing.T, res *mcpsdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one content item, got %d", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcpsdk.TextContent)
	if !ok {
		t.Fatalf("content is %T, not text", res.Content[0])
	}
	return tc.Text
}

// wantToolError checks that res is a tool error whose text starts with code.
func wantToolError(t *testing.T, res *mcpsdk.CallToolResult, code interaction.Code, contains string) {
	t.Helper()
	got := text(t, res)
	if !res.IsError {
		t.Fatalf("IsError is false; text %q", got)
	}
	if !strings.HasPrefix(got, string(code)+": ") {
		t.Fatalf("text %q does not start with %s", got, code)
	}
	if !strings.Contains(got, contains) {
		t.Fatalf("text %q does not contain %q", got, contains)
	}
	if res.StructuredContent != nil {
		t.Fatalf("a tool error carries structured content %v", res.StructuredContent)
	}
}

func simpleArgs() map[string]any {
	return map[string]any{"questions": []any{map[string]any{
		"id": "go", "question": "Ship it?", "options": []any{map[string]any{"label": "Yes"}, map[string]any{"label": "No"}},
	}}}
}

func TestAnswered(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			var logs syncBuffer
			c := connect(t, tr, svc, Options{Logger: zerolog.New(&logs)})
			args := map[string]any{
				"questions": []any{
					map[string]any{
						"id": "colors", "question": "Which colours?", "header": "Colours", "detail": "For the logo.",
						"options": []any{
							map[string]any{"label": "Red"},
							map[string]any{"label": "Blue", "description": "calm"},
						},
						"multi_select": true, // deepseek-harness's spelling
					},
					map[string]any{"id": "name", "question": "Name the release?", "multiSelect": false},
				},
				"timeout": "90s",
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			done := c.start(ctx, args, nil)
			id := recv(t, svc.created, "the ask")

			in := svc.input(t, 0)
			if in.Channel != "C0DEFAULT" || in.User != "" {
				t.Errorf("channel %q user %q, want the default channel", in.Channel, in.User)
			}
			if time.Duration(in.Timeout) != 90*time.Second {
				t.Errorf("timeout %v", time.Duration(in.Timeout))
			}
			wantQ := []interaction.Question{
				{ID: "colors", Question: "Which colours?", Header: "Colours", Detail: "For the logo.",
					Options: []interaction.Option{{Label: "Red"}, {Label: "Blue", Description: "calm"}}, MultiSelect: true},
				{ID: "name", Question: "Name the release?"},
			}
			if !reflect.DeepEqual(in.Questions, wantQ) {
				t.Errorf("questions\n got %+v\nwant %+v", in.Questions, wantQ)
			}
			if in.Agent == nil || in.Agent.ID != "test-client" || in.Agent.Name != "Test Agent" {
				t.Errorf("agent %+v, want the MCP client", in.Agent)
			}

			ans := interaction.Answer{Answers: []interaction.AnswerItem{
				{ID: "colors", Selected: []string{"Red", "Blue"}},
				{ID: "name", Selected: []string{}, Custom: "Ann"},
			}}
			svc.answer(t, id, ans)
			r := recv(t, done, "the result")
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.res.IsError {
				t.Fatalf("tool error: %s", text(t, r.res))
			}
			const want = `{"answers":[{"id":"colors","selected":["Red","Blue"]},{"id":"name","selected":[],"custom":"Ann"}]}`
			if got := text(t, r.res); got != want {
				t.Errorf("text\n got %s\nwant %s", got, want)
			}
			b, err := json.Marshal(r.res.StructuredContent)
			if err != nil {
				t.Fatal(err)
			}
			var sc interaction.Answer
			if err := json.Unmarshal(b, &sc); err != nil {
				t.Fatalf("structured content %s: %v", b, err)
			}
			if !reflect.DeepEqual(sc, ans) {
				t.Errorf("structured content %+v, want %+v", sc, ans)
			}
			for _, line := range []string{
				`"ask":"ask-1","channel":"C0DEFAULT","questions":2,"agent":"Test Agent","message":"mcp ask created"`,
				`"ask":"ask-1","status":"answered","message":"mcp ask ended"`,
			} {
				if !strings.Contains(logs.String(), line) {
					t.Errorf("log lacks %s:\n%s", line, logs.String())
				}
			}
		})
	}
}

func TestWhereToAsk(t *testing.T) {
	svc := newFakeService()
	c := connect(t, "stdio", svc, Options{})
	for i, tc := range []struct {
		extra         map[string]any
		channel, user string
	}{
		{map[string]any{"channel": "C42"}, "C42", ""},
		{map[string]any{"user": "U42"}, "", "U42"},
		{map[string]any{"channel": "C42", "user": "U42"}, "C42", "U42"},
	} {
		args := simpleArgs()
		for k, v := range tc.extra {
			args[k] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		done := c.start(ctx, args, nil)
		id := recv(t, svc.created, "the ask")
		if in := svc.input(t, i); in.Channel != tc.channel || in.User != tc.user {
			t.Errorf("%v: channel %q user %q", tc.extra, in.Channel, in.User)
		}
		svc.answer(t, id, interaction.Answer{Answers: []interaction.AnswerItem{{ID: "go", Selected: []string{"Yes"}}}})
		if r := recv(t, done, "the result"); r.err != nil || r.res.IsError {
			t.Errorf("%v: %v %+v", tc.extra, r.err, r.res)
		}
		cancel()
	}
}

func TestEndedWithoutAnswer(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			c := connect(t, tr, svc, Options{})
			for _, tc := range []struct {
				status   interaction.Status
				err      *interaction.Error
				code     interaction.Code
				contains string
			}{
				{interaction.StatusCancelled, interaction.Errorf(interaction.AskCancelled, "ann pressed Cancel"), interaction.AskCancelled, "ann pressed Cancel"},
				{interaction.StatusExpired, interaction.Errorf(interaction.AskTimeout, "nobody answered within 1m0s"), interaction.AskTimeout, "within 1m0s"},
				// An ask without an error of its own still says what happened.
				{interaction.StatusCancelled, nil, interaction.AskCancelled, "cancelled"},
				{interaction.StatusExpired, nil, interaction.AskTimeout, "deadline"},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				done := c.start(ctx, simpleArgs(), nil)
				id := recv(t, svc.created, "the ask")
				svc.endAs(t, id, tc.status, tc.err)
				r := recv(t, done, "the result")
				cancel()
				if r.err != nil {
					t.Fatal(r.err)
				}
				wantToolError(t, r.res, tc.code, tc.contains)
			}
		})
	}
}

func TestClientCancelWithdraws(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			c := connect(t, tr, svc, Options{})
			ctx, cancel := context.WithCancel(context.Background())
			done := c.start(ctx, simpleArgs(), nil)
			id := recv(t, svc.created, "the ask")
			cancel() // the SDK sends notifications/cancelled
			if r := recv(t, done, "CallTool to return"); !errors.Is(r.err, context.Canceled) {
				t.Errorf("CallTool: %v %+v, want context.Canceled", r.err, r.res)
			}
			if got := recv(t, svc.withdrawn, "the withdrawal"); got != id {
				t.Fatalf("withdrew %s, want %s", got, id)
			}
			a := svc.status(t, id)
			if _, err := a.Result(); a.Status != interaction.StatusAborted || interaction.ErrorCode(err) != interaction.AskAborted {
				t.Errorf("ask %s: %v", a.Status, err)
			}
			// The session goes on working.
			done = c.start(context.Background(), simpleArgs(), nil)
			id = recv(t, svc.created, "the second ask")
			svc.endAs(t, id, interaction.StatusCancelled, nil)
			if r := recv(t, done, "the second result"); r.err != nil || !r.res.IsError {
				t.Errorf("second call: %v %+v", r.err, r.res)
			}
		})
	}
}

func TestShutdownWithdraws(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			c := connect(t, tr, svc, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			done := c.start(ctx, simpleArgs(), nil)
			id := recv(t, svc.created, "the ask")
			c.shutdown()
			if got := recv(t, svc.withdrawn, "the withdrawal"); got != id {
				t.Fatalf("withdrew %s, want %s", got, id)
			}
			if tr != "http" {
				// ServeStdio returns once its calls have withdrawn their
				// asks. The session is closing, so their results may or may
				// not reach the client.
				if err := c.serveResult(t); err != nil {
					t.Fatalf("ServeStdio: %v", err)
				}
				cancel()
				if r := recv(t, done, "CallTool to return"); r.err == nil {
					wantToolError(t, r.res, interaction.AskAborted, "withdrew")
				}
				return
			}
			// Over HTTP the call gets its result.
			r := recv(t, done, "the result")
			if r.err != nil {
				t.Fatal(r.err)
			}
			wantToolError(t, r.res, interaction.AskAborted, "withdrew")
		})
	}
}

// TestUnknownFields: a field the tool does not know is refused, naming it
// and the nearest known name, and nothing is asked, over each transport.
func TestUnknownFields(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) { testUnknownFields(t, tr) })
	}
}

func testUnknownFields(t *testing.T, transport string) {
	svc := newFakeService()
	c := connect(t, transport, svc, Options{})
	for _, tc := range []struct {
		args       map[string]any
		path, hint string
	}{
		{map[string]any{"questions": []any{map[string]any{"id": "a", "question": "x", "optionz": []any{map[string]any{"label": "A"}}}}},
			"questions[0].optionz", "options"},
		{map[string]any{"questions": []any{map[string]any{"id": "a", "question": "x"}}, "waitSecond": 5}, "waitSecond", "waitSeconds"},
		{map[string]any{"questions": []any{map[string]any{"id": "a", "question": "x", "options": []any{map[string]any{"label": "A", "descripton": "d"}}}}},
			"questions[0].options[0].descripton", "description"},
	} {
		res := c.call(t, tc.args)
		wantToolError(t, res, interaction.InvalidQuestion, tc.path)
		if !strings.Contains(text(t, res), tc.hint) {
			t.Errorf("%q does not hint %q", text(t, res), tc.hint)
		}
	}
	res, err := c.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: GetAnswerToolName, Arguments: map[string]any{"askId": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	wantToolError(t, res, interaction.InvalidQuestion, "askId")
	if n := svc.creates(); n != 0 {
		t.Errorf("%d asks created", n)
	}
}

func TestInvalidInput(t *testing.T) {
	eleven := make([]any, 11)
	for i := range eleven {
		eleven[i] = map[string]any{"id": fmt.Sprint("q", i), "question": "?"}
	}
	q := func(fields map[string]any) map[string]any {
		base := map[string]any{"id": "a", "question": "Why?"}
		for k, v := range fields {
			base[k] = v
		}
		return map[string]any{"questions": []any{base}}
	}
	cases := []struct {
		name     string
		args     any
		code     interaction.Code
		contains string
	}{
		{"no arguments", nil, interaction.EmptyQuestions, "no questions"},
		{"no questions", map[string]any{"channel": "C1"}, interaction.EmptyQuestions, "no questions"},
		{"empty questions", map[string]any{"questions": []any{}}, interaction.EmptyQuestions, "no questions"},
		{"missing id", map[string]any{"questions": []any{map[string]any{"question": "Why?"}}}, interaction.InvalidQuestion, "id is missing"},
		{"missing question", map[string]any{"questions": []any{map[string]any{"id": "a"}}}, interaction.InvalidQuestion, "question text is missing"},
		{"too many questions", map[string]any{"questions": eleven}, interaction.InvalidQuestion, "at most 10"},
		{"duplicate labels", q(map[string]any{"options": []any{map[string]any{"label": "x"}, map[string]any{"label": "x"}}}), interaction.InvalidQuestion, "duplicate label"},
		{"questions is a string", map[string]any{"questions": "Why?"}, interaction.InvalidQuestion, "questions must be an array, not a string"},
		{"question is a number", q(map[string]any{"question": 7}), interaction.InvalidQuestion, "questions.question must be a string, not a number"},
		{"options is a string", q(map[string]any{"options": "x, y"}), interaction.InvalidQuestion, "questions.options must be an array, not a string"},
		{"option is a string", q(map[string]any{"options": []any{"x"}}), interaction.InvalidQuestion, "questions.options must be an object, not a string"},
		{"multiSelect is a string", q(map[string]any{"multiSelect": "yes"}), interaction.InvalidQuestion, "questions.multiSelect must be a boolean, not a string"},
		// multi_select is read as multiSelect (interaction.QuestionAliases).
		{"multi_select is a number", q(map[string]any{"multi_select": 1}), interaction.InvalidQuestion, "questions.multiSelect must be a boolean, not a number"},
		{"case differs", q(map[string]any{"multiselect": true}), interaction.InvalidQuestion, `questions[0].multiselect: unknown field (did you mean "multiSelect"?)`},
		{"upper-case timeout", map[string]any{"questions": q(nil)["questions"], "TIMEOUT": "5m"}, interaction.InvalidQuestion, `TIMEOUT: unknown field (did you mean "timeout"?)`},
		{"channel is an object", map[string]any{"questions": []any{}, "channel": map[string]any{}}, interaction.InvalidQuestion, "channel must be a string, not an object"},
		{"bad timeout", map[string]any{"questions": q(nil)["questions"], "timeout": "soon"}, interaction.InvalidQuestion, "timeout"},
		{"negative timeout", map[string]any{"questions": q(nil)["questions"], "timeout": "-1m"}, interaction.InvalidQuestion, "timeout"},
		{"bad intent", q(map[string]any{"intent": map[string]any{"kind": "plan-review", "approve": "Yes"}}), interaction.BadIntent, "detail"},
	}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			c := connect(t, tr, svc, Options{})
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					wantToolError(t, c.call(t, tc.args), tc.code, tc.contains)
				})
			}
			if n := svc.creates(); n != 0 {
				t.Errorf("%d asks created from invalid input", n)
			}
		})
	}
}

func TestServiceErrors(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			svc.createErr = interaction.Errorf(interaction.SlackError, "channel_not_found")
			c := connect(t, tr, svc, Options{})
			wantToolError(t, c.call(t, simpleArgs()), interaction.SlackError, "channel_not_found")

			svc.mu.Lock()
			svc.createErr = fmt.Errorf("store: %w", interaction.Errorf(interaction.NoProvider, "the bot is not connected"))
			svc.mu.Unlock()
			wantToolError(t, c.call(t, simpleArgs()), interaction.NoProvider, "not connected")

			svc.mu.Lock()
			svc.createErr = errors.New("disk full")
			svc.mu.Unlock()
			wantToolError(t, c.call(t, simpleArgs()), interaction.Internal, "disk full")
		})
	}
}

func TestProgress(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			c := connect(t, tr, svc, Options{ProgressInterval: 20 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			done := c.start(ctx, simpleArgs(), mcpsdk.Meta{"progressToken": "tok-1"})
			id := recv(t, svc.created, "the ask")
			last := -1.0
			for i := range 4 {
				p := recv(t, c.progress, "a progress notification")
				if fmt.Sprint(p.ProgressToken) != "tok-1" {
					t.Errorf("progress token %v", p.ProgressToken)
				}
				if p.Progress <= last {
					t.Errorf("notification %d: progress %v after %v", i, p.Progress, last)
				}
				last = p.Progress
				if !strings.Contains(p.Message, "Waiting for a person to answer in Slack (C0DEFAULT)") {
					t.Errorf("message %q", p.Message)
				}
			}
			svc.answer(t, id, interaction.Answer{Answers: []interaction.AnswerItem{{ID: "go", Selected: []string{"No"}}}})
			r := recv(t, done, "the result")
			if r.err != nil || r.res.IsError {
				t.Fatalf("%v %+v", r.err, r.res)
			}
			if got := text(t, r.res); got != `{"answers":[{"id":"go","selected":["No"]}]}` {
				t.Errorf("text %s", got)
			}

			// Without a progress token there are no notifications.
			for len(c.progress) > 0 {
				<-c.progress
			}
			done = c.start(ctx, simpleArgs(), nil)
			id = recv(t, svc.created, "the second ask")
			time.Sleep(150 * time.Millisecond)
			svc.answer(t, id, interaction.Answer{Answers: []interaction.AnswerItem{{ID: "go", Selected: []string{"Yes"}}}})
			if r := recv(t, done, "the second result"); r.err != nil || r.res.IsError {
				t.Fatalf("%v %+v", r.err, r.res)
			}
			if n := len(c.progress); n != 0 {
				t.Errorf("%d progress notifications without a progress token", n)
			}
		})
	}
}

// A Wait that returns while the ask is still pending (a long poll that
// elapsed, as an HTTP client of slackask serve does) is called again.
func TestWaitReturnsEarly(t *testing.T) {
	svc := newFakeService()
	svc.waitCap = 10 * time.Millisecond
	c := connect(t, "stdio", svc, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	done := c.start(ctx, simpleArgs(), nil)
	id := recv(t, svc.created, "the ask")
	time.Sleep(600 * time.Millisecond) // a few rounds of Wait
	svc.answer(t, id, interaction.Answer{Answers: []interaction.AnswerItem{{ID: "go", Selected: []string{"Yes"}}}})
	if r := recv(t, done, "the result"); r.err != nil || r.res.IsError || text(t, r.res) != `{"answers":[{"id":"go","selected":["Yes"]}]}` {
		t.Fatalf("%v %+v", r.err, r.res)
	}
}

func TestListTools(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			c := connect(t, tr, newFakeService(), Options{})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			res, err := c.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tools) != 2 || res.Tools[0].Name != ToolName && res.Tools[1].Name != ToolName {
				t.Fatalf("tools %+v", res.Tools)
			}
			if res.Tools[0].Name != ToolName {
				res.Tools[0], res.Tools[1] = res.Tools[1], res.Tools[0]
			}
			if res.Tools[1].Name != GetAnswerToolName || !strings.Contains(res.Tools[1].Description, "Still waiting") {
				t.Errorf("second tool %+v", res.Tools[1])
			}
			tool := res.Tools[0]
			for _, s := range []string{"stable", `"Other"`, "10 questions", `{"answers":[`, "ASK_CANCELLED", "ASK_TIMEOUT", "INVALID_QUESTION",
				"waitSeconds", "Still waiting", "get_answer",
				// The formatting contract (issue 16.5): what is Markdown, what is plain, and that nothing pings.
				`"question", "detail" and option descriptions are Markdown`, "header and labels are plain text", "pings"} {
				if !strings.Contains(tool.Description, s) {
					t.Errorf("description lacks %q", s)
				}
			}
			b, _ := json.Marshal(tool.InputSchema)
			var in struct {
				Type       string         `json:"type"`
				Required   []string       `json:"required"`
				Properties map[string]any `json:"properties"`
				Additional any            `json:"additionalProperties"`
			}
			if err := json.Unmarshal(b, &in); err != nil {
				t.Fatal(err)
			}
			if in.Type != "object" || !reflect.DeepEqual(in.Required, []string{"questions"}) || in.Additional != nil {
				t.Errorf("input schema %s", b)
			}
			for _, p := range []string{"questions", "channel", "user", "timeout", "waitSeconds"} {
				if in.Properties[p] == nil {
					t.Errorf("input schema lacks %q", p)
				}
			}
			if !strings.Contains(string(b), `"multi_select"`) {
				t.Errorf("input schema lacks multi_select: %s", b)
			}
			if tool.OutputSchema == nil {
				t.Error("no output schema")
			}
			if tool.Annotations == nil || tool.Annotations.ReadOnlyHint {
				t.Errorf("annotations %+v", tool.Annotations)
			}
		})
	}
}

func compileSchema(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validates(t *testing.T, s *jsonschema.Schema, instance string) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

func TestSchemas(t *testing.T) {
	in := compileSchema(t, inputSchema)
	for _, ok := range []string{
		`{"questions":[{"id":"a","question":"Why?"}]}`,
		`{"questions":[{"id":"a","question":"Why?","options":[{"label":"x","description":"d","extra":1}],"multi_select":true}],"timeout":"5m","user":"U1"}`,
		`{"questions":[{"id":"a","question":"Why?","multiSelect":true,"intent":{"kind":"plan-review"}}],"agent":{"id":"x"},"somethingNew":[1]}`,
	} {
		if err := validates(t, in, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		`{}`,
		`{"questions":[]}`,
		`{"questions":"Why?"}`,
		`{"questions":[{"id":"a"}]}`,
		`{"questions":[{"id":"a","question":"Why?","multi_select":"yes"}]}`,
		`{"questions":[{"id":"a","question":"Why?","options":[{"description":"no label"}]}]}`,
	} {
		if err := validates(t, in, bad); err == nil {
			t.Errorf("%s validates", bad)
		}
	}

	// The schema's limits are the domain's.
	var s struct {
		Properties struct {
			Questions struct {
				MaxItems int `json:"maxItems"`
				Items    struct {
					Properties struct {
						Options struct {
							MaxItems int `json:"maxItems"`
						} `json:"options"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"questions"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(inputSchema), &s); err != nil {
		t.Fatal(err)
	}
	if q := s.Properties.Questions; q.MaxItems != slackid.MaxQuestions || q.Items.Properties.Options.MaxItems != slackid.MaxOptions {
		t.Errorf("schema limits %d/%d, want %d/%d", q.MaxItems, q.Items.Properties.Options.MaxItems, slackid.MaxQuestions, slackid.MaxOptions)
	}

	out := compileSchema(t, outputSchema)
	for _, a := range []interaction.Answer{
		{},
		{Answers: []interaction.AnswerItem{{ID: "a", Selected: []string{"x"}}, {ID: "b", Custom: "mine"}, {ID: "c"}}},
	} {
		b, _ := json.Marshal(a)
		if err := validates(t, out, string(b)); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
}

func TestDecodeInput(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		multi bool
	}{
		{`{"questions":[{"id":"a","question":"q","multiSelect":true}]}`, true},
		{`{"questions":[{"id":"a","question":"q","multi_select":true}]}`, true},
		{`{"questions":[{"id":"a","question":"q","multi_select":false}]}`, false},
		// Both given: the seam's spelling wins.
		{`{"questions":[{"id":"a","question":"q","multiSelect":false,"multi_select":true}]}`, false},
		{`{"questions":[{"id":"a","question":"q"}]}`, false},
	} {
		in, _, err := decodeInput(json.RawMessage(tc.raw), "")
		if err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		if in.Questions[0].MultiSelect != tc.multi {
			t.Errorf("%s: multiSelect %v", tc.raw, in.Questions[0].MultiSelect)
		}
	}
	for _, raw := range []string{`[1]`, `"q"`} {
		if _, _, err := decodeInput(json.RawMessage(raw), ""); interaction.ErrorCode(err) != interaction.InvalidRequest ||
			!strings.Contains(err.Error(), "must be a JSON object") {
			t.Errorf("%s: %v, want INVALID_REQUEST about a JSON object", raw, err)
		}
	}
	for _, tc := range []struct{ raw, want string }{
		{`{"questions":[}`, "not valid JSON"},
		{`{"timeout":12.5}`, ""}, // a number of seconds is accepted
		{`{"timeout":true}`, "timeout"},
	} {
		_, _, err := decodeInput(json.RawMessage(tc.raw), "")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.raw, err)
		case tc.want != "" && (interaction.ErrorCode(err) != interaction.InvalidQuestion || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want INVALID_QUESTION about %q", tc.raw, err, tc.want)
		}
	}
	in, _, err := decodeInput(json.RawMessage(`{"questions":[{"id":"a","question":"q"}],"timeout":"","channel":"  "}`), "C-DEF")
	if err != nil || in.Timeout != 0 || in.Channel != "C-DEF" {
		t.Errorf("%+v %v", in, err)
	}
}

// rawRequest sends one HTTP request to the streamable endpoint within the
// SDK client's session.
func (c *conn) rawRequest(ctx context.Context, method, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.cs.ID())
	req.Header.Set("Mcp-Protocol-Version", c.cs.InitializeResult().ProtocolVersion)
	return c.hc.Do(req)
}

// A client that drops the HTTP request carrying its call without
// notifications/cancelled is taken to have timed out (as Claude Code does):
// the ask stays open and get_answer fetches it.
func TestHTTPDroppedRequestKeepsAsk(t *testing.T) {
	svc := newFakeService()
	var logs syncBuffer
	c := connect(t, "http", svc, Options{Logger: zerolog.New(&logs)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call",
		"params": map[string]any{"name": ToolName, "arguments": simpleArgs()}})
	posted := make(chan error, 1)
	go func() {
		resp, err := c.rawRequest(ctx, http.MethodPost, string(body))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body) // the SSE stream, until the drop
			resp.Body.Close()
		}
		posted <- err
	}()
	id := recv(t, svc.created, "the ask")
	cancel()
	recv(t, posted, "the POST to end")
	waitLog(t, &logs, "mcp ask left open")
	if a := svc.status(t, id); a.Status != interaction.StatusPending {
		t.Fatalf("ask %s, want it still open", a.Status)
	}
	svc.answer(t, id, interaction.Answer{Answers: []interaction.AnswerItem{{ID: "go", Selected: []string{"Yes"}}}})
	res := c.getAnswer(t, map[string]any{"id": id})
	if res.IsError || text(t, res) != `{"answers":[{"id":"go","selected":["Yes"]}]}` {
		t.Fatalf("get_answer: %+v", res)
	}
}

// waitLog waits until the log holds want.
func waitLog(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", want, logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// getAnswer calls get_answer and returns its result.
func (c *conn) getAnswer(t *testing.T, args map[string]any) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: GetAnswerToolName, Arguments: args})
	if err != nil {
		t.Fatalf("get_answer: %v", err)
	}
	return res
}

// pendingID checks that res says, not as an error, that the ask is still
// open, and returns its id.
func pendingID(t *testing.T, res *mcpsdk.CallToolResult) string {
	t.Helper()
	got := text(t, res)
	if res.IsError || !strings.HasPrefix(got, "Still waiting:") || !strings.Contains(got, GetAnswerToolName) {
		t.Fatalf("result %q (error %v), want Still waiting", got, res.IsError)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var sc struct {
		Status string `json:"status"`
		AskID  string `json:"askId"`
	}
	if err := json.Unmarshal(b, &sc); err != nil || sc.Status != "pending" || sc.AskID == "" || !strings.Contains(got, sc.AskID) {
		t.Fatalf("structured %s", b)
	}
	return sc.AskID
}

// TestCallTimeoutKeepsAsk: a client whose call is cut by its own timeout
// (the go-sdk sends notifications/cancelled "context deadline exceeded")
// leaves the question open, and get_answer, with or without the id,
// returns the answer later.
func TestCallTimeoutKeepsAsk(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			var logs syncBuffer
			c := connect(t, tr, svc, Options{Logger: zerolog.New(&logs)})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			done := c.start(ctx, simpleArgs(), nil)
			id := recv(t, svc.created, "the ask")
			if r := recv(t, done, "the call to time out"); !errors.Is(r.err, context.DeadlineExceeded) {
				t.Fatalf("CallTool: %v %+v, want a timeout", r.err, r.res)
			}
			waitLog(t, &logs, "mcp ask left open")
			if a := svc.status(t, id); a.Status != interaction.StatusPending {
				t.Fatalf("ask %s, want it still open", a.Status)
			}
			if got := pendingID(t, c.getAnswer(t, map[string]any{"waitSeconds": 0})); got != id {
				t.Fatalf("get_answer without id found %s, want %s", got, id)
			}
			later := make(chan *mcpsdk.CallToolResult, 1)
			go func() { later <- c.getAnswer(t, map[string]any{"id": id}) }()
			svc.answer(t, id, interaction.Answer{Answers: []interaction.AnswerItem{{ID: "go", Selected: []string{"No"}}}})
			res := recv(t, later, "get_answer")
			if res.IsError || text(t, res) != `{"answers":[{"id":"go","selected":["No"]}]}` {
				t.Fatalf("get_answer: %+v", res)
			}
			select {
			case w := <-svc.withdrawn:
				t.Fatalf("ask %s withdrawn", w)
			default:
			}
		})
	}
}

// TestWaitSeconds: a call with waitSeconds returns "Still waiting" with the
// ask id when they pass (at once for 0), the ask stays open, and get_answer
// reports pending, then the answer, then for another ask the error code it
// ended with.
func TestWaitSeconds(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			svc := newFakeService()
			c := connect(t, tr, svc, Options{})
			args := simpleArgs()
			args["waitSeconds"] = 0.2
			id := pendingID(t, c.call(t, args))
			if id != recv(t, svc.created, "the ask") {
				t.Fatal("the result names another ask")
			}
			if got := pendingID(t, c.getAnswer(t, map[string]any{"id": id, "waitSeconds": 0.05})); got != id {
				t.Fatalf("pending %s, want %s", got, id)
			}
			svc.answer(t, id, interaction.Answer{Answers: []interaction.AnswerItem{{ID: "go", Custom: "later"}}})
			if res := c.getAnswer(t, map[string]any{"id": id, "waitSeconds": "1m"}); res.IsError || text(t, res) != `{"answers":[{"id":"go","selected":[],"custom":"later"}]}` {
				t.Fatalf("get_answer: %+v", res)
			}

			// waitSeconds 0 returns as soon as the question is posted.
			args["waitSeconds"] = 0
			id2 := pendingID(t, c.call(t, args))
			<-svc.created
			svc.endAs(t, id2, interaction.StatusCancelled, nil)
			wantToolError(t, c.getAnswer(t, map[string]any{"id": id2}), interaction.AskCancelled, "")
			wantToolError(t, c.getAnswer(t, map[string]any{"id": "nope"}), interaction.NotFound, "")
			wantToolError(t, c.getAnswer(t, map[string]any{"id": id, "waitSeconds": -1}), interaction.InvalidRequest, "waitSeconds")
		})
	}
}

// Deleting a session withdraws the asks of its calls in flight, and the
// DELETE does not wait for people to answer.
func TestHTTPSessionDeleteWithdraws(t *testing.T) {
	svc := newFakeService()
	c := connect(t, "http", svc, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	done := c.start(ctx, simpleArgs(), nil)
	id := recv(t, svc.created, "the ask")
	resp, err := c.rawRequest(ctx, http.MethodDelete, "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %s", resp.Status)
	}
	if got := recv(t, svc.withdrawn, "the withdrawal"); got != id {
		t.Fatalf("withdrew %s, want %s", got, id)
	}
	cancel()
	<-done
}

func TestAwaitRetriesFailedWait(t *testing.T) {
	svc := newFakeService()
	tool := &askTool{svc: svc, waitRetryFor: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	a, err := svc.Create(ctx, interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{{ID: "a", Question: "?"}}}})
	if err != nil {
		t.Fatal(err)
	}
	<-svc.created
	svc.mu.Lock()
	svc.waitFails = 2
	svc.mu.Unlock()
	go func() {
		time.Sleep(100 * time.Millisecond)
		svc.Finish(a.ID, func(a *interaction.Ask) {
			a.Status, a.Answer = interaction.StatusAnswered, &interaction.Answer{Answers: []interaction.AnswerItem{{ID: "a"}}}
		})
	}()
	got, err := tool.waitFor(ctx, a.ID, 0, false)
	if err != nil || got.Status != interaction.StatusAnswered {
		t.Fatalf("%+v %v", got, err)
	}

	// Wait that keeps failing: the call gives up, withdrawing the ask.
	tool.waitRetryFor = 300 * time.Millisecond
	a, _ = svc.Create(ctx, interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{{ID: "a", Question: "?"}}}})
	<-svc.created
	svc.mu.Lock()
	svc.waitFails = -1
	svc.mu.Unlock()
	if _, err := tool.waitFor(ctx, a.ID, 0, false); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("waitFor: %v", err)
	}

	// An unknown ask is not retried.
	svc.mu.Lock()
	svc.waitFails = 0
	svc.mu.Unlock()
	if _, err := tool.waitFor(ctx, "nope", 0, false); interaction.ErrorCode(err) != interaction.NotFound {
		t.Fatalf("await: %v", err)
	}
}

// A stdio client that goes away (the server's input ends) withdraws the asks
// of its calls, and ServeStdio returns.
func TestStdioEOFWithdraws(t *testing.T) {
	svc := newFakeService()
	c := connect(t, "stdio", svc, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := c.start(ctx, simpleArgs(), nil)
	id := recv(t, svc.created, "the ask")
	c.stdin.Close()
	if got := recv(t, svc.withdrawn, "the withdrawal"); got != id {
		t.Fatalf("withdrew %s, want %s", got, id)
	}
	if err := c.serveResult(t); err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
	cancel()
	<-done
}

func TestTimeoutReason(t *testing.T) {
	for reason, want := range map[string]bool{
		"McpError: MCP error -32001: Request timed out": true, // the TypeScript SDK (Claude Code, Agent SDK)
		"Request timed out":                             true,
		"context deadline exceeded":                     true, // the go-sdk
		"context canceled":                              false,
		"User cancelled":                                false,
		"":                                              false,
	} {
		if got := timeoutReason(reason); got != want {
			t.Errorf("timeoutReason(%q) = %v, want %v", reason, got, want)
		}
	}
}

// TestHTTPCancelReasons: as the TypeScript SDK does, a client sends
// notifications/cancelled and keeps the call's stream open. A reason that
// speaks of a timeout leaves the question open (the stream gets "Still
// waiting"); any other withdraws it.
func TestHTTPCancelReasons(t *testing.T) {
	for _, tc := range []struct {
		reason string
		keep   bool
	}{
		{"McpError: MCP error -32001: Request timed out", true},
		{"The user pressed Esc", false},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			svc := newFakeService()
			c := connect(t, "http", svc, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 77, "method": "tools/call",
				"params": map[string]any{"name": ToolName, "arguments": simpleArgs()}})
			stream := make(chan string, 1)
			go func() {
				resp, err := c.rawRequest(ctx, http.MethodPost, string(body))
				if err != nil {
					stream <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				stream <- string(b)
			}()
			id := recv(t, svc.created, "the ask")
			note, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
				"params": map[string]any{"requestId": 77, "reason": tc.reason}})
			resp, err := c.rawRequest(ctx, http.MethodPost, string(note))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := recv(t, stream, "the call's stream to end")
			if tc.keep {
				if !strings.Contains(got, "Still waiting") || !strings.Contains(got, id) {
					t.Fatalf("stream %q, want Still waiting with %s", got, id)
				}
				if a := svc.status(t, id); a.Status != interaction.StatusPending {
					t.Fatalf("ask %s, want it open", a.Status)
				}
				return
			}
			if w := recv(t, svc.withdrawn, "the withdrawal"); w != id {
				t.Fatalf("withdrew %s, want %s", w, id)
			}
		})
	}
}
