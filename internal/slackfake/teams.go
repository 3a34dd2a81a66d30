package slackfake

import (
	"slices"
	"strings"
)

// A Server starts with one team, Config.TeamID, outside Enterprise Grid,
// whose bot token is Config.BotToken. AddTeam adds more (in a Grid
// enterprise or not); users and channels belong to one team (AddUserIn,
// AddChannelIn; AddUser and AddChannel add to the first team). A token
// speaks for the team it was issued for (an org-wide install's, for every
// team of its enterprise): a channel or user of another team is
// channel_not_found or user_not_found to it, as to an app not installed
// there. Payloads name the acting person's team and enterprise.

type team struct {
	id, name   string
	enterprise string // "" outside Grid
	botUser    string
}

type enterpriseRec struct{ id, name string }

// teamsState is the fake's teams, enterprises and issued tokens.
type teamsState struct {
	teams       map[string]*team
	enterprises map[string]*enterpriseRec
	// grants by bot token; Config.BotToken's is the first team's.
	grants map[string]*grant
	// refresh tokens not yet used, to their grant
	refresh map[string]*grant
	codes   map[string]*oauthCode
}

// grant is one bot token as Slack issued it.
type grant struct {
	token      string
	team       string // "" for an org-wide install
	enterprise string
	orgWide    bool
	botUser    string
	expires    int64 // unix seconds by Config.Now; 0: never
	revoked    bool
	refresh    string
	scopes     string // as granted at install
	// away: the teams of its enterprise an org admin removed an org-wide
	// app from (SetTeamAccess); it reaches every other one
	away map[string]bool
}

func (s *Server) initTeams() {
	s.tm = teamsState{
		teams:       map[string]*team{},
		enterprises: map[string]*enterpriseRec{},
		grants:      map[string]*grant{},
		refresh:     map[string]*grant{},
		codes:       map[string]*oauthCode{},
	}
	s.tm.teams[s.cfg.TeamID] = &team{id: s.cfg.TeamID, name: "Fake Workspace", botUser: s.cfg.BotUserID}
	s.tm.grants[s.cfg.BotToken] = &grant{token: s.cfg.BotToken, team: s.cfg.TeamID, botUser: s.cfg.BotUserID}
}

// AddTeam adds a workspace (T…), in the Grid enterprise (E…) when
// enterprise is not "", with a bot user of its own (BotUserOf). Adding a
// known team again renames it. Empty ids are ignored.
func (s *Server) AddTeam(id, name, enterprise string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tm.teams[id]; ok {
		t.name = name
		return
	}
	if enterprise != "" && s.tm.enterprises[enterprise] == nil {
		s.tm.enterprises[enterprise] = &enterpriseRec{id: enterprise, name: "Enterprise " + enterprise}
	}
	bot := "U0BOT" + strings.TrimPrefix(id, "T")
	s.tm.teams[id] = &team{id: id, name: name, enterprise: enterprise, botUser: bot}
	s.ws.users[bot] = &user{ID: bot, Name: "slackfake-bot", IsBot: true, Team: id}
}

// AddEnterprise names a Grid enterprise (AddTeam creates one unnamed).
func (s *Server) AddEnterprise(id, name string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tm.enterprises[id] = &enterpriseRec{id: id, name: name}
}

// BotUserOf returns the bot user of the app in team ("" for an unknown
// team): Config.BotUserID in the first team.
func (s *Server) BotUserOf(team string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tm.teams[team]; t != nil {
		return t.botUser
	}
	return ""
}

// AddUserIn adds (or renames) a person of team.
func (s *Server) AddUserIn(team, id, name string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws.users[id] = &user{ID: id, Name: name, Team: s.teamIDLocked(team)}
}

// AddChannelIn adds (or replaces) a channel of team (see AddChannel).
func (s *Server) AddChannelIn(team, id, name string, members ...string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws.channels[id] = &channel{ID: id, Name: name, Members: slices.Clone(members), Team: s.teamIDLocked(team)}
}

// teamIDLocked maps "" to the first team.
func (s *Server) teamIDLocked(id string) string {
	if id == "" {
		return s.cfg.TeamID
	}
	return id
}

// teamOfUserLocked returns the team record of a user (the first team's
// for an unknown user).
func (s *Server) teamOfUserLocked(userID string) *team {
	if u := s.ws.users[userID]; u != nil {
		if t := s.tm.teams[s.teamIDLocked(u.Team)]; t != nil {
			return t
		}
	}
	return s.tm.teams[s.cfg.TeamID]
}

// grantAllows reports whether g speaks for team.
func (s *Server) grantAllows(g *grant, teamID string) bool {
	teamID = s.teamIDLocked(teamID)
	if g.orgWide {
		t := s.tm.teams[teamID]
		return t != nil && t.enterprise == g.enterprise && !g.away[teamID]
	}
	return g.team == teamID
}

// orgWideFor reports whether the app reaches team through an org-wide
// install (its payloads then say is_enterprise_install).
func (s *Server) orgWideFor(t *team) bool {
	if t.enterprise == "" {
		return false
	}
	own := false
	org := false
	for _, g := range s.tm.grants {
		if g.revoked {
			continue
		}
		if g.team == t.id && !g.orgWide {
			own = true
		}
		if g.orgWide && g.enterprise == t.enterprise && !g.away[t.id] {
			org = true
		}
	}
	return org && !own
}

func (s *Server) wireEnterprise(t *team) any {
	if t.enterprise == "" {
		return nil
	}
	e := s.tm.enterprises[t.enterprise]
	return map[string]any{"id": e.id, "name": e.name}
}

// scopeCheckLocked answers the error Slack gives a token for a channel or
// user outside its team(s), "" when the request is within them.
func (s *Server) scopeCheckLocked(g *grant, r *apiRequest) string {
	if g == nil {
		return ""
	}
	for _, key := range []string{"channel", "user", "user_id", "users"} {
		ref := r.params[key]
		if ref == "" || strings.Contains(ref, ",") {
			continue
		}
		if u := s.ws.users[ref]; u != nil {
			if !s.grantAllows(g, u.Team) {
				if key == "channel" {
					return "channel_not_found"
				}
				return "user_not_found"
			}
			continue
		}
		if key == "channel" {
			if c := s.ws.resolveChannel(ref); c != nil && !s.grantAllows(g, c.Team) {
				return "channel_not_found"
			}
		}
	}
	return ""
}
