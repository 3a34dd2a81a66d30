package config

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var allVars = []string{
	"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_API_URL", "SLACKASK_CHANNEL",
	"SLACKASK_RESPONDERS", "SLACKASK_TIMEOUT", "SLACKASK_HTTP_ADDR", "SLACKASK_API_TOKEN",
	"SLACKASK_DATABASE", "SLACKASK_LOG_LEVEL", "SLACKASK_LOG_FORMAT", "SLACKASK_URL",
	"SLACKASK_RETENTION", "SLACKASK_DSH_URL", "SLACKASK_DSH_CHANNEL", "SLACKASK_DEV_ADDR",
	"SLACKASK_SOCKET_CONNECTIONS", "SLACKASK_CALLBACK_URL", "SLACKASK_CALLBACK_SECRET", "SLACKASK_CALLBACK_ALLOW_PRIVATE",
	"SLACKASK_SLACK_MODE", "SLACK_SIGNING_SECRET",
	"SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET", "SLACKASK_ENCRYPTION_KEY", "SLACKASK_ENCRYPTION_KEY_PREVIOUS",
	"SLACKASK_PUBLIC_URL", "SLACK_AUTHORIZE_URL", "SLACKASK_OAUTH_PKCE",
}

// clearEnv unsets every variable for the test (restored afterwards).
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range allVars {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestLoadDefaults(t *testing.T) {
	clearEnv(t)
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		SlackAPIURL: "https://slack.com/api/",
		Timeout:     0,
		HTTPAddr:    "127.0.0.1:8080",
		Database:    "slackask.db",
		LogLevel:    "info",
		LogFormat:   "json",
		URL:         "http://127.0.0.1:8080",
		Retention:   720 * time.Hour,
		DevAddr:     "127.0.0.1:8090",
		SlackMode:   "socket",

		SocketConnections: 2,
		SlackAuthorizeURL: "https://slack.com/oauth/v2/authorize",
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %#v\nwant %#v", c, want)
	}
}

func TestLoadEachVariable(t *testing.T) {
	clearEnv(t)
	env := map[string]string{
		"SLACK_BOT_TOKEN":      "xoxb-1-2-abc",
		"SLACK_APP_TOKEN":      "xapp-1-A-xyz",
		"SLACK_API_URL":        "http://127.0.0.1:9999/api",
		"SLACKASK_CHANNEL":     "C123",
		"SLACKASK_RESPONDERS":  " U1 ,S2,,W3 ",
		"SLACKASK_TIMEOUT":     "90s",
		"SLACKASK_HTTP_ADDR":   "0.0.0.0:9000",
		"SLACKASK_API_TOKEN":   "sekrit",
		"SLACKASK_DATABASE":    "postgres://u:p@db/x",
		"SLACKASK_LOG_LEVEL":   "DEBUG",
		"SLACKASK_LOG_FORMAT":  "console",
		"SLACKASK_URL":         "http://example.test:1",
		"SLACKASK_RETENTION":   "1h",
		"SLACKASK_DSH_URL":     "http://dsh.test/",
		"SLACKASK_DSH_CHANNEL": "C999",
		"SLACKASK_DEV_ADDR":    "127.0.0.1:1",
		"SLACKASK_SLACK_MODE":  "http",
		"SLACK_SIGNING_SECRET": "signsecret",

		"SLACKASK_SOCKET_CONNECTIONS":     "4",
		"SLACKASK_CALLBACK_URL":           " https://hooks.test/x ",
		"SLACKASK_CALLBACK_SECRET":        "cbsecret",
		"SLACKASK_CALLBACK_ALLOW_PRIVATE": "true",

		"SLACK_CLIENT_ID":                  " 123.456 ",
		"SLACK_CLIENT_SECRET":              "clientsecret",
		"SLACKASK_ENCRYPTION_KEY":          testKey,
		"SLACKASK_ENCRYPTION_KEY_PREVIOUS": testKey2,
		"SLACKASK_PUBLIC_URL":              "https://ask.example.test/",
		"SLACK_AUTHORIZE_URL":              "http://127.0.0.1:9999/oauth/v2/authorize",
		"SLACKASK_OAUTH_PKCE":              "true",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		SlackBotToken: "xoxb-1-2-abc",
		SlackAppToken: "xapp-1-A-xyz",
		SlackAPIURL:   "http://127.0.0.1:9999/api/",
		Channel:       "C123",
		Responders:    []string{"U1", "S2", "W3"},
		Timeout:       90 * time.Second,
		HTTPAddr:      "0.0.0.0:9000",
		APIToken:      "sekrit",
		Database:      "postgres://u:p@db/x",
		LogLevel:      "debug",
		LogFormat:     "console",
		URL:           "http://example.test:1",
		Retention:     time.Hour,
		DshURL:        "http://dsh.test/",
		DshChannel:    "C999",
		DevAddr:       "127.0.0.1:1",

		SlackMode:            "http",
		SlackSigningSecret:   "signsecret",
		SocketConnections:    4,
		CallbackURL:          "https://hooks.test/x",
		CallbackSecret:       "cbsecret",
		CallbackAllowPrivate: true,

		SlackClientID:         "123.456",
		SlackClientSecret:     "clientsecret",
		EncryptionKey:         testKey,
		EncryptionKeyPrevious: testKey2,
		PublicURL:             "https://ask.example.test",
		SlackAuthorizeURL:     "http://127.0.0.1:9999/oauth/v2/authorize",
		OAuthPKCE:             true,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("loaded:\n got %#v\nwant %#v", c, want)
	}
}

func TestLoadEmptyMeansDefault(t *testing.T) {
	clearEnv(t)
	for _, k := range []string{"SLACK_API_URL", "SLACKASK_HTTP_ADDR", "SLACKASK_DATABASE", "SLACKASK_LOG_LEVEL", "SLACKASK_LOG_FORMAT", "SLACKASK_URL", "SLACKASK_DEV_ADDR", "SLACKASK_RESPONDERS"} {
		t.Setenv(k, "")
	}
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != DefaultHTTPAddr || c.SlackAPIURL != DefaultSlackAPIURL || c.LogLevel != "info" || c.Responders != nil {
		t.Fatalf("empty values not defaulted: %#v", c)
	}
}

// Each number or boolean that does not parse fails Load with an error
// naming its variable; set but empty, it means the default.
func TestLoadNumbersAndBooleans(t *testing.T) {
	for k, v := range map[string]string{"SLACKASK_SOCKET_CONNECTIONS": "two", "SLACKASK_CALLBACK_ALLOW_PRIVATE": "maybe"} {
		t.Run(k, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(k, v)
			_, err := Load()
			if err == nil || !strings.Contains(err.Error(), k) {
				t.Fatalf("err = %v, want one naming %s", err, k)
			}
		})
	}
	clearEnv(t)
	t.Setenv("SLACKASK_SOCKET_CONNECTIONS", " ")
	t.Setenv("SLACKASK_CALLBACK_ALLOW_PRIVATE", "")
	c, err := Load()
	if err != nil || c.SocketConnections != DefaultSocketConnections || c.CallbackAllowPrivate {
		t.Fatalf("empty values: connections %d, allow private %v, %v; want the defaults", c.SocketConnections, c.CallbackAllowPrivate, err)
	}
	// An out-of-range count loads, and ValidateServe refuses it.
	t.Setenv("SLACKASK_SOCKET_CONNECTIONS", "11")
	if c, err = Load(); err != nil || c.SocketConnections != 11 {
		t.Fatalf("Load = %d, %v", c.SocketConnections, err)
	}
}

// Every default is stated once, in a Default* constant: no struct tag
// carries one of its own.
func TestDefaultsStatedOnce(t *testing.T) {
	ty := reflect.TypeFor[Config]()
	for i := range ty.NumField() {
		if d, ok := ty.Field(i).Tag.Lookup("default"); ok {
			t.Errorf("field %s has a default tag %q: apply a Default* constant in Load instead", ty.Field(i).Name, d)
		}
	}
}

func TestLoadBadDuration(t *testing.T) {
	for _, k := range []string{"SLACKASK_TIMEOUT", "SLACKASK_RETENTION"} {
		t.Run(k, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(k, "soon")
			_, err := Load()
			if err == nil || !strings.Contains(err.Error(), k) {
				t.Fatalf("err = %v, want one naming %s", err, k)
			}
		})
	}
}

func validServe() Config {
	return Config{
		SlackBotToken: "xoxb-123-456-SECRETBOT",
		SlackAppToken: "xapp-1-A1-SECRETAPP",
		SlackAPIURL:   DefaultSlackAPIURL,
		Responders:    []string{"U012ABC", "W0XYZ", "S0GROUP"},
		HTTPAddr:      DefaultHTTPAddr,
		Database:      DefaultDatabase,
		LogLevel:      "info",
		LogFormat:     "json",
		URL:           DefaultURL,
		Retention:     DefaultRetention,
		DevAddr:       DefaultDevAddr,

		SocketConnections: DefaultSocketConnections,
	}
}

func TestValidateServe(t *testing.T) {
	if err := validServe().ValidateServe(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	// HTTP mode needs the signing secret, not the app token.
	h := validServe()
	h.SlackMode, h.SlackSigningSecret, h.SlackAppToken = SlackModeHTTP, "SECRETSIGN", ""
	if err := h.ValidateServe(); err != nil {
		t.Fatalf("valid HTTP mode config: %v", err)
	}
	cases := []struct {
		name    string
		mut     func(*Config)
		varName string
	}{
		{"bot token missing", func(c *Config) { c.SlackBotToken = "" }, "SLACK_BOT_TOKEN"},
		{"bot token wrong kind", func(c *Config) { c.SlackBotToken = "xoxp-SECRETUSER" }, "SLACK_BOT_TOKEN"},
		{"app token missing", func(c *Config) { c.SlackAppToken = "" }, "SLACK_APP_TOKEN"},
		{"app token wrong kind", func(c *Config) { c.SlackAppToken = "xoxb-SECRETSWAP" }, "SLACK_APP_TOKEN"},
		{"api url", func(c *Config) { c.SlackAPIURL = "slack.com/api/" }, "SLACK_API_URL"},
		{"responder lowercase", func(c *Config) { c.Responders = []string{"u123"} }, "SLACKASK_RESPONDERS"},
		{"responder channel id", func(c *Config) { c.Responders = []string{"C123"} }, "SLACKASK_RESPONDERS"},
		{"responder bare letter", func(c *Config) { c.Responders = []string{"U"} }, "SLACKASK_RESPONDERS"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "SLACKASK_TIMEOUT"},
		{"negative retention", func(c *Config) { c.Retention = -time.Second }, "SLACKASK_RETENTION"},
		{"public addr without token", func(c *Config) { c.HTTPAddr = "0.0.0.0:8080" }, "SLACKASK_API_TOKEN"},
		{"empty host without token", func(c *Config) { c.HTTPAddr = ":8080" }, "SLACKASK_API_TOKEN"},
		{"empty addr", func(c *Config) { c.HTTPAddr = "" }, "SLACKASK_HTTP_ADDR"},
		{"empty database", func(c *Config) { c.Database = "" }, "SLACKASK_DATABASE"},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, "SLACKASK_LOG_LEVEL"},
		{"log format", func(c *Config) { c.LogFormat = "xml" }, "SLACKASK_LOG_FORMAT"},
		{"dsh url", func(c *Config) { c.DshURL = "::nope" }, "SLACKASK_DSH_URL"},
		{"api token blank", func(c *Config) { c.APIToken = " " }, "SLACKASK_API_TOKEN"},
		{"api token padded", func(c *Config) { c.APIToken = "SECRETAPI " }, "SLACKASK_API_TOKEN"},
		{"api token newline", func(c *Config) { c.APIToken = "\tSECRETAPI\n" }, "SLACKASK_API_TOKEN"},
		{"padded token on a public addr", func(c *Config) { c.HTTPAddr, c.APIToken = "0.0.0.0:8080", " SECRETAPI" }, "SLACKASK_API_TOKEN"},
		{"no socket connection", func(c *Config) { c.SocketConnections = 0 }, "SLACKASK_SOCKET_CONNECTIONS"},
		{"unknown slack mode", func(c *Config) { c.SlackMode = "webhook" }, "SLACKASK_SLACK_MODE"},
		{"http mode without signing secret", func(c *Config) { c.SlackMode = SlackModeHTTP }, "SLACK_SIGNING_SECRET"},
		{"eleven socket connections", func(c *Config) { c.SocketConnections = 11 }, "SLACKASK_SOCKET_CONNECTIONS"},
		{"negative socket connections", func(c *Config) { c.SocketConnections = -1 }, "SLACKASK_SOCKET_CONNECTIONS"},
		{"callback url not http", func(c *Config) { c.CallbackURL = "ftp://hooks.test/" }, "SLACKASK_CALLBACK_URL"},
		{"callback url relative", func(c *Config) { c.CallbackURL = "/hook" }, "SLACKASK_CALLBACK_URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validServe()
			tc.mut(&c)
			err := c.ValidateServe()
			if err == nil {
				t.Fatal("ValidateServe() = nil, want an error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.varName) {
				t.Errorf("error %q does not name %s", msg, tc.varName)
			}
			// The test's tokens are spelled SECRET…; the variable
			// SLACK_SIGNING_SECRET may be named.
			if strings.Contains(strings.ReplaceAll(msg, "SLACK_SIGNING_SECRET", ""), "SECRET") {
				t.Errorf("error %q leaks a token", msg)
			}
		})
	}

	t.Run("callback url without a secret", func(t *testing.T) {
		c := validServe()
		c.CallbackURL, c.CallbackSecret = "https://hooks.test/x", ""
		if err := c.ValidateServe(); err == nil || !strings.Contains(err.Error(), "SLACKASK_CALLBACK_SECRET is not") {
			t.Fatalf("ValidateServe() = %v", err)
		}
		c.CallbackSecret = "s"
		if err := c.ValidateServe(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("callback url to loopback", func(t *testing.T) {
		c := validServe()
		c.CallbackURL, c.CallbackSecret = "http://127.0.0.1:9000/x", "s"
		if err := c.ValidateServe(); err == nil || !strings.Contains(err.Error(), "SLACKASK_CALLBACK_ALLOW_PRIVATE") {
			t.Fatalf("ValidateServe() = %v", err)
		}
		c.CallbackAllowPrivate = true
		if err := c.ValidateServe(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("public addr with token", func(t *testing.T) {
		c := validServe()
		c.HTTPAddr, c.APIToken = "0.0.0.0:8080", "SECRETAPI"
		if err := c.ValidateServe(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("all problems at once", func(t *testing.T) {
		err := Config{LogLevel: "x", LogFormat: "y"}.ValidateServe()
		for _, v := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACKASK_LOG_LEVEL", "SLACKASK_LOG_FORMAT"} {
			if err == nil || !strings.Contains(err.Error(), v) {
				t.Errorf("joined error %v misses %s", err, v)
			}
		}
	})
}

func TestValidateClient(t *testing.T) {
	c := validServe()
	if err := c.ValidateClient(); err != nil {
		t.Fatal(err)
	}
	c.URL = "127.0.0.1:8080"
	if err := c.ValidateClient(); err == nil || !strings.Contains(err.Error(), "SLACKASK_URL") {
		t.Fatalf("err = %v, want one naming SLACKASK_URL", err)
	}
}

func TestIsLoopback(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1:8080":             true,
		"127.1.2.3:80":               true,
		"localhost:8080":             true,
		"LOCALHOST:1":                true,
		"[::1]:8080":                 true,
		"[::ffff:127.0.0.1]:80":      true,
		"127.0.0.1":                  true,
		"::1":                        true,
		":8080":                      false,
		"":                           false,
		"0.0.0.0:8080":               false,
		"[::]:8080":                  false,
		"10.0.0.1:8080":              false,
		"192.168.1.2:80":             false,
		"example.com:80":             false,
		"localhost.example.com:8080": false,
		"128.0.0.1:80":               false,
	}
	for addr, want := range cases {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func secretConfig() Config {
	c := validServe()
	c.SlackBotToken = "xoxb-111-222-BOTSECRETVALUE"
	c.SlackAppToken = "xapp-1-A1-APPSECRETVALUE"
	c.APIToken = "APISECRETVALUE"
	c.Database = "postgres://slack:DBSECRETVALUE@db.internal/slackask?sslmode=disable&password=QSECRETVALUE"
	c.DshURL = "https://USERSECRETVALUE@dsh.test/x?token=TOKSECRETVALUE"
	c.CallbackURL = "https://CBUSERSECRETVALUE@hooks.test/cb?key=CBKEYSECRETVALUE"
	c.CallbackSecret = "CBSECRETVALUE"
	return c
}

func TestRedaction(t *testing.T) {
	c := secretConfig()
	s := c.String()
	t.Log(s)
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().Object("config", c).Msg("starting")
	fmtd := buf.String()
	for name, out := range map[string]string{"String": s, "zerolog": fmtd} {
		if strings.Contains(out, "SECRETVALUE") {
			t.Errorf("%s output leaks a secret: %s", name, out)
		}
		for _, want := range []string{"xoxb-…redacted", "xapp-…redacted", "db.internal", "sslmode=disable", "SLACKASK_HTTP_ADDR"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q: %s", name, want, out)
			}
		}
	}
	var m struct{ Config map[string]string }
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if got := m.Config["SLACKASK_API_TOKEN"]; got != "…redacted" {
		t.Errorf("api token logged as %q", got)
	}
	if got := m.Config["SLACKASK_CALLBACK_SECRET"]; got != "…redacted" {
		t.Errorf("callback secret logged as %q", got)
	}
	for k, want := range map[string]string{"SLACKASK_SOCKET_CONNECTIONS": "2", "SLACKASK_CALLBACK_ALLOW_PRIVATE": "false"} {
		if got := m.Config[k]; got != want {
			t.Errorf("%s logged as %q, want %q", k, got, want)
		}
	}
	// Unset tokens stay visibly unset.
	if !strings.Contains((Config{}).String(), `SLACK_BOT_TOKEN=""`) {
		t.Errorf("unset token not shown as empty: %s", Config{}.String())
	}
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	c := validServe()
	c.LogLevel = "warn"
	l, err := c.Logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Info().Msg("hidden")
	l.Warn().Msg("shown")
	out := buf.String()
	if strings.Contains(out, "hidden") || !strings.Contains(out, `"message":"shown"`) || !strings.Contains(out, `"time"`) {
		t.Fatalf("json logger output: %s", out)
	}

	buf.Reset()
	c.LogFormat = "console"
	l, err = c.Logger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Error().Str("k", "v").Msg("boom")
	if out := buf.String(); !strings.Contains(out, "boom") || strings.Contains(out, "{") || strings.Contains(out, "\x1b[") {
		t.Fatalf("console logger output: %q", out)
	}

	for _, bad := range []Config{{LogLevel: "nope", LogFormat: "json"}, {LogLevel: "info", LogFormat: "xml"}} {
		if _, err := bad.Logger(&buf); err == nil {
			t.Errorf("Logger(%+v) = nil error", bad)
		}
	}
}

// 32 bytes each, base64: encryption keys for the tests.
const (
	testKey  = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	testKey2 = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="
)

func TestValidateServeOAuth(t *testing.T) {
	ok := Config{
		SlackMode: SlackModeHTTP, SlackSigningSecret: "s", SlackAPIURL: "https://slack.com/api/", HTTPAddr: "127.0.0.1:8080",
		Database: "x.db", LogFormat: "json", SocketConnections: 2, SlackAuthorizeURL: DefaultSlackAuthorizeURL,
		SlackClientID: "1.2", SlackClientSecret: "the-client-secret", EncryptionKey: testKey, PublicURL: "https://ask.example.test",
	}
	if err := ok.ValidateServe(); err != nil {
		t.Fatalf("valid OAuth settings: %v", err)
	}
	if _, err := ok.Sealer(); err != nil {
		t.Fatalf("Sealer: %v", err)
	}
	for name, c := range map[string]struct {
		mod  func(*Config)
		want string
	}{
		"no secret":              {func(c *Config) { c.SlackClientSecret = "" }, "SLACK_CLIENT_ID and SLACK_CLIENT_SECRET go together"},
		"no key":                 {func(c *Config) { c.EncryptionKey = "" }, "SLACKASK_ENCRYPTION_KEY is required"},
		"short key":              {func(c *Config) { c.EncryptionKey = "c2hvcnQta2V5" }, "SLACKASK_ENCRYPTION_KEY is 9 bytes, not 32"},
		"bad previous":           {func(c *Config) { c.EncryptionKeyPrevious = "!!" }, "SLACKASK_ENCRYPTION_KEY_PREVIOUS is not base64"},
		"no public url":          {func(c *Config) { c.PublicURL = "" }, "SLACKASK_PUBLIC_URL is required"},
		"socket mode":            {func(c *Config) { c.SlackMode, c.SlackAppToken = SlackModeSocket, "xapp-1" }, "set SLACKASK_SLACK_MODE=http"},
		"no oauth, no bot token": {func(c *Config) { c.SlackClientID, c.SlackClientSecret = "", "" }, "SLACK_BOT_TOKEN is required"},
		"bad authorize":          {func(c *Config) { c.SlackAuthorizeURL = "slack.com" }, "SLACK_AUTHORIZE_URL must be"},
		"key, no oauth":          {func(c *Config) { c.SlackClientID, c.SlackClientSecret, c.EncryptionKey = "", "", "c2hvcnQta2V5" }, "SLACKASK_ENCRYPTION_KEY is 9 bytes"},
	} {
		cfg := ok
		c.mod(&cfg)
		err := cfg.ValidateServe()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", name, err, c.want)
			continue
		}
		for _, secret := range []string{"the-client-secret", testKey, "c2hvcnQta2V5"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows a secret: %v", name, err)
			}
		}
	}
	s := ok
	s.EncryptionKeyPrevious = testKey2
	for _, secret := range []string{"the-client-secret", testKey, testKey2} {
		if strings.Contains(s.String(), secret) {
			t.Errorf("String() shows a secret: %s", s.String())
		}
	}
}
