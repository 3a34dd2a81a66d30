// Package bot is the Slack adapter of the ask lifecycle (package asks): it
// shows asks as Block Kit messages (the asks.Surface: chat.postMessage,
// chat.update, reminders, DMs, user groups), reads interactive payloads
// from Socket Mode and turns them into the lifecycle's person acts, and
// opens the modals of "Other…" and "Details". It holds no ask state of its
// own: records, timers and waiters are the lifecycle's.
package bot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/internal/backoff"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/journal"
	"github.com/slackask/slackask/internal/workslots"
	"github.com/slackask/slackask/store"
)

// Secrets hands out named secret keys that survive restarts
// (store.Store does).
type Secrets interface {
	Secret(ctx context.Context, name string) ([]byte, error)
}

// Config wires a Bot. Secrets and API (or Installs) are required.
type Config struct {
	// API is a Web API client made with the bot token and, for Socket
	// Mode, slack.OptionAppLevelToken: single-workspace mode. With
	// Installs (many workspaces) it is not used.
	API *slack.Client
	// Installs, when set and not an installs.Static, serves many
	// workspaces: every Web API call is made with the token of the
	// installation serving the record's or the payload's workspace (see
	// route.go), and no auth.test is made at start. Nil (or a Static):
	// the one workspace of API.
	Installs installs.Source
	// NewClient makes the client of an installation's bot token (the
	// Slack API URL, the HTTP client); nil: slack.New(token). Used with
	// Installs only.
	NewClient func(token string) *slack.Client
	// Uninstalls, with Installs, removes an installation when Slack says
	// the app was uninstalled or its token revoked.
	Uninstalls installs.Remover
	// Secrets keeps the key that signs modals' private_metadata.
	Secrets Secrets
	// Clock ages the user-group cache; nil means the wall clock.
	Clock clock.Clock
	// Logger receives the bot's log lines; it never gets a token.
	Logger zerolog.Logger
	// GroupTTL is how long a user group's members are cached (default 5m).
	GroupTTL time.Duration
	// Slots bound the decoding of payloads (and, given to the store the
	// lifecycle uses, its store work); nil: workslots.New().
	Slots workslots.Slots
	// Connections is how many Socket Mode connections to keep (Slack
	// delivers each envelope to one of an app's connections, at most 10);
	// 0 means 1. With two or more, a connection that reconnects leaves
	// the others to take the clicks.
	Connections int
	// Relay, when set (a store that replicas share), hands the acks this
	// process cannot send to another replica, and sends theirs: see
	// relay.go.
	Relay store.AckRelay
	// Journal, when set, makes block_actions envelopes durable before
	// their ack (see Socket.Journal), so that they are acked at once;
	// nil: each is acked once its change is stored. It must survive what
	// the store survives: serve sets it only for a SQLite store, in a
	// file next to the database.
	Journal *journal.Journal
	// Replay is what Journal's Open returned: envelopes acked by an
	// earlier process and not processed. Run hands them to the handler,
	// in order, before any connection opens.
	Replay []journal.Entry
	// HTTPMode: Slack sends payloads over HTTP (an HTTP transport hands
	// them to Accept) and no Socket Mode connection is opened;
	// Connections is ignored.
	HTTPMode bool
}

// Bot is the Slack adapter. Create it with New, hand it to asks.New as
// the Surface, and run it with Run (the lifecycle's background work is
// the Service's: asks.Service.Start, which waits for Opened). All methods are safe for concurrent
// use.
type Bot struct {
	cfg    Config
	routes *route // each installation's client and limits
	log    zerolog.Logger
	svc    *asks.Service // set by Run
	teamID atomic.Pointer[string]
	// botUserID is the bot's user, from auth.test (single-workspace
	// mode; each installation names its own).
	botUserID atomic.Pointer[string]
	appID     atomic.Pointer[string] // from Socket Mode's hello
	started   atomic.Bool
	opened    chan struct{} // closed once auth.test answered (asks.Opener)
	open      sync.Once

	sockets  []*Socket
	acks     *ackRoutes // shared by the sockets
	queue    keyedQueue // the person acts of one ask, in order
	groups   *groupCache
	known    knownUsers // user ids users.info found (CheckIDs)
	metaKey  []byte
	handlers sync.WaitGroup
	slots    workslots.Slots
	gate     gate // closed while the store cannot be reached (StoreDown)
	home     *homeBoard

	// accepting guards Accept against Run's end: runCtx is Run's context
	// while it takes payloads, nil before and once it stops.
	accepting sync.RWMutex
	runCtx    context.Context
}

// New checks cfg and returns a Bot. It returns an error when API (or
// Installs) or Secrets is missing or the metadata key cannot be had.
func New(ctx context.Context, cfg Config) (*Bot, error) {
	routes := &route{single: cfg.API, newAPI: func(token string) *slack.Client { return newClient(cfg.NewClient, token) }}
	st, static := cfg.Installs.(installs.Static)
	switch {
	case static && cfg.API == nil:
		routes.single = routes.newAPI(st.BotToken)
	case cfg.Installs != nil && !static:
		routes.source = cfg.Installs
	}
	if (routes.single == nil && !routes.many()) || cfg.Secrets == nil {
		return nil, errors.New("bot: Config.API (or Installs) and Config.Secrets are required")
	}
	if routes.many() && !cfg.HTTPMode {
		return nil, errors.New("bot: many workspaces (Config.Installs) are served in HTTP mode only: Socket Mode speaks for one app token's workspace")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.GroupTTL <= 0 {
		cfg.GroupTTL = 5 * time.Minute
	}
	if cfg.Slots == nil {
		cfg.Slots = workslots.New()
	}
	key, err := cfg.Secrets.Secret(ctx, "view-metadata")
	if err != nil {
		return nil, fmt.Errorf("bot: metadata key: %w", err)
	}
	b := &Bot{cfg: cfg, routes: routes, log: cfg.Logger, metaKey: key, slots: cfg.Slots, opened: make(chan struct{})}
	b.groups = newGroupCache(cfg.Clock, cfg.GroupTTL, b.orgTeams)
	b.home = newHomeBoard(b)
	b.acks = newAckRoutes(cfg.Relay, cfg.Logger)
	conns := max(cfg.Connections, 1)
	if cfg.HTTPMode {
		conns = 0
	}
	for i := range conns {
		s := &Socket{Open: b.openURL, Handler: b, Slots: cfg.Slots, routes: b.acks, gate: &b.gate,
			Log: cfg.Logger.With().Int("socket", i).Logger()}
		if cfg.Journal != nil {
			s.Journal = cfg.Journal
		}
		b.sockets = append(b.sockets, s)
	}
	return b, nil
}

// Run connects to Slack (auth.test, then Socket Mode; Opened is closed
// once auth.test answered) and routes payloads to svc until ctx is done.
// It returns ctx's error, or the error that made Slack unusable (invalid
// auth). svc's background work is started by whoever owns svc.
func (b *Bot) Run(ctx context.Context, svc *asks.Service) error {
	if svc == nil {
		return errors.New("bot run: no lifecycle")
	}
	b.svc = svc
	if !b.routes.many() { // each installation was checked when it was installed
		auth, err := b.authTest(ctx)
		if err != nil {
			return err
		}
		b.teamID.Store(&auth.TeamID)
		b.botUserID.Store(&auth.UserID)
	}
	b.open.Do(func() { close(b.opened) })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.started.Store(true)

	stopRelay := b.acks.serve(ctx)
	stopWatch := svc.Watch(func(string) { b.home.changed() })
	var homes sync.WaitGroup
	homes.Go(func() { b.home.run(ctx) })
	b.replay(ctx)
	b.accepting.Lock()
	b.runCtx = ctx
	b.accepting.Unlock()
	errs := make(chan error, len(b.sockets))
	// One line for every connection: a click acked on one is routed
	// after every click acked before it on any other.
	line := newOrderLine()
	var routing sync.WaitGroup
	routing.Go(line.run)
	for _, s := range b.sockets {
		s.line = line
	}
	var socks sync.WaitGroup
	for _, s := range b.sockets {
		socks.Go(func() {
			err := s.Run(ctx)
			if !errors.Is(err, context.Canceled) {
				errs <- err
				cancel() // a refused token stops every connection
			}
		})
	}
	if b.cfg.HTTPMode {
		<-ctx.Done()
	}
	socks.Wait()
	b.accepting.Lock() // no HTTP payload is taken once the handlers are waited for
	b.runCtx = nil
	b.accepting.Unlock()
	line.close() // every reader has ended, every lined envelope routed
	routing.Wait()
	cancel()
	stopRelay()
	stopWatch()
	homes.Wait()
	close(errs)
	err := ctx.Err()
	if e, ok := <-errs; ok {
		err = e
	}
	// The queue first: its jobs start handlers (reports), which must all
	// be added before handlers.Wait begins.
	b.queue.wait()
	b.handlers.Wait()
	return err
}

// authTest calls auth.test until it answers: a refused token is fatal, a
// Slack that cannot be reached is waited for (1 s doubling to 30 s).
func (b *Bot) authTest(ctx context.Context) (*slack.AuthTestResponse, error) {
	var auth *slack.AuthTestResponse
	err := backoff.Retry{OnRetry: func(_ int, err error, _ time.Duration) {
		b.log.Warn().Err(slackErr(err)).Msg("Slack unreachable; retrying")
	}}.Do(ctx, func(int) error {
		var err error
		auth, err = b.routes.single.AuthTestContext(ctx)
		var se slack.SlackErrorResponse
		if err != nil && (errors.As(err, &se) || ctx.Err() != nil) {
			return backoff.Stop(fmt.Errorf("bot run: auth.test: %w", slackErr(err)))
		}
		return err
	})
	switch {
	case errors.Is(err, backoff.ErrInterrupted):
		return nil, ctx.Err()
	case err != nil:
		return nil, err
	}
	return auth, nil
}

// Opened implements asks.Opener: closed once auth.test has answered, so
// that the lifecycle's recovery never posts with a token Slack refuses.
func (b *Bot) Opened() <-chan struct{} { return b.opened }

// Ready returns nil when at least one Socket Mode connection is up (in
// HTTP mode: Run takes requests) and the store can be reached (see
// StoreDown), else an error saying why not.
func (b *Bot) Ready(context.Context) error {
	reason, _ := b.gate.state()
	if gone := b.routes.space("").gone.Load(); gone != nil && !b.routes.many() {
		return fmt.Errorf("slack: %s: reinstall it, then restart slackask with its new bot token", *gone)
	}
	switch {
	case reason != nil && b.cfg.HTTPMode:
		return fmt.Errorf("slack: HTTP requests would not be kept: %w", reason)
	case reason != nil:
		return fmt.Errorf("slack: socket mode connections given up: %w", reason)
	case !b.started.Load():
		return errors.New("slack: not started")
	case b.cfg.HTTPMode:
		b.accepting.RLock()
		defer b.accepting.RUnlock()
		if b.runCtx == nil {
			return errors.New("slack: not taking HTTP requests yet (replaying the journal) or any more")
		}
		return nil
	case b.Connected() == 0:
		return fmt.Errorf("slack: none of %d socket mode connections is up", len(b.sockets))
	}
	return nil
}

// Connected returns how many of the bot's Socket Mode connections Slack
// said hello on and are open; Sockets how many it keeps.
func (b *Bot) Connected() int {
	n := 0
	for _, s := range b.sockets {
		n += int(s.live.Load())
	}
	return n
}

// Sockets returns how many Socket Mode connections the bot keeps.
func (b *Bot) Sockets() int { return len(b.sockets) }

// Envelopes returns how many Socket Mode envelopes were received since
// start.
func (b *Bot) Envelopes() int64 {
	var n int64
	for _, s := range b.sockets {
		n += s.Envelopes()
	}
	return n
}

// Home implements asks.Surface: the workspace from auth.test and the app
// from Socket Mode's hello ("" before them, and with many workspaces,
// whose asks are stamped by Workspace).
func (b *Bot) Home() (workspace, app string) {
	if p := b.teamID.Load(); p != nil {
		workspace = *p
	}
	if p := b.appID.Load(); p != nil {
		app = *p
	}
	return workspace, app
}

// Accept implements HTTPHandler: env is routed as Interactive routes a
// Socket's, on Run's context; false before Run took over and once it is
// stopping.
func (b *Bot) Accept(env *Envelope) bool {
	b.accepting.RLock()
	defer b.accepting.RUnlock()
	if b.runCtx == nil || b.runCtx.Err() != nil {
		return false
	}
	b.Interactive(b.runCtx, env)
	return true
}

// AcceptEvent implements HTTPHandler: ev goes to Event on Run's context,
// as a Socket hands it; dropped before Run took over and once it stops.
func (b *Bot) AcceptEvent(ev EventCallback) {
	b.accepting.RLock()
	defer b.accepting.RUnlock()
	if b.runCtx != nil && b.runCtx.Err() == nil {
		b.Event(b.runCtx, ev)
	}
}

// Hello implements EnvelopeHandler: Slack announced the app id.
func (b *Bot) Hello(appID string) {
	if appID != "" {
		b.appID.Store(&appID)
	}
}

// openURL asks Slack for a Socket Mode URL (apps.connections.open).
func (b *Bot) openURL(ctx context.Context) (string, error) {
	_, url, err := b.routes.single.StartSocketModeContext(ctx)
	return url, err
}

// replay hands the envelopes of cfg.Replay to the handler as if just
// read, in journal order (the order they were read), without an ack (an
// earlier process acked them), and returns once every one is settled
// (or ctx ended): the connections open after it, so one ask's acts still
// apply in the order they came, and a process that is ready (a
// connection up) has applied every click an earlier one acked. Each
// one's entry is marked done when it settles.
// An act applied before the crash is harmless a second time: acts are
// compare-and-set, a select or skip sets what it set already, and a
// Submit or Cancel on an ended ask is refused. The lifecycle's recovery
// runs alongside: an act on an ask whose post it is still adopting waits
// for the message's ts, as any act does.
func (b *Bot) replay(ctx context.Context) {
	if len(b.cfg.Replay) == 0 {
		return
	}
	b.log.Info().Int("envelopes", len(b.cfg.Replay)).Msg("replaying acked envelopes the journal kept")
	var settled sync.WaitGroup
	for _, e := range b.cfg.Replay {
		settled.Add(1)
		env := &Envelope{ID: envelopeID(e.Data), journal: b.cfg.Journal, seq: e.Seq, replayed: true, release: settled.Done, log: b.log}
		typ, cb, err := decodeEnvelope(e.Data)
		if typ != socketmode.RequestTypeInteractive || err != nil {
			env.Ack(nil)
			continue
		}
		env.Payload = cb
		b.Interactive(ctx, env)
	}
	b.cfg.Replay = nil
	done := make(chan struct{})
	go func() { settled.Wait(); close(done) }() // ends with the last act, which ends with ctx
	select {
	case <-done:
		b.log.Info().Msg("replay done")
	case <-ctx.Done():
	}
}

// newClient is the client of token: made by mk, or slack.New.
func newClient(mk func(string) *slack.Client, token string) *slack.Client {
	if mk != nil {
		return mk(token)
	}
	return slack.New(token)
}
