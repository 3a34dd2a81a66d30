package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/interaction"
)

// Routing. Every Web API call is made with the token of the installation
// serving the record's or the payload's workspace: a record is stamped
// with its installation's key (Record.TeamID: the team, or the Grid
// organization of an org-wide install), a payload names its team and
// enterprise. The bot keeps no token of its own: each call asks
// Config.Installs for the installation (whose token is current), and
// clients are cached by installation key only to reuse their
// connections, replaced as soon as the token handed out differs and
// dropped when the installation is removed. Limits Slack keeps per
// workspace (chat.postMessage turns, views.publish pacing) are kept per
// installation key, so one busy workspace does not slow another.
//
// Single-workspace mode (Config.Installs nil or an installs.Static) is
// as slackask always was: one client, one workspace from auth.test, and
// every record and payload served by it.

// space is what the bot keeps per installation: the limits of its
// workspace and whether Slack still takes its token.
type space struct {
	key   string
	posts postGates // chat.postMessage turns per conversation
	// gone says why Slack no longer takes the installation's token
	// (uninstalled, token revoked), nil while it does. Single-workspace
	// mode reports it as not ready until restarted with a working token.
	gone atomic.Pointer[string]
}

// conn is how one call reaches Slack: the client of the installation
// serving it and that installation's limits.
type conn struct {
	api *slack.Client
	ws  *space
	// botUser and app are the installation's bot user and app ids.
	botUser, app string
	// org is the Grid organization of an org-wide installation ("" for
	// any other): its token must name the workspace (team_id) to the
	// methods that act in one (orgTeams).
	org string
}

// orgTeams returns the workspaces the org-wide installation of c serves,
// as recorded from auth.teams.list (installs.Stored.Teams).
func (b *Bot) orgTeams(ctx context.Context, c conn) ([]string, error) {
	lister, ok := b.routes.source.(interface {
		Teams(ctx context.Context, enterprise string) ([]string, error)
	})
	if !ok {
		return nil, interaction.Errorf(interaction.Internal, "the installations of %s do not say its workspaces", c.org)
	}
	return lister.Teams(ctx, c.org)
}

// route is the bot's way to each installation's client and limits.
type route struct {
	source installs.Source // nil in single-workspace mode
	single *slack.Client   // the one client of single-workspace mode
	newAPI func(token string) *slack.Client

	mu      sync.Mutex
	spaces  map[string]*space
	clients map[string]cachedClient // by installation key
}

type cachedClient struct {
	token string // compared, never logged
	api   *slack.Client
}

// many reports whether the bot serves many workspaces (OAuth installs)
// rather than the one of SLACK_BOT_TOKEN.
func (r *route) many() bool { return r.source != nil }

// space returns the state kept for the installation key (the one space of
// single-workspace mode whatever the key).
func (r *route) space(key string) *space {
	if !r.many() {
		key = ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spaces == nil {
		r.spaces = map[string]*space{}
	}
	s := r.spaces[key]
	if s == nil {
		s = &space{key: key}
		r.spaces[key] = s
	}
	return s
}

// drop forgets the client of installation key (removed from Slack): no
// token of it stays in the process.
func (r *route) drop(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.clients, key)
}

// client returns the client speaking with in's token, reusing the cached
// one while the token is the same.
func (r *route) client(in installs.Installation) *slack.Client {
	key := in.Key()
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[key]; ok && c.token == in.BotToken {
		return c.api
	}
	if r.clients == nil {
		r.clients = map[string]cachedClient{}
	}
	api := r.newAPI(in.BotToken)
	r.clients[key] = cachedClient{token: in.BotToken, api: api}
	return api
}

// lookup finds the installation serving team of enterprise, its error
// coded and naming the workspace (never the token).
func (r *route) lookup(ctx context.Context, enterprise, team string) (installs.Installation, error) {
	in, err := r.source.Lookup(ctx, enterprise, team)
	if err != nil {
		return in, fmt.Errorf("slack installation of %s: %w", strings.Trim(enterprise+"/"+team, "/"), err)
	}
	if in.BotToken == "" {
		return in, fmt.Errorf("slack installation of %s: %w", in.Key(), interaction.Errorf(interaction.Internal, "it has no bot token"))
	}
	return in, nil
}

// connOf is the conn of installation in.
func (r *route) connOf(in installs.Installation) conn {
	c := conn{api: r.client(in), ws: r.space(in.Key()), botUser: in.BotUserID, app: in.AppID}
	if in.OrgWide {
		c.org = in.Enterprise
	}
	return c
}

// keyConn is the conn of the installation a record is stamped with (its
// TeamID): an org-wide install's key is its enterprise (E…).
func (b *Bot) keyConn(ctx context.Context, key string) (conn, error) {
	if !b.routes.many() {
		return b.singleConn(), nil
	}
	enterprise, team := "", key
	if strings.HasPrefix(key, "E") {
		enterprise, team = key, ""
	}
	in, err := b.routes.lookup(ctx, enterprise, team)
	if err != nil {
		return conn{}, err
	}
	return b.routes.connOf(in), nil
}

// payloadConn is the conn of the installation serving a payload or event
// of team in enterprise.
func (b *Bot) payloadConn(ctx context.Context, enterprise, team string) (conn, error) {
	if !b.routes.many() {
		return b.singleConn(), nil
	}
	in, err := b.routes.lookup(ctx, enterprise, team)
	if err != nil {
		return conn{}, err
	}
	return b.routes.connOf(in), nil
}

// cbConn is the conn serving the payload cb.
func (b *Bot) cbConn(ctx context.Context, cb *callback) (conn, error) {
	return b.payloadConn(ctx, cb.Enterprise.ID, cb.Team.ID)
}

func (b *Bot) singleConn() conn {
	c := conn{api: b.routes.single, ws: b.routes.space("")}
	c.botUser = b.botUser()
	if p := b.appID.Load(); p != nil {
		c.app = *p
	}
	return c
}

// Workspace implements asks.Workspaces when the bot serves many
// workspaces: an ask naming ws (a team T…, or a Grid organization E…) is
// stamped with the key of the installation serving it, and posted in ws
// when ws names a team (its own install's key, or a team of an org-wide
// install's org); an ask naming the org itself may be in any of its
// teams, so none is said. An ask naming none is refused: with many
// installations, none is the default.
func (b *Bot) Workspace(ctx context.Context, ws string) (key, workspace, app string, err error) {
	if !b.routes.many() {
		return "", "", "", asks.ErrHome
	}
	if ws == "" {
		return "", "", "", interaction.Errorf(interaction.InvalidQuestion, "workspace: slackask serves several workspaces; name the team (T…) or Grid organization (E…) to ask in")
	}
	c, err := b.keyConn(ctx, ws)
	switch {
	case errors.Is(err, installs.ErrNotInstalled):
		return "", "", "", interaction.Errorf(interaction.InvalidQuestion, "workspace %s: slackask is not installed there (install it from /slack/install)", ws)
	case err != nil:
		return "", "", "", err
	}
	switch {
	case c.org == "":
		workspace = c.ws.key // a team's own install
	case ws != c.org:
		workspace = ws // a team of the org, named by its id
	}
	return c.ws.key, workspace, c.app, nil
}

// payloadKey is the installation key a payload or event comes through:
// its enterprise for an org-wide install (whose payloads may name no
// team), else its team (as asks are stamped, so that an act is matched
// with its ask's workspace).
func payloadKey(enterprise, team string, orgWide bool) string {
	if (orgWide || team == "") && enterprise != "" {
		return enterprise
	}
	return team
}
