package asks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// The post queues. A conversation that rate-limits posts (Slack: about
// one message a second per channel) never fails an ask: the ask is kept,
// named in its conversation's queue (Record.PostQueue) and posted when its
// turn comes, in creation order. The queue is the store's (Store.Queue),
// so it survives restarts and is shared by replicas: only the ask at the
// head of a queue is posted, by whichever replica claims it when due, and
// the next one is woken once the head has its message.
const (
	// queueStep is the pace a queued ask behind the head expects per
	// ask ahead of it: it next looks at its place then (the head wakes
	// its successor as soon as it is posted, so this only bounds how late
	// a successor starts when the replica that posted the head died).
	queueStep = time.Second
	// queuePeek bounds the ids read to find an ask's place.
	queuePeek = 10000
)

// queueName is the post queue of rec's message: its conversation (a
// direct ask's, before it is posted, is named after its person).
func queueName(rec Record) string {
	if rec.Channel == "" && rec.User != "" {
		return "dm:" + rec.User
	}
	return rec.Channel
}

// queuedAhead reports whether the conversation of rec has asks waiting to
// be posted: a new ask then queues behind them rather than overtake them.
// A store error is logged and reads as none (the post then finds out).
func (s *Service) queuedAhead(ctx context.Context, rec Record) bool {
	ids, err := s.store.Queue(ctx, queueName(rec), 1)
	if err != nil {
		s.log.Warn().Err(err).Str("ask", rec.ID).Msg("could not read the post queue; posting")
		return false
	}
	return len(ids) > 0
}

// enqueue puts rec in its conversation's post queue; its turn is tried at
// (or after) at.
func (s *Service) enqueue(ctx context.Context, rec Record, at time.Time) (Record, error) {
	q := queueName(rec)
	out, err := s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
		if r.Posted() || r.Status.Ended() {
			return errNoChange
		}
		r.PostQueue, r.Posting, r.PostAt, r.PostAttempt = q, interaction.PostingQueued, at, time.Time{}
		return nil
	})
	if errors.Is(err, errNoChange) {
		return s.store.Get(context.WithoutCancel(ctx), rec.ID)
	}
	if err != nil {
		return rec, fmt.Errorf("queue the post: %w", err)
	}
	s.log.Info().Str("ask", rec.ID).Str("queue", q).Msg("conversation rate-limited: the ask is queued for posting")
	return out, nil
}

// leaveQueue clears r's queue state: r has its message (or ended).
func leaveQueue(r *Record) {
	r.PostQueue, r.Posting, r.PostAt, r.PostAttempt, r.QueuePlace = "", "", time.Time{}, time.Time{}, 0
}

// withPlace returns rec's ask with its place in its queue filled in (when
// queued; a store error leaves the place out).
func (s *Service) withPlace(ctx context.Context, rec Record) interaction.Ask {
	ask := rec.Ask
	if rec.PostQueue == "" || rec.Status.Ended() {
		return ask
	}
	ids, err := s.store.Queue(ctx, rec.PostQueue, queuePeek)
	if err != nil {
		s.log.Warn().Err(err).Str("ask", rec.ID).Msg("could not read the post queue")
		return ask
	}
	if i := slices.Index(ids, rec.ID); i >= 0 {
		ask.QueuePlace = i + 1
	}
	return ask
}

// drainWaitMax bounds how long a drain waits in process for a
// conversation's next turn; a longer pause is left to the dispatcher.
const drainWaitMax = 10 * time.Second

// postQueued is the dispatcher's work on a queued ask that is due. One
// goroutine of one replica drains a queue at a time (the store lease
// "post-queue/<name>"): it posts the head, waits out the surface's pause,
// posts the next, until the queue is empty, so that the conversation's
// turns are taken as they come rather than one dispatcher round each.
// An ask due while another drains its queue looks again when its turn
// may have come.
func (s *Service) postQueued(ctx context.Context, rec Record) error {
	q := rec.PostQueue
	if !s.draining.claim(q) {
		return s.laterInQueue(ctx, rec)
	}
	defer s.draining.release(q)
	lease := "post-queue/" + q
	if held, err := s.store.Lease(ctx, lease, s.holder, dueLease); err != nil || !held {
		if err != nil {
			return fmt.Errorf("post queue %s: %w", q, err)
		}
		return s.laterInQueue(ctx, rec) // another replica drains it
	}
	defer func() {
		if _, err := s.store.Lease(context.WithoutCancel(ctx), lease, s.holder, 0); err != nil {
			s.log.Warn().Err(err).Str("queue", q).Msg("could not release the post queue")
		}
	}()
	for ctx.Err() == nil {
		if held, err := s.store.Lease(ctx, lease, s.holder, dueLease); err != nil || !held {
			return err // lost: whoever holds it drains
		}
		head, err := s.queueHead(ctx, q)
		if err != nil || head.ID == "" {
			return err
		}
		wait, err := s.postHead(ctx, head)
		switch {
		case err != nil:
			return err
		case wait > drainWaitMax:
			return s.retryTurn(ctx, head, s.now().Add(wait))
		case wait > 0:
			select {
			case <-ctx.Done():
			case <-s.clock.After(wait):
			}
		}
	}
	return nil
}

// queueHeadPeek bounds the records a drain reads to find the head of a
// queue: the first that decodes. A corrupt record (store.ErrCorrupt) can
// be neither posted nor taken out of its queue, and must not hold up the
// asks behind it.
const queueHeadPeek = 8

// queueHead returns the first ask of queue q that can be read; none
// (zero ID) when q is empty.
func (s *Service) queueHead(ctx context.Context, q string) (Record, error) {
	ids, err := s.store.Queue(ctx, q, queueHeadPeek)
	if err != nil {
		return Record{}, err
	}
	for _, id := range ids {
		head, err := s.store.Get(ctx, id)
		if errors.Is(err, store.ErrCorrupt) {
			s.log.Error().Err(err).Str("ask", id).Str("queue", q).Msg("post queue: a corrupt record is stepped over")
			continue
		}
		return head, err
	}
	if len(ids) > 0 {
		return Record{}, fmt.Errorf("post queue %s: its first %d records are corrupt", q, len(ids))
	}
	return Record{}, nil
}

// laterInQueue sets when queued rec, not posted by this call, looks again:
// after a turn per ask ahead of it.
func (s *Service) laterInQueue(ctx context.Context, rec Record) error {
	ids, err := s.store.Queue(ctx, rec.PostQueue, queuePeek)
	if err != nil {
		return fmt.Errorf("post queue %s: %w", rec.PostQueue, err)
	}
	place := slices.Index(ids, rec.ID) + 1
	if place == 0 {
		return nil // posted or ended meanwhile
	}
	return s.retryTurn(ctx, rec, s.now().Add(time.Duration(place)*queueStep))
}

// postHead posts the ask at the head of its queue, first looking for the
// message of an earlier attempt that may have landed. It returns how long
// to wait before the queue's next turn (0: go on now).
func (s *Service) postHead(ctx context.Context, rec Record) (time.Duration, error) {
	if !s.posting.claim(rec.ID) {
		return queueStep, nil // a resolution of this process has it
	}
	defer s.posting.release(rec.ID)
	q := rec.PostQueue
	now := s.now()
	if !rec.PostAttempt.IsZero() {
		// An earlier attempt (of a process that died, or whose outcome
		// is unknown) may have landed: never post before it no longer
		// can, and look for its message first.
		if until := rec.PostAttempt.Add(postGrace); now.Before(until) {
			return until.Sub(now), nil
		}
		at, err := s.surface.FindPosted(ctx, rec)
		if err != nil {
			return 0, fmt.Errorf("post queue %s: look for an earlier post: %w", q, err)
		}
		if at.Ref != "" {
			_, err := s.adopt(ctx, rec, at)
			return 0, err
		}
	}
	// Claim the attempt in the record: whoever else holds this head
	// (a replica that lost the lease mid-post) does not post it too.
	attempt := rec.PostAttempt
	rec, err := s.store.Update(ctx, rec.ID, func(r *Record) error {
		if r.Posted() || r.Status.Ended() || r.PostQueue != q || !r.PostAttempt.Equal(attempt) {
			return errNoChange
		}
		r.PostAttempt = now
		return nil
	})
	if errors.Is(err, errNoChange) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	_, err = s.post(ctx, rec)
	var rl *RateLimited
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &rl):
		// Nothing was posted: forget the attempt.
		return rl.RetryAfter, s.retryTurn(ctx, rec, s.now().Add(rl.RetryAfter), now)
	case errors.Is(err, ErrOutcomeUnknown):
		s.log.Warn().Err(err).Str("ask", rec.ID).Msg("queued post's outcome unknown; looking for the message once it can have landed")
		return postGrace, nil
	}
	// Refused for good: the caller holds the ask already, so it ends
	// (aborted, with the surface's error) rather than vanish, and the
	// queue moves on.
	_, eerr := s.end(ctx, rec.ID, ending{
		status: interaction.StatusAborted,
		err:    interaction.Errorf(interaction.SlackError, "the question could not be posted: %v", err),
	})
	if eerr != nil && !errors.Is(eerr, ErrEnded) {
		return 0, eerr
	}
	return 0, nil
}

// retryTurn sets when queued rec next tries its turn. With cleared, the
// attempt started then was refused (nothing posted): it is forgotten.
func (s *Service) retryTurn(ctx context.Context, rec Record, at time.Time, cleared ...time.Time) error {
	_, err := s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
		if r.Posted() || r.Status.Ended() || r.PostQueue == "" {
			return errNoChange
		}
		if len(cleared) > 0 && r.PostAttempt.Equal(cleared[0]) {
			r.PostAttempt = time.Time{}
		}
		r.PostAt = at
		return nil
	})
	if errors.Is(err, errNoChange) || isNotFound(err) {
		return nil
	}
	return err
}
