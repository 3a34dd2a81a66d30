package slackfake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// This file exports what a front end needs to show the fake as a Slack
// client would (slackask dev): the workspace's people, conversations and
// user groups, and a person's client-side state of a message.

// UserInfo is a member of the workspace (people and the bot).
type UserInfo struct {
	ID    string
	Name  string
	IsBot bool
}

// ChannelInfo is a conversation of the workspace.
type ChannelInfo struct {
	ID   string
	Name string // channel name without "#"; for a DM the person's user id
	IsIM bool   // a DM between the bot and User
	User string // the person of a DM
	// Members lists who may read the channel; empty means everyone.
	Members []string
}

// BotUserID returns the bot's user id (Config.BotUserID).
func (s *Server) BotUserID() string { return s.cfg.BotUserID }

// Users returns every user, the bot included, sorted by name then id.
func (s *Server) Users() []UserInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]UserInfo, 0, len(s.ws.users))
	for _, u := range s.ws.users {
		out = append(out, UserInfo{ID: u.ID, Name: u.Name, IsBot: u.IsBot})
	}
	slices.SortFunc(out, func(a, b UserInfo) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Channels returns every conversation (channels, then DMs), each group
// sorted by name then id. DMs appear once the bot opened or posted to them.
func (s *Server) Channels() []ChannelInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ChannelInfo, 0, len(s.ws.channels))
	for _, c := range s.ws.channels {
		out = append(out, ChannelInfo{ID: c.ID, Name: c.Name, IsIM: c.IsIM, User: c.User, Members: slices.Clone(c.Members)})
	}
	slices.SortFunc(out, func(a, b ChannelInfo) int {
		if a.IsIM != b.IsIM {
			if a.IsIM {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// UserGroups returns every user group (subteam) id with its members.
func (s *Server) UserGroups() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]string, len(s.ws.groups))
	for id, members := range s.ws.groups {
		out[id] = slices.Clone(members)
	}
	return out
}

// MessageState returns the person's client-side state of the message (or
// the person's ephemeral message) channel/ts, as a payload carries it:
// {"values":{block_id:{action_id:{"type":…, "selected_option"|…}}}}. A
// message the person never touched has the initial values of its blocks;
// looking does not create state. Errors: ErrNotFound, ErrUnknownUser.
func (p *Person) MessageState(channel, ts string) (json.RawMessage, error) {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, err := p.channelLocked(channel)
	if err != nil {
		return nil, err
	}
	var key string
	var blocks []any
	if m := s.findMsgLocked(ch.ID, ts); m != nil {
		key, blocks = msgKey(ch.ID, ts), m.blocks
	} else if e, ok := s.findEphemeralLocked(p.id, ch.ID, ts); ok {
		v, _ := decodeJSON(e.Blocks)
		blocks, _ = asArr(v)
		key = ephKey(ch.ID, ts)
	} else {
		return nil, fmt.Errorf("%w: message %s in %s", ErrNotFound, ts, ch.ID)
	}
	st := s.states[p.id][key]
	if st == nil {
		st = initialState(blocks)
	}
	return mustJSON(map[string]any{"values": st.wire()}), nil
}
