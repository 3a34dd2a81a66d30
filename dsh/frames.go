package dsh

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slackask/slackask/interaction"
)

// The mux methods the bridge acts on; every other method is ignored.
const (
	methodQuestionRequested = "question/requested"
	methodQuestionResolved  = "question/resolved"
	methodSessionProjection = "session/projection"
	methodSessionEvent      = "session/event"
)

// Outcomes of question/resolved, plus outcomeGone for a question the host
// stopped replaying.
const (
	outcomeAnswered  = "answered"
	outcomeCancelled = "cancelled"
	outcomeGone      = "gone"
)

// frame is every mux frame: {"type":"server-request","rpcId","method","payload"}.
type frame struct {
	Type    string          `json:"type"`
	RPCID   string          `json:"rpcId"`
	Method  string          `json:"method"`
	Payload json.RawMessage `json:"payload"`
}

type questionRequested struct {
	SessionID string                 `json:"sessionId"`
	Questions []interaction.Question `json:"questions"`
}

type questionResolved struct {
	SessionID     string `json:"sessionId"`
	QuestionRPCID string `json:"questionRpcId"`
	Outcome       string `json:"outcome"`
}

type sessionProjection struct {
	SessionID string          `json:"sessionId"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
}

type sessionEvent struct {
	SessionID string `json:"sessionId"`
	Event     struct {
		Type string `json:"type"`
		Data struct {
			Reason struct {
				Kind string `json:"kind"`
			} `json:"reason"`
		} `json:"data"`
	} `json:"event"`
}

// handle acts on one frame of connection gen. It never blocks on the
// AskService: questions are served by their own goroutines.
func (b *Bridge) handle(ctx context.Context, gen uint64, data []byte) {
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		b.log.Warn().Err(err).Int("bytes", len(data)).Msg("dsh: ignoring a frame that is not JSON")
		return
	}
	switch f.Method {
	case methodQuestionRequested:
		var p questionRequested
		if err := json.Unmarshal(f.Payload, &p); err != nil || f.RPCID == "" || p.SessionID == "" {
			b.log.Warn().Err(err).Str("rpcId", f.RPCID).Msg("dsh: ignoring a malformed question/requested frame")
			return
		}
		b.requested(ctx, gen, f.RPCID, p)
	case methodQuestionResolved:
		var p questionResolved
		if err := json.Unmarshal(f.Payload, &p); err != nil || p.QuestionRPCID == "" {
			b.log.Warn().Err(err).Msg("dsh: ignoring a malformed question/resolved frame")
			return
		}
		outcome := outcomeCancelled
		if p.Outcome == outcomeAnswered {
			outcome = outcomeAnswered
		}
		b.resolve(p.QuestionRPCID, outcome, "question/resolved "+p.Outcome)
	case methodSessionProjection:
		var p sessionProjection
		if err := json.Unmarshal(f.Payload, &p); err != nil || p.Key != "title" || p.SessionID == "" {
			return
		}
		var title string
		if err := json.Unmarshal(p.Value, &title); err != nil {
			return
		}
		b.setTitle(p.SessionID, title)
	case methodSessionEvent:
		var p sessionEvent
		if err := json.Unmarshal(f.Payload, &p); err != nil {
			return
		}
		// An interrupted turn ends every question it asked. The host also
		// sends question/resolved for them; this is a backstop.
		if p.Event.Type == "turn/end" && p.Event.Data.Reason.Kind == "aborted" {
			b.resolveSession(p.SessionID, outcomeCancelled)
		}
	}
}

// requested starts serving a question, or, for a replay of a question
// already being served, notes that the host still waits for it.
func (b *Bridge) requested(ctx context.Context, gen uint64, rpcID string, p questionRequested) {
	b.mu.Lock()
	if q, ok := b.questions[rpcID]; ok {
		q.seen = gen
		b.mu.Unlock()
		b.log.Debug().Str("rpcId", rpcID).Msg("dsh: replay of a question already being served")
		return
	}
	qctx, stop := context.WithCancel(ctx)
	q := &question{
		rpcID: rpcID, sessionID: p.SessionID, req: interaction.Request{Questions: p.Questions},
		seen: gen, stop: stop, received: time.Now(), created: make(chan struct{}),
	}
	s := b.sessionLocked(p.SessionID)
	q.after, s.tail = s.tail, q.created
	b.questions[rpcID] = q
	b.creating++
	b.mu.Unlock()
	b.log.Info().Str("rpcId", rpcID).Str("session", p.SessionID).Int("questions", len(p.Questions)).
		Msg("dsh: question requested")
	b.wg.Go(func() {
		defer stop()
		b.serve(ctx, qctx, q)
	})
}

// resolve records that the host no longer waits for the question and wakes
// its goroutine, which withdraws the ask. Unknown rpcIds are ignored: the
// bridge has already replied, or never saw the question.
func (b *Bridge) resolve(rpcID, outcome, why string) {
	b.mu.Lock()
	q, ok := b.questions[rpcID]
	if !ok || q.resolved != "" {
		b.mu.Unlock()
		return
	}
	q.resolved = outcome
	b.mu.Unlock()
	b.log.Info().Str("rpcId", rpcID).Str("outcome", outcome).Str("why", why).Msg("dsh: the host settled the question")
	q.stop()
}

func (b *Bridge) resolveSession(sessionID, outcome string) {
	b.mu.Lock()
	var ids []string
	for id, q := range b.questions {
		if q.sessionID == sessionID && q.resolved == "" {
			ids = append(ids, id)
		}
	}
	b.mu.Unlock()
	for _, id := range ids {
		b.resolve(id, outcome, "turn aborted")
	}
}

func (b *Bridge) setTitle(sessionID, title string) {
	title = cleanTitle(title)
	if title == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sessionLocked(sessionID).title = title
}

// cleanTitle trims a title to one line that fits agent.name.
func cleanTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > interaction.MaxAgentNameLen {
		r := []rune(s)
		s = string(r[:interaction.MaxAgentNameLen-1]) + "…"
	}
	return s
}
