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

// conversationsInfo answers conversations.info: the conversation named by
// its id (a channel's C…, a DM's D…; not a name or a user, as
// conversations.open takes), as Slack's reply draws it, with its
// workspace (context_team_id). A conversation the token does not reach
// (another team's, or a team an org admin took the org-wide app from)
// is channel_not_found, by the scope check every method passes. A token
// installed without the read scope of the conversation's kind
// (channels:read, groups:read, im:read) is missing_scope. Limited per
// workspace at Tier 3 (ConversationsInfoPerMinute).
func (s *Server) conversationsInfo(r *apiRequest) reply {
	id := r.str("channel")
	ch := s.ws.channels[id]
	if ch == nil && strings.HasPrefix(id, "D") {
		if u := s.ws.userOfDM(id); u != "" {
			ch = s.ws.dm(u)
		}
	}
	if ch == nil {
		return errReply("channel_not_found")
	}
	needed := "channels:read"
	switch {
	case ch.IsIM:
		needed = "im:read"
	case len(ch.Members) > 0:
		needed = "groups:read" // private
	}
	if g := r.grant; g != nil && g.scopes != "" && !slices.Contains(strings.Split(g.scopes, ","), needed) {
		rep := errReply("missing_scope")
		rep.body["needed"], rep.body["provided"] = needed, g.scopes
		return rep
	}
	var flags [2]bool
	for i, key := range []string{"include_locale", "include_num_members"} {
		v, ok := parseBool(r.str(key))
		if !ok {
			return errReplyMsgs("invalid_arguments", []string{"[ERROR] invalid value for `" + key + "`: must be a boolean"})
		}
		flags[i] = v
	}
	if rep, ok := s.tierLocked("conversations.info/"+r.grantKey(), s.cfg.ConversationsInfoPerMinute); !ok {
		return rep
	}
	out := s.wireChannel(ch)
	out["context_team_id"] = s.teamIDLocked(ch.Team)
	out["is_archived"], out["is_shared"], out["is_org_shared"], out["is_ext_shared"] = false, false, false, false
	if !ch.IsIM {
		out["is_group"], out["is_im"], out["is_mpim"], out["is_private"] = false, false, false, len(ch.Members) > 0
		out["name_normalized"] = ch.Name
	}
	if flags[0] {
		out["locale"] = "en-US"
	}
	if flags[1] && !ch.IsIM {
		n := len(ch.Members)
		if n == 0 { // everyone of its team may read it
			for _, u := range s.ws.users {
				if !u.IsBot && s.teamIDLocked(u.Team) == s.teamIDLocked(ch.Team) {
					n++
				}
			}
		}
		out["num_members"] = n
	}
	return okReply(map[string]any{"channel": out})
}

// parseBool reads a boolean argument as Slack does ("" is false).
func parseBool(v string) (value, ok bool) {
	switch v {
	case "", "false", "0":
		return false, true
	case "true", "1":
		return true, true
	}
	return false, false
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
