package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/slackid"
)

// groupCache holds user-group members fetched with usergroups.users.list
// for a while, so a click costs no API call.
type groupCache struct {
	// teams lists the workspaces of an org-wide installation
	teams func(ctx context.Context, c conn) ([]string, error)
	clock clock.Clock
	ttl   time.Duration
	mu    sync.Mutex
	m     map[string]groupEntry // by workspace key and group
}

type groupEntry struct {
	members []string
	at      time.Time
}

func newGroupCache(c clock.Clock, ttl time.Duration, teams func(context.Context, conn) ([]string, error)) *groupCache {
	return &groupCache{clock: c, ttl: ttl, m: map[string]groupEntry{}, teams: teams}
}

// members returns the users of group in c's workspace, from the cache
// when fresh. A failed refresh falls back to stale members if there are
// any.
func (g *groupCache) members(ctx context.Context, c conn, group string) ([]string, error) {
	key := c.ws.key + "/" + group
	g.mu.Lock()
	e, ok := g.m[key]
	g.mu.Unlock()
	if ok && g.clock.Now().Sub(e.at) < g.ttl {
		return e.members, nil
	}
	users, err := g.fetch(ctx, c, group)
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
	g.m[key] = groupEntry{members: users, at: g.clock.Now()}
	g.mu.Unlock()
	return users, nil
}

// fetch calls usergroups.users.list. An org-wide installation's token
// must name the workspace (team_id, Slack's Enterprise docs): the group is
// asked of each workspace the installation serves until one knows it.
func (g *groupCache) fetch(ctx context.Context, c conn, group string) ([]string, error) {
	if c.org == "" {
		return c.api.GetUserGroupMembersContext(ctx, group)
	}
	teams, err := g.teams(ctx, c)
	if err != nil {
		return nil, err
	}
	err = slack.SlackErrorResponse{Err: "no_such_subteam"}
	for _, team := range teams {
		var users []string
		users, err = c.api.GetUserGroupMembersContext(ctx, group, slack.GetUserGroupMembersOptionTeamID(team))
		var se slack.SlackErrorResponse
		if err == nil || !errors.As(err, &se) || se.Err != "no_such_subteam" {
			return users, err
		}
	}
	return nil, err
}

// InGroup implements asks.Surface: whether user is a member of the
// user group of workspace, from the cache when fresh.
func (b *Bot) InGroup(ctx context.Context, workspace, group, user string) (bool, error) {
	c, err := b.keyConn(ctx, workspace)
	if err != nil {
		return false, fmt.Errorf("usergroups.users.list: %w", err)
	}
	members, err := b.groups.members(ctx, c, group)
	if err != nil {
		return false, err
	}
	return slices.Contains(members, user), nil
}

// IsGroup implements asks.Surface: a Slack user-group id (S…) names a
// group; every other id a person.
func (*Bot) IsGroup(id string) bool { return slackid.IsUserGroup(id) }

// Members implements asks.Surface with usergroups.users.list (cached as
// for InGroup).
func (b *Bot) Members(ctx context.Context, workspace, group string) ([]string, error) {
	c, err := b.keyConn(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("usergroups.users.list: %w", err)
	}
	members, err := b.groups.members(ctx, c, group)
	return slices.Clone(members), err
}
