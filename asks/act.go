package asks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
)

// Act is one person's action on an ask, as the surface received it.
type Act struct {
	AskID string
	By    interaction.User // who acted; an act without a user id is refused
	// Workspace and App are where the act came from; an ask stamped with
	// a workspace refuses acts from another, and one stamped with an app
	// refuses acts that name another app. Workspace is that of the
	// installation the act came through: its team, or its Grid
	// organization for an org-wide install (as asks are stamped).
	Workspace, App string
	// Ref names the view acted on (Posted.Ref): the ask's main message
	// or one of its copies; an act on any of them is an act on the ask.
	Ref string
	// Form is set for an act from a form (modal) rather than the message:
	// there is no message to check, and Rev is not used.
	Form bool
	// Rev is the revision of the message acted on (part of its element
	// ids): a choice made on an older rendering is judged as such.
	Rev int
}

// Errors of the person acts besides ErrEnded (all wrapped). Each call
// returns them with the record as the act found it, so that the surface
// can tell the person why (e.g. who may answer).
var (
	// ErrRefused: the person may not answer this ask.
	ErrRefused = errors.New("asks: this person may not answer the ask")
	// ErrForeign: the act does not belong to the ask (another workspace,
	// app or message, or no user): forged or misrouted, logged only.
	ErrForeign = errors.New("asks: the act does not belong to the ask")
	// ErrBadChoice: no such question or option, or text out of bounds.
	ErrBadChoice = errors.New("asks: no such question or option")
	// ErrNothingChosen: a Submit with nothing picked, skipped or typed on
	// any question; the ask is left as it was.
	ErrNothingChosen = errors.New("asks: nothing chosen yet")
	// ErrRequired: a Submit left a required question unanswered (as a
	// *RequiredError naming the questions); the ask is left as it was.
	ErrRequired = errors.New("asks: a required question is unanswered")
	// ErrNoteNeeded: a pick of an option that asks for a note came without
	// the "Why?" form (the surface opens it), or a Submit holds a pick of an
	// option whose note is required without one (a *NoteError naming it);
	// the ask is left as it was.
	ErrNoteNeeded = errors.New("asks: this option asks for a note")
	// ErrNoCancel: a person pressed Cancel on an ask that collects several
	// people's responses, which one person cannot end.
	ErrNoCancel = errors.New("asks: one person cannot cancel a team's question")
)

// RequiredError is ErrRequired with the indexes of the required questions
// the Submit left unanswered.
type RequiredError struct{ Questions []int }

func (e *RequiredError) Error() string {
	return fmt.Sprintf("%v: questions %v", ErrRequired, e.Questions)
}

// Is makes errors.Is(err, ErrRequired) hold.
func (e *RequiredError) Is(target error) bool { return target == ErrRequired }

// NoteError is ErrNoteNeeded naming the question and option index.
type NoteError struct{ Question, Option int }

func (e *NoteError) Error() string {
	return fmt.Sprintf("%v: question %d option %d", ErrNoteNeeded, e.Question, e.Option)
}

// Is makes errors.Is(err, ErrNoteNeeded) hold.
func (e *NoteError) Is(target error) bool { return target == ErrNoteNeeded }

// Internal outcomes of an act's compare-and-set function.
var (
	errNoChange  = errors.New("asks: nothing to change")
	errNotPosted = errors.New("asks: the ask's message is not posted yet")
	errGroups    = errors.New("asks: responder groups must be asked")
)

// notPostedWaits and notPostedPause bound how long an act waits for the
// ask to be posted (Record.Posted): a click can beat the store, as the
// surface shows the message before its post has said where it landed.
const (
	notPostedWaits = 40
	notPostedPause = 50 * time.Millisecond
)

// Select records the options (indexes into the question's options) a
// person chose on question q. For an ask answered by one tap it ends the
// ask. Options that are not the question's are ErrBadChoice.
//
// A pick of an option that asks for a note (interaction.NoteNeeded) is
// refused with a *NoteError: the surface opens the "Why?" form, whose
// submission is SelectNoted.
func (s *Service) Select(ctx context.Context, a Act, q int, options []int) (Record, error) {
	return s.choose(ctx, a, q, options, nil)
}

// SelectNoted is Select with the note the person gave in the "Why?" form
// (may be empty for an optional note; a required one must not be).
func (s *Service) SelectNoted(ctx context.Context, a Act, q int, options []int, note string) (Record, error) {
	if utf8.RuneCountInString(note) > interaction.MaxCustomLen {
		return Record{}, fmt.Errorf("asks select: %w: note of %d bytes", ErrBadChoice, len(note))
	}
	return s.choose(ctx, a, q, options, &note)
}

func (s *Service) choose(ctx context.Context, a Act, q int, options []int, note *string) (Record, error) {
	return s.act(ctx, a, func(r *Record) error {
		labels, err := interaction.Pick(r.Request(), q, options)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrBadChoice, err)
		}
		p := interaction.Progress{Selected: labels}
		if o, ok := interaction.NoteNeeded(r.Questions[q], labels); ok {
			switch {
			case note == nil:
				return &NoteError{Question: q, Option: slices.IndexFunc(r.Questions[q].Options, func(x interaction.Option) bool { return x.Label == o.Label })}
			case o.Note == interaction.NoteRequired && strings.TrimSpace(*note) == "":
				return fmt.Errorf("%w: blank required note", ErrBadChoice)
			}
			p.Note = strings.TrimSpace(*note)
		}
		if Many(*r) && interaction.TapResponds(r.Request()) && len(labels) > 0 {
			s.respond(r, a.By, setProgress(slices.Clone(r.Drafts[a.By.ID]), len(r.Questions), q, p))
			return nil // a tap is the person's response
		}
		if Many(*r) {
			setDraft(r, a.By.ID, q, p)
			r.Quiet = true // the message never shows a person's draft, nor does anything watching
			return nil
		}
		if interaction.OneTap(r.Request()) {
			if len(labels) == 0 {
				return errNoChange
			}
			r.Progress = setProgress(r.Progress, len(r.Questions), q, p)
			s.endRecord(r, ending{status: interaction.StatusAnswered, by: by(a)})
			return nil
		}
		old := progressOf(r.Progress, q)
		r.Progress = setProgress(r.Progress, len(r.Questions), q, p)
		// The person's client shows the new selection of a menu already;
		// re-render only when the message shows something else for this
		// question, or when a tap picked it (a button keeps no state).
		if old.Custom != "" || old.Skipped || old.Note != "" || p.Note != "" || a.Rev != r.Rev || interaction.Spec(r.Request(), q).Tap {
			r.Rev++
			r.Synced = false
			return nil
		}
		// Nothing to draw, here or on any replica, and no watcher acts on
		// progress (ends, events and inboxes do not show it): the
		// commonest click of all goes unannounced (store.Record.Quiet).
		r.Quiet = true
		return nil
	})
}

// Skip records that a person skipped question q; a one-question ask ends
// with it. A required question cannot be skipped (ErrBadChoice).
func (s *Service) Skip(ctx context.Context, a Act, q int) (Record, error) {
	return s.progress(ctx, a, q, interaction.Progress{Skipped: true})
}

// UseDefault answers free-text question q with its proposed default
// ("Use as is"), as Other with that text; ErrBadChoice when q has none.
func (s *Service) UseDefault(ctx context.Context, a Act, q int) (Record, error) {
	return s.progressWith(ctx, a, q, func(r *Record) (interaction.Progress, error) {
		if r.Questions[q].Default == "" {
			return interaction.Progress{}, fmt.Errorf("%w: question %d has no default", ErrBadChoice, q)
		}
		return interaction.Progress{Custom: r.Questions[q].Default}, nil
	})
}

// Other records a person's free text for question q (at most
// interaction.MaxCustomLen characters, not blank); a one-question ask
// ends with it. A question that does not allow other text refuses it
// (ErrBadChoice).
func (s *Service) Other(ctx context.Context, a Act, q int, text string) (Record, error) {
	if text == "" || utf8.RuneCountInString(text) > interaction.MaxCustomLen {
		return Record{}, fmt.Errorf("asks other: %w: text of %d bytes", ErrBadChoice, len(text))
	}
	return s.progress(ctx, a, q, interaction.Progress{Custom: text})
}

func (s *Service) progress(ctx context.Context, a Act, q int, p interaction.Progress) (Record, error) {
	return s.progressWith(ctx, a, q, func(r *Record) (interaction.Progress, error) {
		if p.Custom != "" && !r.Questions[q].OtherAllowed() && r.Questions[q].Default == "" {
			return p, fmt.Errorf("%w: question %d takes no other text", ErrBadChoice, q)
		}
		return p, nil
	})
}

// progressWith records the progress of question q that decide makes of
// the record.
func (s *Service) progressWith(ctx context.Context, a Act, q int, decide func(r *Record) (interaction.Progress, error)) (Record, error) {
	return s.act(ctx, a, func(r *Record) error {
		if q < 0 || q >= len(r.Questions) {
			return fmt.Errorf("%w: question %d", ErrBadChoice, q)
		}
		p, err := decide(r)
		if err != nil {
			return err
		}
		if p.Skipped && r.Questions[q].Required {
			return fmt.Errorf("%w: question %d is required", ErrBadChoice, q)
		}
		if Many(*r) && interaction.TapResponds(r.Request()) {
			s.respond(r, a.By, setProgress(slices.Clone(r.Drafts[a.By.ID]), len(r.Questions), q, p))
			return nil // with no Submit, a skip, a text or "Use as is" is the person's response
		}
		if Many(*r) {
			setDraft(r, a.By.ID, q, p)
			r.Quiet = true // the message never shows a person's draft, nor does anything watching
			return nil
		}
		r.Progress = setProgress(r.Progress, len(r.Questions), q, p)
		if interaction.OneAction(r.Request()) {
			s.endRecord(r, ending{status: interaction.StatusAnswered, by: by(a)})
			return nil
		}
		r.Rev++
		r.Synced = false
		return nil
	})
}

// Submit ends the ask as answered by the person, with picks — per question
// index, the option indexes the message showed chosen when Submit was
// pressed — merged into the stored progress. Picks made on another
// revision of the message than the record's are ignored, as are questions
// without options and option indexes that are not the question's (a
// question whose picks are all impossible keeps its stored progress); a
// question whose select was cleared loses its selection (a skip or text
// stays). When nothing is chosen on any question the ask stays pending:
// ErrNothingChosen; when a required question is left unanswered, a
// *RequiredError naming it.
//
// On an ask that collects several responses (Many) the picks, from
// whichever revision, merge into the person's own draft instead, and the
// Submit stores their response (replacing an earlier one of theirs); the
// ask ends only when it has the responses it wants, or at once when the
// response selects a veto option.
func (s *Service) Submit(ctx context.Context, a Act, picks map[int][]int) (Record, error) {
	return s.act(ctx, a, func(r *Record) error {
		many := Many(*r)
		ps := r.Progress
		if many {
			ps = slices.Clone(r.Drafts[a.By.ID])
		}
		// On a team ask the picks are always the person's own (the message
		// never shows anyone's): those made on an older rendering count too.
		if many || a.Rev == r.Rev {
			ps = mergePicks(r.Request(), ps, picks, many)
		}
		if !slices.ContainsFunc(ps, interaction.Progress.Touched) {
			return ErrNothingChosen // aborts the compare-and-set: nothing changes
		}
		if err := missingNote(r.Questions, ps); err != nil {
			return err
		}
		if missing := unanswered(r.Questions, ps); len(missing) > 0 {
			return &RequiredError{Questions: missing}
		}
		if !many {
			r.Progress = ps
			s.endRecord(r, ending{status: interaction.StatusAnswered, by: by(a)})
			return nil
		}
		s.respond(r, a.By, ps)
		return nil
	})
}

// mergePicks returns ps with a Submit's picks applied (see Submit). With
// keepOnEmpty an empty select clears nothing: on a team ask a select is
// empty in a person's client after every re-render of the shared message,
// while their draft keeps what they picked (a person who clears a select
// sends a select act, which clears their draft).
func mergePicks(req interaction.Request, ps []interaction.Progress, picks map[int][]int, keepOnEmpty bool) []interaction.Progress {
	qs := req.Questions
	for q, idx := range picks {
		if q < 0 || q >= len(qs) || len(qs[q].Options) == 0 {
			continue
		}
		labels, ok := interaction.PickLenient(req, q, idx)
		if !ok {
			continue // only impossible values: as if the select were not there
		}
		old := progressOf(ps, q)
		switch {
		case len(labels) > 0 && slices.Equal(labels, old.Selected):
			// the same pick: it keeps its note
		case len(labels) > 0:
			ps = setProgress(ps, len(qs), q, interaction.Progress{Selected: labels})
		case !keepOnEmpty && !old.Skipped && old.Custom == "":
			ps = setProgress(ps, len(qs), q, interaction.Progress{})
		}
	}
	return ps
}

// missingNote is a *NoteError naming the first pick of ps of an option
// whose note is required and missing.
func missingNote(qs []interaction.Question, ps []interaction.Progress) error {
	for i, p := range ps {
		if i >= len(qs) {
			break
		}
		if o, ok := interaction.NoteNeeded(qs[i], p.Selected); ok && o.Note == interaction.NoteRequired && p.Note == "" {
			return &NoteError{Question: i, Option: slices.IndexFunc(qs[i].Options, func(x interaction.Option) bool { return x.Label == o.Label })}
		}
	}
	return nil
}

// Cancel ends the ask as cancelled by the person. One person cannot end
// an ask that collects several people's responses: ErrNoCancel.
func (s *Service) Cancel(ctx context.Context, a Act) (Record, error) {
	return s.act(ctx, a, func(r *Record) error {
		if Many(*r) {
			return ErrNoCancel
		}
		u := by(a)
		s.endRecord(r, ending{status: interaction.StatusCancelled, by: u,
			err: interaction.Errorf(interaction.AskCancelled, "%s cancelled the question", displayName(u))})
		return nil
	})
}

// Check judges an act that changes nothing by itself (opening a form on
// the ask) as the others are judged, and returns the record.
func (s *Service) Check(ctx context.Context, a Act) (Record, error) {
	return s.act(ctx, a, func(*Record) error { return errNoChange })
}

// act admits a and applies change to the ask in one compare-and-set, and
// returns once the change is stored, with the record as stored. A change
// that ends the ask is followed by the end's effects (waiters, counters,
// the message update); one that alters what the message shows queues the
// update. On refusal the record is the one the act was judged on.
func (s *Service) act(ctx context.Context, a Act, change func(*Record) error) (out Record, err error) {
	defer func() {
		if err != nil { // refused or ended: the act changed nothing
			s.resyncStale(a, &out)
		}
	}()
	groupsChecked := false
	for waits := 0; ; {
		var seen Record
		rec, err := s.store.Update(ctx, a.AskID, func(r *Record) error {
			s.legacyRef(r)
			err := s.admit(a, r, groupsChecked, waits < notPostedWaits)
			if err == nil {
				err = change(r)
			}
			if err != nil {
				seen = store.Clone(*r)
			}
			return err
		})
		switch {
		case err == nil:
			if rec.Status.Ended() {
				s.ended(rec) // admit refuses ended asks: this act ended it
			} else if !rec.Synced {
				s.syncer.mark(rec)
			}
			return rec, nil
		case errors.Is(err, errNoChange):
			return seen, nil
		case errors.Is(err, errNotPosted):
			waits++
			if !clock.Sleep(ctx, notPostedPause) {
				return seen, ctx.Err()
			}
		case errors.Is(err, errGroups):
			ok, gerr := s.inGroups(ctx, seen, a.By.ID)
			if gerr != nil {
				s.log.Error().Err(gerr).Str("ask", seen.ID).Msg("responder check failed; refusing")
			}
			if !ok {
				return seen, ErrRefused
			}
			groupsChecked = true
		default:
			return seen, fmt.Errorf("asks act %.80s: %w", a.AskID, err)
		}
	}
}

// legacyRef fills in the main message's reference of a record posted
// before references were kept, as the surface gives it.
func (s *Service) legacyRef(r *Record) {
	if rf, ok := s.surface.(Referrer); ok && r.Ref == "" && r.Posted() {
		r.Ref = rf.MainRef(*r)
	}
}

// admit checks, inside the compare-and-set, that a belongs to r and that
// its person may act on it. With patient, an ask not posted yet (no
// place stored) is errNotPosted (wait and retry); else it fails the message check.
// errGroups: the person is not a listed responder, but may be in a
// listed group (the caller asks the surface, then retries with
// groupsChecked).
func (s *Service) admit(a Act, r *Record, groupsChecked, patient bool) error {
	if patient && r.Status == interaction.StatusPending && !r.Posted() {
		return errNotPosted
	}
	onMain := a.Ref != "" && a.Ref == r.Ref
	if patient && r.Status == interaction.StatusPending && !a.Form && !onMain && !onCopy(a, r) && copyPosting(r) {
		return errNotPosted // a copy shown before its post returned its reference to us
	}
	var reason string
	switch {
	case a.By.ID == "":
		reason = "no user"
	case r.TeamID != "" && a.Workspace != r.TeamID:
		reason = "team differs"
	case r.AppID != "" && a.App != "" && a.App != r.AppID:
		reason = "app differs"
	case !a.Form && !onMain && !onCopy(a, r):
		reason = "channel or message differs"
	}
	if reason != "" {
		return fmt.Errorf("%w: %s", ErrForeign, reason)
	}
	if r.Status.Ended() {
		return ErrEnded
	}
	if groupsChecked {
		return nil
	}
	ok, askGroups := mayAnswer(*r, a.By.ID, s.surface.IsGroup)
	switch {
	case ok:
		return nil
	case askGroups:
		return errGroups
	}
	return ErrRefused
}

// mayAnswer reports whether user may answer r without asking about
// groups: for an ask awaiting "all", one of the people it awaits; else
// anyone when the ask names no responders (a DM: its recipient only), else
// a listed user. askGroups is set when r lists groups (isGroup), which
// user may belong to.
func mayAnswer(r Record, user string, isGroup func(string) bool) (ok, askGroups bool) {
	if len(r.Awaited) > 0 { // "all": exactly the people expanded at creation
		return slices.Contains(r.Awaited, user), false
	}
	ids := MayAnswerIDs(r)
	if ids == nil || slices.Contains(ids, user) {
		return true, false
	}
	return false, slices.ContainsFunc(ids, isGroup)
}

// inGroups reports whether user belongs to one of r's responder groups.
// An error means some group could not be asked (and user is in none of
// the others).
func (s *Service) inGroups(ctx context.Context, r Record, user string) (bool, error) {
	var firstErr error
	for _, id := range MayAnswerIDs(r) {
		if !s.surface.IsGroup(id) {
			continue
		}
		ok, err := s.surface.InGroup(ctx, r.TeamID, id, user)
		if err != nil {
			firstErr = cmpOr(firstErr, err)
			continue
		}
		if ok {
			return true, nil
		}
	}
	return false, firstErr
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// progressOf returns the progress of question q (zero when none).
func progressOf(ps []interaction.Progress, q int) interaction.Progress {
	if q < len(ps) {
		return ps[q]
	}
	return interaction.Progress{}
}

func setProgress(ps []interaction.Progress, n, q int, p interaction.Progress) []interaction.Progress {
	for len(ps) < n {
		ps = append(ps, interaction.Progress{})
	}
	ps[q] = p
	return ps
}

func by(a Act) *interaction.User {
	u := a.By
	return &u
}

func displayName(u *interaction.User) string {
	if u == nil {
		return "someone"
	}
	if u.Name != "" {
		return u.Name
	}
	return u.ID
}
