package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/httpapi/openapitest"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/internal/syncbuf"
)

// ackLatencies collects, over the whole test run, the time the fake
// measured from sending each envelope to reading its ack.
var (
	ackMu        sync.Mutex
	ackLatencies []time.Duration
)

func TestMain(m *testing.M) {
	code := m.Run()
	ackMu.Lock()
	if n := len(ackLatencies); n > 0 {
		sort.Slice(ackLatencies, func(i, j int) bool { return ackLatencies[i] < ackLatencies[j] })
		fmt.Printf("ack latency over %d envelopes: p50 %v, p99 %v, max %v\n", n,
			ackLatencies[n/2], ackLatencies[(n*99)/100], ackLatencies[n-1])
	}
	ackMu.Unlock()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

const (
	channel = "C0ASKS"
	alice   = "U0ALICE"
	bob     = "U0BOB"
	carol   = "U0CAROL"
)

// harness runs slackask's serve wiring in-process against the Slack fake,
// with the real HTTP API on 127.0.0.1.
type harness struct {
	t     testing.TB
	fake  *slackfake.Server
	clock *clock.Fake
	base  string
	http  *http.Client
	cfg   config.Config
	logs  *syncBuffer
	// fakeCfg configures the Slack fake (its tokens follow cfg's).
	fakeCfg slackfake.Config
	// postTimeout bounds each post (0: the default).
	postTimeout time.Duration
}

// syncBuffer collects log lines from many goroutines.
type syncBuffer = syncbuf.Buffer

type option func(*harness)

func withConfig(f func(*config.Config)) option { return func(h *harness) { f(&h.cfg) } }

// modeOpts apply before every start's own options: TestHTTPModeSuite
// runs tests written for Socket Mode in HTTP mode with it. Tests here do
// not run in parallel.
var modeOpts []option

// httpMode runs the service in Slack's HTTP mode with a signing secret
// the fake signs with.
func httpMode() option {
	return withConfig(func(c *config.Config) {
		c.SlackMode, c.SlackSigningSecret, c.SlackAppToken = config.SlackModeHTTP, "harness-signing-secret", ""
	})
}

func start(t testing.TB, opts ...option) *harness {
	t.Helper()
	h := &harness{
		t: t, clock: clock.NewFake(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)),
		// Every exchange with the API is checked against its OpenAPI document.
		http: &http.Client{Transport: openapitest.Transport(t, &http.Transport{})}, logs: &syncBuffer{},
		fakeCfg: slackfake.Config{PingInterval: time.Second},
		cfg: config.Config{
			SlackBotToken: "xoxb-fake", SlackAppToken: "xapp-fake",
			Channel: channel, HTTPAddr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "slackask.db"),
			LogLevel: "debug", LogFormat: "json", Retention: 720 * time.Hour,
		},
	}
	for _, o := range append(slices.Clone(modeOpts), opts...) {
		o(h)
	}
	h.fakeCfg.BotToken, h.fakeCfg.AppToken = h.cfg.SlackBotToken, h.cfg.SlackAppToken
	h.fakeCfg.SigningSecret = h.cfg.SlackSigningSecret
	fake, err := slackfake.New(h.fakeCfg)
	if err != nil {
		t.Fatal(err)
	}
	h.fake = fake
	h.cfg.SlackAPIURL = fake.APIURL()
	fake.AddUser(alice, "alice")
	fake.AddUser(bob, "bob")
	fake.AddUser(carol, "carol")
	fake.AddChannel(channel, "asks")
	fake.AddUserGroup("S0OPS", alice, carol)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.base = "http://" + ln.Addr().String()
	if h.cfg.OAuth() {
		// OAuth installs: Slack's pages are the fake's, the redirect URL
		// this server's.
		h.cfg.PublicURL, h.cfg.SlackAuthorizeURL = h.base, fake.URL()+"/oauth/v2/authorize"
	}
	if h.cfg.HTTPMode() {
		// Slack's HTTP mode: the fake POSTs, signed, to the service.
		fake.UseHTTP(h.base+"/slack/interactivity", h.base+"/slack/events")
	}
	log := zerolog.New(io.MultiWriter(h.logs)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, h.cfg, log, &serveHooks{listener: ln, clock: h.clock, postTimeout: h.postTimeout})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		h.http.CloseIdleConnections()
		ackMu.Lock()
		ackLatencies = append(ackLatencies, fake.AckLatencies()...)
		ackMu.Unlock()
		fake.Close()
		if t.Failed() {
			t.Logf("service log:\n%s", h.logs.String())
		}
	})
	h.waitReady()
	return h
}

func (h *harness) waitReady() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := h.http.Get(h.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatal("service never became ready")
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// do sends a JSON request, with the harness's API token, and decodes the
// JSON reply into out.
func (h *harness) do(method, path string, body any, out any) int {
	h.t.Helper()
	return h.doAs(h.cfg.APIToken, method, path, body, out)
}

// doAs is do with the bearer token tok (none when empty).
func (h *harness) doAs(tok, method, path string, body any, out any) int {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

// create posts an ask and waits until its message is in the fake.
func (h *harness) create(in interaction.AskInput) interaction.Ask {
	h.t.Helper()
	var ask interaction.Ask
	if code := h.do("POST", "/v1/asks", in, &ask); code != 201 {
		h.t.Fatalf("create: status %d %+v", code, ask)
	}
	if ask.TS == "" || ask.Status != interaction.StatusPending {
		h.t.Fatalf("create returned %+v", ask)
	}
	return ask
}

// createQueued creates an ask whose post Slack rate-limits: it comes back
// pending and queued, and is returned once its message is posted.
func (h *harness) createQueued(in interaction.AskInput) interaction.Ask {
	h.t.Helper()
	var ask interaction.Ask
	if code := h.do("POST", "/v1/asks", in, &ask); code != 201 {
		h.t.Fatalf("create: status %d %+v", code, ask)
	}
	if ask.TS != "" || ask.Posting != interaction.PostingQueued || ask.QueuePlace != 1 {
		h.t.Fatalf("create on a rate-limited channel returned %+v, want queued at place 1", ask)
	}
	// The lifecycle's clock brings the turn; Retry-After runs in real time.
	ctx := ctxT(h.t)
	for ask.TS == "" && ctx.Err() == nil {
		h.clock.Advance(100 * time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		ask = h.get(ask.ID)
	}
	if ask.TS == "" || ask.Posting != "" {
		h.t.Fatalf("the queued ask was never posted: %+v", ask)
	}
	return ask
}

// waitAsk long-polls until the ask ended.
func (h *harness) waitAsk(id string) interaction.Ask {
	h.t.Helper()
	var ask interaction.Ask
	if code := h.do("GET", "/v1/asks/"+id+"?wait=15s", nil, &ask); code != 200 {
		h.t.Fatalf("get: status %d", code)
	}
	if !ask.Status.Ended() {
		h.t.Fatalf("ask %s still pending after the wait", id)
	}
	return ask
}

func (h *harness) get(id string) interaction.Ask {
	h.t.Helper()
	var ask interaction.Ask
	if code := h.do("GET", "/v1/asks/"+id, nil, &ask); code != 200 {
		h.t.Fatalf("get: status %d", code)
	}
	return ask
}

// waitMessage waits until the ask's message satisfies cond.
func (h *harness) waitMessage(ask interaction.Ask, what string, cond func(slackfake.Message) bool) slackfake.Message {
	h.t.Helper()
	var msg slackfake.Message
	err := h.fake.WaitFor(ctxT(h.t), func() bool {
		m, ok := h.fake.Message(ask.Channel, ask.TS)
		msg = m
		return ok && cond(m)
	})
	if err != nil {
		h.t.Fatalf("message never %s: %s", what, msg.Blocks)
	}
	return msg
}

// waitEnded waits until the message shows an ended ask: no actions left.
func (h *harness) waitEnded(ask interaction.Ask) slackfake.Message {
	h.t.Helper()
	return h.waitMessage(ask, "showed the end", func(m slackfake.Message) bool {
		return !strings.Contains(string(m.Blocks), `"type":"actions"`) && m.Updates > 0
	})
}

func (h *harness) waitEphemeral(user, contains string) {
	h.t.Helper()
	err := h.fake.WaitFor(ctxT(h.t), func() bool {
		for _, e := range h.fake.Ephemerals(user) {
			if strings.Contains(e.Text, contains) {
				return true
			}
		}
		return false
	})
	if err != nil {
		h.t.Fatalf("no ephemeral for %s containing %q: %+v", user, contains, h.fake.Ephemerals(user))
	}
}

// control finds the element of question q (−1: the bottom bar) and kind.
func control(q int, kind string) slackfake.Finder {
	suffix := fmt.Sprintf(".%d.%s", q, kind)
	return func(blockID, actionID string, el map[string]any) bool {
		t, _ := el["type"].(string)
		if kind == "select" && t == "button" { // a question drawn as buttons, in rows
			return strings.Contains(actionID, suffix+".") && (strings.HasSuffix(blockID, fmt.Sprintf(".%d.controls", q)) || strings.Contains(blockID, fmt.Sprintf(".%d.row.", q)))
		}
		if kind == "select" && !strings.Contains(t, "select") && t != "checkboxes" {
			return false
		}
		return strings.HasSuffix(actionID, suffix) && strings.HasSuffix(blockID, fmt.Sprintf(".%d.controls", q))
	}
}

func question(id, text string, labels ...string) interaction.Question {
	q := interaction.Question{ID: id, Question: text}
	for _, l := range labels {
		q.Options = append(q.Options, interaction.Option{Label: l})
	}
	return q
}

func ask1(questions ...interaction.Question) interaction.AskInput {
	return interaction.AskInput{Request: interaction.Request{Questions: questions, Agent: &interaction.Agent{ID: "test", Name: "Test agent"}}}
}

// blocksText returns the message's blocks as JSON without Go's \u0026
// style escapes, so tests can look for Slack's own &amp; entities.
func blocksText(m slackfake.Message) string {
	r := strings.NewReplacer(`\u0026`, "&", `\u003c`, "<", `\u003e`, ">")
	return r.Replace(string(m.Blocks))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(buf.String())
}
