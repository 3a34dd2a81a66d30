package slackfake

import (
	"encoding/json"
	"fmt"
	"time"
)

// Message is a message the bot posted (or a thread reply), as stored.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string // "" for a top-level message
	Text     string
	// Blocks are the blocks as Slack stores them: every block has a
	// block_id and every interactive element an action_id (generated when
	// the bot sent none, as Slack does).
	Blocks  json.RawMessage
	Updates int       // number of chat.update calls applied
	Edited  time.Time // time of the last update, zero if never updated
	Deleted bool      // removed through a response_url delete_original
}

// Ephemeral is a message only one person sees (chat.postEphemeral).
type Ephemeral struct {
	Channel string
	User    string
	TS      string
	Text    string
	Blocks  json.RawMessage
}

type msgRec struct {
	Message
	blocks []any
}

// nextTSLocked returns a message timestamp like "1700000000.000100",
// unique and increasing even when the clock stands still.
func (s *Server) nextTSLocked() string {
	us := s.now().UnixMicro()
	if us <= s.lastTS {
		us = s.lastTS + 1
	}
	s.lastTS = us
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

// msgKeyT indexes messages by conversation and ts (unique: nextTSLocked).
type msgKeyT struct{ channel, ts string }

// findMsgLocked returns the message, or nil when there is none or it was
// deleted. It looks it up in an index: scanning the channel made every
// action O(messages), milliseconds per click with 50,000 messages (found
// by the scale benchmark in bench/).
func (s *Server) findMsgLocked(channel, ts string) *msgRec {
	if m := s.msgIndex[msgKeyT{channel, ts}]; m != nil && !m.Deleted {
		return m
	}
	return nil
}

func (s *Server) findEphemeralLocked(user, channel, ts string) (Ephemeral, bool) {
	for _, e := range s.ephemerals {
		if e.User == user && e.TS == ts && (channel == "" || e.Channel == channel) {
			return e, true
		}
	}
	return Ephemeral{}, false
}

// normalizeBlocks gives every block a block_id and every interactive element
// an action_id, as Slack does for blocks sent without them.
func normalizeBlocks(blocks []any) []any {
	out := cloneJSON(blocks).([]any)
	for _, b := range out {
		m, ok := asObj(b)
		if !ok {
			continue
		}
		if _, has := m["block_id"]; !has {
			m["block_id"] = randAlnum(5)
		}
		for _, el := range blockElements(m) {
			if _, has := el.m["action_id"]; !has && getStr(el.m, "type") != "image" {
				el.m["action_id"] = randAlnum(5)
			}
		}
	}
	return out
}

// elemRef is an element inside a block.
type elemRef struct {
	block   map[string]any
	blockID string
	m       map[string]any
	inInput bool
}

// blockElements lists the elements of a block: section accessory, actions
// elements, input element.
func blockElements(b map[string]any) []elemRef {
	id := getStr(b, "block_id")
	var out []elemRef
	add := func(v any, input bool) {
		if m, ok := asObj(v); ok {
			out = append(out, elemRef{block: b, blockID: id, m: m, inInput: input})
		}
	}
	switch getStr(b, "type") {
	case "section":
		add(b["accessory"], false)
	case "actions":
		for _, el := range getArr(b, "elements") {
			add(el, false)
		}
	case "input":
		add(b["element"], true)
	}
	return out
}

// Messages returns the channel's messages (top-level and thread replies) in
// the order they were posted; nil for an unknown channel.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.msgs[channel] {
		if !m.Deleted {
			out = append(out, m.copy())
		}
	}
	return out
}

// Message returns the message with ts in channel; ok is false when there is
// none.
func (s *Server) Message(channel, ts string) (msg Message, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findMsgLocked(channel, ts)
	if m == nil {
		return Message{}, false
	}
	return m.copy(), true
}

// Ephemerals returns the ephemeral messages sent to user, oldest first; nil
// when there are none.
func (s *Server) Ephemerals(user string) []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Ephemeral
	for _, e := range s.ephemerals {
		if e.User == user {
			e.Blocks = append(json.RawMessage(nil), e.Blocks...)
			out = append(out, e)
		}
	}
	return out
}

func (m *msgRec) copy() Message {
	c := m.Message
	c.Blocks = append(json.RawMessage(nil), m.Blocks...)
	return c
}

// wireMessage is the message object Slack returns and puts in payloads.
// s.mu held.
func (s *Server) wireMessage(m Message, blocks []any) map[string]any {
	t := s.tm.teams[s.cfg.TeamID]
	if c := s.ws.channels[m.Channel]; c != nil && s.tm.teams[s.teamIDLocked(c.Team)] != nil {
		t = s.tm.teams[s.teamIDLocked(c.Team)]
	}
	out := map[string]any{
		"type": "message", "text": m.Text, "user": t.botUser, "ts": m.TS,
		"bot_id": botID, "app_id": s.cfg.AppID, "team": t.id,
		"blocks": nonNil(blocks),
	}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if m.Updates > 0 {
		out["edited"] = map[string]any{"user": t.botUser, "ts": fmt.Sprintf("%d.000000", m.Edited.Unix())}
	}
	return out
}

func nonNil(blocks []any) []any {
	if blocks == nil {
		return []any{}
	}
	return blocks
}
