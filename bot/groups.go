package bot

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/internal/clock"
)

// groupCache holds user-group members fetched with usergroups.users.list
// for a while, so a click costs no API call.
type groupCache struct {
	api   *slack.Client
	clock clock.Clock
	ttl   time.Duration
	mu    sync.Mutex
	m     map[string]groupEntry
}

type groupEntry struct {
	members []string
	at      time.Time
}

func newGroupCache(api *slack.Client, c clock.Clock, ttl time.Duration) *groupCache {
	return &groupCache{api: api, clock: c, ttl: ttl, m: map[string]groupEntry{}}
}

// members returns the users of group, from the cache when fresh. A failed
// refresh falls back to stale members if there are any.
func (g *groupCache) members(ctx context.Context, group string) ([]string, error) {
	g.mu.Lock()
	e, ok := g.m[group]
	g.mu.Unlock()
	if ok && g.clock.Now().Sub(e.at) < g.ttl {
		return e.members, nil
	}
	users, err := g.api.GetUserGroupMembersContext(ctx, group)
	if err != nil {
		if ok {
			return e.members, nil
		}
		if mistake, is := callerMistake(err, "usergroups.users.list", fmt.Sprintf("user group %q", group)); is {
			return nil, mistake
		}
		return nil, fmt.Errorf("usergroups.users.list %s: %w", group, slackErr(err))
	}
	g.mu.Lock()
	g.m[group] = groupEntry{members: users, at: g.clock.Now()}
	g.mu.Unlock()
	return users, nil
}

// InGroup implements asks.Surface: whether user is a member of the
// user group, from the cache when fresh.
func (b *Bot) InGroup(ctx context.Context, group, user string) (bool, error) {
	members, err := b.groups.members(ctx, group)
	if err != nil {
		return false, err
	}
	return slices.Contains(members, user), nil
}

// Members implements asks.Surface with usergroups.users.list (cached as
// for InGroup).
func (b *Bot) Members(ctx context.Context, group string) ([]string, error) {
	members, err := b.groups.members(ctx, group)
	return slices.Clone(members), err
}
