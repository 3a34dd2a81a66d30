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

// Notice is a thread reply that tells people an ask now waits for them:
// the people an escalation step added, or the person an ask was handed
// to. Key is unique within the ask ("step-0", "handoff-1"); the surface
// marks the reply with it, so that a retry (Retry set: an earlier attempt
// may have posted it before its process died) finds the reply rather than
// posting it twice.
type Notice struct {
	Key string
	// People are the user and user-group ids to mention.
	People []string
	// DM: the people also get the ask by direct message (a copy the
	// lifecycle adds with the change; the notice may say so).
	DM bool
	// Step is the escalation step's index, or -1 for a hand-off or a
	// reminder.
	Step int
	// Reminder, when above 0, makes the notice that reminder (its
	// number): addressed to who still owes an answer.
	Reminder int
	// From and To name a hand-off.
	From, To *interaction.User
	Retry    bool
}

// Noticer is implemented by a Surface that can post Notices. A Surface
// without it cannot escalate or hand off: the steps still add their
// people, and are logged as not notified.
type Noticer interface {
	Notice(ctx context.Context, rec Record, n Notice) error
}

// ErrNoHandoff: the ask cannot be handed off (it names no responders, or
// waits for every named person) or not to that person.
var ErrNoHandoff = errors.New("asks: this ask cannot be handed off")

// dutyEscalate names the escalation steps among the dispatcher's duties.
const dutyEscalate = "escalate"

// escalateDuty fires escalation steps when they come due and sends their
// notices, on whichever replica claims the record.
func (s *Service) escalateDuty() Duty {
	return Duty{Name: dutyEscalate, When: escalationWake, Do: s.escalate}
}

// stepAt is when step i of r fires.
func stepAt(r Record, i int) time.Time {
	return r.CreatedAt.Add(time.Duration(r.Escalation[i].After))
}

// escalationWake is when r next has escalation work: the time of its
// first step not fired yet, or of a fired step's notice not sent yet
// (after the attempt in flight, if any); zero for none. A step fires only
// once the ask's message is posted (its reply goes in that thread).
func escalationWake(r Record) time.Time {
	if r.Status.Ended() || !r.Posted() {
		return time.Time{}
	}
	var w time.Time
	earliest := func(t time.Time) {
		if w.IsZero() || t.Before(w) {
			w = t
		}
	}
	for i, st := range r.Escalation {
		if st.FiredAt == nil {
			earliest(stepAt(r, i))
			break // steps are in increasing order
		}
		if i < len(r.Steps) && !r.Steps[i].Sent {
			at := *st.FiredAt
			if r.Steps[i].Sending.After(at) {
				at = r.Steps[i].Sending
			}
			earliest(at)
		}
	}
	return w
}

// escalate fires the steps of rec that are due and sends the notices of
// fired steps. Firing is one compare-and-set: the step's FiredAt and the
// people it adds are stored together, once, whoever else tries. Its
// notice is then claimed (Sending), sent and marked Sent; a process that
// dies in between leaves the claim to run out, and the next attempt looks
// for the reply before posting it again.
func (s *Service) escalate(ctx context.Context, rec Record) error {
	now := s.now()
	if slices.ContainsFunc(rec.Escalation, func(st interaction.EscalationStep) bool { return st.FiredAt == nil }) {
		dms, err := s.stepDMs(ctx, rec, now)
		if err != nil {
			return fmt.Errorf("asks escalate %s: %w", rec.ID, err) // retried: the step waits for its people
		}
		var fired []int
		out, err := s.store.Update(ctx, rec.ID, func(r *Record) error {
			fired = fired[:0]
			if r.Status.Ended() || !r.Posted() {
				return errNoChange
			}
			for i := range r.Escalation {
				if r.Escalation[i].FiredAt != nil || stepAt(*r, i).After(now) {
					continue
				}
				at := now
				r.Escalation[i].FiredAt = &at
				for len(r.Steps) <= i {
					r.Steps = append(r.Steps, StepSend{})
				}
				addPeople(r, r.Escalation[i].Responders)
				r.Emit(store.EventEscalated, nil, escalatedData{Step: i, Added: r.Escalation[i].Responders})
				// Its copies exist iff the step fired: posted by the
				// dispatcher, once, and kept in step like the message.
				for _, u := range dms[i] {
					AddCopy(r, Copy{For: u})
				}
				if ch := r.Escalation[i].Channel; ch != "" {
					AddCopy(r, Copy{In: ch})
				}
				fired = append(fired, i)
			}
			if len(fired) == 0 {
				return errNoChange
			}
			r.Rev++
			r.Synced = false // the message names who may answer
			return nil
		})
		switch {
		case errors.Is(err, errNoChange):
		case err != nil:
			return fmt.Errorf("asks escalate %s: %w", rec.ID, err)
		default:
			s.syncer.mark(out)
			for _, i := range fired {
				s.log.Info().Str("ask", rec.ID).Int("step", i).Strs("added", out.Escalation[i].Responders).Msg("escalation step fired")
			}
			rec = out
		}
	}
	var firstErr error
	for i := range rec.Escalation {
		if rec.Escalation[i].FiredAt == nil || i >= len(rec.Steps) || rec.Steps[i].Sent || rec.Steps[i].Sending.After(now) {
			continue
		}
		if err := s.sendStep(ctx, rec.ID, i); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// stepDMs returns, per due step of rec with notify "dm", the people to
// send the ask by direct message: its users and the members of its user
// groups. A group Slack cannot read now is an error (the step is retried,
// not fired without them); a step whose groups hold more than
// interaction.MaxResponders people DMs its listed users only (logged).
func (s *Service) stepDMs(ctx context.Context, rec Record, now time.Time) (map[int][]string, error) {
	out := map[int][]string{}
	for i, st := range rec.Escalation {
		if st.FiredAt != nil || stepAt(rec, i).After(now) || st.Notify != interaction.NotifyDM {
			continue
		}
		people, err := s.people(ctx, rec.TeamID, st.Responders, fmt.Sprintf("escalation[%d]", i))
		if interaction.ErrorCode(err) == interaction.InvalidQuestion {
			s.log.Warn().Err(err).Str("ask", rec.ID).Int("step", i).Msg("escalation: DMs to the listed users only")
			people, err = slices.DeleteFunc(slices.Clone(st.Responders), s.surface.IsGroup), nil
		}
		if err != nil {
			return nil, err
		}
		out[i] = people
	}
	return out, nil
}

// StepSend is store.StepSend.
type StepSend = store.StepSend

// sendStep claims, sends and marks the notice of fired step i.
func (s *Service) sendStep(ctx context.Context, id string, i int) error {
	now := s.now()
	var retry bool
	rec, err := s.store.Update(ctx, id, func(r *Record) error {
		if r.Status.Ended() || i >= len(r.Steps) || r.Steps[i].Sent || r.Steps[i].Sending.After(now) {
			return errNoChange
		}
		retry = r.Steps[i].Attempts > 0
		r.Steps[i].Attempts++
		r.Steps[i].Sending = now.Add(postGrace)
		return nil
	})
	if errors.Is(err, errNoChange) || isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("asks escalate %s step %d: %w", id, i, err)
	}
	st := rec.Escalation[i]
	n := Notice{Key: fmt.Sprintf("step-%d", i), People: st.Responders, DM: st.Notify == interaction.NotifyDM, Step: i, Retry: retry}
	if err := s.notice(ctx, rec, n); err != nil {
		// The claim runs out and the next attempt looks before posting.
		return fmt.Errorf("asks escalate %s step %d: %w", id, i, err)
	}
	_, err = s.store.Update(context.WithoutCancel(ctx), id, func(r *Record) error {
		if i >= len(r.Steps) || r.Steps[i].Sent {
			return errNoChange
		}
		r.Steps[i].Sent = true
		r.Steps[i].Sending = time.Time{}
		emitNotified(r, r.Escalation[i].Responders, "thread")
		return nil
	})
	if errors.Is(err, errNoChange) || isNotFound(err) {
		err = nil
	}
	return err
}

// notice posts n for rec through the surface, bounded by PostTimeout.
func (s *Service) notice(ctx context.Context, rec Record, n Notice) error {
	ns, ok := s.surface.(Noticer)
	if !ok {
		s.log.Warn().Str("ask", rec.ID).Str("notice", n.Key).Msg("the surface cannot post notices; people added without one")
		return nil
	}
	nctx, cancel := context.WithTimeout(ctx, s.cfg.PostTimeout)
	defer cancel()
	return ns.Notice(nctx, rec, n)
}

// addPeople adds ids to who may answer r (Added), each once, leaving out
// those already named as responders.
func addPeople(r *Record, ids []string) {
	for _, id := range ids {
		if !slices.Contains(r.Responders, id) && !slices.Contains(r.Added, id) {
			r.Added = append(r.Added, id)
		}
	}
}

// Named reports whether r names who may answer it (responders, a DM's
// recipient, or people added since): only such an ask can be handed off,
// and only on such an ask does adding people change who may answer.
func Named(r Record) bool { return len(r.Responders) > 0 || r.User != "" }

// CanHandOff reports whether r offers "Hand off…": it is pending, names
// who may answer it, and does not wait for exactly the people named.
func CanHandOff(r Record) bool {
	return !r.Status.Ended() && Named(r) && len(r.Awaited) == 0
}

// MayAnswerIDs returns the user and user-group ids that may answer r, in
// order: its responders (a DM's recipient when it names none), then the
// people added by escalation and hand-off. Nil when anyone who sees the
// message may answer.
func MayAnswerIDs(r Record) []string {
	if len(r.Awaited) > 0 {
		return r.Awaited
	}
	if !Named(r) {
		return nil
	}
	ids := r.Responders
	if len(ids) == 0 {
		ids = []string{r.User}
	}
	out := slices.Clone(ids)
	for _, id := range r.Added {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// HandOff hands the ask to another person: a (someone who may answer it)
// adds to, who may then answer it too, and to is told in the ask's thread
// (and by DM with the ask's notify "dm"). The record as stored is
// returned. Errors as for the other acts, and ErrNoHandoff for an ask
// that names nobody (anyone may answer it already), waits for every
// named person, or for a hand-off to oneself.
func (s *Service) HandOff(ctx context.Context, a Act, to interaction.User) (Record, error) {
	if to.ID == "" || s.surface.IsGroup(to.ID) {
		return Record{}, fmt.Errorf("asks hand off: %w: %q is not a person", ErrNoHandoff, to.ID)
	}
	var n int
	rec, err := s.act(ctx, a, func(r *Record) error {
		switch {
		case !CanHandOff(*r):
			return fmt.Errorf("%w: it is not waiting for named people", ErrNoHandoff)
		case to.ID == a.By.ID:
			return fmt.Errorf("%w: to the person handing it off", ErrNoHandoff)
		}
		r.Handoffs = append(r.Handoffs, interaction.Handoff{From: a.By, To: to, At: s.now()})
		r.Emit(store.EventHandedOff, by(a), handedOffData{From: a.By, To: to})
		if r.Notify == interaction.NotifyDM {
			AddCopy(r, Copy{For: to.ID}) // the ask in their DM, with its own controls
		}
		n = len(r.Handoffs)
		addPeople(r, []string{to.ID})
		r.Rev++
		r.Synced = false
		return nil
	})
	if err != nil {
		return rec, fmt.Errorf("asks hand off: %w", err)
	}
	if n == 0 {
		return rec, nil
	}
	from, toU := a.By, to
	nt := Notice{Key: fmt.Sprintf("handoff-%d", n), People: []string{to.ID}, DM: rec.Notify == interaction.NotifyDM, Step: -1, From: &from, To: &toU}
	// The person who handed off waits for the store, not for Slack (a
	// modal's submission is acked within 3 s).
	s.bg.Go(func() {
		if err := s.notice(s.life, rec, nt); err != nil {
			s.log.Warn().Err(err).Str("ask", rec.ID).Msg("hand-off notice failed")
			return
		}
		if _, err := s.store.Update(s.life, rec.ID, func(r *Record) error {
			emitNotified(r, []string{to.ID}, "thread")
			return nil
		}); err != nil {
			s.log.Warn().Err(err).Str("ask", rec.ID).Msg("could not record the hand-off notice")
		}
	})
	return rec, nil
}
