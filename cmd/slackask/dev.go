package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"github.com/slackask/slackask/asks"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/devui"
	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/slackid"
	"github.com/slackask/slackask/slackoauth"
)

// The workspace `slackask dev` starts with.
const (
	devBotToken    = "xoxb-slackask-dev"
	devAppToken    = "xapp-slackask-dev"
	devChannel     = "C0DEV"
	devChannelName = "dev"
	devYou         = "U0DEV"
	devAlice       = "U0ALICE"
	devBob         = "U0BOB"
	devGroup       = "S0REVIEW"
	devGroupHandle = "reviewers"
	devDatabase    = "slackask-dev.db"
	devTeam        = "T0DEV"
	devClientID    = "slackask-dev.client"
)

// cmdDev runs `slackask dev`: the Slack emulator, the service wired to it
// exactly as serve wires to Slack, and the emulator's web page.
func cmdDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	mode := fs.String("mode", "", "how the emulator reaches slackask, `MODE`: socket (Socket Mode) or http (signed POSTs to /slack/…); default SLACKASK_SLACK_MODE's")
	oauth := fs.Bool("oauth", false, "install through the emulator's OAuth pages (/slack/install), as a workspace installs the app; implies --mode http")
	fs.Usage = func() { fmt.Fprint(fs.Output(), commandHelp()["dev"]) }
	if err := parseFlags(fs, args, stdout); err != nil {
		return flagFailed(stderr, "dev", err)
	}
	cfg, reset, err := devConfig(*mode, *oauth)
	if err != nil {
		fmt.Fprintf(stderr, "slackask dev: %v\n", err)
		return 2
	}
	log, err := cfg.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "slackask dev: %v\n", err)
		return 2
	}
	if err := runDev(ctx, cfg, log, &devHooks{stdout: stdout, resetDB: reset}); err != nil {
		fmt.Fprintf(stderr, "slackask dev: %v\n", err)
		return 1
	}
	return 0
}

// devConfig loads the environment as serve does (with mode, when not
// empty, as SLACKASK_SLACK_MODE) and fills in what dev provides: the emulator's tokens, the #dev channel, a database file of its
// own (reset is true when that default file should start empty) and
// console logs. Every other setting is honoured. With oauth there is no
// bot token: the emulator's workspace is installed through
// /slack/install, with the emulator's client credentials and (unless
// SLACKASK_ENCRYPTION_KEY is set) an encryption key of the run.
func devConfig(mode string, oauth bool) (cfg config.Config, reset bool, err error) {
	cfg, err = config.Load()
	if err != nil {
		return cfg, false, err
	}
	if oauth {
		if mode != "" && mode != config.SlackModeHTTP {
			return cfg, false, errors.New("--oauth installs over Slack's HTTP mode: use it without --mode, or with --mode http")
		}
		mode = config.SlackModeHTTP
	}
	if mode != "" {
		cfg.SlackMode = mode // ValidateServe refuses a mode it does not know
	}
	set := func(name string) bool {
		v, ok := os.LookupEnv(name)
		return ok && strings.TrimSpace(v) != ""
	}
	cfg.SlackBotToken, cfg.SlackAppToken = devBotToken, devAppToken
	if cfg.HTTPMode() {
		// The emulator signs its POSTs with a secret of this run.
		cfg.SlackAppToken, cfg.SlackSigningSecret = "", rand.Text()
	}
	if oauth {
		cfg.SlackBotToken = ""
		cfg.SlackClientID, cfg.SlackClientSecret = devClientID, rand.Text()
		if !set("SLACKASK_ENCRYPTION_KEY") {
			key := make([]byte, installs.KeySize)
			_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
			cfg.EncryptionKey = base64.StdEncoding.EncodeToString(key)
		}
		// Both replaced by the emulator's and the API's once they listen.
		cfg.PublicURL, cfg.SlackAuthorizeURL = "http://127.0.0.1", "http://127.0.0.1/oauth/v2/authorize"
	}
	cfg.SlackAPIURL = "http://127.0.0.1/api/" // replaced by the emulator's once it listens
	if cfg.Channel == "" {
		cfg.Channel = devChannel
	}
	if !set("SLACKASK_DATABASE") {
		cfg.Database, reset = devDatabase, true
	}
	if !set("SLACKASK_LOG_FORMAT") {
		cfg.LogFormat = "console"
	}
	if err := cfg.ValidateServe(); err != nil {
		return cfg, false, err
	}
	if cfg.DevAddr == "" {
		return cfg, false, errors.New("SLACKASK_DEV_ADDR is empty")
	}
	return cfg, reset, nil
}

// devHooks lets tests run dev on their own listeners and see inside.
type devHooks struct {
	stdout      io.Writer
	resetDB     bool              // remove the database file first (the emulator keeps nothing between runs)
	devListener net.Listener      // instead of listening on cfg.DevAddr
	apiListener net.Listener      // instead of listening on cfg.HTTPAddr
	started     func(d devStatus) // once the page and the HTTP API listen
}

// devStatus is what a started dev process offers.
type devStatus struct {
	PageURL string
	APIURL  string
	Fake    *slackfake.Server
}

// runDev starts the emulator, its page and the service, and runs until ctx
// ends.
func runDev(ctx context.Context, cfg config.Config, log zerolog.Logger, hooks *devHooks) (err error) {
	if hooks == nil {
		hooks = &devHooks{}
	}
	if hooks.stdout == nil {
		hooks.stdout = io.Discard
	}
	// Listen first: a second `slackask dev` fails here, before touching
	// the database of the first.
	devLn, apiLn := hooks.devListener, hooks.apiListener
	if devLn == nil {
		if devLn, err = net.Listen("tcp", cfg.DevAddr); err != nil {
			return fmt.Errorf("listen on SLACKASK_DEV_ADDR %s: %w", cfg.DevAddr, err)
		}
	}
	defer devLn.Close()
	if apiLn == nil {
		if apiLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return fmt.Errorf("listen on SLACKASK_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
		}
	}
	defer apiLn.Close() // serve closes it too; this covers its early errors
	if hooks.resetDB {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal", journalSuffix} {
			if err := os.Remove(cfg.Database + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("starting %s afresh: %w", cfg.Database, err)
			}
		}
	}

	fake, err := slackfake.New(slackfake.Config{
		BotToken: cfg.SlackBotToken, AppToken: cfg.SlackAppToken, TeamID: devTeam, AppID: "A0SLACKASK",
		ClientID: cfg.SlackClientID, ClientSecret: cfg.SlackClientSecret,
		// A permalink opens this page at the message, highlighted.
		PermalinkBase: browsable(devLn.Addr()),
		SigningSecret: cfg.SlackSigningSecret,
		Logf: func(format string, args ...any) {
			log.Debug().Str("component", "emulator").Msg(fmt.Sprintf(format, args...))
		},
	})
	if err != nil {
		return err
	}
	defer fake.Close()
	seedWorkspace(fake, cfg.Channel)
	cfg.SlackAPIURL = fake.APIURL()

	apiURL, pageURL := browsable(apiLn.Addr()), browsable(devLn.Addr())
	cfg.URL = apiURL // what the start-up log and the banner name, as in use
	if cfg.HTTPMode() {
		fake.UseHTTP(apiURL+"/slack/interactivity", apiURL+"/slack/events")
	}
	if cfg.OAuth() {
		// The install link goes to the emulator's authorize page, which
		// approves at once for its workspace and comes back here.
		cfg.PublicURL, cfg.SlackAuthorizeURL = apiURL, fake.URL()+"/oauth/v2/authorize"
	}
	curl := devCurl(apiURL, cfg.APIToken != "")
	if cfg.OAuth() {
		// Serving installations, slackask wants each ask to name its
		// workspace.
		curl = strings.Replace(curl, `{"agent":`, `{"workspace":"`+devTeam+`","agent":`, 1)
	}
	ui := devui.New(fake, devui.Options{
		Channel: cfg.Channel, User: devYou, GroupNames: map[string]string{devGroup: devGroupHandle},
		APIURL: apiURL, Curl: curl,
		Logf: func(format string, args ...any) {
			log.Warn().Str("component", "devui").Msg(fmt.Sprintf(format, args...))
		},
	})
	page := &http.Server{Handler: ui, ReadHeaderTimeout: 10 * time.Second}
	page.RegisterOnShutdown(ui.Close)
	pageDone := make(chan error, 1)
	go func() { pageDone <- page.Serve(devLn) }()
	defer func() {
		ui.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = page.Shutdown(sctx)
		if perr := <-pageDone; perr != nil && !errors.Is(perr, http.ErrServerClosed) && err == nil {
			err = fmt.Errorf("page: %w", perr)
		}
	}()

	// Asks an earlier run left pending were posted in an emulator that is
	// gone: nobody can answer them, so they are ended at start.
	startedAt := time.Now()
	var svc interaction.AskService
	sh := serveHooks{listener: apiLn, service: func(s *asks.Service) { svc = s }, namedIDs: func(ids []string) { addPeople(fake, ids) }}
	sh.started = func(string) {
		if !hooks.resetDB && svc != nil {
			n, err := endOrphans(ctx, svc, startedAt)
			if err != nil {
				log.Warn().Err(err).Msg("could not end the asks an earlier dev run left pending")
			}
			if n > 0 {
				log.Info().Int("asks", n).Msg("ended the asks an earlier dev run left pending")
			}
		}
		if cfg.HTTPMode() {
			// As Slack checks a new events URL: signed, answered with its challenge.
			if err := fake.VerifyEventsURL(ctx); err != nil {
				log.Warn().Err(err).Msg("the emulator's url_verification failed")
			}
		}
		fmt.Fprint(hooks.stdout, devBanner(pageURL, apiURL, curl, cfg, hooks.resetDB))
		log.Info().Str("page", pageURL).Str("api", apiURL).Msg("slackask dev ready")
		if hooks.started != nil {
			hooks.started(devStatus{PageURL: pageURL, APIURL: apiURL, Fake: fake})
		}
	}
	return serve(ctx, cfg, log, &sh)
}

// addPeople makes every user id an ask names that the emulator does not
// know a person of it (in the page's sidebar), so that any example works
// in dev: the README's U01ALICE becomes "alice". serve refuses such an id
// instead (Slack does not know it).
func addPeople(fake *slackfake.Server, ids []string) {
	known, names := map[string]bool{}, map[string]bool{}
	for _, u := range fake.Users() {
		known[u.ID], names[u.Name] = true, true
	}
	for _, id := range ids {
		if slackid.IsUser(id) && !known[id] {
			name := personName(id)
			if names[name] {
				name += " (" + id + ")" // two alices would look like one on the page
			}
			fake.AddUser(id, name)
			known[id], names[name] = true, true
		}
	}
}

// personName makes a name from a user id: its letters after the leading
// U or W and digits, in lower case ("U01ALICE" → "alice"), or the id in
// lower case when that leaves nothing.
func personName(id string) string {
	rest := strings.TrimLeft(id[1:], "0123456789")
	if rest == "" {
		return strings.ToLower(id)
	}
	return strings.ToLower(rest)
}

// seedWorkspace creates the people, the channel and the user group of the
// dev workspace.
func seedWorkspace(fake *slackfake.Server, channel string) {
	fake.AddUser(devYou, "dev")
	fake.AddUser(devAlice, "alice")
	fake.AddUser(devBob, "bob")
	fake.AddChannel(devChannel, devChannelName)
	if channel != devChannel && channel != "" {
		fake.AddChannel(channel, strings.TrimPrefix(channelName(channel), "#"))
	}
	fake.AddUserGroup(devGroup, devYou, devAlice)
}

// devAsk is the example request printed at start and shown on the page:
// a select, a multi-select and a free-text question that dev and the
// reviewers group may answer.
const devAsk = `{"agent":{"id":"demo","name":"Demo agent"},` +
	`"questions":[` +
	`{"id":"db","header":"Database","question":"Which database should the service use?",` +
	`"options":[{"label":"PostgreSQL","description":"what we run elsewhere"},{"label":"SQLite","description":"one file, no server"}]},` +
	`{"id":"envs","question":"Deploy to which environments?","multiSelect":true,"options":[{"label":"dev"},{"label":"staging"},{"label":"prod"}]},` +
	`{"id":"notes","question":"Anything else I should know?"}],` +
	`"responders":["` + devYou + `","` + devGroup + `"]}`

// devCurl is a ready-to-paste ask that waits for the answer.
func devCurl(apiURL string, token bool) string {
	auth := ""
	if token {
		auth = ` -H "Authorization: Bearer $SLACKASK_API_TOKEN"`
	}
	return "curl -s '" + apiURL + "/v1/asks?wait=10m' -H 'Content-Type: application/json'" + auth + " -d '" + devAsk + "'"
}

func devBanner(pageURL, apiURL, curl string, cfg config.Config, fresh bool) string {
	tokenLine := ""
	if cfg.APIToken != "" {
		tokenLine = "\n  export SLACKASK_API_TOKEN=…   (the token this dev run was given)"
	}
	db := cfg.Database
	if fresh {
		db += " (started afresh: the emulator keeps nothing between runs)"
	}
	return fmt.Sprintf(`
slackask dev: slackask wired to a local Slack emulator (no workspace, no tokens)

  Open  %s    you are "dev"; switch to alice or bob on the page
  API   %s

slackask ask and slackask mcp find this API with (in another shell):

  export SLACKASK_URL=%s%s

Ask something; curl waits until you answer in the browser:

  %s

Questions go to %s. dev and @%s (dev, alice) may answer this one; bob may not.
%sDatabase: %s. Ctrl-C stops. For a real workspace: slackask serve (see README.md).

`, pageURL, apiURL, apiURL, tokenLine, curl, channelName(cfg.Channel), devGroupHandle, devMode(cfg), db)
}

// devMode is the banner's line on how the emulator reaches slackask (and,
// with OAuth, how to install it first).
func devMode(cfg config.Config) string {
	if !cfg.HTTPMode() {
		return ""
	}
	line := "Slack's HTTP mode: every click is a signed POST to " + "/slack/interactivity (the events URL is verified).\n"
	if cfg.OAuth() {
		line += "OAuth: install it first, as a workspace would: open " + cfg.PublicURL + slackoauth.InstallPath +
			"\n(the emulator approves at once for its workspace " + devTeam + "; until then asks are refused).\n"
	}
	return line
}

// channelName is how the banner names the default channel.
func channelName(id string) string {
	if id == devChannel {
		return "#" + devChannelName
	}
	return "#" + strings.ToLower(strings.TrimPrefix(id, "#"))
}

// browsable returns an http URL for a listen address, with a wildcard host
// (0.0.0.0, ::) replaced by the loopback address.
func browsable(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}
