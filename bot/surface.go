package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

var (
	_ asks.Surface     = (*Bot)(nil)
	_ asks.Permalinker = (*Bot)(nil)
	_ asks.Referrer    = (*Bot)(nil)
	_ asks.Checker     = (*Bot)(nil)
)

// Post implements asks.Surface with chat.postMessage: in the ask's
// channel (thread), or the DM with rec.User (conversations.open). It never
// waits out Slack's rate limit: a 429 (or a conversation still inside the
// last Retry-After) is *asks.RateLimited, and the lifecycle queues the ask.
func (b *Bot) Post(ctx context.Context, rec asks.Record) (asks.Posted, error) {
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return asks.Posted{}, fmt.Errorf("chat.postMessage: %w", err)
	}
	ch, err := b.mainChannel(ctx, c, rec)
	if err != nil {
		return asks.Posted{}, err
	}
	at, err := b.postView(ctx, c, ch, rec.ThreadTS, view(rec))
	if err != nil {
		return at, err
	}
	at.Channel = cmp.Or(at.Channel, ch)
	at.Ref = copyRef(at.Channel, at.TS)
	return at, nil
}

// mainChannel is the conversation of rec's main message: its channel, or
// for a direct ask not posted yet, the DM with its person.
func (b *Bot) mainChannel(ctx context.Context, c conn, rec asks.Record) (string, error) {
	if rec.Channel == "" && rec.User != "" {
		return b.openDM(ctx, c, rec.User)
	}
	return rec.Channel, nil
}

// MainRef implements asks.Referrer: the reference of a message posted
// before records kept it is its channel and ts, as Post's.
func (b *Bot) MainRef(rec asks.Record) string {
	if rec.TS == "" {
		return ""
	}
	return copyRef(rec.Channel, rec.TS)
}

// postView posts the message drawing v in channel (in thread when set).
// Errors as Post's.
func (b *Bot) postView(ctx context.Context, c conn, channel, thread string, v blocks.View) (asks.Posted, error) {
	const method = "chat.postMessage"
	if wait := time.Until(c.ws.posts.limitedUntil(channel)); wait > 0 {
		return asks.Posted{}, fmt.Errorf("%s: %w", method, &asks.RateLimited{RetryAfter: wait})
	}
	text, blks := blocks.Message(v)
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	var at asks.Posted
	var err error
	at.Channel, at.TS, err = c.api.PostMessageContext(ctx, channel, opts...)
	var rl *slack.RateLimitedError
	switch {
	case err == nil:
		return at, nil
	case errors.As(err, &rl):
		pause := rateLimitBackoff
		wait := retryAfter(&pause, rl)
		c.ws.posts.limitFor(channel, time.Now().Add(wait))
		return at, fmt.Errorf("%s: %w", method, &asks.RateLimited{RetryAfter: wait})
	case !refusedBySlack(err):
		return at, fmt.Errorf("%w: %s: %w", asks.ErrOutcomeUnknown, method, slackErr(err))
	}
	if mistake, ok := callerMistake(err, method, fmt.Sprintf("channel %q", channel)); ok {
		return at, mistake
	}
	return at, fmt.Errorf("%s: %w", method, slackErr(err))
}

// refusedBySlack reports whether err, from one Web API call, says for sure
// that Slack did not apply it: Slack answered ok:false with an error, or
// rate-limited the call. A timeout, a broken connection or a 5xx leave it
// unknown whether the call was applied.
func refusedBySlack(err error) bool {
	var se slack.SlackErrorResponse
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	switch {
	case errors.As(err, &se), errors.As(err, &rl):
		return true
	case errors.As(err, &sc):
		return sc.Code < 500
	}
	return false
}

// Permalink implements asks.Permalinker with chat.getPermalink.
func (b *Bot) Permalink(ctx context.Context, rec asks.Record, at asks.Posted) (string, error) {
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return "", fmt.Errorf("chat.getPermalink: %w", err)
	}
	var link string
	err = b.call(ctx, "chat.getPermalink", func(ctx context.Context) (err error) {
		link, err = c.api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: at.Channel, Ts: at.TS})
		return err
	})
	return link, err
}

// Update implements asks.Surface with chat.update.
func (b *Bot) Update(ctx context.Context, rec asks.Record) error {
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return fmt.Errorf("chat.update: %w", err)
	}
	return b.update(ctx, c, rec.Channel, rec.TS, view(rec))
}

// update makes the message channel/ts draw v. When Slack says the message
// or its conversation is gone, the error wraps asks.ErrMessageGone: no
// retry can bring it back. A 429 is *asks.RateLimited and v is not sent
// again: by the end of the Retry-After another replica may have drawn a
// newer state of the ask (ended it), which v would draw over; the
// lifecycle renders the record as it stands then.
func (b *Bot) update(ctx context.Context, c conn, channel, ts string, v blocks.View) error {
	const method = "chat.update"
	text, blks := blocks.Message(v)
	_, _, _, err := c.api.UpdateMessageContext(ctx, channel, ts,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...))
	var rl *slack.RateLimitedError
	var se slack.SlackErrorResponse
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rl):
		pause := rateLimitBackoff
		return fmt.Errorf("%s: %w", method, &asks.RateLimited{RetryAfter: retryAfter(&pause, rl)})
	case errors.As(err, &se) && (se.Err == "message_not_found" || se.Err == "channel_not_found"):
		return fmt.Errorf("%w: %w", asks.ErrMessageGone, callErr(ctx, method, err))
	}
	return callErr(ctx, method, err)
}

// Remind implements asks.Surface: a reply in the ask's thread mentioning
// who may answer, or on a team ask only who has not answered yet (see
// reminderText and teamMissing).
func (b *Bot) Remind(ctx context.Context, rec asks.Record) error {
	thread := rec.TS
	if rec.ThreadTS != "" {
		thread = rec.ThreadTS
	}
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return fmt.Errorf("chat.postMessage: %w", err)
	}
	text := reminderText(rec, b.teamMissing(ctx, rec))
	return b.callPost(ctx, c, rec.Channel, func(ctx context.Context) error {
		_, _, err := c.api.PostMessageContext(ctx, rec.Channel, slack.MsgOptionText(text, false), slack.MsgOptionTS(thread))
		return err
	})
}

// openDM opens the DM with user (conversations.open).
func (b *Bot) openDM(ctx context.Context, c conn, user string) (string, error) {
	var ch *slack.Channel
	var last error
	err := b.call(ctx, "conversations.open", func(ctx context.Context) (err error) {
		ch, _, _, err = c.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{user}})
		last = err
		return err
	})
	if mistake, ok := callerMistake(last, "conversations.open", fmt.Sprintf("user %q", user)); err != nil && ok {
		return "", mistake
	}
	if err != nil {
		return "", err
	}
	return ch.ID, nil
}

// copyRef is the reference of a copy of an ask (asks.Copy.Ref): its
// conversation and message, as the Slack side names them.
func copyRef(channel, ts string) string { return channel + "/" + ts }

// splitRef is the conversation and message of a copy's reference.
func splitRef(ref string) (channel, ts string, err error) {
	channel, ts, ok := strings.Cut(ref, "/")
	if !ok || channel == "" || ts == "" {
		return "", "", interaction.Errorf(interaction.Internal, "not a Slack message reference: %q", ref)
	}
	return channel, ts, nil
}

// copyChannel is the conversation copy c goes to: the DM with c.For
// (conversations.open), or c.In.
func (b *Bot) copyChannel(ctx context.Context, c conn, cp asks.Copy) (string, error) {
	if cp.For != "" {
		return b.openDM(ctx, c, cp.For)
	}
	return cp.In, nil
}

// PostCopy implements asks.Surface: the ask's message, with its own
// controls, in a DM to c.For or in the conversation c.In. Errors as Post's.
func (b *Bot) PostCopy(ctx context.Context, rec asks.Record, cp asks.Copy) (asks.Posted, error) {
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return asks.Posted{}, fmt.Errorf("chat.postMessage: %w", err)
	}
	ch, err := b.copyChannel(ctx, c, cp)
	if err != nil {
		return asks.Posted{}, err
	}
	at, err := b.postView(ctx, c, ch, "", view(rec))
	if err != nil {
		return asks.Posted{}, err
	}
	at.Channel = cmp.Or(at.Channel, ch)
	at.Ref = copyRef(at.Channel, at.TS)
	return at, nil
}

// UpdateCopy implements asks.Surface with chat.update of the copy's message.
func (b *Bot) UpdateCopy(ctx context.Context, rec asks.Record, cp asks.Copy) error {
	ch, ts, err := splitRef(cp.Ref)
	if err != nil {
		return fmt.Errorf("chat.update: %w", err)
	}
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return fmt.Errorf("chat.update: %w", err)
	}
	return b.update(ctx, c, ch, ts, view(rec))
}

// FindCopy implements asks.Surface: FindPosted in the copy's conversation.
func (b *Bot) FindCopy(ctx context.Context, rec asks.Record, cp asks.Copy) (asks.Posted, error) {
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return asks.Posted{}, fmt.Errorf("conversations.history: %w", err)
	}
	ch, err := b.copyChannel(ctx, c, cp)
	if err != nil {
		return asks.Posted{}, err
	}
	ts, err := b.find(ctx, c, rec, ch, "")
	if err != nil || ts == "" {
		return asks.Posted{}, err
	}
	return asks.Posted{Channel: ch, TS: ts, Ref: copyRef(ch, ts)}, nil
}

// findPages bounds the pages FindPosted reads (200 messages each): a
// conversation busier than that since the ask was created is not searched
// to its end, and the ask is posted again.
const findPages = 50

// FindPosted implements asks.Surface: it looks in the conversation (or
// thread) for a message posted since the ask was created whose blocks
// carry the ask's id. It reads conversations.history (conversations.replies
// in a thread) page by page, newest first, back to a minute before the
// ask's creation, however many messages came after it.
func (b *Bot) FindPosted(ctx context.Context, rec asks.Record) (asks.Posted, error) {
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return asks.Posted{}, fmt.Errorf("conversations.history: %w", err)
	}
	ch, err := b.mainChannel(ctx, c, rec)
	if err != nil {
		return asks.Posted{}, err
	}
	ts, err := b.find(ctx, c, rec, ch, rec.ThreadTS)
	if err != nil || ts == "" {
		return asks.Posted{}, err
	}
	return asks.Posted{Channel: ch, TS: ts, Ref: copyRef(ch, ts)}, nil
}

// find looks in channel (in thread when set) for a message of rec posted
// since it was created, as FindPosted says, and returns its ts.
func (b *Bot) find(ctx context.Context, c conn, rec asks.Record, channel, thread string) (string, error) {
	oldest := fmt.Sprintf("%d.000000", rec.CreatedAt.Add(-time.Minute).Unix())
	cursor := ""
	for range findPages {
		var msgs []slack.Message
		var next string
		err := b.call(ctx, "conversations.history", func(ctx context.Context) error {
			var err error
			if thread != "" {
				msgs, _, next, err = c.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
					ChannelID: channel, Timestamp: thread, Oldest: oldest, Limit: 200, Cursor: cursor})
				return err
			}
			var resp *slack.GetConversationHistoryResponse
			resp, err = c.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
				ChannelID: channel, Oldest: oldest, Limit: 200, Cursor: cursor})
			if resp != nil {
				msgs, next = resp.Messages, resp.ResponseMetaData.NextCursor
			}
			return err
		})
		if err != nil {
			return "", err
		}
		for _, m := range msgs {
			for _, blk := range m.Blocks.BlockSet {
				if r, err := blocks.ParseBlockID(blk.ID()); err == nil && r.AskID == rec.ID {
					return m.Timestamp, nil
				}
			}
		}
		if next == "" {
			return "", nil
		}
		cursor = next
	}
	b.log.Warn().Str("ask", rec.ID).Int("pages", findPages).Msg("FindPosted: stopped paging back before the ask's creation")
	return "", nil
}

// view is what blocks renders of a record.
func view(r asks.Record) blocks.View {
	v := blocks.View{
		AskID: r.ID, Rev: r.Rev, Request: r.Request(), Status: r.Status, Progress: r.Progress,
		Responders: r.Responders, Mention: r.Mention, Answer: r.Answer, AnsweredBy: r.AnsweredBy,
		ExpiresAt: r.ExpiresAt, Error: r.Error, Note: r.Note,
	}
	if len(r.Awaited) == 0 {
		v.Responders = asks.MayAnswerIDs(r) // with the people added since
	}
	v.HandOff = asks.CanHandOff(r)
	if r.EndedAt != nil {
		v.EndedAt = *r.EndedAt
	}
	if v.AnsweredBy == nil {
		v.AnsweredBy = r.EndedBy
	}
	if asks.Many(r) {
		v.Progress = nil // the message is everyone's: nobody's picks on it
		v.Team = &blocks.Team{Wanted: r.Wanted, Tally: r.Tally}
		for _, resp := range r.Responses {
			v.Team.Answered = append(v.Team.Answered, resp.User)
			for _, item := range resp.Answer.Answers {
				if t := strings.TrimSpace(item.Custom); t != "" {
					if v.Team.Texts == nil {
						v.Team.Texts = map[string][]blocks.PersonText{}
					}
					v.Team.Texts[item.ID] = append(v.Team.Texts[item.ID], blocks.PersonText{User: resp.User, Text: t})
				}
			}
		}
	}
	return v
}

// viewFor is view(r) as user sees it in a form of their own: on a team
// ask, with their draft as the progress.
func viewFor(r asks.Record, user string) blocks.View {
	v := view(r)
	if asks.Many(r) {
		v.Progress = r.Drafts[user]
	}
	return v
}

// ephemeral tells one person something only they see, in the ask's
// conversation. Failures are logged: an ephemeral is a courtesy.
func (b *Bot) ephemeral(ctx context.Context, rec asks.Record, user, text string) {
	if rec.Channel == "" || user == "" {
		return
	}
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		b.log.Warn().Err(err).Str("ask", rec.ID).Msg("ephemeral message not sent")
		return
	}
	err = b.call(ctx, "chat.postEphemeral", func(ctx context.Context) error {
		opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
		if rec.ThreadTS != "" {
			opts = append(opts, slack.MsgOptionTS(rec.ThreadTS))
		}
		_, err := c.api.PostEphemeralContext(ctx, rec.Channel, user, opts...)
		return err
	})
	if err != nil {
		b.log.Warn().Err(err).Str("ask", rec.ID).Msg("ephemeral message failed")
	}
}

// unknownNotice is the ephemeral for a person acting on a message whose
// ask is not (or no longer) in the store.
const unknownNotice = "This question is no longer available."

// closeUnknown answers an act on a message whose ask is unknown (pruned,
// or lost to a post whose outcome was never settled): the person is told,
// and the message is closed (rendered without controls) so nobody else
// clicks in vain. Only acts from this workspace and app change a message.
func (b *Bot) closeUnknown(ctx context.Context, act asks.Act) {
	channel, ts, err := splitRef(act.Ref)
	if err != nil {
		return
	}
	team, app := b.Home()
	c, err := b.keyConn(ctx, act.Workspace)
	if err != nil {
		return // not installed there (any more): nothing to close with
	}
	if b.routes.many() {
		team, app = c.ws.key, c.app
	}
	if act.Workspace != team || (app != "" && act.App != "" && act.App != app) {
		return
	}
	rec := asks.Record{Ask: interaction.Ask{ID: trim(act.AskID), Channel: channel}, TeamID: act.Workspace}
	b.ephemeral(ctx, rec, act.By.ID, unknownNotice)
	err = b.call(ctx, "chat.update", func(ctx context.Context) error {
		_, _, _, err := c.api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText(unknownNotice, false),
			slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "_"+unknownNotice+"_", false, false), nil, nil)))
		return err
	})
	if err != nil {
		b.log.Warn().Err(err).Str("ask", rec.ID).Msg("could not close the message of an unknown ask")
	}
}

// alreadyEndedNotice is the ephemeral for a person acting on an ask that
// has ended.
func alreadyEndedNotice(r asks.Record) string {
	if asks.Many(r) && r.Status == interaction.StatusAnswered {
		if r.Answer != nil && r.AnsweredBy != nil {
			if _, label, ok := interaction.Vetoed(r.Request(), *r.Answer); ok {
				return "This question has already ended: <@" + r.AnsweredBy.ID + "> vetoed it (" + escapeText(label) + "), so your answer was not counted."
			}
		}
		return fmt.Sprintf("This question has already ended: it was answered with %d of %d responses, so yours was not counted.", len(r.Responses), max(r.Wanted, 1))
	}
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

// teamMissing returns who the team ask r still waits for, for its
// reminder: asks.Missing, or, for an ask that waits for any N of
// responders that list user groups, the listed users and the groups'
// members (as Slack has them now) without a response, each once, in
// order. Mentioning the group itself would ping those who have answered.
// A group that cannot be read is left out (logged). nil for a
// one-response ask and for one that anyone in the conversation may answer.
func (b *Bot) teamMissing(ctx context.Context, r asks.Record) []string {
	if !asks.Many(r) {
		return nil
	}
	if missing := asks.Missing(r, slackid.IsUserGroup); missing != nil || !slices.ContainsFunc(r.Responders, slackid.IsUserGroup) {
		return missing
	}
	var people []string
	for _, id := range r.Responders {
		if !slackid.IsUserGroup(id) {
			people = append(people, id)
			continue
		}
		members, err := b.Members(ctx, r.TeamID, id)
		if err != nil {
			b.log.Warn().Err(err).Str("ask", r.ID).Str("group", id).Msg("reminder: could not read the group's members; not mentioning them")
			continue
		}
		people = append(people, members...)
	}
	return asks.Unanswered(r, people)
}

// maxReminded bounds the people a team reminder mentions one by one; the
// rest are counted ("and 3 others").
const maxReminded = interaction.MaxResponders

// reminderText is the reminder of r: addressed to who may answer it, or,
// on a team ask, only to missing, those it still waits for (teamMissing);
// a team ask whose missing people are unknown (anyone may answer) says
// how many more answers it needs and mentions nobody.
func reminderText(r asks.Record, missing []string) string {
	text := "Reminder: this question is still waiting for an answer."
	who := responderMentions(r)
	if asks.Many(r) {
		who = nil
		for _, id := range missing {
			if !slackid.IsUser(id) {
				continue
			}
			if len(who) == maxReminded {
				who = append(who, fmt.Sprintf("(and %d others)", len(missing)-maxReminded))
				break
			}
			who = append(who, "<@"+id+">")
		}
		n := asks.Needed(r)
		switch {
		case len(missing) > 0:
			text = "Reminder: this question is still waiting for your answer."
			if n < len(missing) {
				text += fmt.Sprintf(" %d more needed.", n)
			}
		case n == 1:
			text = "Reminder: this question needs 1 more answer."
		default:
			text = fmt.Sprintf("Reminder: this question needs %d more answers.", n)
		}
	}
	if len(who) > 0 {
		text = strings.Join(who, " ") + " " + text
	}
	return text
}

func whoMayAnswer(r asks.Record) string {
	return "Only " + strings.Join(responderMentions(r), ", ") + " may answer."
}

// responderMentions returns who may answer r as Slack mentions: its
// responders (user groups as <!subteam^…>), or a DM's recipient, and the
// people added since (escalation, hand-off); ids that do not look like
// Slack ids are left out.
func responderMentions(r asks.Record) []string {
	ids := asks.MayAnswerIDs(r)
	if len(r.Awaited) > 0 {
		ids = r.Responders
	}
	return strings.Fields(mentionsOf(ids))
}
