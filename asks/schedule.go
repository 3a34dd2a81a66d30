package asks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// expire ends a pending ask whose deadline has passed.
func (s *Service) expire(ctx context.Context, id string) {
	_, err := s.end(ctx, id, ending{
		status: interaction.StatusExpired,
		err:    interaction.Errorf(interaction.AskTimeout, "nobody answered before the deadline"),
	})
	if err != nil && !errors.Is(err, ErrEnded) {
		s.log.Error().Err(err).Str("ask", id).Msg("expire failed")
	}
}

// remind posts the ask's reminder that is due. The reminder is counted
// (and the next one scheduled, with RemindEvery, or none) in one write.
// On a surface that marks its replies (Noticer) that write also claims
// the reminder's post (RemindSend), which is then posted and marked; a
// process that dies in between leaves the claim to run out, and the
// remindSend duty posts it then, after looking for it in the thread:
// each reminder exactly once. Elsewhere a crash between the count and
// the post loses that reminder rather than sending it twice.
func (s *Service) remind(ctx context.Context, id string) {
	now := s.now()
	_, marks := s.surface.(Noticer)
	rec, err := s.store.Update(ctx, id, func(r *Record) error {
		if r.Status.Ended() || r.Reminded || !r.Posted() || r.RemindAt.After(now) {
			return errNoChange
		}
		r.Reminders++
		r.Emit(store.EventReminded, nil, remindedData{Reminder: r.Reminders})
		if marks {
			r.RemindSend = &StepSend{Sending: now.Add(postGrace), Attempts: 1}
		}
		every := time.Duration(r.RemindEvery)
		if every <= 0 || r.Reminders >= interaction.MaxReminders {
			r.Reminded = true
			return nil
		}
		// The next one keeps the cadence; reminders missed while no
		// process ran are not made up for.
		r.RemindAt = r.RemindAt.Add(every)
		if !r.RemindAt.After(now) {
			r.RemindAt = now.Add(every)
		}
		return nil
	})
	if err != nil {
		return
	}
	if marks {
		if err := s.sendReminder(ctx, rec, false); err != nil {
			s.log.Warn().Err(err).Str("ask", id).Msg("reminder failed; retried once its claim runs out")
		}
		return
	}
	if err := s.surface.Remind(ctx, rec); err != nil {
		s.log.Warn().Err(err).Str("ask", id).Msg("reminder failed")
	}
}

// dutyRemindSend names the retried post of a claimed reminder.
const dutyRemindSend = "remind-send"

// remindSendDuty posts a reminder whose claim ran out unsent (its
// process died, or the post failed), on whichever replica claims the
// record: looked for in the thread first, then posted, then marked.
func (s *Service) remindSendDuty() Duty {
	return Duty{
		Name: dutyRemindSend,
		When: func(r Record) time.Time {
			if r.RemindSend == nil || r.RemindSend.Sent || r.Status.Ended() || !r.Posted() {
				return time.Time{}
			}
			return r.RemindSend.Sending
		},
		Do: func(ctx context.Context, rec Record) error {
			now := s.now()
			rec, err := s.store.Update(ctx, rec.ID, func(r *Record) error {
				if r.RemindSend == nil || r.RemindSend.Sent || r.Status.Ended() || r.RemindSend.Sending.After(now) {
					return errNoChange
				}
				rs := *r.RemindSend
				rs.Attempts++
				rs.Sending = now.Add(postGrace)
				r.RemindSend = &rs
				return nil
			})
			if errors.Is(err, errNoChange) || isNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("asks remind %s: %w", rec.ID, err)
			}
			return s.sendReminder(ctx, rec, true)
		},
	}
}

// sendReminder posts reminder number rec.Reminders (claimed in
// rec.RemindSend) as a marked thread reply and marks it sent.
func (s *Service) sendReminder(ctx context.Context, rec Record, retry bool) error {
	n := rec.Reminders
	if err := s.notice(ctx, rec, Notice{Key: fmt.Sprintf("remind-%d", n), Reminder: n, Step: -1, Retry: retry}); err != nil {
		return fmt.Errorf("asks remind %s: %w", rec.ID, err)
	}
	_, err := s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
		if r.RemindSend == nil || r.Reminders != n {
			return errNoChange
		}
		r.RemindSend = nil // sent: nothing owed
		return nil
	})
	if errors.Is(err, errNoChange) || isNotFound(err) {
		err = nil
	}
	return err
}

// recover picks up what an earlier process left. The dispatcher finds
// whatever is due in the store (deadlines, reminders, asks left unposted,
// messages out of step); here records written before WakeAt existed get
// theirs, and messages out of step are updated at once rather than after
// syncGrace.
func (s *Service) recover(ctx context.Context) {
	start := s.now()
	pending, err := s.store.Pending(ctx)
	if pending, err = s.readable("recover: list pending asks", pending, err); err != nil {
		s.log.Error().Err(err).Send()
		return
	}
	for _, rec := range pending {
		if !rec.Posted() && rec.PostQueue == "" && rec.CreatedAt.Before(start) && start.Before(rec.CreatedAt.Add(postGrace)) {
			// Stored by an earlier process (or another replica) and not
			// yet posted. Its post may still be in flight: Slack finishes
			// a request whose client was killed, after this start. So
			// its message is adopted now if it is there, and posted only
			// by the dispatcher, once postGrace has passed and no post of
			// it can be in flight; posting now could post it twice. (An
			// older one is due: the dispatcher adopts or posts it now.)
			s.settle(rec, false)
		}
		s.recoverOne(ctx, s.fillPermalink(ctx, rec))
	}
	// Ended records whose final update has not landed, newest first, a
	// page at a time: held records stay unsynced after their update, so
	// the pages go back by creation time (overlapping at the boundary
	// instant) rather than waiting for the first page to drain.
	const page = 1000
	seen := map[string]bool{}
	var before time.Time
	for round := 0; round < 100; round++ {
		unsynced, err := s.store.List(ctx, store.Filter{Unsynced: true, Limit: page, Before: before})
		read := len(unsynced) + leftOut(err) // a full page may hold rows that do not decode
		if unsynced, err = s.readable("recover: list unsynced asks", unsynced, err); err != nil {
			s.log.Error().Err(err).Send()
			return
		}
		fresh := 0
		for _, rec := range unsynced {
			if !seen[rec.ID] {
				seen[rec.ID] = true
				fresh++
				s.recoverOne(ctx, rec)
			}
		}
		if read < page || fresh == 0 || ctx.Err() != nil {
			break
		}
		before = unsynced[len(unsynced)-1].CreatedAt.Add(time.Microsecond)
		s.syncer.waitIdle(ctx)
	}
	s.log.Info().Int("pending", len(pending)).Msg("recovered asks from the store")
}

func (s *Service) recoverOne(ctx context.Context, rec Record) {
	if rec.Posted() && !rec.Synced {
		// The process that left it unsynced may have died with its
		// update in flight: rendered now, and again once that update
		// can no longer land.
		s.sched.hold(rec.ID)
	}
	if rec.WakeAt.IsZero() && !s.nextWake(&rec).IsZero() {
		s.rewake(ctx, rec.ID)
	}
	if rec.Posted() && !rec.Synced {
		// Read again and marked as it stands, as the dispatcher does: the
		// page was listed a while ago, and another replica may have
		// changed the ask since (ended it, and drawn it ended); rendering
		// the listed record would draw it live again until the check
		// after the update.
		if cur, err := s.store.Get(ctx, rec.ID); err == nil && cur.Posted() && !cur.Synced {
			s.syncer.mark(cur)
		} else if err != nil && !isNotFound(err) {
			s.syncer.mark(rec) // the check after the update still brings it in step
		}
	}
}

// postLeft posts an ask that was stored but not posted (its creator died
// in between, or its post failed in a way that kept the record), adopting
// an earlier post of it when the surface has one.
func (s *Service) postLeft(ctx context.Context, rec Record) error {
	if !s.posting.claim(rec.ID) {
		return errBeingPosted // by this process's create or resolvePost: never twice
	}
	defer s.posting.release(rec.ID)
	rec, err := s.adoptOrPost(ctx, rec)
	if err == nil && !rec.Synced {
		s.syncer.mark(rec)
	}
	return err
}

// adoptOrPost finishes an ask whose post may or may not have reached the
// surface before the process died: an earlier message of the ask is
// adopted (its place stored, the message re-rendered), else it is posted.
func (s *Service) adoptOrPost(ctx context.Context, rec Record) (Record, error) {
	at, err := s.surface.FindPosted(ctx, rec)
	if err != nil {
		s.log.Warn().Err(err).Str("ask", rec.ID).Msg("recover: could not look for an earlier post; posting")
	}
	if at.Ref == "" {
		return s.post(ctx, rec)
	}
	return s.store.Update(ctx, rec.ID, func(r *Record) error {
		setPosted(r, at)
		r.Rev, r.Synced = r.Rev+1, false
		return nil
	})
}

func isNotFound(err error) bool {
	return err != nil && interaction.ErrorCode(err) == interaction.NotFound
}
