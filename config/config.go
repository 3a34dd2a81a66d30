// Package config reads slackask's configuration from the environment
// (kelseyhightower/envconfig), fills in defaults, validates it, and formats it
// for logs with every secret redacted.
//
// The variable names are the external contract of the design brief and are
// spelled out in explicit `envconfig` tags, so no prefix or field name ever
// changes them.
package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/rs/zerolog"

	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/slackid"
	"github.com/slackask/slackask/webhook"
)

// Defaults of the variables that have one. They are stated here only: Load
// applies them (the struct tags carry no defaults).
const (
	DefaultSlackAPIURL       = "https://slack.com/api/"
	DefaultHTTPAddr          = "127.0.0.1:8080"
	DefaultDatabase          = "slackask.db"
	DefaultLogLevel          = "info"
	DefaultLogFormat         = "json"
	DefaultURL               = "http://127.0.0.1:8080"
	DefaultRetention         = 720 * time.Hour
	DefaultDevAddr           = "127.0.0.1:8090"
	DefaultSocketConnections = 2
	DefaultSlackMode         = SlackModeSocket
	// DefaultSlackAuthorizeURL is Slack's OAuth v2 authorize page.
	DefaultSlackAuthorizeURL = "https://slack.com/oauth/v2/authorize"
)

// The values of SLACKASK_SLACK_MODE.
const (
	SlackModeSocket = "socket"
	SlackModeHTTP   = "http"
)

// MaxSocketConnections is Slack's limit of Socket Mode connections per app.
const MaxSocketConnections = 10

// Config is slackask's configuration. Each field's tag names its environment
// variable exactly. A variable that is set but empty counts as unset for the
// string and number variables that have a default; an empty duration is an
// error.
type Config struct {
	// SlackBotToken is the bot token, xoxb-…; required by serve.
	SlackBotToken string `envconfig:"SLACK_BOT_TOKEN"`
	// SlackAppToken is the app-level token, xapp-… (connections:write);
	// required by serve.
	SlackAppToken string `envconfig:"SLACK_APP_TOKEN"`
	// SlackMode is how Slack reaches slackask: "socket" (Socket Mode, the
	// default) or "http" (Slack POSTs to /slack/events and
	// /slack/interactivity, signed with SlackSigningSecret).
	SlackMode string `envconfig:"SLACKASK_SLACK_MODE"`
	// SlackSigningSecret is the app's signing secret (Basic Information),
	// which every request of HTTP mode is verified with; a secret.
	SlackSigningSecret string `envconfig:"SLACK_SIGNING_SECRET"`
	// SlackAPIURL is the Slack Web API base URL; Load makes it end in "/".
	SlackAPIURL string `envconfig:"SLACK_API_URL"`
	// Channel is the default conversation (channel id) for asks; empty
	// means each ask must name one.
	Channel string `envconfig:"SLACKASK_CHANNEL"`
	// Responders are the default user (U…, W…) and user-group (S…) ids
	// allowed to answer, comma-separated; empty means anyone who can see
	// the message. Load trims spaces and drops empty items.
	Responders []string `envconfig:"SLACKASK_RESPONDERS"`
	// Timeout is the default deadline per ask; 0 (the default) means none.
	Timeout time.Duration `envconfig:"SLACKASK_TIMEOUT"`
	// HTTPAddr is the listen address of the HTTP API.
	HTTPAddr string `envconfig:"SLACKASK_HTTP_ADDR"`
	// APIToken is the bearer token of the HTTP API; required when HTTPAddr
	// is not a loopback address. It is used exactly as given: one that is
	// blank or has spaces around it is refused, not trimmed.
	APIToken string `envconfig:"SLACKASK_API_TOKEN"`
	// Database is a SQLite file path, or a postgres:// (postgresql://) URL
	// for several replicas on one database.
	Database string `envconfig:"SLACKASK_DATABASE"`
	// LogLevel is a zerolog level name (trace, debug, info, warn, error,
	// fatal, panic, disabled).
	LogLevel string `envconfig:"SLACKASK_LOG_LEVEL"`
	// LogFormat is "json" or "console".
	LogFormat string `envconfig:"SLACKASK_LOG_FORMAT"`
	// URL is where `slackask ask` and `slackask mcp` find the server.
	URL string `envconfig:"SLACKASK_URL"`
	// Retention is how long ended asks are kept; 0 means forever.
	Retention time.Duration `envconfig:"SLACKASK_RETENTION"`
	// DshURL is the dsh front door's upstream URL; empty disables it.
	DshURL string `envconfig:"SLACKASK_DSH_URL"`
	// DshChannel is the channel the dsh front door asks in.
	DshChannel string `envconfig:"SLACKASK_DSH_CHANNEL"`
	// DevAddr is the listen address of the development helpers.
	DevAddr string `envconfig:"SLACKASK_DEV_ADDR"`
	// SocketConnections is how many Socket Mode connections each process
	// keeps open, 1 to MaxSocketConnections; Slack allows 10 per app across
	// all replicas.
	// Load parses it itself (ignored by envconfig) so that an empty value
	// means the default and a bad one gets a clear error.
	SocketConnections int `envconfig:"SLACKASK_SOCKET_CONNECTIONS" ignored:"true"`
	// CallbackURL is the default http or https URL that each ask resource
	// is POSTed to when the ask ends (an ask's own callbackUrl wins); empty
	// means none.
	CallbackURL string `envconfig:"SLACKASK_CALLBACK_URL"`
	// CallbackSecret is the HMAC-SHA256 key of the callbacks'
	// X-Slackask-Signature; a secret, redacted in logs.
	CallbackSecret string `envconfig:"SLACKASK_CALLBACK_SECRET"`
	// CallbackAllowPrivate lets CallbackURL reach private, loopback and
	// link-local addresses (refused by default).
	// Load parses it itself, as SocketConnections; empty means false.
	CallbackAllowPrivate bool `envconfig:"SLACKASK_CALLBACK_ALLOW_PRIVATE" ignored:"true"`

	// SlackClientID and SlackClientSecret (Basic Information → App
	// Credentials) turn on OAuth installs: serve mounts /slack/install and
	// /slack/oauth_redirect and keeps installations in the store. The
	// secret is redacted in logs.
	SlackClientID     string `envconfig:"SLACK_CLIENT_ID"`
	SlackClientSecret string `envconfig:"SLACK_CLIENT_SECRET"`
	// EncryptionKey seals installations' tokens at rest (AES-256-GCM): 32
	// bytes in base64. EncryptionKeyPrevious, during a key rotation, opens
	// what the old key sealed until `slackask installs rekey` has sealed
	// it again. Both secrets.
	EncryptionKey         string `envconfig:"SLACKASK_ENCRYPTION_KEY"`
	EncryptionKeyPrevious string `envconfig:"SLACKASK_ENCRYPTION_KEY_PREVIOUS"`
	// PublicURL is slackask's URL as browsers and Slack reach it
	// (https://slackask.example.com): the OAuth redirect URL is
	// PublicURL + "/slack/oauth_redirect". Required with OAuth.
	PublicURL string `envconfig:"SLACKASK_PUBLIC_URL"`
	// SlackAuthorizeURL is Slack's OAuth authorize page (tests point it
	// at the fake).
	SlackAuthorizeURL string `envconfig:"SLACK_AUTHORIZE_URL"`
	// OAuthPKCE adds PKCE (S256) to the install flow; only for an app
	// whose PKCE setting is on in Slack (see README). Parsed by Load.
	OAuthPKCE bool `envconfig:"SLACKASK_OAUTH_PKCE" ignored:"true"`
}

// OAuth reports whether OAuth installs are on (SLACK_CLIENT_ID or
// SLACK_CLIENT_SECRET set; ValidateServe wants both).
func (c Config) OAuth() bool { return c.SlackClientID != "" || c.SlackClientSecret != "" }

// Load reads the configuration from the environment and normalises it (see
// Config). It returns an error naming the variable when a value cannot be
// parsed (a duration); the error never contains the value of a token.
func Load() (Config, error) {
	var c Config
	if err := envconfig.Process("", &c); err != nil {
		var pe *envconfig.ParseError
		if errors.As(err, &pe) {
			// Only the durations can fail to parse, and they are no secret;
			// still, name the variable and keep envconfig's wording out.
			return Config{}, fmt.Errorf("config: %s: %q is not a Go duration (like 90s, 10m or 0)", pe.KeyName, pe.Value)
		}
		return Config{}, fmt.Errorf("config: %w", err)
	}
	if _, ok := os.LookupEnv("SLACKASK_RETENTION"); !ok {
		c.Retention = DefaultRetention
	}
	c.SocketConnections = DefaultSocketConnections
	if v := strings.TrimSpace(os.Getenv("SLACKASK_SOCKET_CONNECTIONS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Config{}, fmt.Errorf("config: SLACKASK_SOCKET_CONNECTIONS: %q is not a whole number (1 to %d)", v, MaxSocketConnections)
		}
		c.SocketConnections = n
	}
	if v := strings.TrimSpace(os.Getenv("SLACKASK_CALLBACK_ALLOW_PRIVATE")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("config: SLACKASK_CALLBACK_ALLOW_PRIVATE: %q is not true or false", v)
		}
		c.CallbackAllowPrivate = b
	}
	if v := strings.TrimSpace(os.Getenv("SLACKASK_OAUTH_PKCE")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("config: SLACKASK_OAUTH_PKCE: %q is not true or false", v)
		}
		c.OAuthPKCE = b
	}
	c.normalize()
	return c, nil
}

// normalize applies the defaults to string variables that were set empty,
// gives SlackAPIURL its trailing slash and cleans Responders.
func (c *Config) normalize() {
	for _, f := range []struct {
		v   *string
		def string
	}{
		{&c.SlackAPIURL, DefaultSlackAPIURL},
		{&c.HTTPAddr, DefaultHTTPAddr},
		{&c.Database, DefaultDatabase},
		{&c.LogLevel, DefaultLogLevel},
		{&c.LogFormat, DefaultLogFormat},
		{&c.URL, DefaultURL},
		{&c.DevAddr, DefaultDevAddr},
		{&c.SlackMode, DefaultSlackMode},
		{&c.SlackAuthorizeURL, DefaultSlackAuthorizeURL},
	} {
		*f.v = strings.TrimSpace(*f.v)
		if *f.v == "" {
			*f.v = f.def
		}
	}
	if !strings.HasSuffix(c.SlackAPIURL, "/") {
		c.SlackAPIURL += "/"
	}
	c.LogLevel = strings.ToLower(c.LogLevel)
	c.LogFormat = strings.ToLower(c.LogFormat)
	c.Channel = strings.TrimSpace(c.Channel)
	c.CallbackURL = strings.TrimSpace(c.CallbackURL)
	c.SlackClientID = strings.TrimSpace(c.SlackClientID)
	c.PublicURL = strings.TrimSuffix(strings.TrimSpace(c.PublicURL), "/")
	var rs []string
	for _, r := range c.Responders {
		if r = strings.TrimSpace(r); r != "" {
			rs = append(rs, r)
		}
	}
	c.Responders = rs
}

// ValidateServe checks what `slackask serve` needs. It returns nil, or one
// error (errors.Join) listing every problem, each naming its variable;
// no message contains a token's value.
func (c Config) ValidateServe() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	switch {
	case c.OAuth(): // each workspace's token comes from its OAuth install
	case c.SlackBotToken == "":
		bad("SLACK_BOT_TOKEN is required: the bot token (xoxb-…)")
	case !strings.HasPrefix(c.SlackBotToken, "xoxb-"):
		bad("SLACK_BOT_TOKEN must be a bot token starting with xoxb-")
	}
	switch c.SlackMode {
	case SlackModeSocket, "":
		switch {
		case c.SlackAppToken == "":
			bad("SLACK_APP_TOKEN is required: the app-level token (xapp-…) with connections:write")
		case !strings.HasPrefix(c.SlackAppToken, "xapp-"):
			bad("SLACK_APP_TOKEN must be an app-level token starting with xapp-")
		}
	case SlackModeHTTP:
		if c.SlackSigningSecret == "" {
			bad("SLACK_SIGNING_SECRET is required with SLACKASK_SLACK_MODE=http: the app's signing secret (Basic Information → App Credentials)")
		}
	default:
		bad("SLACKASK_SLACK_MODE must be socket or http, not %q", c.SlackMode)
	}
	if err := checkHTTPURL(c.SlackAPIURL); err != nil {
		bad("SLACK_API_URL %v", err)
	}
	for _, r := range c.Responders {
		if !slackid.IsResponder(r) {
			bad("SLACKASK_RESPONDERS: %q is not a Slack user (U…, W…) or user-group (S…) id", r)
		}
	}
	if c.Timeout < 0 {
		bad("SLACKASK_TIMEOUT must not be negative")
	}
	if c.Retention < 0 {
		bad("SLACKASK_RETENTION must not be negative")
	}
	if c.HTTPAddr == "" {
		bad("SLACKASK_HTTP_ADDR is empty")
	} else if !IsLoopback(c.HTTPAddr) && c.APIToken == "" {
		bad("SLACKASK_API_TOKEN is required when SLACKASK_HTTP_ADDR (%s) is not a loopback address", c.HTTPAddr)
	}
	if c.APIToken != "" && strings.TrimSpace(c.APIToken) != c.APIToken {
		if strings.TrimSpace(c.APIToken) == "" {
			bad("SLACKASK_API_TOKEN is blank: give a token, or unset it")
		} else {
			bad("SLACKASK_API_TOKEN has spaces or line breaks around it: remove them (clients send the token trimmed)")
		}
	}
	if c.Database == "" {
		bad("SLACKASK_DATABASE is empty")
	}
	if c.SocketConnections < 1 || c.SocketConnections > MaxSocketConnections {
		bad("SLACKASK_SOCKET_CONNECTIONS must be between 1 and %d (Slack allows %d Socket Mode connections per app, across all replicas), not %d",
			MaxSocketConnections, MaxSocketConnections, c.SocketConnections)
	}
	if c.CallbackURL != "" {
		if err := checkHTTPURL(c.CallbackURL); err != nil {
			bad("SLACKASK_CALLBACK_URL %v", err)
		} else if err := (webhook.Guard{AllowPrivate: c.CallbackAllowPrivate}).CheckURL(c.CallbackURL); err != nil {
			bad("SLACKASK_CALLBACK_URL: %v", err)
		} else if c.CallbackSecret == "" {
			bad("SLACKASK_CALLBACK_URL is set but SLACKASK_CALLBACK_SECRET is not: callbacks are always signed, so give the secret their receiver checks")
		}
	}
	errs = append(errs, c.validateOAuth()...)
	if _, err := c.level(); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		bad("SLACKASK_LOG_FORMAT must be json or console, not %q", c.LogFormat)
	}
	if c.DshURL != "" {
		if err := checkHTTPURL(c.DshURL); err != nil {
			bad("SLACKASK_DSH_URL %v", err)
		}
	}
	return errors.Join(errs...)
}

// validateOAuth checks the OAuth install settings, when OAuth is on.
func (c Config) validateOAuth() []error {
	if !c.OAuth() {
		if c.EncryptionKey != "" {
			if _, err := installs.ParseKey("SLACKASK_ENCRYPTION_KEY", c.EncryptionKey); err != nil {
				return []error{err}
			}
		}
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.SlackClientID == "" || c.SlackClientSecret == "" {
		bad("SLACK_CLIENT_ID and SLACK_CLIENT_SECRET go together (Basic Information → App Credentials): set both for OAuth installs, or neither")
	}
	if c.EncryptionKey == "" {
		bad("SLACKASK_ENCRYPTION_KEY is required with OAuth installs: 32 random bytes in base64 (openssl rand -base64 32), which seals the installations' tokens at rest")
	} else if _, err := installs.ParseKey("SLACKASK_ENCRYPTION_KEY", c.EncryptionKey); err != nil {
		errs = append(errs, err)
	}
	if c.EncryptionKeyPrevious != "" {
		if _, err := installs.ParseKey("SLACKASK_ENCRYPTION_KEY_PREVIOUS", c.EncryptionKeyPrevious); err != nil {
			errs = append(errs, err)
		}
	}
	if c.SlackMode != SlackModeHTTP {
		bad("OAuth installs (SLACK_CLIENT_ID) serve many workspaces over HTTP: set SLACKASK_SLACK_MODE=http (Socket Mode speaks for one workspace)")
	}
	if c.PublicURL == "" {
		bad("SLACKASK_PUBLIC_URL is required with OAuth installs: slackask's public URL, whose /slack/oauth_redirect is the app's redirect URL")
	} else if err := checkHTTPURL(c.PublicURL); err != nil {
		bad("SLACKASK_PUBLIC_URL %v", err)
	}
	if err := checkHTTPURL(c.SlackAuthorizeURL); err != nil {
		bad("SLACK_AUTHORIZE_URL %v", err)
	}
	return errs
}

// Sealer returns the sealer of installations' tokens: the current key and,
// during a rotation, the previous one.
func (c Config) Sealer() (*installs.Sealer, error) {
	cur, err := installs.ParseKey("SLACKASK_ENCRYPTION_KEY", c.EncryptionKey)
	if err != nil {
		return nil, err
	}
	var prev []byte
	if c.EncryptionKeyPrevious != "" {
		if prev, err = installs.ParseKey("SLACKASK_ENCRYPTION_KEY_PREVIOUS", c.EncryptionKeyPrevious); err != nil {
			return nil, err
		}
	}
	return installs.NewSealer(cur, prev)
}

// ValidateClient checks what `slackask ask` and `slackask mcp` need: a
// usable SLACKASK_URL and log settings. It returns nil or an error naming
// the variable.
func (c Config) ValidateClient() error {
	var errs []error
	if err := checkHTTPURL(c.URL); err != nil {
		errs = append(errs, fmt.Errorf("SLACKASK_URL %v", err))
	}
	if _, err := c.level(); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		errs = append(errs, fmt.Errorf("SLACKASK_LOG_FORMAT must be json or console, not %q", c.LogFormat))
	}
	return errors.Join(errs...)
}

// checkHTTPURL returns an error (worded to follow a variable name) unless s
// is an absolute http or https URL. The error never repeats s, which may
// hold credentials.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("is not a valid URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	return nil
}

// IsLoopback reports whether the listen address addr ("host:port", or a
// bare host) only accepts connections from this machine: host "localhost",
// an address in 127.0.0.0/8, or ::1. An empty host (":8080"), 0.0.0.0, ::
// and every other name count as not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	}
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// level parses LogLevel; "" means info.
func (c Config) level() (zerolog.Level, error) {
	if c.LogLevel == "" {
		return zerolog.InfoLevel, nil
	}
	l, err := zerolog.ParseLevel(strings.ToLower(c.LogLevel))
	if err != nil || l == zerolog.NoLevel {
		return zerolog.NoLevel, fmt.Errorf("SLACKASK_LOG_LEVEL %q is not a level (trace, debug, info, warn, error, fatal, panic, disabled)", c.LogLevel)
	}
	return l, nil
}

// Logger returns a zerolog.Logger writing to w at LogLevel in LogFormat
// (console output is coloured only when w is a terminal), with timestamps.
// It does not touch zerolog's global settings. It returns an error naming
// the variable when the level or the format is not valid.
func (c Config) Logger(w io.Writer) (zerolog.Logger, error) {
	lvl, err := c.level()
	if err != nil {
		return zerolog.Nop(), err
	}
	switch c.LogFormat {
	case "", "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, NoColor: !isTerminal(w), TimeFormat: time.RFC3339}
	default:
		return zerolog.Nop(), fmt.Errorf("SLACKASK_LOG_FORMAT must be json or console, not %q", c.LogFormat)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// redactToken shows only a token's kind: "xoxb-…redacted" for a bot token,
// "xapp-…redacted" for an app token, "…redacted" for anything else set, and
// "" when unset.
func redactToken(t string) string {
	if t == "" {
		return ""
	}
	for _, p := range []string{"xoxb-", "xoxp-", "xapp-", "xoxe-"} {
		if strings.HasPrefix(t, p) {
			return p + "…redacted"
		}
	}
	return "…redacted"
}

// redactURL hides the credentials a URL may carry: the user info
// (postgres://user:pass@…, https://token@…) and the values of query
// parameters whose name suggests a secret (password, token, secret, key).
// A value that does not parse is hidden whole.
func redactURL(s string) string {
	if s == "" || !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "redacted"
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			lk := strings.ToLower(k)
			for _, w := range []string{"pass", "token", "secret", "key", "auth"} {
				if strings.Contains(lk, w) {
					q[k] = []string{"redacted"}
					break
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// fields lists the configuration in variable order with secrets redacted.
func (c Config) fields() [][2]string {
	return [][2]string{
		{"SLACK_BOT_TOKEN", redactToken(c.SlackBotToken)},
		{"SLACK_APP_TOKEN", redactToken(c.SlackAppToken)},
		{"SLACKASK_SLACK_MODE", c.SlackMode},
		{"SLACK_SIGNING_SECRET", redactToken(c.SlackSigningSecret)},
		{"SLACK_API_URL", redactURL(c.SlackAPIURL)},
		{"SLACKASK_CHANNEL", c.Channel},
		{"SLACKASK_RESPONDERS", strings.Join(c.Responders, ",")},
		{"SLACKASK_TIMEOUT", c.Timeout.String()},
		{"SLACKASK_HTTP_ADDR", c.HTTPAddr},
		{"SLACKASK_API_TOKEN", redactToken(c.APIToken)},
		{"SLACKASK_DATABASE", redactURL(c.Database)},
		{"SLACKASK_LOG_LEVEL", c.LogLevel},
		{"SLACKASK_LOG_FORMAT", c.LogFormat},
		{"SLACKASK_URL", redactURL(c.URL)},
		{"SLACKASK_RETENTION", c.Retention.String()},
		{"SLACKASK_DSH_URL", redactURL(c.DshURL)},
		{"SLACKASK_DSH_CHANNEL", c.DshChannel},
		{"SLACKASK_DEV_ADDR", c.DevAddr},
		{"SLACKASK_SOCKET_CONNECTIONS", strconv.Itoa(c.SocketConnections)},
		{"SLACKASK_CALLBACK_URL", redactURL(c.CallbackURL)},
		{"SLACKASK_CALLBACK_SECRET", redactToken(c.CallbackSecret)},
		{"SLACKASK_CALLBACK_ALLOW_PRIVATE", strconv.FormatBool(c.CallbackAllowPrivate)},
		{"SLACK_CLIENT_ID", c.SlackClientID},
		{"SLACK_CLIENT_SECRET", redactToken(c.SlackClientSecret)},
		{"SLACKASK_ENCRYPTION_KEY", redactToken(c.EncryptionKey)},
		{"SLACKASK_ENCRYPTION_KEY_PREVIOUS", redactToken(c.EncryptionKeyPrevious)},
		{"SLACKASK_PUBLIC_URL", redactURL(c.PublicURL)},
		{"SLACK_AUTHORIZE_URL", redactURL(c.SlackAuthorizeURL)},
		{"SLACKASK_OAUTH_PKCE", strconv.FormatBool(c.OAuthPKCE)},
	}
}

// String returns the configuration as VAR=value pairs with every token
// redacted (xoxb-…redacted) and URL passwords hidden, safe to log or print.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("config{")
	for i, f := range c.fields() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%q", f[0], f[1])
	}
	b.WriteByte('}')
	return b.String()
}

// MarshalZerologObject writes the configuration, redacted as in String, as
// fields keyed by variable name, so log.Info().Object("config", c) is safe.
func (c Config) MarshalZerologObject(e *zerolog.Event) {
	for _, f := range c.fields() {
		e.Str(f[0], f[1])
	}
}

// HTTPMode reports whether Slack reaches slackask over HTTP
// (SLACKASK_SLACK_MODE=http) rather than Socket Mode.
func (c Config) HTTPMode() bool { return c.SlackMode == SlackModeHTTP }
