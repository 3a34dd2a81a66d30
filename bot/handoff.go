package bot

import (
	"context"
	"errors"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// openHandoff answers a "Hand off…" click with the hand-off modal, right
// away (the trigger dies about 3 s after the click), once the lifecycle
// judged that the person may answer the ask (only they may hand it off).
func (b *Bot) openHandoff(ctx context.Context, cb *callback, ref blocks.Ref) {
	act := actOf(cb, ref.AskID, ref.Rev, false)
	rec, err := b.svc.Check(ctx, act)
	if err != nil {
		b.report(ctx, act, rec, err)
		return
	}
	meta := b.signMeta(viewMeta{askID: rec.ID, q: -1, user: cb.User.ID})
	if err := b.openView(ctx, cb, blocks.HandoffModal(view(rec), meta)); err != nil {
		b.log.Warn().Err(slackErr(err)).Str("ask", rec.ID).Msg("views.open of the hand-off failed")
		b.ephemeral(ctx, rec, cb.User.ID, "Sorry, the form could not open in time. Please press the button again.")
	}
}

// handoffJobs is the work of a hand-off modal's submission: checked
// without I/O (forged metadata, nobody picked: answered with the modal's
// errors), then the hand-off in the ask's queue.
func (b *Bot) handoffJobs(ctx context.Context, env *Envelope) []job {
	cb := env.Payload
	meta, ok := b.parseMeta(cb.View.PrivateMetadata)
	if !ok || meta.user != cb.User.ID {
		b.log.Warn().Str("user", trim(cb.User.ID)).Msg("hand-off submission with forged or foreign metadata")
		env.Ack(handoffErrors("This form is not valid any more. Close it and press the button in the message again."))
		return nil
	}
	to, ok := blocks.HandoffUser(cb.View.State)
	if !ok || !slackid.IsUser(to) {
		env.Ack(handoffErrors("Choose the person to hand the question to."))
		return nil
	}
	return []job{{queue: meta.askID, fn: func() { b.onHandoff(ctx, env, meta, to) }}}
}

// onHandoff stores the hand-off, then acks the submission: with nil (the
// modal closes) once stored, with the reason on the modal when refused,
// not at all when it could not be stored (Slack then says it failed).
func (b *Bot) onHandoff(ctx context.Context, env *Envelope, meta viewMeta, to string) {
	act := actOf(env.Payload, meta.askID, -1, true)
	rec, err := b.svc.HandOff(ctx, act, interaction.User{ID: to, Name: b.userName(ctx, env.Payload, to)})
	switch {
	case err == nil:
		env.Ack(nil)
	case errors.Is(err, asks.ErrNoHandoff):
		msg := "This question cannot be handed off."
		if to == act.By.ID {
			msg = "Choose someone other than yourself."
		}
		env.Ack(handoffErrors(msg))
	case errors.Is(err, asks.ErrEnded):
		env.Ack(handoffErrors(alreadyEndedNotice(rec)))
	case errors.Is(err, asks.ErrRefused):
		env.Ack(handoffErrors("Only someone who may answer the question can hand it off. " + whoMayAnswer(rec)))
	case refusal(err):
		env.Ack(handoffErrors("This question is no longer available."))
	default:
		env.Drop()
		b.log.Error().Err(err).Str("ask", trim(meta.askID)).Msg("hand-off failed")
	}
}

func handoffErrors(msg string) *slack.ViewSubmissionResponse {
	return slack.NewErrorsViewSubmissionResponse(map[string]string{blocks.HandoffBlockID: msg})
}

// userName returns the display name of user (of the workspace of cb)
// from users.info, or "" when Slack does not say within a second (the
// hand-off is stored either way).
func (b *Bot) userName(ctx context.Context, cb *callback, user string) string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := b.cbConn(ctx, cb)
	if err != nil {
		return ""
	}
	var u *slack.User
	err = b.call(ctx, "users.info", func(ctx context.Context) (err error) {
		u, err = c.api.GetUserInfoContext(ctx, user)
		return err
	})
	if err != nil || u == nil {
		return ""
	}
	if u.Profile.DisplayName != "" {
		return u.Profile.DisplayName
	}
	if u.RealName != "" {
		return u.RealName
	}
	return u.Name
}
