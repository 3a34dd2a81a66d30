package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
)

var _ asks.Surface = (*Bot)(nil)

// Post implements asks.Surface with chat.postMessage, paced per channel
// once Slack rate-limits it.
func (b *Bot) Post(ctx context.Context, rec asks.Record) (asks.Posted, error) {
	text, blks := blocks.Message(view(rec))
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...)}
	if rec.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(rec.ThreadTS))
	}
	var at asks.Posted
	err := b.callPost(ctx, rec.Channel, func(ctx context.Context) (err error) {
		at.Channel, at.TS, err = b.api.PostMessageContext(ctx, rec.Channel, opts...)
		return err
	})
	return at, err
}

// Update implements asks.Surface with chat.update.
func (b *Bot) Update(ctx context.Context, rec asks.Record) error {
	text, blks := blocks.Message(view(rec))
	return b.call(ctx, "chat.update", func(ctx context.Context) error {
		_, _, _, err := b.api.UpdateMessageContext(ctx, rec.Channel, rec.TS,
			slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...))
		return err
	})
}

// Remind implements asks.Surface: a reply in the ask's thread mentioning
// who may answer.
func (b *Bot) Remind(ctx context.Context, rec asks.Record) error {
	thread := rec.TS
	if rec.ThreadTS != "" {
		thread = rec.ThreadTS
	}
	text := "Reminder: this question is still waiting for an answer."
	if who := responderMentions(rec); len(who) > 0 {
		text = strings.Join(who, " ") + " " + text
	}
	return b.callPost(ctx, rec.Channel, func(ctx context.Context) error {
		_, _, err := b.api.PostMessageContext(ctx, rec.Channel, slack.MsgOptionText(text, false), slack.MsgOptionTS(thread))
		return err
	})
}

// OpenDM implements asks.Surface with conversations.open.
func (b *Bot) OpenDM(ctx context.Context, user string) (string, error) {
	var ch *slack.Channel
	err := b.call(ctx, "conversations.open", func(ctx context.Context) (err error) {
		ch, _, _, err = b.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{user}})
		return err
	})
	if err != nil {
		return "", err
	}
	return ch.ID, nil
}

// FindPosted implements asks.Surface: it looks in the conversation (or
// thread) for a message posted since the ask was created whose blocks
// carry the ask's id.
func (b *Bot) FindPosted(ctx context.Context, rec asks.Record) (string, error) {
	oldest := fmt.Sprintf("%d.000000", rec.CreatedAt.Add(-time.Minute).Unix())
	var msgs []slack.Message
	err := b.call(ctx, "conversations.history", func(ctx context.Context) error {
		var err error
		if rec.ThreadTS != "" {
			msgs, _, _, err = b.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: rec.Channel, Timestamp: rec.ThreadTS, Oldest: oldest, Limit: 200})
			return err
		}
		var resp *slack.GetConversationHistoryResponse
		resp, err = b.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: rec.Channel, Oldest: oldest, Limit: 200})
		if resp != nil {
			msgs = resp.Messages
		}
		return err
	})
	if err != nil {
		return "", err
	}
	prefix := "sa." + rec.ID + "."
	for _, m := range msgs {
		for _, blk := range m.Blocks.BlockSet {
			if strings.HasPrefix(blk.ID(), prefix) {
				return m.Timestamp, nil
			}
		}
	}
	return "", nil
}

// view is what blocks renders of a record.
func view(r asks.Record) blocks.View {
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

// ephemeral tells one person something only they see, in the ask's
// conversation. Failures are logged: an ephemeral is a courtesy.
func (b *Bot) ephemeral(ctx context.Context, rec asks.Record, user, text string) {
	if rec.Channel == "" || user == "" {
		return
	}
	err := b.call(ctx, "chat.postEphemeral", func(ctx context.Context) error {
		opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
		if rec.ThreadTS != "" {
			opts = append(opts, slack.MsgOptionTS(rec.ThreadTS))
		}
		_, err := b.api.PostEphemeralContext(ctx, rec.Channel, user, opts...)
		return err
	})
	if err != nil {
		b.log.Warn().Err(err).Str("ask", rec.ID).Msg("ephemeral message failed")
	}
}

// alreadyEndedNotice is the ephemeral for a person acting on an ask that
// has ended.
func alreadyEndedNotice(r asks.Record) string {
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

func whoMayAnswer(r asks.Record) string {
	return "Only " + strings.Join(responderMentions(r), ", ") + " may answer."
}

// responderMentions returns who may answer r as Slack mentions: its
// responders (user groups as <!subteam^…>), or a DM's recipient; ids that
// do not look like Slack ids are left out.
func responderMentions(r asks.Record) []string {
	ids := r.Responders
	if len(ids) == 0 && r.User != "" {
		ids = []string{r.User}
	}
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		switch {
		case interaction.IsUserGroupID(id):
			parts = append(parts, "<!subteam^"+id+">")
		case interaction.IsUserID(id):
			parts = append(parts, "<@"+id+">")
		}
	}
	return parts
}
