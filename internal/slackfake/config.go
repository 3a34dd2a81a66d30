package slackfake

import "time"

// Config configures a Server. Zero fields take the defaults documented on
// each field.
type Config struct {
	// BotToken is the xoxb token the Web API methods accept (default "xoxb-fake").
	BotToken string
	// AppToken is the xapp token apps.connections.open accepts (default "xapp-fake").
	AppToken string
	// TeamID is the workspace id (default "T0FAKE").
	TeamID string
	// AppID is the app id sent in hello frames and payloads (default "A0FAKE").
	AppID string
	// BotUserID is the bot's user id (default "U0BOT").
	BotUserID string
	// Now is the clock for message timestamps, trigger expiry, rate limits,
	// call records and the time of failed interactions (default time.Now).
	// Ack latencies and the ack deadline use the time package's clock (real
	// time, or a testing/synctest bubble's when the Server was made in one);
	// tests that need a quick deadline set AckTimeout.
	Now func() time.Time
	// TriggerTTL is how long a trigger_id can be exchanged (default 3s).
	TriggerTTL time.Duration
	// PingInterval is the period of WebSocket ping frames (default 5s).
	PingInterval time.Duration
	// PermalinkBase, when set, is the page chat.getPermalink links into
	// instead of a Slack URL: BASE/?c=CHANNEL&msg=TS (with &thread=PARENT
	// for a reply and &as=USER for a DM), as slackask dev's emulator page
	// reads it.
	PermalinkBase string
	// AckTimeout is Slack's 3 s: how long after a Deliver starts the
	// envelope may go unacked (waiting for a connection included). Past it
	// Deliver fails and a block_actions or view_submission payload is
	// recorded as an interaction that failed in front of the person (see
	// FailedInteractions). Default 3s.
	AckTimeout time.Duration
	// PostsPerSecondPerChannel limits chat.postMessage per channel with a
	// token bucket (burst max(3, rate)); 0 means unlimited. Above it the
	// call answers HTTP 429 with Retry-After.
	PostsPerSecondPerChannel float64
	// ConnectionsOpenPerMinute limits apps.connections.open (Slack's Tier 1)
	// with a token bucket refilled by Now: above it the call answers HTTP
	// 429 with Retry-After. Default 60, so that a client that reconnects in
	// a tight loop is throttled while tests that restart a client a few
	// times are not; negative means unlimited.
	ConnectionsOpenPerMinute float64
	// ViewsPublishPerMinute limits views.publish per workspace (Slack's
	// Tier 4: 100 a minute) with a token bucket refilled by Now, burst 20:
	// above it the call answers HTTP 429 with Retry-After. Default 100;
	// negative means unlimited.
	ViewsPublishPerMinute float64
	// ConversationsInfoPerMinute limits conversations.info per workspace
	// (Slack's Tier 3: 50 a minute) with a token bucket refilled by Now,
	// burst 20: above it the call answers HTTP 429 with Retry-After.
	// Default 50; negative means unlimited.
	ConversationsInfoPerMinute float64
	// ConnectionsOpenBurst is the bucket's size: how many calls may follow
	// each other without waiting (default 20).
	ConnectionsOpenBurst int
	// SigningSecret signs what the fake POSTs in HTTP mode (see
	// Server.UseHTTP), as Slack signs with an app's signing secret
	// (default "fake-signing-secret").
	SigningSecret string
	// ClientID and ClientSecret are the app's credentials oauth.v2.access
	// checks (defaults "fake-client-id", "fake-client-secret").
	ClientID     string
	ClientSecret string
	// RedirectURLs, when set, are the app's redirect URLs: an authorize
	// request's redirect_uri must start with one (Slack's rule).
	RedirectURLs []string
	// TokenRotation issues expiring bot tokens with refresh tokens.
	TokenRotation bool
	// TokenTTL is a rotating token's life (default 12h, as Slack).
	TokenTTL time.Duration
	// CodeTTL is how long an OAuth code can be exchanged (default 10m).
	CodeTTL time.Duration
	// Logf receives diagnostic lines (default: discarded). It may be called
	// with the fake locked, so it must not call Server methods.
	Logf func(format string, args ...any)
}

const (
	defaultBotToken = "xoxb-fake"
	defaultAppToken = "xapp-fake"
	botID           = "B0FAKE"
	teamDomain      = "fake"
	maxConnections  = 10
)

func (c Config) withDefaults() Config {
	setStr(&c.BotToken, defaultBotToken)
	setStr(&c.AppToken, defaultAppToken)
	setStr(&c.TeamID, "T0FAKE")
	setStr(&c.AppID, "A0FAKE")
	setStr(&c.BotUserID, "U0BOT")
	setStr(&c.SigningSecret, "fake-signing-secret")
	setStr(&c.ClientID, "fake-client-id")
	setStr(&c.ClientSecret, "fake-client-secret")
	setDur(&c.TokenTTL, 12*time.Hour)
	setDur(&c.CodeTTL, 10*time.Minute)
	if c.Now == nil {
		c.Now = time.Now
	}
	setDur(&c.TriggerTTL, 3*time.Second)
	setDur(&c.PingInterval, 5*time.Second)
	setDur(&c.AckTimeout, 3*time.Second)
	if c.PostsPerSecondPerChannel < 0 {
		c.PostsPerSecondPerChannel = 0
	}
	if c.ConnectionsOpenPerMinute == 0 {
		c.ConnectionsOpenPerMinute = 60
	}
	if c.ViewsPublishPerMinute == 0 {
		c.ViewsPublishPerMinute = 100
	}
	if c.ConversationsInfoPerMinute == 0 {
		c.ConversationsInfoPerMinute = 50
	}
	if c.ConnectionsOpenBurst <= 0 {
		c.ConnectionsOpenBurst = 20
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}

func setStr(p *string, def string) {
	if *p == "" {
		*p = def
	}
}

func setDur(p *time.Duration, def time.Duration) {
	if *p <= 0 {
		*p = def
	}
}
