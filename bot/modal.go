package bot

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
)

// viewMeta is what a modal's private_metadata carries: the ask, the
// question and the person it was opened for, authenticated with an HMAC
// under a key kept in the store, so a crafted view cannot answer another
// ask or be replayed by someone else.
type viewMeta struct {
	askID string
	q     int
	user  string
	// note: the "Why?" form of option opt, required or not (version v2
	// of the metadata)
	note, required bool
	opt            int
}

func (b *Bot) signMeta(m viewMeta) string {
	body := "v1:" + m.askID + ":" + strconv.Itoa(m.q) + ":" + m.user
	if m.note {
		body = "v2:" + m.askID + ":" + strconv.Itoa(m.q) + ":" + strconv.Itoa(m.opt) + ":" + strconv.FormatBool(m.required) + ":" + m.user
	}
	mac := hmac.New(sha256.New, b.metaKey)
	mac.Write([]byte(body))
	return body + ":" + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func (b *Bot) parseMeta(s string) (viewMeta, bool) {
	parts := strings.Split(s, ":")
	n := len(parts)
	if !(n == 5 && parts[0] == "v1" || n == 7 && parts[0] == "v2") {
		return viewMeta{}, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[n-1])
	if err != nil {
		return viewMeta{}, false
	}
	mac := hmac.New(sha256.New, b.metaKey)
	mac.Write([]byte(strings.Join(parts[:n-1], ":")))
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return viewMeta{}, false
	}
	q, err := strconv.Atoi(parts[2])
	if err != nil {
		return viewMeta{}, false
	}
	m := viewMeta{askID: parts[1], q: q, user: parts[n-2]}
	if n == 7 {
		if m.opt, err = strconv.Atoi(parts[3]); err != nil {
			return viewMeta{}, false
		}
		m.note, m.required = true, parts[4] == "true"
	}
	return m, true
}

// openView opens the modal v on cb's trigger, with the token of the
// installation cb came through, within the 3 s the trigger lives.
func (b *Bot) openView(ctx context.Context, cb *callback, v slack.ModalViewRequest) error {
	c, err := b.cbConn(ctx, cb)
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = c.api.OpenViewContext(octx, cb.TriggerID, v)
	return err
}

// openModal answers an "Other…" or "Details" click with views.open, right
// away: the trigger id dies about 3 s after the click.
func (b *Bot) openModal(ctx context.Context, cb *callback, ref blocks.Ref) {
	act := actOf(cb, ref.AskID, ref.Rev, false)
	rec, err := b.svc.Check(ctx, act) // the modal shows the progress
	if err != nil {
		b.report(ctx, act, rec, err)
		return
	}
	if ref.Question < 0 || ref.Question >= len(rec.Questions) {
		return
	}
	meta := b.signMeta(viewMeta{askID: rec.ID, q: ref.Question, user: cb.User.ID})
	var modal slack.ModalViewRequest
	if ref.Kind == blocks.KindDetails {
		modal = blocks.DetailsModal(view(rec), ref.Question, meta)
	} else {
		modal = blocks.OtherModal(viewFor(rec, cb.User.ID), ref.Question, meta)
	}
	if err := b.openView(ctx, cb, modal); err != nil {
		b.log.Warn().Err(slackErr(err)).Str("ask", rec.ID).Msg("views.open failed")
		b.ephemeral(ctx, rec, cb.User.ID, "Sorry, the form could not open in time. Please press the button again.")
	}
}

// openNote answers the pick of an option that asks for a note with its
// "Why?" form, right away: the trigger id dies about 3 s after the click.
func (b *Bot) openNote(ctx context.Context, cb *callback, rec asks.Record, q, opt int) {
	required := q >= 0 && q < len(rec.Questions) && opt >= 0 && opt < len(rec.Questions[q].Options) &&
		rec.Questions[q].Options[opt].Note == interaction.NoteRequired
	meta := b.signMeta(viewMeta{askID: rec.ID, q: q, user: cb.User.ID, note: true, opt: opt, required: required})
	if err := b.openView(ctx, cb, blocks.NoteModal(view(rec), q, opt, meta)); err != nil {
		b.log.Warn().Err(slackErr(err)).Str("ask", rec.ID).Msg("views.open failed")
		b.ephemeral(ctx, rec, cb.User.ID, "Sorry, the form could not open in time. Please choose again.")
	}
}

type submission struct {
	meta viewMeta
	text string
}

// checkSubmission decides, without I/O, what to ack a view_submission
// with: errors for blank or overlong text, nothing otherwise. It returns
// the submission to act on, or nil.
func (b *Bot) checkSubmission(cb *callback) (*submission, any) {
	if cb.View.CallbackID != blocks.CallbackOther && cb.View.CallbackID != blocks.CallbackNote {
		return nil, nil
	}
	meta, ok := b.parseMeta(cb.View.PrivateMetadata)
	if !ok || meta.user != cb.User.ID || meta.note != (cb.View.CallbackID == blocks.CallbackNote) {
		b.log.Warn().Str("user", trim(cb.User.ID)).Msg("view submission with forged or foreign metadata")
		return nil, viewErrors("This form is not valid any more. Close it and press the button in the message again.")
	}
	text, ok := blocks.CustomText(cb.View.State)
	if !ok && meta.note && !meta.required {
		return &submission{meta: meta}, nil // an optional note left empty
	}
	if !ok && meta.note {
		return nil, viewErrors("Say why you chose it, or press Back.")
	}
	if !ok {
		return nil, viewErrors("Type an answer, or press Back.")
	}
	if n := utf8.RuneCountInString(text); n > interaction.MaxCustomLen {
		return nil, viewErrors(fmt.Sprintf("The answer is %d characters long; the limit is %d.", n, interaction.MaxCustomLen))
	}
	return &submission{meta: meta, text: text}, nil
}

func viewErrors(msg string) *slack.ViewSubmissionResponse {
	return slack.NewErrorsViewSubmissionResponse(map[string]string{blocks.CustomBlockID: msg})
}

// onCustom stores a form's "Other" text, or a "Why?" form's pick and note,
// then acks the submission (which closes the form).
func (b *Bot) onCustom(ctx context.Context, env *Envelope, sub submission) {
	act := actOf(env.Payload, sub.meta.askID, -1, true)
	sctx, cancel := context.WithTimeout(ctx, actTimeout)
	kind := blocks.KindOther
	var rec asks.Record
	var err error
	if sub.meta.note {
		kind = blocks.KindSelect
		rec, err = b.svc.SelectNoted(sctx, act, sub.meta.q, []int{sub.meta.opt}, sub.text)
	} else {
		rec, err = b.svc.Other(sctx, act, sub.meta.q, sub.text)
	}
	cancel()
	b.settle(ctx, env, act, rec, err)
	if err == nil && asks.Many(rec) {
		b.handlers.Go(func() { b.confirm(ctx, act, kind, sub.meta.q, rec, sub.meta.note) })
	}
}
