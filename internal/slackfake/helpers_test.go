package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is an injectable Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1700000000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.AddUser("U1", "alice")
	srv.AddUser("U2", "bob")
	srv.AddChannel("C1", "general", "U0BOT", "U1", "U2")
	return srv
}

func newAPI(t *testing.T, srv *Server) *slack.Client {
	t.Helper()
	httpc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	t.Cleanup(httpc.CloseIdleConnections)
	return slack.New(srv.cfg.BotToken,
		slack.OptionAppLevelToken(srv.cfg.AppToken),
		slack.OptionAPIURL(srv.APIURL()),
		slack.OptionHTTPClient(httpc))
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// bot is a slack-go Socket Mode app under the test's control.
type bot struct {
	t      *testing.T
	api    *slack.Client
	sm     *socketmode.Client
	hellos chan socketmode.Request
	got    chan slack.InteractionCallback
	handle func(b *bot, req socketmode.Request, cb slack.InteractionCallback)
}

// startBot runs a slack-go socketmode client against srv. handle (nil: ack
// with no payload) must ack.
func startBot(t *testing.T, srv *Server, handle func(b *bot, req socketmode.Request, cb slack.InteractionCallback)) *bot {
	t.Helper()
	api := newAPI(t, srv)
	b := &bot{
		t: t, api: api, sm: socketmode.New(api),
		hellos: make(chan socketmode.Request, 10),
		got:    make(chan slack.InteractionCallback, 100),
		handle: handle,
	}
	if b.handle == nil {
		b.handle = func(b *bot, req socketmode.Request, _ slack.InteractionCallback) { b.ack(req, nil) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = b.sm.RunContext(ctx) })
	wg.Go(func() { b.loop(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := srv.WaitConnected(testCtx(t), 1); err != nil {
		t.Fatalf("bot did not connect: %v", err)
	}
	return b
}

func (b *bot) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case evt := <-b.sm.Events:
			b.event(evt)
		}
	}
}

func (b *bot) event(evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeHello:
		select {
		case b.hellos <- *evt.Request:
		default:
		}
	case socketmode.EventTypeInteractive:
		cb := evt.Data.(slack.InteractionCallback)
		select {
		case b.got <- cb:
		default:
		}
		b.handle(b, *evt.Request, cb)
	case socketmode.EventTypeErrorBadMessage:
		b.t.Errorf("slack-go could not parse a frame: %+v", evt.Data)
	}
}

func (b *bot) ack(req socketmode.Request, payload any) {
	if err := b.sm.Ack(req, payload); err != nil {
		b.t.Errorf("ack: %v", err)
	}
}

// next returns the next interaction the bot received.
func (b *bot) next(t *testing.T) slack.InteractionCallback {
	t.Helper()
	select {
	case cb := <-b.got:
		return cb
	case <-time.After(5 * time.Second):
		t.Fatal("no interaction reached the bot")
		return slack.InteractionCallback{}
	}
}

// rawCall posts a form to the fake and decodes the JSON answer.
func rawCall(t *testing.T, srv *Server, method string, form url.Values) (int, map[string]any) {
	t.Helper()
	if form.Get("token") == "" {
		form.Set("token", srv.cfg.BotToken)
	}
	return rawPost(t, srv.APIURL()+method, "application/x-www-form-urlencoded", form.Encode())
}

func rawPost(t *testing.T, u, ctype, body string) (int, map[string]any) {
	t.Helper()
	httpc := &http.Client{Transport: &http.Transport{}}
	defer httpc.CloseIdleConnections()
	resp, err := httpc.Post(u, ctype, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("answer is not JSON: %q", data)
	}
	return resp.StatusCode, out
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func txt(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

func md(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func opt(value, text string) *slack.OptionBlockObject {
	return slack.NewOptionBlockObject(value, txt(text), nil)
}

// callsBefore429 makes call up to most times and returns how many
// succeeded before the first failure, which must be a 429 with a
// Retry-After.
func callsBefore429(t *testing.T, most int, call func() error) int {
	t.Helper()
	for n := range most {
		if err := call(); err != nil {
			var rl *slack.RateLimitedError
			if !errors.As(err, &rl) || rl.RetryAfter <= 0 {
				t.Fatalf("call %d: %v, want a 429 with Retry-After", n, err)
			}
			return n
		}
	}
	return most
}
