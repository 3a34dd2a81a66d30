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
	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/slackid"
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
	viewers map[viewer]time.Time // when they last opened their Home
	dirty   map[viewer]bool
	order   []viewer // dirty viewers, first marked first
	// seq counts the marks; marked holds, per dirty viewer, the seq of
	// their latest mark. A round draws from the store as it was at its
	// start (seq then): a viewer marked since is drawn again, by a later
	// round, rather than cleared with the older view.
	seq    int64
	marked map[viewer]int64
	last   map[viewer][32]byte // hash of the view last published
	// paces are the publish tokens of each workspace: Slack limits
	// views.publish per workspace, so each has its own bucket, and a
	// workspace out of tokens leaves its turn to the others.
	paces map[string]*pace
	kick  chan struct{}
	// published counts views.publish calls made (for tests and figures).
	published int
}

// viewer is a person whose Home is kept: ws is the installation key of
// their workspace ("" in single-workspace mode).
type viewer struct{ ws, user string }

// pace is one workspace's views.publish token bucket.
type pace struct {
	tokens float64
	at     time.Time // of the last refill
}

func newHomeBoard(b *Bot) *homeBoard {
	return &homeBoard{b: b, viewers: map[viewer]time.Time{}, dirty: map[viewer]bool{}, marked: map[viewer]int64{},
		last: map[viewer][32]byte{}, paces: map[string]*pace{}, kick: make(chan struct{}, 1)}
}

// opened notes that v opened their Home: it is published (if it differs
// from what they last got) and kept current for homeKeep.
func (h *homeBoard) opened(v viewer) {
	h.mu.Lock()
	h.viewers[v] = h.b.cfg.Clock.Now()
	h.markLocked(v)
	h.mu.Unlock()
	h.poke()
}

// changed notes that an ask changed: every current viewer's Home is drawn
// again at their next turn (and published only if it differs).
func (h *homeBoard) changed() {
	h.mu.Lock()
	now := h.b.cfg.Clock.Now()
	for v, at := range h.viewers {
		if now.Sub(at) > homeKeep {
			delete(h.viewers, v)
			delete(h.last, v)
			continue
		}
		h.markLocked(v)
	}
	h.mu.Unlock()
	h.poke()
}

// forget drops the viewers of workspace ws (uninstalled): nothing is
// published there any more.
func (h *homeBoard) forget(ws string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for v := range h.viewers {
		if v.ws == ws {
			delete(h.viewers, v)
			delete(h.last, v)
			h.doneLocked(v, h.seq)
		}
	}
	delete(h.paces, ws)
}

func (h *homeBoard) markLocked(v viewer) {
	h.seq++
	h.marked[v] = h.seq
	if !h.dirty[v] {
		h.dirty[v] = true
		h.order = append(h.order, v)
	}
}

func (h *homeBoard) poke() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// takeLocked spends one of workspace ws's publish tokens; when none is
// left it returns the wait for the next one.
func (h *homeBoard) takeLocked(ws string, now time.Time) (bool, time.Duration) {
	p := h.paces[ws]
	if p == nil {
		p = &pace{tokens: homeBurst, at: now}
		h.paces[ws] = p
	}
	if el := now.Sub(p.at).Seconds(); el > 0 {
		p.tokens = min(homeBurst, p.tokens+el*homeRate)
	}
	p.at = now
	if p.tokens >= 1 {
		p.tokens--
		return true, 0
	}
	return false, time.Duration((1 - p.tokens) / homeRate * float64(time.Second))
}

// run publishes the Homes that are due until ctx ends. Its pacing runs
// on the wall clock, as Slack's limit does (Config.Clock, which tests
// stop, only ages who is kept current).
func (h *homeBoard) run(ctx context.Context) {
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

// nextLocked is the first due viewer whose workspace is not held this
// round.
func (h *homeBoard) nextLocked(held map[string]bool) (viewer, bool) {
	for _, v := range h.order {
		if !held[v.ws] {
			return v, true
		}
	}
	return viewer{}, false
}

// round publishes as many due Homes as each workspace's tokens allow,
// drawing them from one read of the store, and returns how long to wait
// before the next. A workspace out of tokens (or failing) is held for the
// rest of the round while the others' Homes go on.
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
	held := map[string]bool{}
	next := homeRound // the soonest a held workspace may go on
	hold := func(ws string, wait time.Duration) {
		held[ws] = true
		next = min(next, wait)
	}
	for ctx.Err() == nil {
		h.mu.Lock()
		v, ok := h.nextLocked(held)
		if !ok {
			h.mu.Unlock()
			return next
		}
		if h.marked[v] > snap {
			h.mu.Unlock()
			return 0 // changed since this round read the store: read it again
		}
		h.mu.Unlock()
		view := h.b.homeView(ctx, v, pending, recent)
		raw, _ := json.Marshal(view)
		sum := sha256.Sum256(raw)
		h.mu.Lock()
		if h.last[v] == sum {
			h.doneLocked(v, snap) // nothing new for them: no call
			h.mu.Unlock()
			continue
		}
		ok, wait := h.takeLocked(v.ws, time.Now())
		h.mu.Unlock()
		if !ok {
			hold(v.ws, wait)
			continue
		}
		c, err := h.b.keyConn(ctx, v.ws)
		if errors.Is(err, installs.ErrNotInstalled) {
			h.forget(v.ws) // uninstalled meanwhile
			continue
		}
		if err == nil {
			err = h.b.call(ctx, "views.publish", func(ctx context.Context) error {
				_, err := c.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: v.user, View: view})
				return err
			})
		}
		h.mu.Lock()
		h.published++
		if err != nil {
			// Left due, at the back: one person's failure does not stop
			// the others' Homes.
			h.doneLocked(v, h.seq)
			h.markLocked(v)
			h.mu.Unlock()
			if ctx.Err() == nil {
				h.b.log.Warn().Err(err).Str("user", v.user).Str("workspace", v.ws).Msg("home: views.publish failed; retrying")
			}
			hold(v.ws, time.Second)
			continue
		}
		h.last[v] = sum
		h.doneLocked(v, snap)
		h.mu.Unlock()
	}
	return homeRound
}

// doneLocked clears v's mark when it is no later than snap (the view
// drawn saw it); a later mark keeps them due.
func (h *homeBoard) doneLocked(v viewer, snap int64) {
	if h.marked[v] > snap {
		return
	}
	delete(h.marked, v)
	delete(h.dirty, v)
	for i, u := range h.order {
		if u == v {
			h.order = append(h.order[:i], h.order[i+1:]...)
			break
		}
	}
}

// homeView draws v's Home from the records of their workspace.
func (b *Bot) homeView(ctx context.Context, v viewer, pending, recent []asks.Record) slack.HomeTabViewRequest {
	inGroup := func(id string) bool {
		if !slackid.IsUserGroup(id) {
			return false
		}
		ok, err := b.InGroup(ctx, v.ws, id, v.user)
		return err == nil && ok
	}
	if b.routes.many() {
		pending, recent = ofWorkspace(pending, v.ws), ofWorkspace(recent, v.ws)
	}
	in := asks.InboxOf(v.user, pending, recent, inGroup, blocks.MaxHomeWaiting+1, blocks.MaxHomeAnswered)
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

// ofWorkspace is the records of recs stamped with workspace ws.
func ofWorkspace(recs []asks.Record, ws string) []asks.Record {
	var out []asks.Record
	for _, r := range recs {
		if r.TeamID == ws {
			out = append(out, r)
		}
	}
	return out
}

// Event implements EventHandler: app_home_opened on the Home tab starts
// keeping the person's Home current.
func (b *Bot) Event(ctx context.Context, ev EventCallback) {
	if ev.Type == "app_home_opened" && ev.Tab == "home" && slackid.IsUser(ev.User) && b.home != nil {
		ws := ""
		if b.routes.many() {
			ws = ev.key()
		}
		b.home.opened(viewer{ws: ws, user: ev.User})
	}
	b.uninstallEvent(ctx, ev)
	b.teamAccessEvent(ctx, ev)
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
	if err := b.openView(ctx, cb, blocks.AnswerModal(viewFor(rec, cb.User.ID), meta)); err != nil {
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
			b.handlers.Go(func() { b.ephemeralDM(ctx, rec, act.By.ID, submittedNotice(rec, act.By.ID)) })
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
func (b *Bot) ephemeralDM(ctx context.Context, rec asks.Record, user, text string) {
	c, err := b.keyConn(ctx, rec.TeamID)
	var ch string
	if err == nil {
		ch, err = b.openDM(ctx, c, user)
	}
	if err == nil {
		err = b.callPost(ctx, c, ch, func(ctx context.Context) error {
			_, _, err := c.api.PostMessageContext(ctx, ch, slack.MsgOptionText(text, false))
			return err
		})
	}
	if err != nil {
		b.log.Warn().Err(err).Str("user", user).Msg("could not confirm an answer from the Home tab")
	}
}
