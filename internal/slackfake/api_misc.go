package slackfake

import (
	"slices"
	"strings"
)

func (s *Server) authTest(r *apiRequest) reply {
	out := map[string]any{
		"url":     "https://" + teamDomain + ".slack.com/",
		"team":    "Fake Workspace",
		"team_id": s.cfg.TeamID,
	}
	if g := r.grant; g != nil {
		out["user"] = "slackfake-bot"
		out["user_id"] = g.botUser
		out["bot_id"] = botID
		if t := s.tm.teams[g.team]; t != nil {
			out["team"], out["team_id"] = t.name, t.id
		}
		if g.enterprise != "" {
			out["enterprise_id"] = g.enterprise
		}
		if g.orgWide {
			// An org-wide token is the enterprise's: Slack names no team.
			out["team"], out["team_id"], out["is_enterprise_install"] = s.tm.enterprises[g.enterprise].name, g.enterprise, true
		}
	} else {
		out["app_id"] = s.cfg.AppID
	}
	return okReply(out)
}

func (s *Server) conversationsOpen(r *apiRequest) reply {
	var ch *channel
	switch users := strings.Split(r.str("users"), ","); {
	case r.str("channel") != "":
		ch = s.ws.resolveChannel(r.str("channel"))
		if ch == nil {
			return errReply("channel_not_found")
		}
	case r.str("users") == "":
		return errReply("users_list_not_supplied")
	case len(users) > 1:
		s.logf("conversations.open: group DMs (%d users) are not modelled", len(users))
		return errReply("not_implemented")
	default:
		u := s.ws.users[strings.TrimSpace(users[0])]
		if u == nil || u.IsBot {
			return errReply("user_not_found")
		}
		ch = s.ws.dm(u.ID)
	}
	already := ch.Opened
	ch.Opened = true
	return okReply(map[string]any{"channel": s.wireChannel(ch), "already_open": already, "no_op": already})
}

func (s *Server) wireChannel(ch *channel) map[string]any {
	out := map[string]any{"id": ch.ID, "created": 1700000000}
	if ch.IsIM {
		out["is_im"] = true
		out["user"] = ch.User
		out["is_open"] = true
	} else {
		out["name"] = ch.Name
		out["is_channel"] = true
	}
	return out
}

func (s *Server) usersInfo(r *apiRequest) reply {
	u := s.ws.users[r.str("user")]
	if u == nil {
		return errReply("user_not_found")
	}
	return okReply(map[string]any{"user": s.wireUser(u)})
}

func (s *Server) wireUser(u *user) map[string]any {
	return map[string]any{
		"id": u.ID, "team_id": s.teamIDLocked(u.Team), "name": u.Name, "real_name": u.Name,
		"deleted": false, "is_bot": u.IsBot, "tz": "UTC", "tz_offset": 0,
		"profile": map[string]any{"real_name": u.Name, "display_name": u.Name, "team": s.teamIDLocked(u.Team)},
	}
}

// authTeamsList answers auth.teams.list: an org-wide token's
// workspaces (the teams of its enterprise the app is added to: the fake
// adds it to all of them but those SetTeamAccess took it from), a
// workspace token's own workspace alone ("most tokens are tied to a single
// workspace", Slack's method page).
func (s *Server) authTeamsList(r *apiRequest) reply {
	g := r.grant
	if g == nil {
		g = s.tm.grants[s.cfg.BotToken]
	}
	var teams []map[string]any
	for _, t := range s.tm.teams {
		if s.grantAllows(g, t.id) {
			teams = append(teams, map[string]any{"id": t.id, "name": t.name})
		}
	}
	slices.SortFunc(teams, func(a, b map[string]any) int { return strings.Compare(a["id"].(string), b["id"].(string)) })
	return okReply(map[string]any{"teams": teams, "response_metadata": map[string]any{"next_cursor": ""}})
}

// orgTeamCheck is Slack's rule for the methods that act in one workspace
// (usergroups.*, conversations.list, users.list, …): an org-wide token
// must say which with team_id, a team its app was added to; a workspace
// token's team_id is ignored. "" when the request may go on.
func (s *Server) orgTeamCheck(r *apiRequest) string {
	g := r.grant
	if g == nil || !g.orgWide {
		return ""
	}
	team := r.str("team_id")
	if team == "" {
		return "missing_argument"
	}
	if !s.grantAllows(g, team) {
		return "team_access_not_granted"
	}
	return ""
}

func (s *Server) usergroupsUsersList(r *apiRequest) reply {
	if e := s.orgTeamCheck(r); e != "" {
		return errReply(e)
	}
	users, ok := s.ws.groups[r.str("usergroup")]
	if !ok {
		return errReply("no_such_subteam")
	}
	return okReply(map[string]any{"users": append([]string{}, slices.Clone(users)...)})
}
