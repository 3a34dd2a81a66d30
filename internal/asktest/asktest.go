// Package asktest is the shared test double of interaction.AskService for
// the front doors' tests (httpapi, mcp, dsh, client, interaction's
// AskAndWait): an in-memory service that behaves as asks.Service does at
// the seam, with hooks to make calls fail or block and counters to see
// what was asked of it. Asks end only when a test ends them (End) or on
// Withdraw.
package asktest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
	"github.com/slackask/slackask/store"
)

// The operations a Hook sees and Calls counts.
const (
	OpCreate   = "create"
	OpGet      = "get"
	OpWait     = "wait"
	OpWithdraw = "withdraw"
	OpList     = "list"
)

// Call is one call of the service as a Hook sees it.
type Call struct {
	Op string
	ID string                // the ask (empty for create and list)
	In *interaction.AskInput // create's input
}

// Hook runs at the start of a call (outside the service's lock); an error
// it returns is the call's, and nothing else happens.
type Hook func(ctx context.Context, c Call) error

// Config tunes a Fake; the zero value is ready.
type Config struct {
	// IDFormat makes the ids of the asks from their number, from 1
	// (default "ask-%d").
	IDFormat string
	// Now stamps CreatedAt, EndedAt and events (default time.Now, UTC).
	Now func() time.Time
	// DefaultChannel is where asks that name no channel go.
	DefaultChannel string
}

// CreateCall is one Create as the Fake saw it.
type CreateCall struct {
	At      time.Time
	In      interaction.AskInput
	AskID   string // the ask returned, if any
	Created bool   // by this call (false: an idempotency key's ask)
	Err     error
}

// WithdrawCall is one Withdraw (or WithdrawWithNote).
type WithdrawCall struct {
	At    time.Time
	ID    string
	Note  string
	Ended bool // the call ended the ask (it was pending)
}

// Fake is the test double. It implements interaction.AskService,
// interaction.NoteWithdrawer, httpapi's Notifier, IdempotentCreator and
// EventLog. Its methods are safe for concurrent use.
type Fake struct {
	cfg Config

	mu       sync.Mutex
	asks     map[string]*entry
	order    []string // ids, oldest first
	byKey    map[string]string
	creates  []CreateCall
	calls    map[string]int
	withdraw []WithdrawCall
	filter   interaction.ListFilter
	hook     Hook
	nextFn   int
	events   []store.Event
	createCx context.Context
	waiters  atomic.Int64 // Waits blocked now

	// Created receives the id of each new ask, Waiting the id of each
	// Wait that blocks, Notified the id of each Notify registered (a
	// parked long-poll), Withdrawn the id of each ask a Withdraw ended;
	// all buffered, a full channel drops.
	Created, Waiting, Notified, Withdrawn chan string
}

type entry struct {
	ask    interaction.Ask
	in     interaction.AskInput
	done   chan struct{}
	notify map[int]func(interaction.Ask) // Notify's callbacks
}

// New returns an empty Fake.
func New(cfg Config) *Fake {
	if cfg.IDFormat == "" {
		cfg.IDFormat = "ask-%d"
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	return &Fake{cfg: cfg, asks: map[string]*entry{}, byKey: map[string]string{}, calls: map[string]int{},
		Created: make(chan string, 1000), Waiting: make(chan string, 1000), Notified: make(chan string, 1000), Withdrawn: make(chan string, 1000)}
}

// SetHook sets the hook every call runs first (nil: none).
func (f *Fake) SetHook(h Hook) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// Fail makes every call fail with err (nil: succeed again).
func (f *Fake) Fail(err error) {
	if err == nil {
		f.SetHook(nil)
		return
	}
	f.SetHook(func(context.Context, Call) error { return err })
}

// FailNext makes the next len(errs) calls of op fail with errs, in order.
func (f *Fake) FailNext(op string, errs ...error) {
	var mu sync.Mutex
	f.SetHook(func(_ context.Context, c Call) error {
		mu.Lock()
		defer mu.Unlock()
		if c.Op != op || len(errs) == 0 {
			return nil
		}
		err := errs[0]
		errs = errs[1:]
		return err
	})
}

// begin counts a call (and records a Create's input) and runs the hook.
func (f *Fake) begin(ctx context.Context, c Call) error {
	f.mu.Lock()
	f.calls[c.Op]++
	h := f.hook
	f.mu.Unlock()
	if h != nil {
		return h(ctx, c)
	}
	return nil
}

// CheckRequest is what Create checks of an ask: its questions, as
// asks.Service on the Slack surface does (interaction.Validate, then
// Slack's limits, slackid.CheckRequest).
func CheckRequest(r interaction.Request) error {
	if err := interaction.Validate(r); err != nil {
		return err
	}
	return slackid.CheckRequest(r)
}

// CheckAsk implements interaction.Checker as asks.Service on the Slack
// surface does: interaction.ValidateInput, then Slack's id syntax
// (slackid.Check). Create itself checks only the questions, so that
// the doors' tests may name anyone.
func (f *Fake) CheckAsk(in interaction.AskInput) error { return slackid.Check(in) }

// Create implements interaction.AskService.
func (f *Fake) Create(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	a, _, err := f.CreateIdempotent(ctx, in)
	return a, err
}

// CreateIdempotent creates as Create does and reports whether this call
// created the ask. A known idempotency key returns its ask when the
// request is the same, IDEMPOTENCY_MISMATCH when it is not.
func (f *Fake) CreateIdempotent(ctx context.Context, in interaction.AskInput) (a interaction.Ask, created bool, err error) {
	// The call is recorded before Created says so: a test that reads
	// Creates after receiving from Created finds it.
	defer func() {
		f.mu.Lock()
		f.creates = append(f.creates, CreateCall{At: time.Now(), In: in, AskID: a.ID, Created: created, Err: err})
		f.mu.Unlock()
		if created {
			select {
			case f.Created <- a.ID:
			default:
			}
		}
	}()
	if err := f.begin(ctx, Call{Op: OpCreate, In: &in}); err != nil {
		return interaction.Ask{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.createCx = ctx
	if err := CheckRequest(in.Request); err != nil {
		return interaction.Ask{}, false, err
	}
	if err := interaction.CallerFrom(ctx).Admit(in.Channel, in.User, in.Responders); err != nil {
		return interaction.Ask{}, false, err // FORBIDDEN: the API key's scope does not allow it
	}
	if id, ok := f.byKey[in.IdempotencyKey]; ok && in.IdempotencyKey != "" {
		e := f.asks[id]
		if e.in.Questions != nil && !slices.EqualFunc(e.in.Questions, in.Questions, func(a, b interaction.Question) bool { return a.ID == b.ID && a.Question == b.Question }) {
			return interaction.Ask{}, false, interaction.Errorf(interaction.IdempotencyMismatch, "idempotencyKey %q was used for a different request", in.IdempotencyKey)
		}
		return clone(e.ask), false, nil
	}
	n := len(f.order) + 1
	a = interaction.Ask{
		ID: fmt.Sprintf(f.cfg.IDFormat, n), Status: interaction.StatusPending,
		Questions: in.Questions, Agent: in.Agent, Channel: cmp.Or(in.Channel, f.cfg.DefaultChannel), ThreadTS: in.ThreadTS,
		TS: fmt.Sprintf("1700000000.%06d", n), CreatedAt: f.cfg.Now(), OnTimeout: in.OnTimeout, CallbackURL: in.CallbackURL,
	}
	if in.User != "" && in.Channel == "" {
		a.Channel = "D-" + in.User // the DM the service opens
	}
	f.addLocked(a, in, in.IdempotencyKey)
	f.emitLocked(a.ID, store.EventCreated, nil, nil)
	return clone(a), true, nil
}

// Seed stores a as if created earlier (before a restart), with its
// idempotency key ("" for none).
func (f *Fake) Seed(a interaction.Ask, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addLocked(clone(a), interaction.AskInput{}, key)
	if a.Status.Ended() {
		close(f.asks[a.ID].done)
	}
}

func (f *Fake) addLocked(a interaction.Ask, in interaction.AskInput, key string) {
	f.asks[a.ID] = &entry{ask: a, in: in, done: make(chan struct{})}
	f.order = append(f.order, a.ID)
	if key != "" {
		f.byKey[key] = a.ID
	}
}

// clone is a copy of a that shares nothing with it, as the service hands
// out.
func clone(a interaction.Ask) interaction.Ask {
	c := a
	c.Questions = slices.Clone(a.Questions)
	if a.Agent != nil {
		ag := *a.Agent
		c.Agent = &ag
	}
	if a.Answer != nil {
		ans := interaction.Answer{Answers: slices.Clone(a.Answer.Answers)}
		c.Answer = &ans
	}
	if a.Error != nil {
		e := *a.Error
		c.Error = &e
	}
	return c
}

func (f *Fake) lookupLocked(id string) (*entry, error) {
	e, ok := f.asks[id]
	if !ok {
		return nil, interaction.Errorf(interaction.NotFound, "no ask %q", id)
	}
	return e, nil
}

// Get implements interaction.AskService. It fails once ctx is done, as
// the service's read of its store does.
func (f *Fake) Get(ctx context.Context, id string) (interaction.Ask, error) {
	if err := f.begin(ctx, Call{Op: OpGet, ID: id}); err != nil {
		return interaction.Ask{}, err
	}
	if err := ctx.Err(); err != nil {
		return interaction.Ask{}, fmt.Errorf("get %q: %w", id, err)
	}
	return f.Ask(id)
}

// Change changes pending ask id as fn says without ending it (progress
// of a team ask, say); false when the ask is unknown or has ended.
func (f *Fake) Change(id string, fn func(a *interaction.Ask)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.asks[id]
	if !ok || e.ask.Status.Ended() {
		return false
	}
	fn(&e.ask)
	return true
}

// Ask returns ask id as it stands, without a call.
func (f *Fake) Ask(id string) (interaction.Ask, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, err := f.lookupLocked(id)
	if err != nil {
		return interaction.Ask{}, err
	}
	return clone(e.ask), nil
}

// ByKey returns the ask of an idempotency key.
func (f *Fake) ByKey(key string) (interaction.Ask, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.byKey[key]
	if !ok {
		return interaction.Ask{}, false
	}
	return clone(f.asks[id].ask), true
}

// Wait implements interaction.AskService: it returns the ask as it ended,
// or, when ctx ends first, as it stands (read again through Get).
func (f *Fake) Wait(ctx context.Context, id string) (interaction.Ask, error) {
	if err := f.begin(ctx, Call{Op: OpWait, ID: id}); err != nil {
		return interaction.Ask{}, err
	}
	f.mu.Lock()
	e, err := f.lookupLocked(id)
	f.mu.Unlock()
	if err != nil {
		return interaction.Ask{}, err
	}
	select {
	case f.Waiting <- id:
	default:
	}
	f.waiters.Add(1)
	select {
	case <-e.done: // the ask as it ended, handed to its waiters
		f.waiters.Add(-1)
		return f.Ask(id)
	case <-ctx.Done(): // read again, as the service reads its store
		f.waiters.Add(-1)
		return f.Get(context.WithoutCancel(ctx), id)
	}
}

// Waiters returns how many Waits are blocked now (Waiting says which
// started, but drops beyond its buffer).
func (f *Fake) Waiters() int { return int(f.waiters.Load()) }

// Withdraw implements interaction.AskService.
func (f *Fake) Withdraw(ctx context.Context, id string) (interaction.Ask, error) {
	return f.WithdrawWithNote(ctx, id, "")
}

// WithdrawWithNote implements interaction.NoteWithdrawer: a pending ask
// ends ASK_ABORTED (the note in its message); an ended one is returned
// unchanged.
func (f *Fake) WithdrawWithNote(ctx context.Context, id, note string) (interaction.Ask, error) {
	if err := f.begin(ctx, Call{Op: OpWithdraw, ID: id}); err != nil {
		return interaction.Ask{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	call := WithdrawCall{At: time.Now(), ID: id, Note: note}
	defer func() { f.withdraw = append(f.withdraw, call) }()
	e, err := f.lookupLocked(id)
	if err != nil {
		return interaction.Ask{}, err
	}
	if !e.ask.Status.Ended() {
		msg := "the caller withdrew the question"
		if note != "" {
			msg += ": " + note
		}
		e.ask.Error = interaction.Errorf(interaction.AskAborted, "%s", msg)
		f.endLocked(e, interaction.StatusAborted, nil, nil)
		call.Ended = true
		select {
		case f.Withdrawn <- id:
		default:
		}
	}
	return clone(e.ask), nil
}

// List implements interaction.AskService: newest first (by CreatedAt,
// then id), filtered by status and Before, at most Limit (default 100).
func (f *Fake) List(ctx context.Context, lf interaction.ListFilter) ([]interaction.Ask, error) {
	if err := f.begin(ctx, Call{Op: OpList}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filter = lf
	var out []interaction.Ask
	for _, e := range f.asks {
		a := e.ask
		if (lf.Status != "" && a.Status != lf.Status) || (!lf.Before.IsZero() && !a.CreatedAt.Before(lf.Before)) {
			continue
		}
		out = append(out, clone(a))
	}
	slices.SortFunc(out, func(a, b interaction.Ask) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(f.seq(b.ID), f.seq(a.ID)), cmp.Compare(b.ID, a.ID))
	})
	return out[:min(len(out), cmp.Or(max(lf.Limit, 0), 100))], nil
}

// seq is the place of id in the order of creation.
func (f *Fake) seq(id string) int { return slices.Index(f.order, id) }

// End ends ask id with status st as a person or the clock would: answered
// takes ans (a default answer to the first question when nil) and by;
// cancelled and expired get the error the service gives them. An ended
// or unknown ask is left alone (the service ends an ask exactly once);
// End reports whether it ended it.
func (f *Fake) End(id string, st interaction.Status, ans *interaction.Answer, by *interaction.User) bool {
	return f.Finish(id, func(a *interaction.Ask) {
		a.Status = st
		switch st {
		case interaction.StatusAnswered:
			if ans == nil {
				item := interaction.AnswerItem{}
				if len(a.Questions) > 0 {
					q := a.Questions[0]
					item.ID = q.ID
					if len(q.Options) > 0 {
						item.Selected = []string{q.Options[0].Label}
					}
				}
				ans = &interaction.Answer{Answers: []interaction.AnswerItem{item}}
			}
			a.Answer, a.AnsweredBy = ans, by
		case interaction.StatusCancelled:
			a.Error = interaction.Errorf(interaction.AskCancelled, "a person cancelled the question")
		case interaction.StatusExpired:
			a.Error = interaction.Errorf(interaction.AskTimeout, "nobody answered before the deadline")
		case interaction.StatusAborted:
			a.Error = interaction.Errorf(interaction.AskAborted, "the caller withdrew the question")
		}
	})
}

// Finish ends pending ask id as fn says (fn sets Status and what goes
// with it); false when the ask is unknown or has ended.
func (f *Fake) Finish(id string, fn func(a *interaction.Ask)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.asks[id]
	if !ok || e.ask.Status.Ended() {
		return false
	}
	fn(&e.ask)
	f.endLocked(e, e.ask.Status, e.ask.Answer, e.ask.AnsweredBy)
	return true
}

func (f *Fake) endLocked(e *entry, st interaction.Status, ans *interaction.Answer, by *interaction.User) {
	now := f.cfg.Now()
	e.ask.Status, e.ask.EndedAt = st, &now
	if st == interaction.StatusAnswered {
		e.ask.Answer, e.ask.AnsweredBy = ans, by
	}
	f.emitLocked(e.ask.ID, store.EventEnded, by, map[string]any{"status": st, "by": by})
	close(e.done)
	ended := clone(e.ask)
	for _, fn := range e.notify { // with the lock held, as Notify allows
		fn(ended)
	}
	e.notify = nil
}

// Notify is httpapi's Notifier: fn is called once, when ask id ends (never
// for an ask that ended before, or that is unknown); cancel drops it.
func (f *Fake) Notify(id string, fn func(interaction.Ask)) (cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case f.Notified <- id:
	default:
	}
	e, ok := f.asks[id]
	if !ok || e.ask.Status.Ended() {
		return func() {}
	}
	f.nextFn++
	n := f.nextFn
	if e.notify == nil {
		e.notify = map[int]func(interaction.Ask){}
	}
	e.notify[n] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(e.notify, n)
	}
}

// Notifications returns how many Notify callbacks wait.
func (f *Fake) Notifications() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, e := range f.asks {
		n += len(e.notify)
	}
	return n
}

// emitLocked appends an event as a store does: encoded by Record.Emit,
// numbered from 1 across all asks.
func (f *Fake) emitLocked(id, kind string, by *interaction.User, data any) {
	r := store.Record{Ask: interaction.Ask{ID: id}}
	r.Emit(kind, by, data)
	evs, err := store.TakeEvents(&r)
	if err != nil {
		panic(err) // the fake's own data
	}
	e := evs[0]
	e.Seq, e.At = int64(len(f.events)+1), f.cfg.Now()
	f.events = append(f.events, e)
}

// Events is httpapi's EventLog: every event of ask id, in order.
func (f *Fake) Events(_ context.Context, id string) ([]store.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.lookupLocked(id); err != nil {
		return nil, err
	}
	var out []store.Event
	for _, e := range f.events {
		if e.AskID == id {
			out = append(out, e)
		}
	}
	return out, nil
}

// Feed is httpapi's EventLog: the events after seq, at most limit.
func (f *Fake) Feed(_ context.Context, after int64, limit int) ([]store.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Event
	for _, e := range f.events {
		if e.Seq > after && (limit <= 0 || len(out) < limit) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Calls returns how many calls of op were made (failed ones included).
func (f *Fake) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Inputs returns the input of every Create, failed ones included, in
// order.
func (f *Fake) Inputs() []interaction.AskInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]interaction.AskInput, len(f.creates))
	for i, c := range f.creates {
		out[i] = c.In
	}
	return out
}

// Creates returns every Create, in order.
func (f *Fake) Creates() []CreateCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.creates)
}

// Withdrawals returns every Withdraw, in order.
func (f *Fake) Withdrawals() []WithdrawCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.withdraw)
}

// Len returns how many asks were created.
func (f *Fake) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.order)
}

// Notes returns the note of every withdrawal, in order ("" for a plain
// one).
func (f *Fake) Notes() []string {
	var out []string
	for _, w := range f.Withdrawals() {
		out = append(out, w.Note)
	}
	return out
}

// Filter returns the filter of the last List.
func (f *Fake) Filter() interaction.ListFilter {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.filter
}

// CreateContext returns the context the last Create was called with.
func (f *Fake) CreateContext() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.createCx
}
