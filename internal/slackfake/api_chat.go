package slackfake

import (
	"net/url"
	"strings"
)

// parseBlocksParam reads the "blocks" JSON string. present is false when the
// parameter is absent or empty; rep is set when it is malformed or invalid.
func parseBlocksParam(r *apiRequest) (blocks []any, present bool, rep *reply) {
	raw := r.str("blocks")
	if raw == "" {
		return nil, false, nil
	}
	v, err := decodeJSON([]byte(raw))
	list, isArr := asArr(v)
	if err != nil || !isArr {
		e := errReply("invalid_blocks_format")
		return nil, true, &e
	}
	if errs := validateMessageBlocks(list); len(errs) > 0 {
		e := invalidBlocks(errs)
		return nil, true, &e
	}
	return normalizeBlocks(list), true, nil
}

func invalidBlocks(errs []string) reply {
	r := errReplyMsgs("invalid_blocks", prefixed(errs))
	r.body["errors"] = errs
	return r
}

func prefixed(errs []string) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = "[ERROR] " + e
	}
	return out
}

func (s *Server) chatPostMessage(r *apiRequest) reply {
	ch := s.ws.resolveChannel(r.str("channel"))
	if ch == nil {
		return errReply("channel_not_found")
	}
	if ok, wait := s.allowPostLocked(ch.ID); !ok {
		return rateLimited(wait)
	}
	text, blocks, rep := postedContent(r)
	if rep != nil {
		return *rep
	}
	thread := r.str("thread_ts")
	if thread != "" {
		parent := s.findMsgLocked(ch.ID, thread)
		if parent == nil {
			return errReply("thread_not_found")
		}
		thread = cmpOr(parent.ThreadTS, parent.TS)
	}
	m := s.storeMessageLocked(ch.ID, text, blocks, thread)
	return okReply(map[string]any{"channel": ch.ID, "ts": m.TS, "message": s.wireMessage(m.Message, m.blocks)})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *Server) storeMessageLocked(channel, text string, blocks []any, thread string) *msgRec {
	m := &msgRec{blocks: blocks}
	m.Channel, m.TS, m.ThreadTS, m.Text = channel, s.nextTSLocked(), thread, text
	m.Blocks = mustJSON(nonNil(blocks))
	s.msgs[channel] = append(s.msgs[channel], m)
	s.msgIndex[msgKeyT{channel, m.TS}] = m
	s.emitLocked(Event{Type: EventMessagePosted, Channel: channel, TS: m.TS})
	return m
}

func (s *Server) chatUpdate(r *apiRequest) reply {
	ch := s.ws.resolveChannel(r.str("channel"))
	if ch == nil {
		return errReply("channel_not_found")
	}
	m := s.findMsgLocked(ch.ID, r.str("ts"))
	if m == nil {
		return errReply("message_not_found")
	}
	text := m.Text
	if r.has("text") {
		text = r.str("text")
	}
	if runeLen(text) > maxUpdateText {
		return errReply("msg_too_long")
	}
	blocks, present, rep := parseBlocksParam(r)
	if rep != nil {
		return *rep
	}
	if !present {
		blocks = m.blocks
	}
	if text == "" && len(blocks) == 0 {
		return errReply("no_text")
	}
	s.applyUpdateLocked(m, text, blocks)
	return okReply(map[string]any{"channel": ch.ID, "ts": m.TS, "text": text, "message": s.wireMessage(m.Message, m.blocks)})
}

func (s *Server) applyUpdateLocked(m *msgRec, text string, blocks []any) {
	m.Text, m.blocks, m.Blocks = text, blocks, mustJSON(nonNil(blocks))
	m.Updates++
	m.Edited = s.now()
	s.rebaseStatesLocked(msgKey(m.Channel, m.TS), blocks)
	s.emitLocked(Event{Type: EventMessageUpdated, Channel: m.Channel, TS: m.TS})
}

func (s *Server) chatPostEphemeral(r *apiRequest) reply {
	ch := s.ws.resolveChannel(r.str("channel"))
	if ch == nil {
		return errReply("channel_not_found")
	}
	userID := r.str("user")
	if _, ok := s.ws.users[userID]; !ok {
		return errReply("user_not_found")
	}
	if !ch.isMember(userID) {
		return errReply("user_not_in_channel")
	}
	text, blocks, rep := postedContent(r)
	if rep != nil {
		return *rep
	}
	ts := s.storeEphemeralLocked(ch.ID, userID, text, blocks)
	return okReply(map[string]any{"message_ts": ts})
}

func (s *Server) storeEphemeralLocked(channel, userID, text string, blocks []any) string {
	e := Ephemeral{Channel: channel, User: userID, TS: s.nextTSLocked(), Text: text, Blocks: mustJSON(nonNil(blocks))}
	s.ephemerals = append(s.ephemerals, e)
	s.emitLocked(Event{Type: EventEphemeral, Channel: channel, TS: e.TS, User: userID})
	return e.TS
}

func (s *Server) chatGetPermalink(r *apiRequest) reply {
	ch := s.ws.resolveChannel(r.str("channel"))
	if ch == nil {
		return errReply("channel_not_found")
	}
	m := s.findMsgLocked(ch.ID, r.str("message_ts"))
	if m == nil {
		return errReply("message_not_found")
	}
	link := "https://" + teamDomain + ".slack.com/archives/" + ch.ID + "/p" + strings.ReplaceAll(m.TS, ".", "")
	if m.ThreadTS != "" {
		link += "?thread_ts=" + m.ThreadTS + "&cid=" + ch.ID
	}
	if base := s.cfg.PermalinkBase; base != "" {
		q := url.Values{"c": {ch.ID}, "msg": {m.TS}}
		if m.ThreadTS != "" && m.ThreadTS != m.TS {
			q.Set("thread", m.ThreadTS)
		}
		if ch.IsIM {
			q.Set("as", ch.User)
		}
		link = strings.TrimRight(base, "/") + "/?" + q.Encode()
	}
	return okReply(map[string]any{"channel": ch.ID, "permalink": link})
}

// postedContent reads the text and blocks of chat.postMessage and
// chat.postEphemeral, answering msg_too_long, invalid_blocks or no_text.
func postedContent(r *apiRequest) (string, []any, *reply) {
	text := r.str("text")
	if runeLen(text) > maxPostText {
		rep := errReply("msg_too_long")
		return "", nil, &rep
	}
	blocks, _, rep := parseBlocksParam(r)
	if rep != nil {
		return "", nil, rep
	}
	if text == "" && len(blocks) == 0 && r.str("attachments") == "" {
		rep := errReply("no_text")
		return "", nil, &rep
	}
	return text, blocks, nil
}
