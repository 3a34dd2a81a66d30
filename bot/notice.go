package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/slackid"
)

var _ asks.Noticer = (*Bot)(nil)

// noticeBlockPrefix starts the block_id that marks a notice reply:
// "sanotice.<ask>.<key>". It is not a block id of the ask's message
// (blocks.ParseBlockID refuses it), so FindPosted never takes a notice
// for the ask.
const noticeBlockPrefix = "sanotice."

func noticeBlockID(askID, key string) string { return noticeBlockPrefix + askID + "." + key }

// Notice implements asks.Noticer: a reply in the ask's thread mentioning
// the people n names. A retry first looks in the thread for the reply an
// earlier attempt may have posted (its block id carries the key), so one
// notice is posted once however attempts and processes interleave.
func (b *Bot) Notice(ctx context.Context, rec asks.Record, n asks.Notice) error {
	thread := rec.TS
	if rec.ThreadTS != "" {
		thread = rec.ThreadTS
	}
	if rec.Channel == "" || thread == "" {
		return fmt.Errorf("bot notice %s: the ask is not posted", rec.ID)
	}
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return fmt.Errorf("bot notice %s: %w", rec.ID, err)
	}
	id := noticeBlockID(rec.ID, n.Key)
	if n.Retry {
		found, err := b.findNotice(ctx, c, rec.Channel, thread, id)
		if err != nil {
			return fmt.Errorf("bot notice %s: %w", rec.ID, err)
		}
		if found {
			return nil
		}
	}
	text := noticeText(rec, n)
	if n.Reminder > 0 {
		text = reminderText(rec, b.teamMissing(ctx, rec))
	}
	blk := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil, slack.SectionBlockOptionBlockID(id))
	err = b.callPost(ctx, c, rec.Channel, func(ctx context.Context) error {
		_, _, err := c.api.PostMessageContext(ctx, rec.Channel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blk), slack.MsgOptionTS(thread))
		return err
	})
	if err != nil {
		return fmt.Errorf("bot notice %s: %w", rec.ID, err)
	}
	return nil
}

// findNotice reports whether the thread holds a message with a block
// whose id is id.
func (b *Bot) findNotice(ctx context.Context, c conn, channel, thread, id string) (bool, error) {
	cursor := ""
	for range findPages {
		var msgs []slack.Message
		var next string
		err := b.call(ctx, "conversations.replies", func(ctx context.Context) (err error) {
			msgs, _, next, err = c.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: thread, Limit: 200, Cursor: cursor})
			return err
		})
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			for _, blk := range m.Blocks.BlockSet {
				if blk.ID() == id {
					return true, nil
				}
			}
		}
		if next == "" {
			return false, nil
		}
		cursor = next
	}
	return false, nil
}

// noticeText is the text of a notice: who it is for, and why.
func noticeText(rec asks.Record, n asks.Notice) string {
	who := mentionsOf(n.People)
	switch {
	case n.To != nil:
		from := "Someone"
		if n.From != nil {
			from = "<@" + n.From.ID + ">"
		}
		return who + " " + from + " handed this question to you: you may answer it now."
	case n.Step >= 0 && n.Step < len(rec.Escalation):
		after := time.Duration(rec.Escalation[n.Step].After)
		return who + " this question now waits for you too: nobody answered it within " + shortDuration(after) + "."
	}
	return who + " this question waits for you."
}

// mentionsOf renders user and user-group ids as mentions; other values
// are left out.
func mentionsOf(ids []string) string {
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		switch {
		case slackid.IsUserGroup(id):
			parts = append(parts, "<!subteam^"+id+">")
		case slackid.IsUser(id):
			parts = append(parts, "<@"+id+">")
		}
	}
	return strings.Join(parts, " ")
}

// shortDuration writes d as people say it: "30m", "1h30m", "2h".
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if s == "" {
		return "0s"
	}
	return s
}
