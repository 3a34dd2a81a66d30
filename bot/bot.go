// Package bot is the Socket Mode provider: it posts asks as Block Kit
// messages, routes interactive payloads back to the ask they belong to,
// keeps the message in step with the durable record, and ends every ask
// exactly once. It implements interaction.Provider and
// interaction.AskService.
package bot

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
)

// Config wires a Bot. API and Store are required.
type Config struct {
	// API is a Web API client made with the bot token and, for Socket
	// Mode, slack.OptionAppLevelToken.
	API   *slack.Client
	Store store.Store
	// DefaultChannel is where asks go that name neither channel nor user.
	DefaultChannel string
	// DefaultResponders may answer asks that name no responders.
	DefaultResponders []string
	// DefaultTimeout is the deadline of asks that set none; 0 = none.
	DefaultTimeout time.Duration
	// Clock drives deadlines and reminders; nil means the wall clock.
	Clock clock.Clock
	// Logger receives the bot's log lines; it never gets a token.
	Logger zerolog.Logger
	// GroupTTL is how long a user group's members are cached (default 5m).
	GroupTTL time.Duration
	// OnEnd, when set, is called after an ask ended (from any goroutine).
	OnEnd func(interaction.Ask)
}

// Bot is the Socket Mode provider. Create it with New, start it with Run.
// All methods are safe for concurrent use.
type Bot struct {
	cfg    Config
	api    *slack.Client
	store  store.Store
	clock  clock.Clock
	log    zerolog.Logger
	teamID string
	appID  atomic.Pointer[string] // from Socket Mode's hello
	botID  string

	connected atomic.Bool
	started   atomic.Bool
	waiters   waiters
	queue     keyedQueue
	syncer    *syncer
	sched     *scheduler
	groups    *groupCache
	metaKey   []byte
	handlers  sync.WaitGroup
	stats     Stats
	posts     postGates // paces chat.postMessage per rate-limited channel
}

// Stats counts what the bot did since start; read it with Bot.Counters.
type Stats struct {
	Envelopes atomic.Int64
	Posts     atomic.Int64
	Updates   atomic.Int64
	Created   atomic.Int64
	Answered  atomic.Int64
	Cancelled atomic.Int64
	Aborted   atomic.Int64
	Expired   atomic.Int64
}

// Counts is a snapshot of Stats.
type Counts struct {
	Envelopes, Posts, Updates, Created    int64
	Answered, Cancelled, Aborted, Expired int64
}

// New checks cfg and returns a Bot. It returns an error when API or Store
// is missing or the store cannot hand out the metadata key.
func New(ctx context.Context, cfg Config) (*Bot, error) {
	if cfg.API == nil || cfg.Store == nil {
		return nil, errors.New("bot: Config.API and Config.Store are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.GroupTTL <= 0 {
		cfg.GroupTTL = 5 * time.Minute
	}
	key, err := cfg.Store.Secret(ctx, "view-metadata")
	if err != nil {
		return nil, fmt.Errorf("bot: metadata key: %w", err)
	}
	b := &Bot{cfg: cfg, api: cfg.API, store: cfg.Store, clock: cfg.Clock, log: cfg.Logger, metaKey: key}
	b.waiters.init()
	b.syncer = newSyncer(b)
	b.sched = newScheduler(b)
	b.groups = newGroupCache(cfg.API, cfg.Clock, cfg.GroupTTL)
	return b, nil
}

// Run connects to Slack (auth.test, then Socket Mode), recovers the asks
// left by an earlier process, and handles payloads until ctx is done. It
// returns ctx's error, or the error that made Slack unusable (invalid auth).
func (b *Bot) Run(ctx context.Context) error {
	auth, err := b.authTest(ctx)
	if err != nil {
		return err
	}
	b.teamID, b.botID = auth.TeamID, auth.BotID
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.started.Store(true)

	sm := socketmode.New(b.api, socketmode.OptionLog(zerologAdapter{b.log}))
	runErr := make(chan error, 1)
	go func() { runErr <- sm.RunContext(ctx) }()

	var bg sync.WaitGroup
	bg.Go(func() { b.syncer.run(ctx) })
	bg.Go(func() { b.sched.run(ctx) })
	bg.Go(func() { b.recover(ctx) })

	err = b.loop(ctx, sm, runErr)
	cancel()
	bg.Wait()
	b.handlers.Wait()
	b.queue.wait()
	b.connected.Store(false)
	return err
}

// authTest calls auth.test until it answers: a refused token is fatal, a
// Slack that cannot be reached is waited for (1 s doubling to 30 s).
func (b *Bot) authTest(ctx context.Context) (*slack.AuthTestResponse, error) {
	wait := time.Second
	for {
		auth, err := b.api.AuthTestContext(ctx)
		if err == nil {
			return auth, nil
		}
		var se slack.SlackErrorResponse
		if errors.As(err, &se) || ctx.Err() != nil {
			return nil, fmt.Errorf("bot run: auth.test: %w", slackErr(err))
		}
		b.log.Warn().Err(slackErr(err)).Dur("retry_in", wait).Msg("Slack unreachable; retrying")
		if !clock.Sleep(ctx, wait) {
			return nil, ctx.Err()
		}
		wait = min(2*wait, 30*time.Second)
	}
}

func (b *Bot) loop(ctx context.Context, sm *socketmode.Client, runErr chan error) error {
	for {
		select {
		case <-ctx.Done():
			<-runErr
			return ctx.Err()
		case err := <-runErr:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("bot run: socket mode: %w", interaction.Errorf(interaction.SlackError, "%v", err))
		case evt := <-sm.Events:
			b.onEvent(ctx, sm, evt)
		}
	}
}

func (b *Bot) onEvent(ctx context.Context, sm *socketmode.Client, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeHello:
		b.connected.Store(true)
		if evt.Request != nil && evt.Request.ConnectionInfo.AppID != "" {
			id := evt.Request.ConnectionInfo.AppID
			b.appID.Store(&id)
		}
	case socketmode.EventTypeConnected:
		b.connected.Store(true)
	case socketmode.EventTypeConnecting, socketmode.EventTypeConnectionError, socketmode.EventTypeDisconnect:
		b.connected.Store(false)
	case socketmode.EventTypeInvalidAuth:
		b.connected.Store(false)
		b.log.Error().Msg("slack refused the app token (invalid auth)")
	case socketmode.EventTypeInteractive:
		b.stats.Envelopes.Add(1)
		b.onInteractive(ctx, sm, evt)
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeSlashCommand:
		b.stats.Envelopes.Add(1)
		if evt.Request != nil {
			b.ack(sm, evt.Request, nil)
		}
	}
}

func (b *Bot) ack(sm *socketmode.Client, req *socketmode.Request, payload any) {
	if err := sm.Ack(*req, payload); err != nil {
		b.log.Warn().Err(err).Str("envelope", req.EnvelopeID).Msg("ack failed")
	}
}

// Ready returns nil when the Socket Mode connection is up, else an error
// saying why not.
func (b *Bot) Ready(context.Context) error {
	switch {
	case !b.started.Load():
		return errors.New("slack: not started")
	case !b.connected.Load():
		return errors.New("slack: socket mode not connected")
	}
	return nil
}

// Counters returns what the bot did since start: envelopes received,
// messages posted and updated, asks created and ended by outcome.
func (b *Bot) Counters() Counts {
	s := &b.stats
	return Counts{
		Envelopes: s.Envelopes.Load(), Posts: s.Posts.Load(), Updates: s.Updates.Load(), Created: s.Created.Load(),
		Answered: s.Answered.Load(), Cancelled: s.Cancelled.Load(), Aborted: s.Aborted.Load(), Expired: s.Expired.Load(),
	}
}

func (s *Stats) ended(st interaction.Status) {
	switch st {
	case interaction.StatusAnswered:
		s.Answered.Add(1)
	case interaction.StatusCancelled:
		s.Cancelled.Add(1)
	case interaction.StatusAborted:
		s.Aborted.Add(1)
	case interaction.StatusExpired:
		s.Expired.Add(1)
	}
}

// appIDNow returns the app id Slack announced, or "" before the first hello.
func (b *Bot) appIDNow() string {
	if p := b.appID.Load(); p != nil {
		return *p
	}
	return ""
}

func (b *Bot) now() time.Time { return b.clock.Now().UTC() }

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func newID() string {
	var buf [10]byte
	_, _ = rand.Read(buf[:])
	return "a" + idEncoding.EncodeToString(buf[:])
}

type zerologAdapter struct{ l zerolog.Logger }

func (z zerologAdapter) Output(_ int, s string) error {
	z.l.Debug().Str("component", "socketmode").Msg(s)
	return nil
}
