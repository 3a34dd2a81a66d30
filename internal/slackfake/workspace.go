package slackfake

import (
	"slices"
	"strings"
)

type user struct {
	ID    string
	Name  string
	IsBot bool
	Team  string // "" : the first team (teams.go)
}

type channel struct {
	ID      string
	Name    string
	Members []string // empty: everyone may read it
	IsIM    bool
	User    string // the person of a DM
	Opened  bool   // conversations.open called for this DM
	Team    string // "" : the first team (teams.go)
}

type workspace struct {
	users    map[string]*user
	channels map[string]*channel
	groups   map[string][]string
	botUser  string
}

func (w *workspace) init(cfg Config) {
	w.users = map[string]*user{}
	w.channels = map[string]*channel{}
	w.groups = map[string][]string{}
	w.botUser = cfg.BotUserID
	w.users[cfg.BotUserID] = &user{ID: cfg.BotUserID, Name: "slackfake-bot", IsBot: true}
}

// AddUser adds (or renames) a person of the workspace. An empty id is ignored.
func (s *Server) AddUser(id, name string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws.users[id] = &user{ID: id, Name: name}
}

// AddChannel adds (or replaces) a channel. With members, chat.postEphemeral
// to anyone else fails with user_not_in_channel; without, everyone is a
// member. An empty id is ignored.
func (s *Server) AddChannel(id, name string, members ...string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws.channels[id] = &channel{ID: id, Name: name, Members: slices.Clone(members)}
}

// AddUserGroup adds (or replaces) a user group (subteam) with its members.
// An empty id is ignored.
func (s *Server) AddUserGroup(id string, users ...string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws.groups[id] = slices.Clone(users)
}

// DMChannelID returns the stable id of the bot's DM with user: "D" followed
// by the user id without its leading "U". It does not check that the user
// exists.
func DMChannelID(userID string) string {
	return "D" + strings.TrimPrefix(userID, "U")
}

// dm returns the DM channel with a known user, creating it. s.mu held.
func (w *workspace) dm(userID string) *channel {
	id := DMChannelID(userID)
	if c, ok := w.channels[id]; ok {
		return c
	}
	c := &channel{ID: id, Name: userID, IsIM: true, User: userID, Members: []string{userID, w.botUser}}
	if u := w.users[userID]; u != nil {
		c.Team = u.Team
	}
	w.channels[id] = c
	return c
}

// resolveChannel finds a channel by id, "#name", name, or user id (the DM
// with that user). s.mu held.
func (w *workspace) resolveChannel(ref string) *channel {
	if ref == "" {
		return nil
	}
	if c, ok := w.channels[ref]; ok {
		return c
	}
	if strings.HasPrefix(ref, "D") {
		if u := w.userOfDM(ref); u != "" {
			return w.dm(u)
		}
	}
	if u, ok := w.users[ref]; ok && !u.IsBot {
		return w.dm(ref)
	}
	name := strings.TrimPrefix(ref, "#")
	for _, c := range w.channels {
		if !c.IsIM && c.Name == name {
			return c
		}
	}
	return nil
}

func (w *workspace) userOfDM(id string) string {
	for uid := range w.users {
		if DMChannelID(uid) == id && !w.users[uid].IsBot {
			return uid
		}
	}
	return ""
}

func (c *channel) isMember(userID string) bool {
	return len(c.Members) == 0 || slices.Contains(c.Members, userID)
}

func (c *channel) displayName() string {
	if c.IsIM {
		return "directmessage"
	}
	return c.Name
}
