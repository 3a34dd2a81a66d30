package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
)

// job is the work of a payload: run in the named ask's queue (one ask's
// acts are applied in the order they came), or, with no queue, at once.
type job struct {
	queue string
	fn    func()
}

// route decides, without I/O, what a payload calls for. Payloads that
// change nothing are settled here; a person act is a job that acks its
// envelope once the lifecycle stored the change (commit, then ack; for a
// journaled envelope, acked when read, commit, then mark it done), and
// leaves the Slack calls that follow (ephemerals; message updates are the
// lifecycle's) to run after the ack, outside the ask's queue. An "Other…"
// or "Details" click is acked at once: its views.open needs only the
// trigger, and stores nothing.
func (b *Bot) route(ctx context.Context, env *Envelope) []job {
	cb := env.Payload
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		return b.blockActionJobs(ctx, env)
	case slack.InteractionTypeViewSubmission:
		switch cb.View.CallbackID {
		case blocks.CallbackHandoff:
			return b.handoffJobs(ctx, env)
		case blocks.CallbackAnswer:
			return b.answerJobs(ctx, env)
		}
		sub, resp := b.checkSubmission(cb)
		if sub == nil {
			env.Ack(resp)
			return nil
		}
		return []job{{queue: sub.meta.askID, fn: func() { b.onCustom(ctx, env, *sub) }}}
	default: // view_closed, shortcuts, …: nothing to do
		env.Ack(nil)
		return nil
	}
}

// blockActionJobs returns the work of a block_actions payload: that of its
// first action. Slack sends one action per click; a payload with more is
// forged, and its other actions are dropped (logged), so that it cannot
// fan out into one views.open or ephemeral per action.
func (b *Bot) blockActionJobs(ctx context.Context, env *Envelope) []job {
	cb := env.Payload
	if len(cb.blockActions) == 0 || cb.blockActions[0] == nil {
		env.Ack(nil)
		return nil
	}
	if n := len(cb.blockActions); n > 1 {
		b.log.Warn().Int("actions", n).Str("user", trim(cb.User.ID)).Msg("block_actions payload with more than one action; only the first is handled")
	}
	a := *cb.blockActions[0]
	ref, err := blocks.ParseActionID(a.ActionID)
	if err != nil {
		b.log.Debug().Str("action", trim(a.ActionID)).Msg("action that is not ours")
		env.Ack(nil)
		return nil
	}
	switch ref.Kind {
	case blocks.KindOther, blocks.KindDetails:
		env.Ack(nil)
		if env.replayed { // its trigger expired long ago, and it stores nothing
			return nil
		}
		return []job{{fn: func() { b.openModal(ctx, cb, ref) }}}
	case blocks.KindHandoff:
		env.Ack(nil)
		if env.replayed {
			return nil
		}
		return []job{{fn: func() { b.openHandoff(ctx, cb, ref) }}}
	case blocks.KindAnswerForm:
		env.Ack(nil)
		if env.replayed {
			return nil
		}
		return []job{{fn: func() { b.openAnswerForm(ctx, cb, ref) }}}
	default:
		return []job{{queue: ref.AskID, fn: func() { b.onAction(ctx, env, a, ref) }}}
	}
}

// actOf is the lifecycle's view of a payload acting on ask askID: from the
// message (rev: the revision of the element clicked) or, with form, from
// a modal.
func actOf(cb *callback, askID string, rev int, form bool) asks.Act {
	a := asks.Act{
		AskID: askID, By: interaction.User{ID: cb.User.ID, Name: cb.User.Name},
		Workspace: payloadKey(cb.Enterprise.ID, cb.Team.ID, cb.IsEnterpriseInstall), App: cb.APIAppID, Form: form, Rev: rev,
	}
	if !form && cb.Container.ChannelID != "" && cb.Container.MessageTs != "" {
		a.Ref = copyRef(cb.Container.ChannelID, cb.Container.MessageTs)
	}
	return a
}

func (b *Bot) onAction(ctx context.Context, env *Envelope, a slack.BlockAction, ref blocks.Ref) {
	cb := env.Payload
	act := actOf(cb, ref.AskID, ref.Rev, false)
	var rec asks.Record
	var err error
	sctx, cancel := context.WithTimeout(ctx, actTimeout)
	defer cancel()
	switch ref.Kind {
	case blocks.KindSelect:
		options, verr := blocks.ActionOptions(&a)
		if verr != nil {
			env.Ack(nil)
			b.log.Warn().Err(verr).Str("ask", ref.AskID).Msg("select with bad values")
			return
		}
		rec, err = b.svc.Select(sctx, act, ref.Question, options)
		var ne *asks.NoteError
		if errors.As(err, &ne) { // the option asks why: open the form, nothing is stored yet
			env.Ack(nil)
			if !env.replayed { // a replayed click's trigger expired long ago
				b.handlers.Go(func() { b.openNote(ctx, cb, rec, ne.Question, ne.Option) })
			}
			return
		}
	case blocks.KindUse:
		rec, err = b.svc.UseDefault(sctx, act, ref.Question)
	case blocks.KindSkip:
		rec, err = b.svc.Skip(sctx, act, ref.Question)
	case blocks.KindSubmit:
		state, serr := cb.blockState()
		if serr != nil { // as a payload that does not parse: nothing happens
			env.Ack(nil)
			b.log.Warn().Err(serr).Str("ask", ref.AskID).Msg("submit whose state did not parse")
			return
		}
		rec, err = b.svc.Submit(sctx, act, blocks.StatePicks(ref.AskID, ref.Rev, state))
	case blocks.KindCancel:
		rec, err = b.svc.Cancel(sctx, act)
	default:
		env.Ack(nil)
		return
	}
	b.settle(ctx, env, act, rec, err)
	if err == nil && asks.Many(rec) {
		button := a.Type == slack.ActionType(slack.METButton)
		b.handlers.Go(func() { b.confirm(ctx, act, ref.Kind, ref.Question, rec, button) })
	}
}

// confirm tells a person on a team ask what their act did, as the shared
// message never shows their picks: a Submit's response counted (and how
// many are in), a skip, text or a button's pick (a plan-review's approve,
// which their client does not show as chosen) noted in their draft.
// Selections in a menu are shown by their own client and get no notice.
func (b *Bot) confirm(ctx context.Context, act asks.Act, kind blocks.Kind, q int, rec asks.Record, button bool) {
	var text string
	inRange := q >= 0 && q < len(rec.Questions)
	switch {
	case kind == blocks.KindSubmit || interaction.TapResponds(rec.Request()):
		// a Submit, or on an ask with no Submit any act: a response
		text = submittedNotice(rec, act.By.ID)
	case kind == blocks.KindSelect && button && inRange && q < len(rec.Drafts[act.By.ID]):
		if picked := rec.Drafts[act.By.ID][q].Selected; len(picked) > 0 {
			text = "Noted “" + escapeText(clipRunes(strings.Join(picked, ", "), 200)) + "” as your answer to “" +
				blocks.QuestionName(rec.Questions[q]) + "”. Press *Submit* to send it."
		}
	case kind == blocks.KindSkip && inRange:
		text = "Skipped “" + blocks.QuestionName(rec.Questions[q]) + "” for you. Press *Submit* to send your answer."
	case (kind == blocks.KindOther || kind == blocks.KindUse) && inRange:
		text = "Noted your answer to “" + blocks.QuestionName(rec.Questions[q]) + "”. Press *Submit* to send it."
	}
	if text != "" {
		b.ephemeral(ctx, rec, act.By.ID, text)
	}
}

// submittedNotice is the ephemeral confirming user's Submit on a team
// ask, with what they answered: the shared message shows it to nobody,
// and their client may show their picks no more once it was re-rendered.
func submittedNotice(rec asks.Record, user string) string {
	in := fmt.Sprintf("%d of %d", len(rec.Responses), max(rec.Wanted, 1))
	var text string
	switch {
	case rec.Status == interaction.StatusAnswered && rec.AnsweredBy != nil && rec.AnsweredBy.ID == user && rec.Answer != nil && vetoedBy(rec):
		text = "Your answer is in, and its veto ended the question."
	case rec.Status.Ended():
		text = "Your answer is in: " + in + ". That was enough: the question is answered."
	case interaction.TapResponds(rec.Request()):
		text = "Your answer is in: " + in + ". Tap another option to change it until the question ends."
	default:
		text = "Your answer is in: " + in + ". You can change it and press *Submit* again until the question ends."
	}
	for _, r := range rec.Responses {
		if r.User.ID == user {
			text += "\n" + answerSummary(rec.Questions, r.Answer)
		}
	}
	return text
}

// answerSummary is one line per question of a person's answer, escaped
// and shortened.
func answerSummary(qs []interaction.Question, a interaction.Answer) string {
	var lines []string
	for i, it := range a.Answers {
		if i >= len(qs) {
			break
		}
		var what string
		switch {
		case it.Custom != "":
			what = "Other: " + escapeText(clipRunes(it.Custom, 200))
		case len(it.Selected) > 0:
			what = escapeText(clipRunes(strings.Join(it.Selected, ", "), 200))
		default:
			what = "_skipped_"
		}
		lines = append(lines, "• "+blocks.QuestionName(qs[i])+": "+what)
	}
	return strings.Join(lines, "\n")
}

// clipRunes shortens s to n runes, with "…" when cut.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// escapeText escapes Slack's control characters in mrkdwn text.
func escapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func vetoedBy(rec asks.Record) bool {
	_, _, ok := interaction.Vetoed(rec.Request(), *rec.Answer)
	return ok
}

// settle acks a person act's envelope once the lifecycle call returned:
// its change is stored, or it was refused and there is nothing to store.
// A change that could not be stored (the store failed, the process is
// stopping) is left unacked, so that Slack tells the person it failed
// rather than the click being lost silently. What follows the ack (telling
// the person why nothing changed) runs on its own, so the ask's next act
// does not wait for Slack.
//
// A replayed act that is refused is only logged: most likely the earlier
// process applied it before it died (a Submit then finds the ask answered)
// and told the person, and "this question has ended" would be wrong. One
// that succeeds is confirmed as any act (on a team ask, the "your answer
// is in" ephemeral, perhaps a second time).
func (b *Bot) settle(ctx context.Context, env *Envelope, act asks.Act, rec asks.Record, err error) {
	if err != nil && !refusal(err) {
		env.Drop()
		b.log.Error().Err(err).Str("ask", trim(act.AskID)).Msg("action failed")
		return
	}
	env.Ack(nil)
	switch {
	case err != nil && env.replayed:
		b.log.Info().Err(err).Str("ask", trim(act.AskID)).Msg("replayed act refused (applied before the restart, or the ask moved on)")
	case err != nil:
		b.handlers.Go(func() { b.report(ctx, act, rec, err) })
	}
}

// refusal reports whether err is the lifecycle judging an act (it changed
// nothing, on purpose) rather than failing to store it.
func refusal(err error) bool {
	for _, e := range []error{asks.ErrEnded, asks.ErrRefused, asks.ErrForeign, asks.ErrBadChoice, asks.ErrNothingChosen, asks.ErrRequired, asks.ErrNoCancel, asks.ErrNoteNeeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return interaction.ErrorCode(err) == interaction.NotFound
}

// nothingChosenNotice is the ephemeral for a Submit with nothing chosen:
// it offers only what the message has (Skip when a question is optional,
// Cancel when the ask is not a team's).
func nothingChosenNotice(rec asks.Record) string {
	skip := slices.ContainsFunc(rec.Questions, func(q interaction.Question) bool { return !q.Required })
	switch many := asks.Many(rec); {
	case many && skip:
		return "Nothing chosen yet: pick or skip, then press *Submit*."
	case many:
		return "Nothing chosen yet: pick your answer, then press *Submit*."
	case skip:
		return "Nothing chosen yet: pick, skip or cancel."
	}
	return "Nothing chosen yet: pick your answer, or cancel."
}

// report tells the person why their act changed nothing, when they should
// know (the ask ended, they may not answer, nothing chosen), and logs the
// rest.
func (b *Bot) report(ctx context.Context, act asks.Act, rec asks.Record, err error) {
	switch {
	case err == nil:
	case errors.Is(err, asks.ErrEnded):
		b.ephemeral(ctx, rec, act.By.ID, alreadyEndedNotice(rec))
	case errors.Is(err, asks.ErrNothingChosen):
		b.ephemeral(ctx, rec, act.By.ID, nothingChosenNotice(rec))
	case errors.Is(err, asks.ErrRequired):
		b.ephemeral(ctx, rec, act.By.ID, requiredNotice(rec, err))
	case errors.Is(err, asks.ErrNoteNeeded):
		b.ephemeral(ctx, rec, act.By.ID, noteNotice(rec, err))
	case errors.Is(err, asks.ErrNoCancel):
		b.ephemeral(ctx, rec, act.By.ID, "One person cannot cancel a team's question: answer it for yourself (a veto option, if there is one, ends it).")
	case errors.Is(err, asks.ErrRefused):
		b.ephemeral(ctx, rec, act.By.ID, "Sorry, you can't answer this question. "+whoMayAnswer(rec))
	case errors.Is(err, asks.ErrForeign):
		b.log.Warn().Err(err).Str("ask", trim(act.AskID)).Str("user", trim(act.By.ID)).Msg("payload does not belong to the ask")
	case interaction.ErrorCode(err) == interaction.NotFound:
		b.log.Info().Str("ask", trim(act.AskID)).Msg("payload for an unknown ask")
		b.closeUnknown(ctx, act)
	case errors.Is(err, asks.ErrBadChoice):
		b.log.Warn().Err(err).Str("ask", trim(act.AskID)).Msg("payload with impossible values")
	default:
		b.log.Error().Err(err).Str("ask", trim(act.AskID)).Msg("action failed")
	}
}

// noteNotice names the pick a Submit holds without the note it needs.
func noteNotice(rec asks.Record, err error) string {
	var ne *asks.NoteError
	if errors.As(err, &ne) && ne.Question >= 0 && ne.Question < len(rec.Questions) && ne.Option >= 0 && ne.Option < len(rec.Questions[ne.Question].Options) {
		q := rec.Questions[ne.Question]
		return "“" + escapeText(clipRunes(q.Options[ne.Option].Label, 100)) + "” on “" + blocks.QuestionName(q) +
			"” needs a reason: choose it again and say why. Nothing was sent."
	}
	return "One of your choices needs a reason: choose it again and say why. Nothing was sent."
}

// requiredNotice names the required questions a Submit left unanswered.
func requiredNotice(rec asks.Record, err error) string {
	var re *asks.RequiredError
	var names []string
	if errors.As(err, &re) {
		for _, q := range re.Questions {
			if q >= 0 && q < len(rec.Questions) {
				names = append(names, "“"+blocks.QuestionName(rec.Questions[q])+"”")
			}
		}
	}
	if len(names) == 0 {
		return "Please answer every required question before submitting."
	}
	return "Please answer " + strings.Join(names, ", ") + " before submitting: it is required. Nothing was sent."
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
