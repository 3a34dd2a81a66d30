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
	// Now is the clock for message timestamps, trigger expiry, rate limits
	// and call records (default time.Now). Ack latencies and ack timeouts
	// always use the real clock.
	Now func() time.Time
	// TriggerTTL is how long a trigger_id can be exchanged (default 3s).
	TriggerTTL time.Duration
	// PingInterval is the period of WebSocket ping frames (default 5s).
	PingInterval time.Duration
	// AckTimeout is how long Deliver waits for an ack (default 3s).
	AckTimeout time.Duration
	// PostsPerSecondPerChannel limits chat.postMessage per channel with a
	// token bucket (burst max(3, rate)); 0 means unlimited. Above it the
	// call answers HTTP 429 with Retry-After.
	PostsPerSecondPerChannel float64
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
	if c.Now == nil {
		c.Now = time.Now
	}
	setDur(&c.TriggerTTL, 3*time.Second)
	setDur(&c.PingInterval, 5*time.Second)
	setDur(&c.AckTimeout, 3*time.Second)
	if c.PostsPerSecondPerChannel < 0 {
		c.PostsPerSecondPerChannel = 0
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
