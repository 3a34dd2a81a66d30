package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/apikeys"
	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/bot"
	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/dsh"
	"github.com/slackask/slackask/httpapi"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/journal"
	"github.com/slackask/slackask/internal/workslots"
	"github.com/slackask/slackask/mcp"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/postgres"
	"github.com/slackask/slackask/store/slotted"
	"github.com/slackask/slackask/store/sqlite"
	"github.com/slackask/slackask/webhook"
)

func cmdServe(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "slackask serve: takes no arguments (configure it with environment variables)\n")
		return 2
	}
	cfg, err := config.Load()
	if err == nil {
		err = cfg.ValidateServe()
	}
	if err != nil {
		fmt.Fprintf(stderr, "slackask serve: %v\n", err)
		return 2
	}
	log, err := cfg.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "slackask serve: %v\n", err)
		return 2
	}
	if err := serve(ctx, cfg, log, nil); err != nil {
		log.Error().Err(err).Msg("slackask stopped")
		return 1
	}
	return 0
}

// serveHooks lets tests see inside a running service.
type serveHooks struct {
	clock    clock.Clock
	listener net.Listener        // used instead of listening on cfg.HTTPAddr
	started  func(addr string)   // called once the HTTP API listens
	service  func(*asks.Service) // called with the ask service once it exists
	// postTimeout bounds each chat.postMessage (0: the lifecycle's default).
	postTimeout time.Duration
	// namedIDs, when set, sees the user and user-group ids of each create
	// before Slack is asked about them (dev adds unknown people).
	namedIDs func(ids []string)
}

// serve wires config → store → lifecycle (asks) → Slack adapter (bot) →
// front doors (HTTP API, MCP, dsh) and runs until ctx ends.
func serve(ctx context.Context, cfg config.Config, log zerolog.Logger, hooks *serveHooks) error {
	if hooks == nil {
		hooks = &serveHooks{}
	}
	log.Info().Object("config", cfg).Msg("starting slackask")
	st, err := openStore(ctx, cfg.Database)
	if err != nil {
		return err
	}
	defer st.Close()

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64 // posts and updates in parallel reuse connections to Slack
	defer transport.CloseIdleConnections()
	slackHTTP := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	api := slack.New(cfg.SlackBotToken, slack.OptionAppLevelToken(cfg.SlackAppToken), slack.OptionAPIURL(cfg.SlackAPIURL),
		slack.OptionHTTPClient(slackHTTP))
	// With OAuth installs, each workspace's token comes from its
	// installation in the store (sealed), and the bot routes every call
	// by it; without, SLACK_BOT_TOKEN speaks for the one workspace.
	installations, err := openInstalls(ctx, cfg, st, slackHTTP, log)
	if err != nil {
		return err
	}
	// One set of work slots bounds both the payload decoding and the
	// store work that follows acks, so the Socket Mode reader keeps a
	// processor.
	slots := workslots.New()
	// Replicas on PostgreSQL hand each other the acks a stopping one can
	// no longer send (bot/relay.go).
	relay, _ := st.(store.AckRelay)
	bcfg := bot.Config{
		API: api, Secrets: st, Clock: hooks.clock, Slots: slots, Connections: cfg.SocketConnections, Relay: relay,
		Logger: log.With().Str("component", "bot").Logger(), HTTPMode: cfg.HTTPMode(),
	}
	if installations != nil {
		bcfg.API, bcfg.Installs, bcfg.Uninstalls = nil, installations, installations
		bcfg.NewClient = func(token string) *slack.Client {
			return slack.New(token, slack.OptionAPIURL(cfg.SlackAPIURL), slack.OptionHTTPClient(slackHTTP))
		}
	}
	if !postgres.IsURL(cfg.Database) {
		j, replay, err := openJournal(cfg.Database, log)
		if err != nil {
			return err
		}
		defer j.Close() // after b.Run returned (the wait group below): its handlers mark entries done
		bcfg.Journal, bcfg.Replay = j, replay
	}
	b, err := bot.New(ctx, bcfg)
	if err != nil {
		return err
	}
	guard := webhook.Guard{AllowPrivate: cfg.CallbackAllowPrivate}
	deliverer := webhook.NewDeliverer(webhook.Options{Guard: guard})
	defer deliverer.CloseIdleConnections()
	svc, err := asks.New(asks.Config{
		Store: slotted.New(st, slots), Surface: b, DefaultChannel: cfg.Channel, DefaultResponders: cfg.Responders,
		DefaultTimeout: cfg.Timeout, Clock: hooks.clock, Logger: log.With().Str("component", "asks").Logger(),
		PostTimeout: hooks.postTimeout,
		CheckIDs: func(ctx context.Context, workspace string, ids []string) error {
			if hooks.namedIDs != nil {
				hooks.namedIDs(ids)
			}
			return b.CheckIDs(ctx, workspace, ids)
		},
		Callbacks: asks.Callbacks{DefaultURL: cfg.CallbackURL, Secret: []byte(cfg.CallbackSecret), Guard: guard, Deliverer: deliverer},
	})
	if err != nil {
		return err
	}
	defer svc.Close() // after the front doors and the bot stopped (wg below)
	if hooks.service != nil {
		hooks.service(svc)
	}
	ready := []func(context.Context) error{b.Ready}
	var bridge *dsh.Leased
	if cfg.DshURL != "" {
		dcfg := dsh.Config{URL: cfg.DshURL, Channel: cfg.DshChannel, Service: svc, Logger: log.With().Str("component", "dsh").Logger()}
		if _, err := dsh.New(dcfg); err != nil {
			return fmt.Errorf("SLACKASK_DSH_URL: %w", err)
		}
		// Replicas sharing a database run the bridge on one of them at a
		// time; it moves when that one dies.
		bridge = &dsh.Leased{Store: st, Name: "dsh-bridge", Holder: processID(), TTL: dshLeaseTTL, Logger: dcfg.Logger,
			New: func() (dsh.Runner, error) { return dsh.New(dcfg) }}
		ready = append(ready, bridge.Ready)
	}
	var _ httpapi.Notifier = svc // long-polls park instead of holding a goroutine
	httpAPI := httpapi.New(svc, httpapi.Options{Token: cfg.APIToken, Keys: apikeys.Resolver(st), Ready: allReady(ready), Logger: log.With().Str("component", "http").Logger()})

	httpAPI.Mount("GET /metrics", serverTokenOnly(metricsHandler(svc, b, bridge, st, allReady(ready))))
	httpAPI.Mount("/mcp", mcp.Handler(svc, mcp.Options{Context: ctx, Logger: log.With().Str("component", "mcp").Logger()}))
	// OAuth installs for many workspaces (SLACK_CLIENT_ID/SECRET): the
	// install pages, and the installations in the store.
	if err := mountOAuth(ctx, cfg, st, installations, slackHTTP, httpAPI.MountPublic, log); err != nil {
		return err
	}
	if cfg.HTTPMode() {
		// Slack's HTTP mode: signed requests, no bearer token.
		web := &bot.HTTP{Handler: b, SigningSecret: []byte(cfg.SlackSigningSecret), Log: log.With().Str("component", "slack-http").Logger()}
		httpAPI.MountPublic("/slack/interactivity", onlyPost(web.Interactivity()))
		httpAPI.MountPublic("/slack/events", onlyPost(web.Events()))
	}

	ln := hooks.listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return fmt.Errorf("listen on SLACKASK_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
		}
	}
	srv := httpapi.NewServer(ln.Addr().String(), readyzWithSockets(httpAPI, b, allReady(ready)))
	ln = httpapi.LimitActive(ln, srv, httpapi.DefaultMaxActive) // bursts of callers wait in the kernel

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := svc.Start(ctx); err != nil { // recovery, timers, message updates, once Slack answered
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Go(func() {
		if err := b.Run(ctx, svc); err != nil && !errors.Is(err, context.Canceled) {
			errs <- fmt.Errorf("slack: %w", err)
		}
		cancel()
	})
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("http: %w", err)
		}
		cancel()
	})
	wg.Go(func() { prune(ctx, st, cfg.Retention, hooks.clock, log) })
	if bridge != nil {
		wg.Go(func() { _ = bridge.Run(ctx) })
	}
	if p, ok := st.(storePinger); ok {
		wg.Go(func() { watchStore(ctx, p, b, hooks.clock, log.With().Str("component", "store").Logger()) })
	}
	log.Info().Str("addr", ln.Addr().String()).Msg("HTTP API listening")
	if hooks.started != nil {
		hooks.started(ln.Addr().String())
	}
	<-ctx.Done()
	shutdown, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelShutdown()
	_ = httpAPI.Shutdown(shutdown, srv) // srv.Shutdown and the parked long-polls
	wg.Wait()
	close(errs)
	return <-errs
}

// dshLeaseTTL is how long the dsh bridge's lease outlives its holder's
// last renewal (renewed every third of it): the bridge moves to another
// replica within about this long after its replica dies.
const dshLeaseTTL = 15 * time.Second

// processID names this process among the replicas sharing a database.
func processID() string {
	host, _ := os.Hostname()
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), buf)
}

// readyzWithSockets serves GET /readyz itself, to report the Socket Mode
// connections besides the readiness: 200 {"status":"ok","sockets":N,
// "socketsKept":K} when ready (at least one connection up and the dsh
// bridge, if this replica runs it, connected), else 503 with the reason.
// Everything else goes to next.
func readyzWithSockets(next http.Handler, b *bot.Bot, ready func(context.Context) error) http.Handler {
	type readyResponse struct {
		Status      string `json:"status"`
		Reason      string `json:"reason,omitempty"`
		Sockets     int    `json:"sockets"`
		SocketsKept int    `json:"socketsKept"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		resp, code := readyResponse{Status: "ok", Sockets: b.Connected(), SocketsKept: b.Sockets()}, http.StatusOK
		if err := ready(ctx); err != nil {
			resp.Status, resp.Reason, code = "not ready", err.Error(), http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(resp)
	})
}

// allReady reports ready when every check does.
func allReady(checks []func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, c := range checks {
			errs = append(errs, c(ctx))
		}
		return errors.Join(errs...)
	}
}

// openStore opens SLACKASK_DATABASE: a postgres:// or postgresql:// URL is
// a PostgreSQL database that several replicas may share, anything else a
// SQLite file for this process alone. Errors never show the URL's password.
func openStore(ctx context.Context, dsn string) (store.Store, error) {
	if postgres.IsURL(dsn) {
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			return nil, fmt.Errorf("SLACKASK_DATABASE: %w", err)
		}
		return st, nil
	}
	st, err := sqlite.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("SLACKASK_DATABASE %s: %w", dsn, err)
	}
	return st, nil
}

// journalSuffix names the journal of a SQLite database: the file next to
// it, <database>-acks.
const journalSuffix = "-acks"

// openJournal opens the journal of the SQLite database at db, where the
// bot keeps the clicks it acks before storing them, and returns what an
// earlier process acked and did not process (to replay). Only a SQLite
// store has one: a replica of a PostgreSQL database may be lost with its
// disk, so there every click is stored before its ack.
func openJournal(db string, log zerolog.Logger) (*journal.Journal, []journal.Entry, error) {
	j, replay, err := journal.Open(db + journalSuffix)
	if err != nil {
		return nil, nil, fmt.Errorf("SLACKASK_DATABASE %s: %w", db, err)
	}
	if n, reason := j.Cut(); n > 0 {
		log.Warn().Int64("bytes", n).Str("reason", reason).Str("journal", j.Path()).Msg("cut a torn tail off the journal of acked clicks (written by a process that died mid-write, never acked)")
	}
	return j, replay, nil
}

// prune deletes ended asks older than the retention, hourly.
func prune(ctx context.Context, st store.Store, retention time.Duration, c clock.Clock, log zerolog.Logger) {
	if retention <= 0 {
		return
	}
	if c == nil {
		c = clock.Real{}
	}
	for {
		n, err := st.Prune(ctx, c.Now().Add(-retention))
		if err != nil && ctx.Err() == nil {
			log.Error().Err(err).Msg("prune ended asks")
		} else if n > 0 {
			log.Info().Int("deleted", n).Msg("pruned ended asks past retention")
		}
		select {
		case <-ctx.Done():
			return
		case <-c.After(time.Hour):
		}
	}
}

// onlyPost serves h for POST only; anything else is 405.
func onlyPost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}
