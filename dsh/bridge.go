package dsh

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
)

// DefaultTitle is the agent name of an ask whose dsh session has no title
// yet.
const DefaultTitle = "deepseek-harness"

// AgentPrefix starts the agent.id ("dsh:" + sessionId) and the idempotency
// key ("dsh:" + rpcId) of every ask the bridge creates.
const AgentPrefix = "dsh:"

// The notes shown on an ask that the bridge withdraws because the host no
// longer waits for it.
const (
	// NoteAnsweredElsewhere: another client answered the question first.
	NoteAnsweredElsewhere = "answered elsewhere"
	// NoteAgentStopped: the question was cancelled elsewhere, the turn was
	// interrupted, or the host forgot it (restarted) while slackask was not
	// connected.
	NoteAgentStopped = "the agent stopped waiting"
)

// Defaults of Config.
const (
	DefaultBackoffMin      = 250 * time.Millisecond
	DefaultBackoffMax      = 30 * time.Second
	DefaultRespondAttempts = 6
	DefaultReconcileAfter  = 5 * time.Second
)

const (
	maxFrameBytes    = 16 << 20         // read limit of one mux frame
	respondMaxDelay  = 5 * time.Second  // cap of the respond/create retry delay
	attemptTimeout   = 15 * time.Second // one POST /api/respond
	withdrawTimeout  = 10 * time.Second
	inflightMaxWait  = time.Minute // reconcile waits this long for creates in flight
	historyPageSize  = 100
	historyMaxAsks   = 50000
	inflightPollTick = 20 * time.Millisecond
)

// Backoff bounds the delay between two attempts to connect the event mux:
// it starts at Min, doubles after every failed attempt up to Max, and is
// jittered (each wait is within ±25% of the current delay). A connection
// that stayed up for at least Max resets it to Min.
type Backoff struct {
	Min time.Duration // zero: DefaultBackoffMin
	Max time.Duration // zero: DefaultBackoffMax
}

// Config configures a Bridge. URL and Service are required.
type Config struct {
	// URL is the base URL of the dsh web host, e.g. http://127.0.0.1:3080.
	// The bridge connects to URL/api/events.mux and posts to
	// URL/api/respond. The host only talks to clients whose Host header is
	// loopback or one of its --trusted-host names, so use a loopback
	// address or a trusted name.
	URL string
	// Channel is the Slack conversation the questions are posted in; empty
	// means the service's default conversation.
	Channel string
	// Service creates and tracks the asks. When it also implements
	// interaction.NoteWithdrawer, asks the host settled first are withdrawn
	// with a note saying why.
	Service interaction.AskService
	// Logger receives the bridge's log lines.
	Logger zerolog.Logger
	// HTTPClient posts to /api/respond; nil means a client with a 30s
	// timeout. The TLS settings of its *http.Transport, if any, are used for
	// the websocket too.
	HTTPClient *http.Client
	// Backoff paces reconnects of the event mux, and (capped at 5s) the
	// retries of a failed Create or /api/respond.
	Backoff Backoff
	// RespondAttempts bounds the attempts to post one reply to the host on
	// network errors and 5xx answers (and to create one ask on errors that
	// are not the request's fault); zero means DefaultRespondAttempts.
	RespondAttempts int
	// ReconcileAfter is how long after each (re)connect the bridge waits for
	// the host's replay of pending questions before it withdraws, with the
	// note NoteAgentStopped, the pending dsh asks that were not replayed:
	// the host settled them while the bridge was not listening. Zero means
	// DefaultReconcileAfter; negative turns reconciling off.
	ReconcileAfter time.Duration
}

// Bridge connects a dsh web host to an interaction.AskService. Create it
// with New and start it with Run.
type Bridge struct {
	cfg    Config
	base   string // URL without trailing slash
	muxURL string
	log    zerolog.Logger
	client *http.Client
	dialer *websocket.Dialer

	running atomic.Bool
	wg      sync.WaitGroup // goroutines started by Run

	mu        sync.Mutex
	connected bool
	gen       uint64 // counts mux connections
	lastErr   error
	rebuilt   bool
	sessions  map[string]*session
	questions map[string]*question // pending host questions, by rpcId
	creating  int                  // questions received but not yet past Create
}

// session is what the bridge knows of one dsh session.
type session struct {
	// tail is closed when the Create of the session's latest question has
	// returned: Creates of a session run one at a time in arrival order, so
	// that the first question becomes the thread root before the next one
	// is posted. Guarded by Bridge.mu, like title and root.
	tail  chan struct{}
	title string
	root  root
}

// root is the first top-level ask of a session: its Slack thread.
type root struct {
	channel, ts string
}

// New checks cfg and returns a Bridge that is not yet running.
func New(cfg Config) (*Bridge, error) {
	if cfg.Service == nil {
		return nil, errors.New("dsh: Config.Service is required")
	}
	base, mux, err := endpoints(cfg.URL)
	if err != nil {
		return nil, err
	}
	if cfg.Backoff.Min <= 0 {
		cfg.Backoff.Min = DefaultBackoffMin
	}
	if cfg.Backoff.Max <= 0 {
		cfg.Backoff.Max = DefaultBackoffMax
	}
	if cfg.Backoff.Max < cfg.Backoff.Min {
		cfg.Backoff.Max = cfg.Backoff.Min
	}
	if cfg.RespondAttempts <= 0 {
		cfg.RespondAttempts = DefaultRespondAttempts
	}
	if cfg.ReconcileAfter == 0 {
		cfg.ReconcileAfter = DefaultReconcileAfter
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	dialer := &websocket.Dialer{
		HandshakeTimeout: 15 * time.Second,
		NetDialContext:   (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second}).DialContext,
		ReadBufferSize:   64 << 10,
	}
	if t, ok := client.Transport.(*http.Transport); ok && t.TLSClientConfig != nil {
		dialer.TLSClientConfig = t.TLSClientConfig.Clone()
	}
	return &Bridge{
		cfg: cfg, base: base, muxURL: mux, log: cfg.Logger, client: client, dialer: dialer,
		sessions: map[string]*session{}, questions: map[string]*question{},
	}, nil
}

// endpoints returns the base URL and the websocket URL of the event mux.
func endpoints(raw string) (base, mux string, err error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("dsh: URL %q is not an absolute http(s) URL", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", errors.New("dsh: URL must not carry user info, a query or a fragment")
	}
	httpScheme, wsScheme := "", ""
	switch u.Scheme {
	case "http", "ws":
		httpScheme, wsScheme = "http", "ws"
	case "https", "wss":
		httpScheme, wsScheme = "https", "wss"
	default:
		return "", "", fmt.Errorf("dsh: URL %q: scheme must be http or https", raw)
	}
	path := strings.TrimRight(u.Path, "/")
	b := url.URL{Scheme: httpScheme, Host: u.Host, Path: path}
	m := url.URL{Scheme: wsScheme, Host: u.Host, Path: path + "/api/events.mux"}
	return b.String(), m.String(), nil
}

// Run keeps the bridge connected to the host's event mux until ctx ends,
// reconnecting with jittered exponential backoff, and turns the host's
// questions into asks. It returns nil once ctx has ended and every
// goroutine it started has stopped; it fails only when called twice.
// Asks still pending when it returns stay pending: the host replays their
// questions to the next bridge that connects, which re-attaches to them.
func (b *Bridge) Run(ctx context.Context) error {
	if !b.running.CompareAndSwap(false, true) {
		return errors.New("dsh: Run called twice")
	}
	defer b.wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	bo := backoff.Backoff{Min: b.cfg.Backoff.Min, Max: b.cfg.Backoff.Max, Jitter: retryJitter}
	var (
		up     time.Duration // how long the last connection lived
		streak int           // connects since one lived past Backoff.Max
	)
	r := backoff.Retry{Pause: &bo, OnRetry: func(_ int, err error, wait time.Duration) {
		ev := b.log.Warn()
		if up == 0 && streak > 1 {
			ev = b.log.Debug() // the host is still down: say it once, not every time
		}
		ev.Err(err).Str("url", b.muxURL).Dur("up", up).Dur("retryIn", wait).Int("attempt", streak).
			Msg("dsh: event mux disconnected")
	}}
	_ = r.Do(ctx, func(int) error {
		streak++
		if !b.isRebuilt() {
			if err := b.rebuild(ctx); err != nil && ctx.Err() == nil {
				b.log.Warn().Err(err).Msg("dsh: could not rebuild session threads from the ask history; will retry on the next connect")
			}
		}
		var err error
		up, err = b.connect(ctx)
		if ctx.Err() != nil {
			return backoff.Stop(ctx.Err())
		}
		if up >= b.cfg.Backoff.Max {
			bo.Reset()
			streak = 1
		}
		return cmp.Or(err, errMuxClosed) // a connection always ends in a reconnect
	})
	return nil
}

// errMuxClosed: the event mux connection ended without an error.
var errMuxClosed = errors.New("the event mux closed the connection")

// Ready returns nil while the event mux is connected, else an error saying
// why not. It suits a /readyz check.
func (b *Bridge) Ready(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.connected:
		return nil
	case !b.running.Load():
		return errors.New("dsh: not started")
	case b.lastErr != nil:
		return fmt.Errorf("dsh: event mux not connected: %w", b.lastErr)
	default:
		return errors.New("dsh: event mux not connected yet")
	}
}

// connect dials the mux and reads frames until the connection drops or ctx
// ends. It returns how long the connection was up (0 if it never was).
func (b *Bridge) connect(ctx context.Context) (up time.Duration, err error) {
	conn, resp, err := b.dialer.DialContext(ctx, b.muxURL, nil)
	if err != nil {
		if resp != nil {
			err = fmt.Errorf("%w (HTTP %s)", err, resp.Status)
			_ = resp.Body.Close()
		}
		b.setDisconnected(err)
		return 0, err
	}
	conn.SetReadLimit(maxFrameBytes)
	start := time.Now()
	gen := b.setConnected()
	b.log.Info().Str("url", b.muxURL).Msg("dsh: event mux connected")

	live, endLive := context.WithCancel(ctx) // ends with the connection
	b.wg.Go(func() {
		<-live.Done()
		if ctx.Err() != nil {
			_ = conn.Close() // unblocks ReadMessage; no close frame: the mux is downlink only
		}
	})
	if b.cfg.ReconcileAfter > 0 {
		b.wg.Go(func() { b.reconcile(ctx, live, gen, start) })
	}
	defer func() {
		endLive()
		_ = conn.Close()
		b.setDisconnected(err)
	}()
	for {
		_, data, rerr := conn.ReadMessage()
		if rerr != nil {
			return time.Since(start), fmt.Errorf("read: %w", rerr)
		}
		b.handle(ctx, gen, data)
	}
}

func (b *Bridge) setConnected() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	b.connected, b.lastErr = true, nil
	return b.gen
}

func (b *Bridge) setDisconnected(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.connected, b.lastErr = false, err
}

// isConnected reports whether connection gen is still the live one.
func (b *Bridge) isConnected(gen uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.connected && b.gen == gen
}

func (b *Bridge) isRebuilt() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rebuilt
}

// sessionLocked returns the session, creating it; b.mu must be held.
func (b *Bridge) sessionLocked(id string) *session {
	s := b.sessions[id]
	if s == nil {
		s = &session{}
		b.sessions[id] = s
	}
	return s
}

func (b *Bridge) session(id string) *session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sessionLocked(id)
}

// retryJitter is the jitter of every backoff of the bridge.
const retryJitter = 0.25
