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
	posted    postedCache
	slots     workSlots // bounds the CPU-heavy work after acks
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
	b := &Bot{cfg: cfg, api: cfg.API, clock: cfg.Clock, log: cfg.Logger, metaKey: key, slots: newWorkSlots()}
	b.store = slottedStore{Store: cfg.Store, slots: b.slots}
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

	var bg sync.WaitGroup
	bg.Go(func() { b.syncer.run(ctx) })
	bg.Go(func() { b.sched.run(ctx) })
	bg.Go(func() { b.recover(ctx) })

	err = b.runSocket(ctx)
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
