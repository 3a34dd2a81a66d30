package slackfake

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
)

// conversationsHistory answers conversations.history: top-level messages
// of a channel, newest first, newer than "oldest" (a ts), at most "limit"
// (default 100, max 999), continuing from "cursor" (has_more and
// response_metadata.next_cursor say when more remain, as Slack does).
// Thread replies are left out, as Slack does.
func (s *Server) conversationsHistory(r *apiRequest) reply {
	return s.history(r, func(m *msgRec) bool { return m.ThreadTS == "" || m.ThreadTS == m.TS })
}

// conversationsReplies answers conversations.replies: the thread of "ts"
// (its parent first, then the replies in order).
func (s *Server) conversationsReplies(r *apiRequest) reply {
	parent := r.str("ts")
	if parent == "" {
		return errReply("thread_not_found")
	}
	rep := s.history(r, func(m *msgRec) bool { return m.TS == parent || m.ThreadTS == parent })
	if msgs, ok := rep.body["messages"].([]any); ok {
		for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 { // oldest first
			msgs[i], msgs[j] = msgs[j], msgs[i]
		}
	}
	return rep
}

func (s *Server) history(r *apiRequest, keep func(*msgRec) bool) reply {
	ch := s.ws.resolveChannel(r.str("channel"))
	if ch == nil {
		return errReply("channel_not_found")
	}
	limit := 100
	if v := r.str("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return errReply("invalid_limit")
		}
		limit = min(n, 999)
	}
	oldest := parseTS(r.str("oldest"))
	before := math.Inf(1) // a cursor continues below the last ts handed out
	if c := r.str("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		ts, ok := strings.CutPrefix(string(raw), "next_ts:")
		if err != nil || !ok || parseTS(ts) == 0 {
			return errReply("invalid_cursor")
		}
		before = parseTS(ts)
	}
	list := s.msgs[ch.ID]
	out := []any{}
	more, last := false, ""
	for i := len(list) - 1; i >= 0; i-- {
		m := list[i]
		if m.Deleted || !keep(m) || parseTS(m.TS) <= oldest || parseTS(m.TS) >= before {
			continue
		}
		if len(out) == limit {
			more = true
			break
		}
		out = append(out, s.wireMessage(m.Message, m.blocks))
		last = m.TS
	}
	body := map[string]any{"messages": out, "has_more": more}
	if more {
		body["response_metadata"] = map[string]any{"next_cursor": base64.StdEncoding.EncodeToString([]byte("next_ts:" + last))}
	}
	return okReply(body)
}

func parseTS(ts string) float64 {
	f, err := strconv.ParseFloat(ts, 64)
	if err != nil {
		return 0
	}
	return f
}
