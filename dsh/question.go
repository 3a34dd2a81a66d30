package dsh

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
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
func (b *Bridge) serve(ctx, qctx context.Context, q *question) {
	defer b.untrack(q)
	log := b.log.With().Str("rpcId", q.rpcID).Str("session", q.sessionID).Logger()

	ask, err := b.createAsk(ctx, qctx, q, log)
	b.mu.Lock()
	b.creating--
	if err == nil {
		q.askID = ask.ID
	}
	b.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil || b.outcome(q) != "" {
			return // shutting down, or nothing to tell: the host moved on
		}
		log.Error().Err(err).Msg("dsh: could not post the question; replying cancelled")
		b.deliver(ctx, q, "", reply{message: "slackask could not post the question in Slack: " + interaction.ErrorMessage(err)}, log)
		return
	}
	log = log.With().Str("ask", ask.ID).Logger()
	log.Info().Dur("latency", time.Since(q.received)).Str("ts", ask.TS).Str("threadTs", ask.ThreadTS).
		Str("status", string(ask.Status)).Msg("dsh: question is an ask")

	delay := b.cfg.Backoff.Min
	for !ask.Status.Ended() {
		if outcome := b.outcome(q); outcome != "" {
			b.withdraw(ctx, ask.ID, noteFor(outcome), log)
			return
		}
		if ctx.Err() != nil {
			return // stays pending; the host replays it to the next bridge
		}
		cur, err := b.cfg.Service.Wait(qctx, ask.ID)
		switch {
		case interaction.ErrorCode(err) == interaction.NotFound:
			log.Error().Err(err).Msg("dsh: the ask is gone; replying cancelled")
			b.deliver(ctx, q, "", reply{message: "the question was deleted from slackask before anyone answered"}, log)
			return
		case err != nil:
			log.Warn().Err(err).Msg("dsh: waiting for the ask failed; retrying")
			if !clock.Sleep(qctx, jitter(delay)) {
				continue
			}
			delay = min(delay*2, respondMaxDelay)
		default:
			ask = cur
		}
	}
	if outcome := b.outcome(q); outcome != "" {
		// Both ended at once; the host has its result already. Withdraw is a
		// no-op on an ended ask but lets the service add the note if it can.
		b.withdraw(ctx, ask.ID, noteFor(outcome), log)
		return
	}
	log.Info().Str("status", string(ask.Status)).Msg("dsh: ask ended in Slack; replying to the host")
	b.deliver(ctx, q, ask.ID, replyFor(q.req, ask), log)
}

// createAsk creates (or, for a replayed question, finds) the ask of q,
// posting it in its session's thread when the session has one. Creates of
// one session run one at a time in the order the questions arrived, so that
// the first becomes the thread root before the second is posted. Errors of
// the request itself are returned at once; others are retried
// RespondAttempts times.
func (b *Bridge) createAsk(ctx, qctx context.Context, q *question, log zerolog.Logger) (interaction.Ask, error) {
	defer close(q.created)
	if q.after != nil {
		select { // not qctx: the next question must not overtake the previous one
		case <-q.after:
		case <-ctx.Done():
			return interaction.Ask{}, ctx.Err()
		}
	}
	if err := qctx.Err(); err != nil {
		return interaction.Ask{}, err // the host settled it meanwhile: post nothing
	}
	s := b.session(q.sessionID)

	delay := b.cfg.Backoff.Min
	for attempt := 1; ; attempt++ {
		in := b.input(q, s)
		ask, err := b.cfg.Service.Create(ctx, in)
		if err == nil {
			b.noteRoot(s, ask)
			return ask, nil
		}
		if permanent(err) || attempt >= b.cfg.RespondAttempts || ctx.Err() != nil {
			return interaction.Ask{}, err
		}
		wait := jitter(delay)
		log.Warn().Err(err).Int("attempt", attempt).Dur("retryIn", wait).Msg("dsh: creating the ask failed; retrying")
		if !clock.Sleep(qctx, wait) {
			return interaction.Ask{}, err
		}
		delay = min(delay*2, respondMaxDelay)
	}
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
			Questions: q.req.Questions,
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

// permanent reports whether a Create error is the request's fault, so that
// retrying cannot help.
func permanent(err error) bool {
	switch interaction.ErrorCode(err) {
	case interaction.EmptyQuestions, interaction.InvalidQuestion, interaction.BadIntent,
		interaction.Unauthorized, interaction.NoProvider:
		return true
	}
	return errors.Is(err, context.Canceled)
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
	var (
		ask interaction.Ask
		err error
	)
	if nw, ok := b.cfg.Service.(interaction.NoteWithdrawer); ok {
		ask, err = nw.WithdrawWithNote(wctx, askID, note)
	} else {
		ask, err = b.cfg.Service.Withdraw(wctx, askID)
	}
	if err != nil {
		log.Error().Err(err).Str("ask", askID).Str("note", note).Msg("dsh: could not withdraw the ask")
		return
	}
	log.Info().Str("ask", askID).Str("note", note).Str("status", string(ask.Status)).Msg("dsh: ask withdrawn")
}
