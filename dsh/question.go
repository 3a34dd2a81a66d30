package dsh

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
)

// question is one question/requested the host is (as far as the bridge
// knows) waiting for. Mutable fields are guarded by Bridge.mu.
type question struct {
	rpcID, sessionID string
	req              interaction.Request // the questions as the host sent them
	stop             context.CancelFunc  // wakes the goroutine's Wait
	received         time.Time
	after            <-chan struct{} // the previous question of the session is past Create (nil: none)
	created          chan struct{}   // closed when this one is

	seen     uint64 // the last mux connection that sent (or replayed) it
	askID    string // once Create returned
	resolved string // outcome once the host settled it first
}

// serve turns one host question into an ask, waits for the ask to end and
// replies to the host, or withdraws the ask when the host settles the
// question first. ctx is Run's; qctx also ends when the host settles it.
// Creates of one session run one at a time in the order the questions
// arrived, so that the first becomes the thread root before the second is
// posted. When Run stops, the ask stays pending: the host replays the
// question to the next bridge, which re-attaches to it by idempotency key.
func (b *Bridge) serve(ctx, qctx context.Context, q *question) {
	defer b.untrack(q)
	log := b.log.With().Str("rpcId", q.rpcID).Str("session", q.sessionID).Logger()

	var once sync.Once
	created := func(id string) { // the next question of the session may go
		once.Do(func() {
			b.mu.Lock()
			b.creating--
			q.askID = id
			b.mu.Unlock()
			close(q.created)
		})
	}
	defer created("")
	if q.after != nil {
		select { // not qctx: the next question must not overtake the previous one
		case <-q.after:
		case <-ctx.Done():
			return
		}
	}
	s := b.session(q.sessionID)
	withdrawn := ""
	ask, err := interaction.AskAndWait(qctx, b.cfg.Service, b.input(q, s), interaction.AwaitOptions{
		CreateRetry: interaction.Retry{Attempts: b.cfg.RespondAttempts, Backoff: b.retryBackoff()},
		WaitRetry:   interaction.Retry{Forever: true, Backoff: b.retryBackoff()},
		Abandoned: func() (bool, string) {
			if outcome := b.outcome(q); outcome != "" {
				withdrawn = noteFor(outcome)
				return true, withdrawn
			}
			return false, "" // Run is stopping: the ask stays pending
		},
		OnCreated: func(a interaction.Ask) {
			b.noteRoot(s, a)
			created(a.ID)
			log.Info().Str("ask", a.ID).Dur("latency", time.Since(q.received)).Str("ts", a.TS).
				Str("threadTs", a.ThreadTS).Str("status", string(a.Status)).Msg("dsh: question is an ask")
		},
		OnRetry: func(op string, err error, pause time.Duration) {
			log.Warn().Err(err).Str("op", op).Dur("retryIn", pause).Msg("dsh: " + op + " of the ask failed; retrying")
		},
		// Create outlives qctx (a posted message stays tied to its ask) but
		// not by much, so that Run stops promptly.
		CreateTimeout:   attemptTimeout,
		WithdrawTimeout: withdrawTimeout,
	})
	switch {
	case err != nil && ask.ID == "":
		if ctx.Err() != nil || b.outcome(q) != "" {
			return // shutting down, or nothing to tell: the host moved on
		}
		log.Error().Err(err).Msg("dsh: could not post the question; replying cancelled")
		b.deliver(ctx, q, "", reply{message: "slackask could not post the question in Slack: " + interaction.ErrorMessage(err)}, log)
		return
	case interaction.ErrorCode(err) == interaction.NotFound:
		log.Error().Err(err).Str("ask", ask.ID).Msg("dsh: the ask is gone; replying cancelled")
		b.deliver(ctx, q, "", reply{message: "the question was deleted from slackask before anyone answered"}, log)
		return
	case err != nil:
		log.Error().Err(err).Str("ask", ask.ID).Str("note", withdrawn).Msg("dsh: could not withdraw the ask")
		return
	case withdrawn != "":
		log.Info().Str("ask", ask.ID).Str("note", withdrawn).Str("status", string(ask.Status)).Msg("dsh: ask withdrawn")
		return
	case !ask.Status.Ended():
		return // stays pending; the host replays it to the next bridge
	}
	log = log.With().Str("ask", ask.ID).Logger()
	if outcome := b.outcome(q); outcome != "" {
		// Both ended at once; the host has its result already. Withdraw is a
		// no-op on an ended ask but lets the service add the note if it can.
		b.withdraw(ctx, ask.ID, noteFor(outcome), log)
		return
	}
	log.Info().Str("status", string(ask.Status)).Msg("dsh: ask ended in Slack; replying to the host")
	b.deliver(ctx, q, ask.ID, replyFor(q.req, ask), log)
}

// retryBackoff paces the retries of creating and waiting for an ask, and
// of replying to the host.
func (b *Bridge) retryBackoff() *backoff.Backoff {
	return &backoff.Backoff{Min: b.cfg.Backoff.Min, Max: max(respondMaxDelay, b.cfg.Backoff.Min), Jitter: retryJitter}
}

// input is the AskInput of q: the session title as agent name, the rpcId as
// idempotency key, and the session's thread if it has one.
func (b *Bridge) input(q *question, s *session) interaction.AskInput {
	b.mu.Lock()
	title, rt := s.title, s.root
	b.mu.Unlock()
	if title == "" {
		title = DefaultTitle
	}
	in := interaction.AskInput{
		Request: interaction.Request{
			Questions: seamQuestions(q.req.Questions),
			Agent:     &interaction.Agent{ID: AgentPrefix + q.sessionID, Name: title},
		},
		Channel:        b.cfg.Channel,
		IdempotencyKey: AgentPrefix + q.rpcID,
	}
	if rt.ts != "" && (b.cfg.Channel == "" || rt.channel == "" || rt.channel == b.cfg.Channel) {
		if rt.channel != "" {
			in.Channel = rt.channel
		}
		in.ThreadTS = rt.ts
	}
	return in
}

// seamQuestions returns the host's questions as the agent's seam has them:
// one person answers, with Skip and Other… offered. A frame that carries
// veto, required or allowOther (fields of slackask's own API, not of the
// seam) does not reach the ask, so that an agent's question never becomes
// a team ask or loses the choices its harness expects.
func seamQuestions(qs []interaction.Question) []interaction.Question {
	out := make([]interaction.Question, len(qs))
	for i, q := range qs {
		q.Required, q.AllowOther = false, nil
		if len(q.Options) > 0 {
			opts := make([]interaction.Option, len(q.Options))
			for j, o := range q.Options {
				o.Veto, o.Note = false, "" // a dsh question never gets a note: the seam has no place for it
				opts[j] = o
			}
			q.Options = opts
		}
		out[i] = q
	}
	return out
}

// noteRoot makes ask the thread root of its session if the session has none
// and ask is a top-level message in the bridge's channel.
func (b *Bridge) noteRoot(s *session, ask interaction.Ask) {
	if ask.TS == "" || ask.ThreadTS != "" || !b.inChannel(ask) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.root.ts == "" {
		s.root = root{channel: ask.Channel, ts: ask.TS}
	}
}

func (b *Bridge) inChannel(ask interaction.Ask) bool {
	return b.cfg.Channel == "" || ask.Channel == "" || ask.Channel == b.cfg.Channel
}

// outcome returns how the host settled q, or "".
func (b *Bridge) outcome(q *question) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return q.resolved
}

func (b *Bridge) untrack(q *question) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.questions[q.rpcID] == q {
		delete(b.questions, q.rpcID)
	}
}

func noteFor(outcome string) string {
	if outcome == outcomeAnswered {
		return NoteAnsweredElsewhere
	}
	return NoteAgentStopped
}

// withdraw ends a pending ask as aborted with a note (when the service can
// show one). It outlives ctx by a little, so that a shutdown does not leave
// an ask pending that the host already settled.
func (b *Bridge) withdraw(ctx context.Context, askID, note string, log zerolog.Logger) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
	defer cancel()
	ask, err := interaction.WithdrawNoted(wctx, b.cfg.Service, askID, note)
	if err != nil {
		log.Error().Err(err).Str("ask", askID).Str("note", note).Msg("dsh: could not withdraw the ask")
		return
	}
	log.Info().Str("ask", askID).Str("note", note).Str("status", string(ask.Status)).Msg("dsh: ask withdrawn")
}
