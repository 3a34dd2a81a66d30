// Package installs is what slackask knows of the Slack workspaces it is
// installed in: one Installation per team, or per Enterprise Grid
// organization for an org-wide install, each with the bot token that
// speaks for it there.
//
// The Slack adapter (bot) asks a Source for the installation serving a
// payload's or a record's team before every Web API call; it never keeps a
// token of its own beyond one call. Single-workspace Socket Mode, the
// default, uses Static (SLACK_BOT_TOKEN); OAuth installs for many
// workspaces keep installations in the store, tokens sealed at rest, and
// refresh rotating tokens before they expire.
package installs

import (
	"context"
	"time"

	"github.com/slackask/slackask/interaction"
)

// Installation is the app installed in one Slack team, or org-wide in one
// Enterprise Grid organization.
type Installation struct {
	// Enterprise is the Grid organization (E…), "" outside Grid.
	Enterprise string
	// Team is the workspace (T…); "" for an org-wide install, which serves
	// every team of Enterprise that has no install of its own.
	Team string
	// OrgWide marks an org-wide install (Slack's is_enterprise_install).
	OrgWide bool

	AppID     string // A…
	BotUserID string // U…: the bot's user, as auth.test names it
	BotID     string // B…
	// BotToken is the xoxb- token; never logged, never in an error.
	BotToken string
	// RefreshToken and ExpiresAt are set when token rotation is on: the
	// bot token expires at ExpiresAt and is renewed with RefreshToken.
	RefreshToken string
	ExpiresAt    time.Time
	Scopes       []string
	InstalledBy  string // U…: who installed it
	InstalledAt  time.Time
}

// Key is the one id an installation is found by: its team, or, for an
// org-wide install, its enterprise.
func (in Installation) Key() string {
	if in.OrgWide || in.Team == "" {
		return in.Enterprise
	}
	return in.Team
}

// Source finds the installation that serves a team.
type Source interface {
	// Lookup returns the installation serving team of enterprise: the
	// team's own install, else the org-wide install of enterprise. Either
	// id may be "" when a payload lacks it (an org-wide install's payload
	// may name only the enterprise). The token it returns is current: a
	// rotating token due to expire is refreshed first. An unknown team is
	// ErrNotInstalled (code NOT_FOUND).
	Lookup(ctx context.Context, enterprise, team string) (Installation, error)
}

// ErrNotInstalled is Lookup's error for a team with no installation.
var ErrNotInstalled = interaction.Errorf(interaction.NotFound, "slackask is not installed in this workspace")

// Static is the one installation of a single-workspace deployment
// (SLACK_BOT_TOKEN): it serves every team, as slackask always has.
type Static struct{ Installation }

// Lookup returns s's installation whatever the team.
func (s Static) Lookup(context.Context, string, string) (Installation, error) {
	return s.Installation, nil
}

// Remover removes installations when Slack says the app is gone from a
// workspace (app_uninstalled, tokens_revoked for its bot). Stored is one.
type Remover interface {
	// Remove deletes the team's own installation when team is not "",
	// else the org-wide installation of enterprise (not its teams' own:
	// each has its token and its own uninstall), and returns the keys
	// removed (none when they were gone already).
	Remove(ctx context.Context, enterprise, team string) ([]string, error)
}
