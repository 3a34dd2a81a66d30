// Package asks is the ask lifecycle, transport-neutral: it creates asks
// (validation, defaults, ids, idempotency), records what people do on them
// (selections, skips, "Other" text, Submit, Cancel), ends each ask exactly
// once, wakes whoever waits for the end, fires deadlines and reminders,
// keeps the posted message in step with the durable record and, after a
// restart, picks up what an earlier process left.
//
// It works over a store.Store and a Surface (the chat service the asks are
// shown on) and imports nothing of Slack. Service implements
// interaction.AskService and interaction.Provider; the Slack adapter
// (package bot) turns payloads into the person-act calls (Select, Skip,
// Other, Submit, Cancel, Check), each of which returns once its change is
// committed to the store, with the record as it then stands.
package asks

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
)

// Config wires a Service. Store and Surface are required.
type Config struct {
	Store   store.Store
	Surface Surface
	// DefaultChannel is where asks go that name neither channel nor user.
	DefaultChannel string
	// DefaultResponders may answer asks that name no responders.
	DefaultResponders []string
	// DefaultTimeout is the deadline of asks that set none; 0 = none.
	DefaultTimeout time.Duration
	// Clock drives deadlines and reminders; nil means the wall clock.
	Clock clock.Clock
	// Logger receives the lifecycle's log lines.
	Logger zerolog.Logger
	// OnEnd, when set, is called after an ask ended (from any goroutine).
	OnEnd func(interaction.Ask)
	// Callbacks configure the delivery of ended asks to callback URLs.
	Callbacks Callbacks
	// CheckIDs, when set, is asked about every user and user-group id a
	// request names (user, responders, mention) before the ask is kept;
	// its INVALID_QUESTION (an id the chat service does not know) refuses
	// the ask, rather than keeping one nobody can answer. workspace is the
	// one the ask is stamped with (Record.TeamID).
	CheckIDs func(ctx context.Context, workspace string, ids []string) error
	// PostTimeout bounds one post of a message (default 30 s). A post
	// that times out may still have landed: its ask is kept and the
	// message looked for (resolvePost).
	PostTimeout time.Duration
}

// Service is the ask lifecycle. Create it with New, start its background
// work (recovery, deadlines, reminders, message updates) with Start and
// stop it with Close. All methods are safe for concurrent use; the ones a
// front door calls work before Start (their message updates wait for it).
type Service struct {
	cfg     Config
	store   store.Store
	surface Surface
	clock   clock.Clock
	log     zerolog.Logger
	waiters waiters
	syncer  *syncer
	sched   *dispatcher
	bg      sync.WaitGroup // reminders and resolutions in flight
	stats   stats
	posting posting
	// draining holds the post queues this process drains right now;
	// holder names this process in the store's leases.
	draining posting
	holder   string
	// recovered is closed once recover has looked at every record an
	// earlier process left; until then the dispatcher holds what it
	// claims unsynced, as recovery would. (Tests wait for it before they
	// act, so that recovery does not find their own changes unsynced and
	// hold them.)
	recovered chan struct{}
	// life ends with Start's ctx or Close: the background work, and what
	// is started outside it (resolvePost), stops with it.
	life    context.Context
	endLife context.CancelFunc
	started atomic.Bool
	running sync.WaitGroup // Start's goroutines
}

var (
	_ interaction.AskService     = (*Service)(nil)
	_ interaction.Provider       = (*Service)(nil)
	_ interaction.NoteWithdrawer = (*Service)(nil)
)

// New checks cfg and returns a Service; an error when Store or Surface is
// missing.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Surface == nil {
		return nil, errors.New("asks: Config.Store and Config.Surface are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	cfg.Callbacks.init()
	if cfg.PostTimeout <= 0 {
		cfg.PostTimeout = 30 * time.Second
	}
	s := &Service{cfg: cfg, store: cfg.Store, surface: cfg.Surface, clock: cfg.Clock, log: cfg.Logger, recovered: make(chan struct{})}
	s.holder = newID()
	s.waiters.init()
	s.life, s.endLife = context.WithCancel(context.Background())
	s.syncer = newSyncer(s)
	s.sched = newDispatcher(s)
	s.store = wakeStore{Store: cfg.Store, s: s}
	s.AddDuty(s.callbackDuty())
	s.AddDuty(s.eventsDuty())
	s.AddDuty(s.escalateDuty())
	s.AddDuty(s.remindSendDuty())
	return s, nil
}

// Start starts the lifecycle's background work and returns: it recovers
// the asks an earlier process left, fires deadlines and reminders, and
// brings messages in step with their records, until ctx ends or Close is
// called. When the Surface is an Opener the work waits for it to open.
// A Service starts once; a second Start is an error.
func (s *Service) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("asks: Start called twice")
	}
	context.AfterFunc(ctx, s.endLife)
	s.running.Go(func() { s.run(s.life) })
	return nil
}

// Close stops the background work and returns once every update,
// reminder and resolution it started has finished. It may be called
// without Start, and more than once.
func (s *Service) Close() error {
	s.endLife()
	s.running.Wait()
	s.bg.Wait()
	return nil
}

// run is the background work of Start, once the surface is open.
func (s *Service) run(ctx context.Context) {
	if o, ok := s.surface.(Opener); ok {
		select {
		case <-o.Opened():
		case <-ctx.Done():
			return
		}
	}
	stop := s.watchEnds()
	defer stop()
	// Marks from here on start their updates at once (before recovery
	// ends, so before any act a test makes once it has).
	s.syncer.start(ctx)
	var bg sync.WaitGroup
	bg.Go(func() { s.syncer.run(ctx) })
	bg.Go(func() { s.sched.run(ctx) })
	bg.Go(func() { s.recover(ctx); close(s.recovered) })
	bg.Wait()
}

// stats counts what the lifecycle did since start.
type stats struct {
	posts, updates, created               atomic.Int64
	answered, cancelled, aborted, expired atomic.Int64
	corrupt                               atomic.Int64
}

// Counts is what the lifecycle did since start: messages posted and
// updated, asks created and ended by outcome, and records its reads of
// many left out for not decoding (each time it read them).
type Counts struct {
	Posts, Updates, Created               int64
	Answered, Cancelled, Aborted, Expired int64
	CorruptLeftOut                        int64
}

// Counters returns a snapshot of the counts.
func (s *Service) Counters() Counts {
	t := &s.stats
	return Counts{
		Posts: t.posts.Load(), Updates: t.updates.Load(), Created: t.created.Load(),
		Answered: t.answered.Load(), Cancelled: t.cancelled.Load(), Aborted: t.aborted.Load(), Expired: t.expired.Load(),
		CorruptLeftOut: t.corrupt.Load(),
	}
}

func (t *stats) ended(st interaction.Status) {
	switch st {
	case interaction.StatusAnswered:
		t.answered.Add(1)
	case interaction.StatusCancelled:
		t.cancelled.Add(1)
	case interaction.StatusAborted:
		t.aborted.Add(1)
	case interaction.StatusExpired:
		t.expired.Add(1)
	}
}

// Ask implements interaction.Provider: it creates the ask in the default
// conversation and waits for its end. When ctx ends first the ask is
// withdrawn (ASK_ABORTED) and its message updated.
func (s *Service) Ask(ctx context.Context, r interaction.Request) (interaction.Answer, error) {
	if err := ctx.Err(); err != nil {
		return interaction.Answer{}, interaction.Errorf(interaction.AskAborted, "ask: the caller withdrew before asking")
	}
	// Posting is not interrupted half-way (a message the surface accepted
	// must stay tied to its record); a caller that left meanwhile
	// withdraws it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	ask, err := s.Create(cctx, interaction.AskInput{Request: r})
	cancel()
	if err != nil {
		return interaction.Answer{}, err
	}
	ask, err = s.Wait(ctx, ask.ID)
	if err != nil {
		return interaction.Answer{}, err
	}
	if !ask.Status.Ended() {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if ask, err = s.Withdraw(wctx, ask.ID); err != nil {
			return interaction.Answer{}, err
		}
	}
	return ask.Result()
}

// Create implements interaction.AskService: it validates in, stores the
// ask, posts its message and returns it pending. Errors: the validation
// codes, IDEMPOTENCY_MISMATCH for a used IdempotencyKey with another
// request, SLACK_ERROR when the surface refuses the post (nothing is kept
// then). When the post's outcome is unknown (ErrOutcomeUnknown) the ask is
// kept and returned not posted (no ts); its message is looked for and adopted, or
// posted once, in the background.
func (s *Service) Create(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	ask, _, err := s.CreateIdempotent(ctx, in)
	return ask, err
}

// CreateIdempotent is Create that also reports whether this call created
// the ask (false: the IdempotencyKey named an existing one, returned as is).
func (s *Service) CreateIdempotent(ctx context.Context, in interaction.AskInput) (interaction.Ask, bool, error) {
	// A scoped key's idempotencyKeys are its own: another key using the
	// same one gets a new ask, never this key's.
	in.IdempotencyKey = interaction.CallerFrom(ctx).IdempotencyKey(in.IdempotencyKey)
	rec, err := s.newRecord(ctx, in)
	if err == nil {
		err = s.prepareReach(&rec, in)
	}
	if err == nil {
		err = s.dmCopies(ctx, &rec)
	}
	if err != nil {
		return interaction.Ask{}, false, fmt.Errorf("asks create: %w", err)
	}
	rec.Emit(store.EventCreated, nil, nil) // written only if this call creates the ask
	rec, created, err := s.store.Create(ctx, rec)
	if err != nil {
		return interaction.Ask{}, false, fmt.Errorf("asks create: %w", err)
	}
	if !created {
		if err := sameRequest(rec, in); err != nil {
			return interaction.Ask{}, false, fmt.Errorf("asks create: %w", err)
		}
		s.resolveLeft(rec)
		return s.fillPermalink(ctx, rec).Ask, false, nil
	}
	s.posting.claim(rec.ID) // a retry with the key leaves this post alone
	defer s.posting.release(rec.ID)
	var rl *RateLimited
	if s.queuedAhead(ctx, rec) {
		// Asks wait for this conversation: behind them, in order.
		rec, err = s.enqueue(ctx, rec, s.now().Add(queueStep))
	} else if rec, err = s.post(ctx, rec); errors.As(err, &rl) {
		rec, err = s.enqueue(ctx, rec, s.now().Add(rl.RetryAfter))
	}
	if errors.Is(err, ErrOutcomeUnknown) {
		// The message may have landed: keep the ask and find out (after
		// this create's post has let go of it), never post blindly again.
		s.log.Warn().Err(err).Str("ask", rec.ID).Msg("post outcome unknown; looking for the message")
		s.posting.release(rec.ID)
		s.resolvePost(rec)
	} else if err != nil {
		return interaction.Ask{}, false, s.dropUnposted(rec.ID, err)
	}
	s.sched.add(rec)
	s.stats.created.Add(1)
	return s.withPlace(ctx, rec), true, nil
}

// dropUnposted removes a record whose message could not be posted, so
// that nothing dangles and a retry with the same key posts afresh.
func (s *Service) dropUnposted(id string, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.Delete(ctx, id); err != nil {
		s.log.Error().Err(err).Str("ask", id).Msg("could not remove an ask whose post failed")
	}
	return fmt.Errorf("asks create: %w", cause)
}

// placement is where an ask naming a workspace goes: the key and app it
// is stamped with (Record.TeamID, AppID) and the workspace it is posted
// in when known (Record.Workspace).
type placement struct{ key, workspace, app string }

// workspace is where an ask naming ws (its own or its key's) goes: the
// surface's Home (which is also the workspace posted in), or, on a
// surface serving many workspaces, what it resolves ws to.
func (s *Service) workspace(ctx context.Context, ws string) (placement, error) {
	if many, ok := s.surface.(Workspaces); ok {
		key, in, app, err := many.Workspace(ctx, ws)
		switch {
		case errors.Is(err, ErrHome):
		case err != nil:
			return placement{}, fmt.Errorf("workspace: %w", err)
		default:
			return placement{key: key, workspace: in, app: app}, nil
		}
	}
	team, app := s.surface.Home()
	if ws != "" && team != "" && ws != team {
		return placement{}, interaction.Errorf(interaction.InvalidQuestion, "workspace %s: this server is installed in %s only", ws, team)
	}
	return placement{key: team, workspace: team, app: app}, nil
}

// CheckAsk checks in as Create does before anything else:
// interaction.ValidateInput, then the surface's rules when it is a
// Checker (interaction.Checker).
func (s *Service) CheckAsk(in interaction.AskInput) error {
	if err := interaction.ValidateInput(in); err != nil {
		return err
	}
	if c, ok := s.surface.(Checker); ok {
		return c.CheckAsk(in)
	}
	return nil
}

func (s *Service) newRecord(ctx context.Context, in interaction.AskInput) (Record, error) {
	if err := s.CheckAsk(in); err != nil {
		return Record{}, err
	}
	channel := in.Channel
	if channel == "" && in.User == "" {
		channel = s.cfg.DefaultChannel
	}
	if channel == "" && in.User == "" {
		return Record{}, interaction.Errorf(interaction.InvalidQuestion, "no conversation: set channel or user, or SLACKASK_CHANNEL")
	}
	caller := interaction.CallerFrom(ctx)
	ws, err := caller.Workspace(in.Workspace)
	if err != nil && in.Workspace != "" && interaction.ErrorCode(err) == interaction.Forbidden {
		// A key scoped to a Grid organization (E…) covers the workspaces
		// its org-wide installation serves, named by their own ids (T…):
		// the ask is admitted when the installation serving in.Workspace
		// is one the key names.
		if p, werr := s.workspace(ctx, in.Workspace); werr == nil && p.key != in.Workspace && slices.Contains(caller.Workspaces, p.key) {
			ws, err = in.Workspace, nil
		}
	}
	if err != nil {
		return Record{}, err
	}
	place, err := s.workspace(ctx, ws)
	if err != nil {
		return Record{}, err
	}
	if s.cfg.CheckIDs != nil {
		if err := s.cfg.CheckIDs(ctx, place.key, namedIDs(in)); err != nil {
			return Record{}, err
		}
	}
	now := s.now()
	rec := Record{
		Ask: interaction.Ask{
			ID: newID(), Status: interaction.StatusPending,
			Questions: in.Questions, Agent: in.Agent, Channel: channel, ThreadTS: in.ThreadTS, CreatedAt: now,
			OnTimeout: in.OnTimeout, CallbackURL: in.CallbackURL,
			Notify: in.Notify, RemindEvery: in.RemindEvery, Escalation: in.Escalation,
			User: in.User, Mention: in.Mention, Responders: in.Responders,
		},
		IdempotencyKey: in.IdempotencyKey,
		TeamID:         place.key, Workspace: place.workspace, AppID: place.app, Rev: 1, Owner: caller.Owner(),
		Progress: make([]interaction.Progress, len(in.Questions)),
	}
	if len(rec.Responders) == 0 && in.User == "" {
		rec.Responders = caller.DefaultResponders()
		if len(rec.Responders) == 0 {
			rec.Responders = s.cfg.DefaultResponders
		}
	}
	if err := caller.Admit(channel, in.User, rec.Responders); err != nil {
		return Record{}, err
	}
	if err := caller.AdmitReach(in.Notify, in.Escalation, rec.Responders, s.surface.IsGroup); err != nil {
		return Record{}, err
	}
	switch {
	case in.Responses.All:
		people, err := s.people(ctx, rec.TeamID, rec.Responders, `responses "all"`)
		if err != nil {
			return Record{}, err
		}
		rec.Awaited, rec.Wanted = people, len(people)
		rec.Progress = nil
	case in.Responses.N > 1:
		if n, ok := mostPeople(rec, s.surface.IsGroup); ok && in.Responses.N > n {
			who := fmt.Sprintf("%d people", n)
			if n == 1 {
				who = "1 person"
			}
			return Record{}, interaction.Errorf(interaction.InvalidQuestion, "responses %d: only %s may answer this ask", in.Responses.N, who)
		}
		rec.Wanted = in.Responses.N
		rec.Progress = nil
	}
	timeout := time.Duration(in.Timeout)
	if timeout == 0 {
		timeout = s.cfg.DefaultTimeout
	}
	if timeout > 0 {
		exp := now.Add(timeout)
		rec.ExpiresAt = &exp
		if n := len(in.Escalation); n > 0 && time.Duration(in.Escalation[n-1].After) >= timeout {
			return Record{}, interaction.Errorf(interaction.InvalidQuestion, "escalation[%d].after %s: every step must come before the deadline (this server's default timeout is %s)", n-1, time.Duration(in.Escalation[n-1].After), timeout)
		}
	}
	if in.RemindAfter > 0 {
		rec.RemindAt = now.Add(time.Duration(in.RemindAfter))
	}
	return rec, nil
}

// namedIDs lists the user and user-group ids in lists the request names,
// each once: the DM's user, the responders, the mentions.
func namedIDs(in interaction.AskInput) []string {
	var out []string
	for _, id := range append(append([]string{in.User}, in.Responders...), in.Mention...) {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// mostPeople is how many people may answer rec when that is known
// without asking the surface: one for a DM, the listed users when no group
// is listed; ok is false otherwise.
func mostPeople(rec Record, isGroup func(string) bool) (n int, ok bool) {
	if len(rec.Responders) == 0 {
		return 1, rec.User != ""
	}
	if slices.ContainsFunc(rec.Responders, isGroup) {
		return 0, false
	}
	seen := map[string]bool{}
	for _, id := range rec.Responders {
		seen[id] = true
	}
	return len(seen), true
}

// people lists the people behind responders, for what needs them (named
// in errors): users as given, user groups replaced by their members, each
// person once, in order. More than interaction.MaxResponders people is
// INVALID_QUESTION; a group that cannot be read is SLACK_ERROR.
func (s *Service) people(ctx context.Context, workspace string, responders []string, what string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(u string) {
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	for _, id := range responders {
		if !s.surface.IsGroup(id) {
			add(id)
			continue
		}
		members, err := s.surface.Members(ctx, workspace, id)
		if err != nil {
			return nil, fmt.Errorf("%s: the members of user group %s: %w", what, id, err)
		}
		for _, m := range members {
			add(m)
		}
	}
	switch {
	case len(out) == 0:
		return nil, interaction.Errorf(interaction.InvalidQuestion, `%s: the responders' groups have no members`, what)
	case len(out) > interaction.MaxResponders:
		return nil, interaction.Errorf(interaction.InvalidQuestion, `%s: %d people, at most %d`, what, len(out), interaction.MaxResponders)
	}
	return out, nil
}

// post sends the ask's message and stores where it landed; when the ask
// changed (or ended) while it was being posted, the message is brought in
// step.
func (s *Service) post(ctx context.Context, rec Record) (Record, error) {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PostTimeout)
	at, err := s.surface.Post(pctx, rec)
	cancel()
	if err != nil {
		return rec, err
	}
	s.stats.posts.Add(1)
	at.Channel = cmp.Or(at.Channel, rec.Channel)
	// The link is asked for before the place is stored, so that both go in
	// one store write (on PostgreSQL two round trips and a commit fewer
	// per ask). A crash in between leaves a posted message unknown to its
	// record, as one during the post does: it is looked for (FindPosted)
	// before it is ever posted again; permalinkWait bounds the wait.
	link := s.permalink(ctx, rec, at, permalinkWait)
	rec, err = s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
		setPosted(r, at)
		setPermalink(r, link)
		r.Synced = r.Rev == rec.Rev
		return nil
	})
	if err != nil {
		return rec, err
	}
	if !rec.Synced {
		s.syncer.mark(rec)
	}
	return rec, nil
}

// Get implements interaction.AskService. A scoped API key (the ctx's
// interaction.Caller) gets NOT_FOUND for an ask it did not create, as if
// it did not exist.
func (s *Service) Get(ctx context.Context, id string) (interaction.Ask, error) {
	rec, err := s.store.Get(ctx, id)
	if err == nil && !interaction.CallerFrom(ctx).Owns(rec.Owner) {
		err = store.ErrNotFound
	}
	if err != nil {
		return interaction.Ask{}, fmt.Errorf("asks get: %w", err)
	}
	return s.withPlace(ctx, rec), nil
}

// Wait implements interaction.AskService.
func (s *Service) Wait(ctx context.Context, id string) (interaction.Ask, error) {
	wt, cancel := s.waiters.add(id)
	defer cancel()
	ask, err := s.Get(context.WithoutCancel(ctx), id)
	if err != nil || ask.Status.Ended() {
		return ask, err
	}
	select {
	case <-wt.done:
		return wt.ask, nil
	case <-ctx.Done():
		return s.Get(context.WithoutCancel(ctx), id)
	}
}

// Notify implements httpapi.Notifier: fn is called once, by the goroutine
// that ends the ask, right after the end is stored, with the ask as it
// ended (shared by every waiter: read-only) and the waiter lock held (fn
// must return within a millisecond or so and not call the Service). For
// an ask that is unknown or has already ended fn is never called: callers
// Get the ask after Notify. cancel forgets fn and may be called more than
// once.
func (s *Service) Notify(id string, fn func(interaction.Ask)) (cancel func()) {
	return s.waiters.register(id, &waiter{fn: fn})
}

// Withdraw implements interaction.AskService: the caller takes the ask
// back; it ends as aborted and the message says so.
func (s *Service) Withdraw(ctx context.Context, id string) (interaction.Ask, error) {
	return s.WithdrawWithNote(ctx, id, "")
}

// WithdrawWithNote implements interaction.NoteWithdrawer: Withdraw, with a
// note for the message saying why (e.g. "answered elsewhere").
func (s *Service) WithdrawWithNote(ctx context.Context, id, note string) (interaction.Ask, error) {
	if interaction.CallerFrom(ctx) != nil {
		// Another key's ask is NOT_FOUND (an ask's owner never changes).
		if _, err := s.Get(ctx, id); err != nil {
			return interaction.Ask{}, fmt.Errorf("asks withdraw: %w", err)
		}
	}
	msg := "the caller withdrew the question"
	if note != "" {
		msg += ": " + note
	}
	rec, err := s.end(ctx, id, ending{
		status: interaction.StatusAborted,
		err:    interaction.Errorf(interaction.AskAborted, "%s", msg),
		note:   note,
	})
	if errors.Is(err, ErrEnded) {
		return rec.Ask, nil
	}
	if err != nil {
		return interaction.Ask{}, fmt.Errorf("asks withdraw: %w", err)
	}
	return rec.Ask, nil
}

// List implements interaction.AskService.
func (s *Service) List(ctx context.Context, f interaction.ListFilter) ([]interaction.Ask, error) {
	// A scoped API key lists only its own asks.
	owner := interaction.CallerFrom(ctx).Owner()
	recs, err := s.store.List(ctx, store.Filter{Status: f.Status, Before: f.Before, Limit: f.Limit, Owner: owner})
	if recs, err = s.readable("asks list", recs, err); err != nil {
		return nil, err
	}
	out := make([]interaction.Ask, len(recs))
	for i, r := range recs {
		out[i] = r.Ask
	}
	return out, nil
}

// readable passes on the records of a read of many (List, Pending,
// ClaimDue) and logs the rows it left out for not decoding
// (*store.CorruptError), so that one corrupt record costs only itself;
// any other error is returned, named op.
func (s *Service) readable(op string, recs []Record, err error) ([]Record, error) {
	var corrupt *store.CorruptError
	switch {
	case errors.As(err, &corrupt):
		s.stats.corrupt.Add(int64(len(corrupt.IDs)))
		s.log.Error().Err(err).Strs("asks", corrupt.IDs).Msg(op + ": corrupt records left out")
		return recs, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return recs, nil
}

// leftOut is how many rows a read of many left out for not decoding
// (readable's *store.CorruptError in err), so that a caller paging through
// them can tell a short page from the last.
func leftOut(err error) int {
	var corrupt *store.CorruptError
	if errors.As(err, &corrupt) {
		return len(corrupt.IDs)
	}
	return 0
}

func (s *Service) now() time.Time { return s.clock.Now().UTC() }

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func newID() string {
	var buf [10]byte
	_, _ = rand.Read(buf[:])
	return "a" + idEncoding.EncodeToString(buf[:])
}
