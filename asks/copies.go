package asks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// Copies of an ask (Record.Copies): views besides its main message, such
// as a direct message to each responder (notify "dm") or a message in an
// escalation's channel. The lifecycle treats them alike and knows nothing
// of what they are: a copy is added to the record (AddCopy), posted by the
// dispatcher of whichever replica claims the record (once: an attempt is
// claimed in the record, and one that may have landed is looked for
// before posting again), answered like the main message (Act.Ref), and
// rendered by every update of the message, so an ended ask is drawn ended
// in each copy (syncMessage: the record is synced only once all landed).

// dutyCopy names the posting of copies in the dispatcher's retry pacing.
const dutyCopy = "copy"

// AddCopy adds copy c (c.For or c.In set; no Ref) to the pending ask r:
// call it inside the store update that decides it (an escalation step,
// say), so that the copy exists iff that change was committed. The
// dispatcher then posts it, and each later update of the ask keeps it in
// step. It reports false, leaving r unchanged, when r has ended, or
// already shows the ask there (a copy for the same person or conversation,
// or the main message).
func AddCopy(r *Record, c Copy) bool {
	if r.Status.Ended() || (c.For == "") == (c.In == "") {
		return false
	}
	if (c.For != "" && c.For == r.User) || (c.In != "" && c.In == r.Channel) {
		return false
	}
	for _, o := range r.Copies {
		if o.For == c.For && o.In == c.In {
			return false
		}
	}
	r.Copies = append(r.Copies, Copy{For: c.For, In: c.In})
	return true
}

// AddCopies adds the copies cs to the pending ask id (AddCopy) in one
// store update and returns the record as stored; the ones it shows already
// are left out. ErrEnded when the ask has ended.
func (s *Service) AddCopies(ctx context.Context, id string, cs ...Copy) (Record, error) {
	rec, err := s.store.Update(ctx, id, func(r *Record) error {
		if r.Status.Ended() {
			return ErrEnded
		}
		added := false
		for _, c := range cs {
			added = AddCopy(r, c) || added
		}
		if !added {
			return errNoChange
		}
		return nil
	})
	if errors.Is(err, errNoChange) {
		return s.store.Get(ctx, id)
	}
	if err != nil {
		return rec, fmt.Errorf("asks add copies %s: %w", id, err)
	}
	return rec, nil
}

// onCopy reports whether a was made on one of r's posted copies.
func onCopy(a Act, r *Record) bool {
	if a.Ref == "" {
		return false
	}
	for _, c := range r.Copies {
		if c.Ref == a.Ref {
			return true
		}
	}
	return false
}

// copyPosting reports whether r has a copy whose post may have landed
// without its reference stored yet: an act on an unknown view then waits
// for it, as an act on the main message waits for it to be posted.
func copyPosting(r *Record) bool {
	for _, c := range r.Copies {
		if c.Ref == "" && c.Failed == "" && !c.Attempt.IsZero() {
			return true
		}
	}
	return false
}

// copiesDue is when r next has a copy to post: now for a copy never tried,
// else once its last attempt can no longer land; zero for none. Copies
// are posted once the main message is (they are its copies), and never
// after the ask ended.
func copiesDue(r Record) time.Time {
	if r.Status.Ended() || !r.Posted() {
		return time.Time{}
	}
	var w time.Time
	for _, c := range r.Copies {
		if c.Ref != "" || c.Failed != "" {
			continue
		}
		at := r.CreatedAt
		if !c.Attempt.IsZero() {
			at = c.Attempt.Add(postGrace)
		}
		if w.IsZero() || at.Before(w) {
			w = at
		}
	}
	return w
}

// postCopies posts the copies of rec that are due (copiesDue). An error
// (the first) means some copy is to be tried again later.
func (s *Service) postCopies(ctx context.Context, rec Record) error {
	now := s.now()
	var firstErr error
	for i, c := range rec.Copies {
		if c.Ref != "" || c.Failed != "" || (!c.Attempt.IsZero() && now.Before(c.Attempt.Add(postGrace))) {
			continue
		}
		if err := s.postCopy(ctx, rec, i, now); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// postCopy posts copy i of rec: it adopts an earlier attempt's copy when
// the surface finds one, else claims the attempt in the record and posts.
func (s *Service) postCopy(ctx context.Context, rec Record, i int, now time.Time) error {
	c := rec.Copies[i]
	if !c.Attempt.IsZero() {
		at, err := s.surface.FindCopy(ctx, rec, c)
		if err != nil {
			return fmt.Errorf("asks copy %s/%d: look for an earlier post: %w", rec.ID, i, err)
		}
		if at.Ref != "" {
			return s.copyPosted(ctx, rec.ID, i, c.Attempt, at, 0)
		}
	}
	cur, err := s.store.Update(ctx, rec.ID, func(r *Record) error {
		if r.Status.Ended() || i >= len(r.Copies) || r.Copies[i].Ref != "" || r.Copies[i].Failed != "" || !r.Copies[i].Attempt.Equal(c.Attempt) {
			return errNoChange // posted, refused or being posted by someone else
		}
		r.Copies[i].Attempt = now
		return nil
	})
	if errors.Is(err, errNoChange) || isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("asks copy %s/%d: %w", rec.ID, i, err)
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PostTimeout)
	at, err := s.surface.PostCopy(pctx, cur, cur.Copies[i])
	cancel()
	var rl *RateLimited
	switch {
	case err == nil:
		s.stats.posts.Add(1)
		return s.copyPosted(ctx, rec.ID, i, now, at, cur.Rev)
	case errors.As(err, &rl):
		// Nothing was posted: forget the attempt, and try after the pause.
		_, uerr := s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
			if i >= len(r.Copies) || !r.Copies[i].Attempt.Equal(now) || r.Copies[i].Ref != "" {
				return errNoChange
			}
			r.Copies[i].Attempt = time.Time{}
			return nil
		})
		if uerr != nil && !errors.Is(uerr, errNoChange) {
			return uerr
		}
		return fmt.Errorf("asks copy %s/%d: %w", rec.ID, i, err)
	case errors.Is(err, ErrOutcomeUnknown):
		return fmt.Errorf("asks copy %s/%d (looked for once it can have landed): %w", rec.ID, i, err)
	}
	s.log.Error().Err(err).Str("ask", rec.ID).Int("copy", i).Msg("the surface refused a copy of the ask; not trying it again")
	msg := err.Error()
	_, err = s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
		if i >= len(r.Copies) || !r.Copies[i].Attempt.Equal(now) || r.Copies[i].Ref != "" {
			return errNoChange
		}
		r.Copies[i].Failed, r.Copies[i].Attempt = msg, time.Time{}
		return nil
	})
	if errors.Is(err, errNoChange) || isNotFound(err) {
		return nil
	}
	return err
}

// copyPosted stores at as copy i of ask id, posted by the attempt started
// at attempt showing revision rev (0: an adopted copy, whose rendering is
// unknown), and records it (posted; notified for a direct message). When
// the record moved past rev (or the rendering is unknown) the ask's views
// are brought in step.
func (s *Service) copyPosted(ctx context.Context, id string, i int, attempt time.Time, at Posted, rev int) error {
	rec, err := s.store.Update(context.WithoutCancel(ctx), id, func(r *Record) error {
		if i >= len(r.Copies) || r.Copies[i].Ref != "" || !r.Copies[i].Attempt.Equal(attempt) {
			return errNoChange
		}
		r.Copies[i].Ref, r.Copies[i].Attempt = at.Ref, time.Time{}
		r.Emit(store.EventPosted, nil, postedData{Channel: at.Channel, TS: at.TS})
		if u := r.Copies[i].For; u != "" {
			emitNotified(r, []string{u}, "dm")
		}
		if r.Rev != rev {
			// The copy shows an older rendering (or one unknown): a new
			// revision renders every view again, and an update in
			// flight that does not know this copy yet does not mark
			// the record synced.
			r.Rev++
			r.Synced = false
		}
		return nil
	})
	if errors.Is(err, errNoChange) || isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("asks copy %s/%d: store its reference: %w", id, i, err)
	}
	if !rec.Synced {
		s.syncer.mark(rec)
	}
	if rec.Copies[i].For != "" {
		s.log.Info().Str("ask", id).Int("copy", i).Str("user", rec.Copies[i].For).Msg("sent the ask in a direct message")
	}
	return nil
}

// dmCopies are the copies of a new ask with notify "dm": one direct
// message per named responder (user groups expanded, at most
// interaction.MaxResponders people), the ask's own DM user left out.
func (s *Service) dmCopies(ctx context.Context, rec *Record) error {
	if rec.Notify != interaction.NotifyDM || len(rec.Responders) == 0 {
		return nil
	}
	people, err := s.people(ctx, rec.TeamID, rec.Responders, `notify "dm"`)
	if err != nil {
		return err
	}
	for _, u := range people {
		AddCopy(rec, Copy{For: u})
	}
	return nil
}
