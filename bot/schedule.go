package bot

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// scheduler fires deadlines and reminders at their stored times on the
// bot's clock. Everything it needs is in the records, so a restart
// rebuilds it from Store.Pending. Timers of asks that ended are not
// searched out of the heap: they fire as no-ops (expire and remind check
// the record), which keeps every end O(1) however many asks wait.
type scheduler struct {
	b    *Bot
	mu   sync.Mutex
	h    timerHeap
	kick chan struct{}
}

type timerKind int

const (
	timerExpire timerKind = iota
	timerRemind
)

type timer struct {
	at   time.Time
	id   string
	kind timerKind
}

type timerHeap []timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

func newScheduler(b *Bot) *scheduler {
	return &scheduler{b: b, kick: make(chan struct{}, 1)}
}

// add schedules the record's deadline and reminder, if any.
func (s *scheduler) add(r store.Record) {
	s.mu.Lock()
	if r.ExpiresAt != nil {
		heap.Push(&s.h, timer{at: *r.ExpiresAt, id: r.ID, kind: timerExpire})
	}
	if !r.RemindAt.IsZero() && !r.Reminded {
		heap.Push(&s.h, timer{at: r.RemindAt, id: r.ID, kind: timerRemind})
	}
	s.mu.Unlock()
	s.wake()
}

func (s *scheduler) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *scheduler) run(ctx context.Context) {
	for {
		due, wait := s.next()
		for _, t := range due {
			s.fire(ctx, t)
		}
		if len(due) > 0 {
			continue
		}
		var after <-chan time.Time
		if wait >= 0 {
			after = s.b.clock.After(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-after:
		}
	}
}

// next pops the timers that are due and says how long until the next one
// (-1: none).
func (s *scheduler) next() ([]timer, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.b.clock.Now()
	var due []timer
	for len(s.h) > 0 && !s.h[0].at.After(now) {
		due = append(due, heap.Pop(&s.h).(timer))
	}
	if len(s.h) == 0 {
		return due, -1
	}
	return due, s.h[0].at.Sub(now)
}

func (s *scheduler) fire(ctx context.Context, t timer) {
	switch t.kind {
	case timerExpire:
		s.b.expire(ctx, t.id)
	case timerRemind:
		s.b.handlers.Go(func() { s.b.remind(ctx, t.id) })
	}
}

// expire ends a pending ask whose deadline has passed.
func (b *Bot) expire(ctx context.Context, id string) {
	_, err := b.end(ctx, id, ending{
		status: interaction.StatusExpired,
		err:    interaction.Errorf(interaction.AskTimeout, "nobody answered before the deadline"),
		mutate: nil,
	})
	if err != nil && !errors.Is(err, errEnded) {
		b.log.Error().Err(err).Str("ask", id).Msg("expire failed")
	}
}

// remind posts the ask's one reminder in its thread, mentioning who may
// answer. The reminder is marked sent before posting: a crash in between
// loses a reminder rather than sending two.
func (b *Bot) remind(ctx context.Context, id string) {
	rec, err := b.store.Update(ctx, id, func(r *store.Record) error {
		if r.Status.Ended() || r.Reminded || r.TS == "" {
			return errEnded
		}
		r.Reminded = true
		return nil
	})
	if err != nil {
		return
	}
	thread := rec.TS
	if rec.ThreadTS != "" {
		thread = rec.ThreadTS
	}
	text := "Reminder: this question is still waiting for an answer."
	if who := responderMentions(rec); len(who) > 0 {
		text = strings.Join(who, " ") + " " + text
	}
	err = b.callPost(ctx, rec.Channel, func(ctx context.Context) error {
		_, _, err := b.api.PostMessageContext(ctx, rec.Channel, slack.MsgOptionText(text, false), slack.MsgOptionTS(thread))
		return err
	})
	if err != nil {
		b.log.Warn().Err(err).Str("ask", id).Msg("reminder failed")
	}
}

// recover picks up what an earlier process left: asks accepted but never
// posted are posted, deadlines that passed while down end their asks,
// the rest are scheduled, and ended asks whose final update never reached
// Slack are updated.
func (b *Bot) recover(ctx context.Context) {
	start := b.now()
	pending, err := b.store.Pending(ctx)
	if err != nil {
		b.log.Error().Err(err).Msg("recover: list pending asks")
		return
	}
	for _, rec := range pending {
		b.recoverPending(ctx, rec, start)
	}
	for round := 0; round < 100; round++ {
		unsynced, err := b.store.List(ctx, store.Filter{Unsynced: true, Limit: 1000})
		if err != nil {
			b.log.Error().Err(err).Msg("recover: list unsynced asks")
			return
		}
		for _, rec := range unsynced {
			b.syncer.mark(rec.ID)
		}
		if len(unsynced) < 1000 || ctx.Err() != nil {
			break
		}
		b.syncer.waitIdle(ctx)
	}
	b.log.Info().Int("pending", len(pending)).Msg("recovered asks from the store")
}

// adoptOrPost finishes an ask whose post may or may not have reached
// Slack before the process died: a message of ours carrying the ask's id
// is adopted (its ts stored, the message re-rendered), else it is posted.
func (b *Bot) adoptOrPost(ctx context.Context, rec store.Record) (store.Record, error) {
	ts, err := b.findPosted(ctx, rec)
	if err != nil {
		b.log.Warn().Err(err).Str("ask", rec.ID).Msg("recover: could not look for an earlier post; posting")
	}
	if ts == "" {
		return b.post(ctx, rec)
	}
	return b.store.Update(ctx, rec.ID, func(r *store.Record) error {
		r.TS, r.Rev, r.Synced = ts, r.Rev+1, false
		return nil
	})
}

// findPosted looks in the conversation (or thread) for a message posted
// since the ask was created whose blocks carry the ask's id.
func (b *Bot) findPosted(ctx context.Context, rec store.Record) (string, error) {
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

func (b *Bot) recoverPending(ctx context.Context, rec store.Record, start time.Time) {
	if rec.TS == "" {
		if !rec.CreatedAt.Before(start) {
			return // being posted by this process right now
		}
		var err error
		if rec.User != "" && !convIDPattern.MatchString(rec.Channel) {
			rec, err = b.openDM(ctx, rec)
		}
		if err == nil {
			rec, err = b.adoptOrPost(ctx, rec)
		}
		if err != nil {
			b.log.Error().Err(err).Str("ask", rec.ID).Msg("recover: post")
			return
		}
	}
	if rec.ExpiresAt != nil && !rec.ExpiresAt.After(b.now()) {
		b.expire(ctx, rec.ID)
		return
	}
	if !rec.Synced {
		b.syncer.mark(rec.ID)
	}
	b.sched.add(rec)
}
