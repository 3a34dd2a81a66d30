package bot

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// knownTTL is how long a user id Slack knew is taken as known without
// asking again.
const knownTTL = 10 * time.Minute

// knownUsers caches the user ids users.info found, so that a burst of asks
// naming the same people costs one call per person. Ids Slack did not know
// are not cached: a person may be added meanwhile.
type knownUsers struct {
	mu sync.Mutex
	at map[string]time.Time // by workspace key and user
}

// CheckAsk implements asks.Checker: an ask's user, channel, responders,
// mentions, thread and workspace must be Slack ids of their kind
// (slackid.CheckAsk), before anything is kept or any call made.
func (*Bot) CheckAsk(in interaction.AskInput) error { return slackid.CheckAsk(in) }

// CheckIDs refuses, before an ask is kept, a user or user-group id that
// Slack (in the ask's workspace) does not know (users.info, usergroups.users.list; both cached):
// INVALID_QUESTION naming the id, rather than an ask nobody can answer. A
// call that fails otherwise (Slack unreachable) refuses nothing: the ask
// is not held up by a check that cannot tell.
func (b *Bot) CheckIDs(ctx context.Context, workspace string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	c, err := b.keyConn(ctx, workspace)
	if err != nil {
		return fmt.Errorf("check ids: %w", err)
	}
	for _, id := range ids {
		var err error
		if slackid.IsUserGroup(id) {
			_, err = b.groups.members(ctx, c, id)
		} else {
			err = b.knownUser(ctx, c, id)
		}
		if interaction.ErrorCode(err) == interaction.InvalidQuestion {
			return err
		}
		if err != nil {
			b.log.Warn().Err(err).Str("id", id).Msg("could not check that Slack knows an id the ask names; asking anyway")
		}
	}
	return nil
}

// knownUser returns nil when Slack knows user (from the cache when fresh),
// an INVALID_QUESTION when it says user_not_found, and other errors as
// they come.
func (b *Bot) knownUser(ctx context.Context, c conn, user string) error {
	now := b.cfg.Clock.Now()
	key := c.ws.key + "/" + user
	b.known.mu.Lock()
	at, ok := b.known.at[key]
	b.known.mu.Unlock()
	if ok && now.Sub(at) < knownTTL {
		return nil
	}
	var last error
	err := b.call(ctx, "users.info", func(ctx context.Context) (err error) {
		var u *slack.User
		u, err = c.api.GetUserInfoContext(ctx, user)
		if err == nil && u == nil {
			err = fmt.Errorf("users.info %s: no user in the answer", user)
		}
		last = err
		return err
	})
	if mistake, is := callerMistake(last, "users.info", fmt.Sprintf("user %q", user)); err != nil && is {
		return mistake
	}
	if err != nil {
		return err
	}
	b.known.mu.Lock()
	if b.known.at == nil {
		b.known.at = map[string]time.Time{}
	}
	b.known.at[key] = now
	b.known.mu.Unlock()
	return nil
}
