package asks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// A person's inbox (the App Home tab): the asks waiting for their answer
// and those they answered lately.

// Answered is an ask a person answered: their own answer and when.
type Answered struct {
	Record Record
	Answer interaction.Answer
	At     time.Time
}

// Inbox is what a person's inbox lists.
type Inbox struct {
	// Waiting: pending asks that name the person among who may answer
	// (directly, through a user group, as a DM's recipient, or added by
	// escalation or hand-off) and that they have not answered; soonest
	// deadline first (asks without one last, oldest first), at most max.
	Waiting []Record
	// Answered: the asks they answered (or responded to), latest first,
	// at most maxAnswered.
	Answered []Answered
}

// InboxOf sorts pending and recent (records newest first) into user's
// inbox. inGroup reports whether id names a group user belongs to (false
// for a person's id; errors count as no). Asks that anyone in their conversation may answer are
// not listed as waiting: they name nobody.
func InboxOf(user string, pending, recent []Record, inGroup func(group string) bool, maxWaiting, maxAnswered int) Inbox {
	var in Inbox
	for _, r := range pending {
		if r.Status.Ended() || !r.Posted() || !names(r, user, inGroup) || respondedBy(r, user) != nil {
			continue
		}
		in.Waiting = append(in.Waiting, r)
	}
	slices.SortStableFunc(in.Waiting, func(a, b Record) int {
		switch {
		case a.ExpiresAt != nil && b.ExpiresAt != nil:
			if c := a.ExpiresAt.Compare(*b.ExpiresAt); c != 0 {
				return c
			}
		case a.ExpiresAt != nil:
			return -1
		case b.ExpiresAt != nil:
			return 1
		}
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	if len(in.Waiting) > maxWaiting {
		in.Waiting = in.Waiting[:maxWaiting]
	}
	for _, r := range recent {
		if a := respondedBy(r, user); a != nil {
			in.Answered = append(in.Answered, *a)
		}
	}
	slices.SortStableFunc(in.Answered, func(a, b Answered) int { return b.At.Compare(a.At) })
	if len(in.Answered) > maxAnswered {
		in.Answered = in.Answered[:maxAnswered]
	}
	return in
}

// names reports whether r names user among who may answer it.
func names(r Record, user string, inGroup func(string) bool) bool {
	for _, id := range MayAnswerIDs(r) {
		if id == user || inGroup(id) {
			return true
		}
	}
	return false
}

// respondedBy returns user's answer to r, if they gave one: their
// response on a team ask, the answer of a one-response ask they answered.
func respondedBy(r Record, user string) *Answered {
	for _, x := range r.Responses {
		if x.User.ID == user {
			return &Answered{Record: r, Answer: x.Answer, At: x.At}
		}
	}
	if r.Status == interaction.StatusAnswered && r.AnsweredBy != nil && r.AnsweredBy.ID == user && r.Answer != nil && !Many(r) {
		at := r.CreatedAt
		if r.EndedAt != nil {
			at = *r.EndedAt
		}
		return &Answered{Record: r, Answer: *r.Answer, At: at}
	}
	return nil
}

// inboxRecent bounds the ended asks an inbox looks through for the
// person's recent answers (newest first).
const inboxRecent = 500

// InboxRecords returns what InboxOf sorts: every pending ask, and the
// newest asks of any status.
func (s *Service) InboxRecords(ctx context.Context) (pending, recent []Record, err error) {
	pending, err = s.store.Pending(ctx)
	if pending, err = s.readable("asks inbox", pending, err); err != nil {
		return nil, nil, err
	}
	recent, err = s.store.List(ctx, store.Filter{Limit: inboxRecent})
	if recent, err = s.readable("asks inbox", recent, err); err != nil {
		return nil, nil, err
	}
	return pending, recent, nil
}

// Watch calls fn with the id of every ask written by any replica sharing
// the store (and "" when changes may have been missed: re-read all). fn
// must not block. stop ends the watch.
func (s *Service) Watch(fn func(id string)) (stop func()) {
	return s.cfg.Store.Watch(func(c store.Change) { fn(c.ID) })
}

// SubmitForm answers the ask with a whole form's progress, ps (per
// question: the labels chosen or the text typed; a question left empty is
// skipped), as the person's submission: it ends a one-response ask
// answered by them and stores their response on a team ask, counted as a
// Submit on the message is. Errors as Submit's; ErrBadChoice for a label
// or text the ask does not take.
func (s *Service) SubmitForm(ctx context.Context, a Act, ps []interaction.Progress) (Record, error) {
	return s.act(ctx, a, func(r *Record) error {
		if len(ps) != len(r.Questions) {
			return fmt.Errorf("%w: %d answers for %d questions", ErrBadChoice, len(ps), len(r.Questions))
		}
		ps := slices.Clone(ps) // its own each run: fn may run twice (store.Store.Update)
		for i, p := range ps {
			q := r.Questions[i]
			switch {
			case p.Custom != "" && (!q.OtherAllowed() && q.Default == "" || len(p.Selected) > 0):
				return fmt.Errorf("%w: question %d takes no other text here", ErrBadChoice, i)
			case len(p.Selected) > 1 && !interaction.Spec(r.Request(), i).Multi:
				return fmt.Errorf("%w: %d options for single-select question %d", ErrBadChoice, len(p.Selected), i)
			}
			for _, l := range p.Selected {
				if !slices.ContainsFunc(q.Options, func(o interaction.Option) bool { return o.Label == l }) {
					return fmt.Errorf("%w: question %d has no option %q", ErrBadChoice, i, l)
				}
			}
			if !p.Touched() {
				ps[i] = interaction.Progress{Skipped: true}
			}
		}
		if missing := unanswered(r.Questions, ps); len(missing) > 0 {
			return &RequiredError{Questions: missing}
		}
		if err := missingNote(r.Questions, ps); err != nil {
			return err
		}
		if !slices.ContainsFunc(ps, func(p interaction.Progress) bool { return len(p.Selected) > 0 || p.Custom != "" }) {
			return ErrNothingChosen
		}
		if Many(*r) {
			s.respond(r, a.By, ps)
			return nil
		}
		r.Progress = ps
		s.endRecord(r, ending{status: interaction.StatusAnswered, by: by(a)})
		return nil
	})
}
