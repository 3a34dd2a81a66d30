package bot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
	"github.com/slackask/slackask/internal/clock"
)

// postGates pace chat.postMessage per conversation once Slack rate-limits
// it (about one message per second per channel): posts to a limited
// channel take turns, first come first served, and only the post whose
// turn it is calls Slack, so that n queued posts do not send n calls per
// Retry-After (n−1 of them refused, each post running out of retries).
// Channels that are not limited are not slowed down at all. The zero
// value is ready to use.
type postGates struct {
	mu    sync.Mutex
	gates map[string]*postGate
}

type postGate struct {
	turn chan struct{} // holds one token: the post allowed to call Slack
	// guarded by postGates.mu:
	users  int       // posts using the gate
	queued int       // posts holding or waiting for the turn
	until  time.Time // no call before this (the last Retry-After)
}

// enter returns the gate of channel and whether the channel is limited
// right now (posts are taking turns or Retry-After has not passed).
func (g *postGates) enter(channel string) (*postGate, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates == nil {
		g.gates = map[string]*postGate{}
	}
	gate := g.gates[channel]
	if gate == nil {
		gate = &postGate{turn: make(chan struct{}, 1)}
		gate.turn <- struct{}{}
		g.gates[channel] = gate
	}
	gate.users++
	return gate, gate.queued > 0 || time.Now().Before(gate.until)
}

// queue counts a post into (+1) or out of (−1) the posts taking turns.
func (g *postGates) queue(gate *postGate, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gate.queued += n
}

// leave drops the gate when no post uses it any more.
func (g *postGates) leave(channel string, gate *postGate) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gate.users--
	if gate.users == 0 && !time.Now().Before(gate.until) {
		delete(g.gates, channel)
	}
}

// limitedUntil is when channel takes posts again after its last 429
// (the zero time when it is not limited).
func (g *postGates) limitedUntil(channel string) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	gate := g.gates[channel]
	if gate == nil {
		return time.Time{}
	}
	if gate.users == 0 && !time.Now().Before(gate.until) {
		delete(g.gates, channel)
	}
	return gate.until
}

// limitFor notes a 429 on channel: no call before t.
func (g *postGates) limitFor(channel string, t time.Time) {
	gate, _ := g.enter(channel)
	g.limitUntil(gate, t)
	g.leave(channel, gate)
}

func (g *postGates) limitUntil(gate *postGate, t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.After(gate.until) {
		gate.until = t
	}
}

func (g *postGates) untilOf(gate *postGate) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return gate.until
}

// callPost runs one chat.postMessage (or other per-channel post) to
// channel of c's workspace. While the channel is not rate-limited it calls at once; once
// it is, posts wait for their turn and the one whose turn it is waits out
// Retry-After and retries (at most maxRateLimitRetries times). Waiting
// ends with ctx. Errors are as for call.
func (b *Bot) callPost(ctx context.Context, c conn, channel string, fn func(context.Context) error) error {
	const method = "chat.postMessage"
	pause := rateLimitBackoff
	turns := &c.ws.posts // the workspace's: Slack limits each workspace apart
	gate, limited := turns.enter(channel)
	defer turns.leave(channel, gate)
	if !limited {
		err := fn(ctx)
		var rl *slack.RateLimitedError
		if err == nil || !errors.As(err, &rl) {
			return callErr(ctx, method, err)
		}
		turns.limitUntil(gate, time.Now().Add(retryAfter(&pause, rl)))
	}
	gaveUp := func() error {
		return fmt.Errorf("%s: %w", method, interaction.Errorf(interaction.SlackError, "rate limited and gave up: %v", ctx.Err()))
	}
	turns.queue(gate, 1)
	defer turns.queue(gate, -1)
	select {
	case <-gate.turn:
	case <-ctx.Done():
		return gaveUp()
	}
	defer func() { gate.turn <- struct{}{} }()
	err := backoff.Retry{}.Do(ctx, func(attempt int) error {
		if wait := time.Until(turns.untilOf(gate)); wait > 0 {
			if attempt == 1 {
				b.log.Debug().Str("method", method).Str("channel", channel).Dur("retry_after", wait).Msg("channel rate limited; waiting for the turn")
			}
			if !clock.Sleep(ctx, wait) {
				return backoff.Stop(gaveUp())
			}
		}
		err := fn(ctx)
		var rl *slack.RateLimitedError
		if err == nil || !errors.As(err, &rl) {
			return backoff.Stop(callErr(ctx, method, err))
		}
		if attempt > maxRateLimitRetries {
			return backoff.Stop(err)
		}
		wait := retryAfter(&pause, rl)
		b.log.Info().Str("method", method).Str("channel", channel).Dur("retry_after", wait).Msg("rate limited by Slack; waiting")
		turns.limitUntil(gate, time.Now().Add(wait))
		return backoff.After(wait, err) // the turn's wait: the next attempt finds it passed
	})
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) { // the last of the tries, or ctx ended during its wait
		return callErr(ctx, method, err)
	}
	return err
}
