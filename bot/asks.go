package bot

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

var (
	userIDPattern  = regexp.MustCompile(`^[UW][A-Z0-9]{2,30}$`)
	slackIDPattern = regexp.MustCompile(`^[UWS][A-Z0-9]{2,30}$`)
	convIDPattern  = regexp.MustCompile(`^[CGD][A-Z0-9]{2,30}$`)
	tsPattern      = regexp.MustCompile(`^[0-9]{1,12}\.[0-9]{1,9}$`)
)

// Ask implements interaction.Provider: it posts the request to the default
// conversation and waits for its end. When ctx ends first the ask is
// withdrawn (ASK_ABORTED) and its message updated.
func (b *Bot) Ask(ctx context.Context, r interaction.Request) (interaction.Answer, error) {
	if err := ctx.Err(); err != nil {
		return interaction.Answer{}, interaction.Errorf(interaction.AskAborted, "ask: the caller withdrew before asking")
	}
	// Posting is not interrupted half-way (a message Slack accepted must
	// stay tied to its record); a caller that left meanwhile withdraws it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	ask, err := b.Create(cctx, interaction.AskInput{Request: r})
	cancel()
	if err != nil {
		return interaction.Answer{}, err
	}
	ask, err = b.Wait(ctx, ask.ID)
	if err != nil {
		return interaction.Answer{}, err
	}
	if !ask.Status.Ended() {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if ask, err = b.Withdraw(wctx, ask.ID); err != nil {
			return interaction.Answer{}, err
		}
	}
	return ask.Result()
}

// Create implements interaction.AskService: it validates in, stores the
// ask, posts its message and returns it pending. Errors: the validation
// codes, SLACK_ERROR when Slack refuses the post (nothing is kept then).
func (b *Bot) Create(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	ask, _, err := b.CreateIdempotent(ctx, in)
	return ask, err
}

// CreateIdempotent is Create that also reports whether this call created
// the ask (false: the IdempotencyKey named an existing one, returned as is).
func (b *Bot) CreateIdempotent(ctx context.Context, in interaction.AskInput) (interaction.Ask, bool, error) {
	rec, err := b.newRecord(in)
	if err != nil {
		return interaction.Ask{}, false, fmt.Errorf("bot create: %w", err)
	}
	rec, created, err := b.store.Create(ctx, rec)
	if err != nil {
		return interaction.Ask{}, false, fmt.Errorf("bot create: %w", err)
	}
	if !created {
		return rec.Ask, false, nil
	}
	if in.User != "" {
		if rec, err = b.openDM(ctx, rec); err != nil {
			return interaction.Ask{}, false, b.dropUnposted(rec.ID, err)
		}
	}
	rec, err = b.post(ctx, rec)
	if err != nil {
		return interaction.Ask{}, false, b.dropUnposted(rec.ID, err)
	}
	b.sched.add(rec)
	b.stats.Created.Add(1)
	return rec.Ask, true, nil
}

// dropUnposted removes a record whose message could not be posted, so
// that nothing dangles and a retry with the same key posts afresh.
func (b *Bot) dropUnposted(id string, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.store.Delete(ctx, id); err != nil {
		b.log.Error().Err(err).Str("ask", id).Msg("could not remove an ask whose post failed")
	}
	return fmt.Errorf("bot create: %w", cause)
}

func (b *Bot) newRecord(in interaction.AskInput) (store.Record, error) {
	if err := interaction.Validate(in.Request); err != nil {
		return store.Record{}, err
	}
	if err := checkIDs(in); err != nil {
		return store.Record{}, err
	}
	channel := in.Channel
	if channel == "" && in.User == "" {
		channel = b.cfg.DefaultChannel
	}
	if channel == "" && in.User == "" {
		return store.Record{}, interaction.Errorf(interaction.InvalidQuestion, "no conversation: set channel or user, or SLACKASK_CHANNEL")
	}
	now := b.now()
	rec := store.Record{
		Ask: interaction.Ask{
			ID: newID(), Status: interaction.StatusPending,
			Questions: in.Questions, Agent: in.Agent, Channel: channel, ThreadTS: in.ThreadTS, CreatedAt: now,
		},
		User: in.User, Mention: in.Mention, Responders: in.Responders, IdempotencyKey: in.IdempotencyKey,
		TeamID: b.teamID, AppID: b.appIDNow(), Rev: 1,
		Progress: make([]interaction.Progress, len(in.Questions)),
	}
	if len(rec.Responders) == 0 && in.User == "" {
		rec.Responders = b.cfg.DefaultResponders
	}
	timeout := time.Duration(in.Timeout)
	if timeout == 0 {
		timeout = b.cfg.DefaultTimeout
	}
	if timeout > 0 {
		exp := now.Add(timeout)
		rec.ExpiresAt = &exp
	}
	if in.RemindAfter > 0 {
		rec.RemindAt = now.Add(time.Duration(in.RemindAfter))
	}
	return rec, nil
}

func checkIDs(in interaction.AskInput) error {
	for _, id := range append(append([]string{}, in.Mention...), in.Responders...) {
		if !slackIDPattern.MatchString(id) {
			return interaction.Errorf(interaction.InvalidQuestion, "%q is not a Slack user (U…, W…) or user-group (S…) id", id)
		}
	}
	switch {
	case in.User != "" && !userIDPattern.MatchString(in.User):
		return interaction.Errorf(interaction.InvalidQuestion, "user %q is not a Slack user id (U… or W…)", in.User)
	case in.Channel != "" && !convIDPattern.MatchString(in.Channel):
		return interaction.Errorf(interaction.InvalidQuestion, "channel %q is not a Slack conversation id (C…, G…, D…)", in.Channel)
	case in.ThreadTS != "" && !tsPattern.MatchString(in.ThreadTS):
		return interaction.Errorf(interaction.InvalidQuestion, "threadTs %q is not a Slack message timestamp", in.ThreadTS)
	case len(in.IdempotencyKey) > 200:
		return interaction.Errorf(interaction.InvalidQuestion, "idempotencyKey is longer than 200 bytes")
	}
	return nil
}

func (b *Bot) openDM(ctx context.Context, rec store.Record) (store.Record, error) {
	var ch *slack.Channel
	err := b.call(ctx, "conversations.open", func(ctx context.Context) (err error) {
		ch, _, _, err = b.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{rec.User}})
		return err
	})
	if err != nil {
		return rec, err
	}
	return b.store.Update(ctx, rec.ID, func(r *store.Record) error {
		r.Channel = ch.ID
		return nil
	})
}

// post sends the ask's message and stores where it landed.
func (b *Bot) post(ctx context.Context, rec store.Record) (store.Record, error) {
	text, blks := blocks.Message(b.view(rec))
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...)}
	if rec.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(rec.ThreadTS))
	}
	var channel, ts string
	err := b.callPost(ctx, rec.Channel, func(ctx context.Context) (err error) {
		channel, ts, err = b.api.PostMessageContext(ctx, rec.Channel, opts...)
		return err
	})
	if err != nil {
		return rec, err
	}
	b.stats.Posts.Add(1)
	rec, err = b.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *store.Record) error {
		r.Channel, r.TS, r.Synced = channel, ts, r.Rev == rec.Rev
		return nil
	})
	if err == nil && !rec.Synced {
		// The ask changed (or ended) while it was being posted.
		b.syncer.mark(rec.ID)
	}
	return rec, err
}

// Get implements interaction.AskService.
func (b *Bot) Get(ctx context.Context, id string) (interaction.Ask, error) {
	rec, err := b.store.Get(ctx, id)
	if err != nil {
		return interaction.Ask{}, fmt.Errorf("bot get: %w", err)
	}
	return rec.Ask, nil
}

// Wait implements interaction.AskService.
func (b *Bot) Wait(ctx context.Context, id string) (interaction.Ask, error) {
	wt, cancel := b.waiters.add(id)
	defer cancel()
	ask, err := b.Get(context.WithoutCancel(ctx), id)
	if err != nil || ask.Status.Ended() {
		return ask, err
	}
	select {
	case <-wt.done:
		return wt.ask, nil
	case <-ctx.Done():
		return b.Get(context.WithoutCancel(ctx), id)
	}
}

// Notify implements httpapi.Notifier: fn is called once, by the goroutine
// that ends the ask, right after the end is stored, with the ask as it
// ended (shared by every waiter: read-only) and the bot's waiter lock held
// (fn must return within a millisecond or so and not call the bot). For an
// ask that is unknown or has already ended fn is never called: callers Get
// the ask after Notify. cancel forgets fn and may be called more than once.
func (b *Bot) Notify(id string, fn func(interaction.Ask)) (cancel func()) {
	return b.waiters.register(id, &waiter{fn: fn})
}

// Withdraw implements interaction.AskService: the caller takes the ask
// back; it ends as aborted and the message says so.
func (b *Bot) Withdraw(ctx context.Context, id string) (interaction.Ask, error) {
	return b.WithdrawWithNote(ctx, id, "")
}

// WithdrawWithNote implements interaction.NoteWithdrawer: Withdraw, with a
// note for the message saying why (e.g. "answered elsewhere").
func (b *Bot) WithdrawWithNote(ctx context.Context, id, note string) (interaction.Ask, error) {
	msg := "the caller withdrew the question"
	if note != "" {
		msg += ": " + note
	}
	rec, err := b.end(ctx, id, ending{
		status: interaction.StatusAborted,
		err:    interaction.Errorf(interaction.AskAborted, "%s", msg),
		note:   note,
	})
	if errors.Is(err, errEnded) {
		return rec.Ask, nil
	}
	if err != nil {
		return interaction.Ask{}, fmt.Errorf("bot withdraw: %w", err)
	}
	return rec.Ask, nil
}

// List implements interaction.AskService.
func (b *Bot) List(ctx context.Context, f interaction.ListFilter) ([]interaction.Ask, error) {
	recs, err := b.store.List(ctx, store.Filter{Status: f.Status, Before: f.Before, Limit: f.Limit})
	if err != nil {
		return nil, fmt.Errorf("bot list: %w", err)
	}
	out := make([]interaction.Ask, len(recs))
	for i, r := range recs {
		out[i] = r.Ask
	}
	return out, nil
}

func (b *Bot) view(r store.Record) blocks.View {
	v := blocks.View{
		AskID: r.ID, Rev: r.Rev, Request: r.Request(), Status: r.Status, Progress: r.Progress,
		Responders: r.Responders, Mention: r.Mention, Answer: r.Answer, AnsweredBy: r.AnsweredBy,
		ExpiresAt: r.ExpiresAt, Error: r.Error, Note: r.Note,
	}
	if len(v.Responders) == 0 && r.User != "" {
		v.Responders = []string{r.User}
	}
	if r.EndedAt != nil {
		v.EndedAt = *r.EndedAt
	}
	if v.AnsweredBy == nil {
		v.AnsweredBy = r.EndedBy
	}
	return v
}
