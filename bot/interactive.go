package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
)

// maxCustomLen bounds the "Other" text a person may send (the modal's
// max_length; checked again here since payloads can be forged).
const maxCustomLen = 3000

// job is work that follows an ack: run in the named ask's queue, or, with
// no queue, at once.
type job struct {
	queue string
	fn    func()
}

// route decides, without I/O, the ack of an interactive payload and the
// work it calls for.
func (b *Bot) route(ctx context.Context, cb *callback) (ack any, jobs []job) {
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		return nil, b.blockActionJobs(ctx, cb)
	case slack.InteractionTypeViewSubmission:
		sub, resp := b.checkSubmission(cb)
		if sub != nil {
			jobs = append(jobs, job{queue: sub.meta.askID, fn: func() { b.onCustom(ctx, cb, *sub) }})
		}
		return resp, jobs
	default: // view_closed, shortcuts, …: nothing to do
		return nil, nil
	}
}

func (b *Bot) blockActionJobs(ctx context.Context, cb *callback) []job {
	var jobs []job
	for _, a := range cb.blockActions {
		if a == nil {
			continue
		}
		ref, err := blocks.ParseActionID(a.ActionID)
		if err != nil {
			b.log.Debug().Str("action", trim(a.ActionID)).Msg("action that is not ours")
			continue
		}
		act := *a
		switch ref.Kind {
		case blocks.KindOther, blocks.KindDetails:
			jobs = append(jobs, job{fn: func() { b.openModal(ctx, cb, ref) }})
		default:
			jobs = append(jobs, job{queue: ref.AskID, fn: func() { b.onAction(ctx, cb, act, ref) }})
		}
	}
	return jobs
}

// admit loads the ask a payload names and checks that the payload belongs
// to it and that the person may act. On refusal it tells the person why
// (ephemerally) and returns false. With cached, the record may come from
// b.posted: its progress is empty, the rest as posted.
func (b *Bot) admit(ctx context.Context, cb *callback, askID string, fromMessage, cached bool) (store.Record, bool) {
	rec, ok := store.Record{}, false
	if cached {
		rec, ok = b.posted.get(askID)
	}
	var err error
	if !ok {
		rec, err = b.loadPosted(ctx, askID)
		if err == nil {
			b.posted.put(rec)
		}
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			b.log.Info().Str("ask", trim(askID)).Msg("payload for an unknown ask")
		} else {
			b.log.Error().Err(err).Str("ask", askID).Msg("load ask")
		}
		return rec, false
	}
	if reason := b.mismatch(cb, rec, fromMessage); reason != "" {
		b.log.Warn().Str("ask", rec.ID).Str("user", trim(cb.User.ID)).Str("reason", reason).Msg("payload does not belong to the ask")
		return rec, false
	}
	if rec.Status.Ended() {
		b.ephemeral(ctx, rec, cb.User.ID, endedText(rec))
		return rec, false
	}
	ok, err = b.allowed(ctx, rec, cb.User.ID)
	if err != nil {
		b.log.Error().Err(err).Str("ask", rec.ID).Msg("responder check failed; refusing")
	}
	if !ok {
		b.ephemeral(ctx, rec, cb.User.ID, "Sorry, you can't answer this question. "+whoMayAnswer(rec))
		return rec, false
	}
	return rec, true
}

// loadPosted loads an ask. A click can beat the store: Slack shows the
// message before chat.postMessage has returned its ts to us, so a pending
// ask without a ts is re-read for a moment before the payload is judged.
func (b *Bot) loadPosted(ctx context.Context, id string) (store.Record, error) {
	rec, err := b.store.Get(ctx, id)
	for i := 0; err == nil && rec.TS == "" && rec.Status == interaction.StatusPending && i < 40; i++ {
		if !clock.Sleep(ctx, 50*time.Millisecond) {
			return rec, ctx.Err()
		}
		rec, err = b.store.Get(ctx, id)
	}
	return rec, err
}

// mismatch returns why a payload does not belong to rec, or "".
func (b *Bot) mismatch(cb *callback, rec store.Record, fromMessage bool) string {
	switch {
	case cb.User.ID == "":
		return "no user"
	case rec.TeamID != "" && cb.Team.ID != rec.TeamID:
		return "team differs"
	case rec.AppID != "" && cb.APIAppID != "" && cb.APIAppID != rec.AppID:
		return "app differs"
	case fromMessage && (cb.Container.ChannelID != rec.Channel || cb.Container.MessageTs != rec.TS || rec.TS == ""):
		return "channel or message differs"
	}
	return ""
}

func (b *Bot) onAction(ctx context.Context, cb *callback, a slack.BlockAction, ref blocks.Ref) {
	rec, ok := b.admit(ctx, cb, ref.AskID, true, true)
	if !ok {
		return
	}
	by := &interaction.User{ID: cb.User.ID, Name: cb.User.Name}
	var err error
	switch ref.Kind {
	case blocks.KindSelect:
		err = b.onSelect(ctx, rec, a, ref, by)
	case blocks.KindSkip:
		err = b.onProgress(ctx, rec, ref.Question, interaction.Progress{Skipped: true}, by)
	case blocks.KindSubmit:
		state, serr := cb.blockState()
		if serr != nil { // as a payload that does not parse: nothing happens
			b.log.Warn().Err(serr).Str("ask", rec.ID).Msg("submit whose state did not parse")
			return
		}
		_, err = b.answer(ctx, rec.ID, by, state)
	case blocks.KindCancel:
		_, err = b.end(ctx, rec.ID, ending{status: interaction.StatusCancelled, by: by,
			err: interaction.Errorf(interaction.AskCancelled, "%s cancelled the question", displayName(by))})
	}
	b.reportActionError(ctx, rec, cb.User.ID, err)
}

func (b *Bot) reportActionError(ctx context.Context, rec store.Record, user string, err error) {
	switch {
	case err == nil:
	case errors.Is(err, errEnded):
		if cur, gerr := b.store.Get(ctx, rec.ID); gerr == nil {
			b.ephemeral(ctx, cur, user, endedText(cur))
		}
	default:
		b.log.Error().Err(err).Str("ask", rec.ID).Msg("action failed")
	}
}

func (b *Bot) onSelect(ctx context.Context, rec store.Record, a slack.BlockAction, ref blocks.Ref, by *interaction.User) error {
	if ref.Question < 0 || ref.Question >= len(rec.Questions) {
		return fmt.Errorf("select: question %d out of range", ref.Question)
	}
	labels, err := blocks.LabelsFromAction(b.view(rec), ref.Question, &a)
	if err != nil {
		b.log.Warn().Err(err).Str("ask", rec.ID).Msg("select with bad values")
		return nil
	}
	if blocks.OneTap(rec.Request()) {
		if len(labels) == 0 {
			return nil
		}
		_, err := b.end(ctx, rec.ID, ending{status: interaction.StatusAnswered, by: by, mutate: func(r *store.Record) {
			r.Progress = setProgress(r.Progress, len(r.Questions), ref.Question, interaction.Progress{Selected: labels})
		}})
		return err
	}
	updated, err := b.store.Update(ctx, rec.ID, func(r *store.Record) error {
		if r.Status.Ended() {
			return errEnded
		}
		old := progressAt(r.Progress, ref.Question)
		r.Progress = setProgress(r.Progress, len(r.Questions), ref.Question, interaction.Progress{Selected: labels})
		// The person's client shows the new selection already; re-render
		// only when the message shows something else for this question.
		if old.Custom != "" || old.Skipped || ref.Rev != r.Rev {
			r.Rev++
			r.Synced = false
		}
		return nil
	})
	// Most selects change nothing the message shows: the record stays
	// synced and there is nothing to update (marking it anyway cost a
	// goroutine and a store read per select).
	if err == nil && !updated.Synced {
		b.syncer.mark(rec.ID)
	}
	return err
}

// onProgress records a skip or custom text; a one-question ask ends with it.
func (b *Bot) onProgress(ctx context.Context, rec store.Record, q int, p interaction.Progress, by *interaction.User) error {
	if q < 0 || q >= len(rec.Questions) {
		return fmt.Errorf("progress: question %d out of range", q)
	}
	set := func(r *store.Record) {
		r.Progress = setProgress(r.Progress, len(r.Questions), q, p)
	}
	if endsWithOneAction(rec.Request()) {
		_, err := b.end(ctx, rec.ID, ending{status: interaction.StatusAnswered, by: by, mutate: set})
		return err
	}
	_, err := b.store.Update(ctx, rec.ID, func(r *store.Record) error {
		if r.Status.Ended() {
			return errEnded
		}
		set(r)
		r.Rev++
		r.Synced = false
		return nil
	})
	if err == nil {
		b.syncer.mark(rec.ID)
	}
	return err
}

// answer ends the ask as answered with the selections of the submitting
// payload's message state merged into the stored progress.
func (b *Bot) answer(ctx context.Context, id string, by *interaction.User, state *slack.BlockActionStates) (store.Record, error) {
	return b.end(ctx, id, ending{status: interaction.StatusAnswered, by: by, mutate: func(r *store.Record) {
		sel := blocks.SelectionsFromState(b.view(*r), state)
		for q := range r.Questions {
			labels, ok := sel[q]
			if !ok {
				continue
			}
			old := progressAt(r.Progress, q)
			switch {
			case len(labels) > 0:
				r.Progress = setProgress(r.Progress, len(r.Questions), q, interaction.Progress{Selected: labels})
			case !old.Skipped && old.Custom == "":
				r.Progress = setProgress(r.Progress, len(r.Questions), q, interaction.Progress{})
			}
		}
	}})
}

func endsWithOneAction(r interaction.Request) bool {
	return len(r.Questions) == 1 && !r.Questions[0].MultiSelect
}

func progressAt(ps []interaction.Progress, q int) interaction.Progress {
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

func displayName(u *interaction.User) string {
	if u == nil {
		return "someone"
	}
	if u.Name != "" {
		return u.Name
	}
	return u.ID
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func endedText(r store.Record) string {
	switch r.Status {
	case interaction.StatusAnswered:
		who := "someone"
		if r.AnsweredBy != nil {
			who = "<@" + r.AnsweredBy.ID + ">"
		}
		return "This question was already answered by " + who + "."
	case interaction.StatusCancelled:
		return "This question was cancelled."
	case interaction.StatusExpired:
		return "This question expired before anyone answered."
	default:
		return "The question was withdrawn: the asker stopped waiting."
	}
}

func whoMayAnswer(r store.Record) string {
	return "Only " + strings.Join(responderMentions(r), ", ") + " may answer."
}

// responderMentions returns who may answer r as Slack mentions: its
// responders (user groups as <!subteam^…>), or a DM's recipient; ids that
// do not look like Slack ids are left out.
func responderMentions(r store.Record) []string {
	ids := r.Responders
	if len(ids) == 0 && r.User != "" {
		ids = []string{r.User}
	}
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		switch {
		case !slackIDPattern.MatchString(id):
		case strings.HasPrefix(id, "S"):
			parts = append(parts, "<!subteam^"+id+">")
		default:
			parts = append(parts, "<@"+id+">")
		}
	}
	return parts
}
