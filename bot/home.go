package bot

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
)

// The App Home inbox: published on app_home_opened and kept current, for
// people whose Home was opened in the last homeKeep, by one publisher per
// process that coalesces changes (a person's Home is drawn from the store
// as it stands when their turn comes, however many asks changed since)
// and paces views.publish below Slack's Tier 4 limit for the workspace.

const (
	// homeKeep is how long after a person last opened their Home it is
	// kept current.
	homeKeep = 24 * time.Hour
	// homeRate and homeBurst pace views.publish: Tier 4 allows 100 a
	// minute per workspace; this process stays at 90 with bursts of 10.
	homeRate  = 90.0 / 60 // per second
	homeBurst = 10
	// homeRound is the longest pause between the publisher's looks at
	// who is due when nothing kicks it.
	homeRound = 5 * time.Second
)

type homeBoard struct {
	b       *Bot
	mu      sync.Mutex
	viewers map[string]time.Time // user → when they last opened their Home
	dirty   map[string]bool
	order   []string // dirty users, first marked first
	// seq counts the marks; marked holds, per dirty user, the seq of
	// their latest mark. A round draws from the store as it was at its
	// start (seq then): a user marked since is drawn again, by a later
	// round, rather than cleared with the older view.
	seq    int64
	marked map[string]int64
	last   map[string][32]byte // user → hash of the view last published
	tokens float64
	at     time.Time // of the last refill
	kick   chan struct{}
	// published counts views.publish calls made (for tests and figures).
	published int
}

func newHomeBoard(b *Bot) *homeBoard {
	return &homeBoard{b: b, viewers: map[string]time.Time{}, dirty: map[string]bool{}, marked: map[string]int64{}, last: map[string][32]byte{},
		tokens: homeBurst, kick: make(chan struct{}, 1)}
}

// opened notes that user opened their Home: it is published (if it
// differs from what they last got) and kept current for homeKeep.
func (h *homeBoard) opened(user string) {
	h.mu.Lock()
	h.viewers[user] = h.b.cfg.Clock.Now()
	h.markLocked(user)
	h.mu.Unlock()
	h.poke()
}

// changed notes that an ask changed: every current viewer's Home is drawn
// again at their next turn (and published only if it differs).
func (h *homeBoard) changed() {
	h.mu.Lock()
	now := h.b.cfg.Clock.Now()
	for u, at := range h.viewers {
		if now.Sub(at) > homeKeep {
			delete(h.viewers, u)
			delete(h.last, u)
			continue
		}
		h.markLocked(u)
	}
	h.mu.Unlock()
	h.poke()
}

func (h *homeBoard) markLocked(user string) {
	h.seq++
	h.marked[user] = h.seq
	if !h.dirty[user] {
		h.dirty[user] = true
		h.order = append(h.order, user)
	}
}

func (h *homeBoard) poke() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// take spends a publish token; when none is left it returns the wait for
// the next one.
func (h *homeBoard) takeLocked(now time.Time) (bool, time.Duration) {
	if el := now.Sub(h.at).Seconds(); el > 0 {
		h.tokens = min(homeBurst, h.tokens+el*homeRate)
	}
	h.at = now
	if h.tokens >= 1 {
		h.tokens--
		return true, 0
	}
	return false, time.Duration((1 - h.tokens) / homeRate * float64(time.Second))
}

// run publishes the Homes that are due until ctx ends. Its pacing runs
// on the wall clock, as Slack's limit does (Config.Clock, which tests
// stop, only ages who is kept current).
func (h *homeBoard) run(ctx context.Context) {
	h.at = time.Now()
	for ctx.Err() == nil {
		wait := h.round(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-h.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// round publishes as many due Homes as tokens allow, drawing them from
// one read of the store, and returns how long to wait before the next.
func (h *homeBoard) round(ctx context.Context) time.Duration {
	h.mu.Lock()
	n, snap := len(h.order), h.seq
	h.mu.Unlock()
	if n == 0 {
		return homeRound
	}
	pending, recent, err := h.b.svc.InboxRecords(ctx)
	if err != nil {
		h.b.log.Warn().Err(err).Msg("home: could not read the asks; retrying")
		return time.Second
	}
	for ctx.Err() == nil {
		h.mu.Lock()
		if len(h.order) == 0 {
			h.mu.Unlock()
			return homeRound
		}
		user := h.order[0]
		if h.marked[user] > snap {
			h.mu.Unlock()
			return 0 // changed since this round read the store: read it again
		}
		h.mu.Unlock()
		view := h.b.homeView(ctx, user, pending, recent)
		raw, _ := json.Marshal(view)
		sum := sha256.Sum256(raw)
		h.mu.Lock()
		if h.last[user] == sum {
			h.doneLocked(user, snap) // nothing new for them: no call
			h.mu.Unlock()
			continue
		}
		ok, wait := h.takeLocked(time.Now())
		h.mu.Unlock()
		if !ok {
			return wait
		}
		err := h.b.call(ctx, "views.publish", func(ctx context.Context) error {
			_, err := h.b.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view})
			return err
		})
		h.mu.Lock()
		h.published++
		if err != nil {
			// Left due, at the back: one person's failure does not stop
			// the others' Homes.
			h.doneLocked(user, h.seq)
			h.markLocked(user)
			h.mu.Unlock()
			if ctx.Err() == nil {
				h.b.log.Warn().Err(err).Str("user", user).Msg("home: views.publish failed; retrying")
			}
			return time.Second
		}
		h.last[user] = sum
		h.doneLocked(user, snap)
		h.mu.Unlock()
	}
	return homeRound
}

// doneLocked clears user's mark when it is no later than snap (the view
// drawn saw it); a later mark keeps them due.
func (h *homeBoard) doneLocked(user string, snap int64) {
	if h.marked[user] > snap {
		return
	}
	delete(h.marked, user)
	delete(h.dirty, user)
	for i, u := range h.order {
		if u == user {
			h.order = append(h.order[:i], h.order[i+1:]...)
			break
		}
	}
}

// homeView draws user's Home from the records.
func (b *Bot) homeView(ctx context.Context, user string, pending, recent []asks.Record) slack.HomeTabViewRequest {
	inGroup := func(group string) bool {
		ok, err := b.InGroup(ctx, group, user)
		return err == nil && ok
	}
	in := asks.InboxOf(user, pending, recent, inGroup, blocks.MaxHomeWaiting+1, blocks.MaxHomeAnswered)
	waiting := make([]blocks.View, len(in.Waiting))
	for i, r := range in.Waiting {
		waiting[i] = view(r)
	}
	answered := make([]blocks.HomeAnswered, len(in.Answered))
	for i, a := range in.Answered {
		answered[i] = blocks.HomeAnswered{View: view(a.Record), Answer: a.Answer, At: a.At}
	}
	return blocks.Home(waiting, answered)
}

// Event implements EventHandler: app_home_opened on the Home tab starts
// keeping the person's Home current.
func (b *Bot) Event(ctx context.Context, ev EventCallback) {
	if ev.Type == "app_home_opened" && ev.Tab == "home" && interaction.IsUserID(ev.User) && b.home != nil {
		b.home.opened(ev.User)
	}
	b.uninstallEvent(ctx, ev)
}

// openAnswerForm answers a Home tab's Answer click with the whole ask as a
// modal (views.open, right away: the trigger dies about 3 s after the
// click), once the lifecycle judged the person may answer it.
func (b *Bot) openAnswerForm(ctx context.Context, cb *callback, ref blocks.Ref) {
	act := actOf(cb, ref.AskID, ref.Rev, true)
	rec, err := b.svc.Check(ctx, act)
	if err != nil {
		if errors.Is(err, asks.ErrEnded) || errors.Is(err, asks.ErrRefused) {
			b.home.changed() // their Home shows an ask that is not theirs any more
		}
		b.log.Info().Err(err).Str("ask", trim(ref.AskID)).Msg("answer form refused")
		return
	}
	meta := b.signMeta(viewMeta{askID: rec.ID, q: -1, user: cb.User.ID})
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := b.api.OpenViewContext(octx, cb.TriggerID, blocks.AnswerModal(viewFor(rec, cb.User.ID), meta)); err != nil {
		b.log.Warn().Err(slackErr(err)).Str("ask", rec.ID).Msg("views.open of the answer form failed")
	}
}

// answerJobs is the work of an Answer modal's submission: checked without
// I/O (metadata, the fields), then the answer in the ask's queue.
func (b *Bot) answerJobs(ctx context.Context, env *Envelope) []job {
	cb := env.Payload
	meta, ok := b.parseMeta(cb.View.PrivateMetadata)
	if !ok || meta.user != cb.User.ID {
		b.log.Warn().Str("user", trim(cb.User.ID)).Msg("answer submission with forged or foreign metadata")
		env.Ack(slack.NewErrorsViewSubmissionResponse(map[string]string{"q0.pick": "This form is not valid any more. Close it and open it again from your Home."}))
		return nil
	}
	return []job{{queue: meta.askID, fn: func() { b.onAnswerForm(ctx, env, meta) }}}
}

// onAnswerForm stores the form's answer, then acks: nil (the modal
// closes), the problems on the modal's fields, or unacked when it could
// not be stored.
func (b *Bot) onAnswerForm(ctx context.Context, env *Envelope, meta viewMeta) {
	cb := env.Payload
	act := actOf(cb, meta.askID, -1, true)
	rec, err := b.svc.Check(ctx, act)
	if err == nil {
		ps, errs := blocks.AnswerFromState(rec.Questions, cb.View.State)
		if len(errs) > 0 {
			env.Ack(slack.NewErrorsViewSubmissionResponse(errs))
			return
		}
		rec, err = b.svc.SubmitForm(ctx, act, ps)
	}
	first := "q0.pick"
	if len(rec.Questions) > 0 {
		first = blocks.AnswerBlockID(rec.Questions[0], 0)
	}
	fieldErr := func(msg string) { env.Ack(slack.NewErrorsViewSubmissionResponse(map[string]string{first: msg})) }
	var re *asks.RequiredError
	var ne *asks.NoteError
	switch {
	case err == nil:
		env.Ack(nil)
		if asks.Many(rec) {
			b.handlers.Go(func() { b.ephemeralDM(ctx, act.By.ID, submittedNotice(rec, act.By.ID)) })
		}
	case errors.As(err, &re):
		errs := map[string]string{}
		for _, q := range re.Questions {
			if q >= 0 && q < len(rec.Questions) {
				errs[blocks.AnswerBlockID(rec.Questions[q], q)] = "This question is required."
			}
		}
		env.Ack(slack.NewErrorsViewSubmissionResponse(errs))
	case errors.As(err, &ne):
		env.Ack(slack.NewErrorsViewSubmissionResponse(map[string]string{blocks.AnswerWhyBlockID(ne.Question): "Say why you chose this."}))
	case errors.Is(err, asks.ErrNothingChosen):
		fieldErr("Nothing chosen yet: answer at least one question.")
	case errors.Is(err, asks.ErrEnded):
		fieldErr(alreadyEndedNotice(rec))
	case errors.Is(err, asks.ErrRefused):
		fieldErr("Sorry, you can't answer this question. " + whoMayAnswer(rec))
	case refusal(err):
		fieldErr("This question is no longer available.")
	default:
		env.Drop()
		b.log.Error().Err(err).Str("ask", trim(meta.askID)).Msg("answer form failed")
	}
}

// ephemeralDM tells user something in their DM with the app (an answer
// from the Home tab has no conversation of its own). Failures are logged.
func (b *Bot) ephemeralDM(ctx context.Context, user, text string) {
	ch, err := b.OpenDM(ctx, user)
	if err == nil {
		err = b.callPost(ctx, ch, func(ctx context.Context) error {
			_, _, err := b.api.PostMessageContext(ctx, ch, slack.MsgOptionText(text, false))
			return err
		})
	}
	if err != nil {
		b.log.Warn().Err(err).Str("user", user).Msg("could not confirm an answer from the Home tab")
	}
}
