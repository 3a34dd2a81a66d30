package asks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// ErrEnded is returned by a change to an ask that has already ended,
// together with the record as it ended.
var ErrEnded = errors.New("asks: the ask has already ended")

// ending describes how an ask ends.
type ending struct {
	status interaction.Status
	by     *interaction.User
	err    *interaction.Error
	note   string
	// answer, when set, is the answer of an answered end (a veto's
	// response); else it is built from the record.
	answer *interaction.Answer
	// unreachable: the message can no longer be changed (the app was
	// uninstalled): the end is stored synced, and no update is tried.
	unreachable bool
}

// endRecord ends the pending record r (inside a compare-and-set): status,
// time, the answer built from its progress, or the error.
//
// An ask that collects several responses ends answered with the team's
// answer (interaction.TeamAnswer) unless e names one, and its tally; at
// its deadline with onTimeout "answer" and at least one response, it ends
// answered rather than expired (answeredBy unset: nobody's submission
// ended it); expired with responses, its error says how many came in.
// Responses are kept however it ends; drafts are dropped.
func (s *Service) endRecord(r *Record, e ending) {
	now := s.now()
	many := Many(*r)
	switch {
	case e.status == interaction.StatusExpired && many && r.OnTimeout == interaction.OnTimeoutAnswer && len(r.Responses) > 0:
		e = ending{status: interaction.StatusAnswered, note: e.note}
	case e.status == interaction.StatusExpired && many && len(r.Responses) > 0 && e.err != nil:
		// "nobody answered" would be untrue: say how many did.
		e.err = interaction.Errorf(e.err.Code, "only %d of the %d responses wanted came in before the deadline", len(r.Responses), max(r.Wanted, 1))
	}
	r.Status, r.EndedAt, r.Note = e.status, &now, e.note
	var team interaction.Answer
	if many {
		team, r.Tally = interaction.TeamAnswer(r.Request(), r.Responses)
		r.Drafts = nil // what counted is in the responses; nobody can submit any more
	}
	if e.status == interaction.StatusAnswered {
		ans := interaction.AnswerFrom(r.Request(), r.Progress)
		switch {
		case e.answer != nil:
			ans = *e.answer
		case many:
			ans = team
		}
		r.Answer, r.AnsweredBy = &ans, e.by
		if !many { // a team ask recorded each response as it came
			emitResponse(r, e.by, ans)
		}
	} else {
		r.Error, r.EndedBy = e.err, e.by
	}
	r.Emit(store.EventEnded, e.by, endedData{Status: e.status, By: e.by})
	r.Rev++
	r.Synced = e.unreachable
	leaveQueue(r) // never posted now: the queue moves on
	s.armCallback(r, now)
}

// end ends a pending ask exactly once: the first end wins, every later one
// gets ErrEnded together with the record as it stands.
func (s *Service) end(ctx context.Context, id string, e ending) (Record, error) {
	rec, err := s.store.Update(ctx, id, func(r *Record) error {
		if r.Status.Ended() {
			return ErrEnded
		}
		s.endRecord(r, e)
		return nil
	})
	if errors.Is(err, ErrEnded) {
		return s.endedRecord(ctx, id)
	}
	if err != nil {
		return rec, fmt.Errorf("end %s: %w", id, err)
	}
	s.ended(rec)
	return rec, nil
}

// endedRecord reads an ask a change found ended and returns it with
// ErrEnded.
func (s *Service) endedRecord(ctx context.Context, id string) (Record, error) {
	cur, err := s.store.Get(ctx, id)
	if err != nil {
		return cur, fmt.Errorf("end %s: %w", id, err)
	}
	return cur, ErrEnded
}

// ended follows the stored end of rec (by this process's change): it
// counts it, wakes the waiters, queues the message update and calls OnEnd.
// (The end's write cleared the ask's deadline and reminder from its
// WakeAt.)
func (s *Service) ended(rec Record) {
	s.stats.ended(rec.Status)
	s.waiters.wake(store.Clone(rec).Ask)
	s.syncer.mark(rec)
	s.log.Info().Str("ask", rec.ID).Str("status", string(rec.Status)).Msg("ask ended")
	if s.cfg.OnEnd != nil {
		s.cfg.OnEnd(rec.Ask)
	}
}

// waiters wakes the callers blocked in Wait when an ask ends, handing
// them the ended ask so that none has to read it again.
type waiters struct {
	mu   sync.Mutex
	next int
	m    map[string]map[int]*waiter
}

// waiter is one caller waiting for an ask to end: done is closed once ask
// holds the ended ask (read-only: every waiter of the ask shares it), or,
// for a waiter registered with Notify, fn is called instead.
type waiter struct {
	done chan struct{}
	ask  interaction.Ask
	fn   func(interaction.Ask)
}

func (w *waiters) init() { w.m = map[string]map[int]*waiter{} }

// add registers a waiter for id; cancel unregisters it.
func (w *waiters) add(id string) (wt *waiter, cancel func()) {
	wt = &waiter{done: make(chan struct{})}
	return wt, w.register(id, wt)
}

// register adds wt to id's waiters and returns the idempotent cancel.
func (w *waiters) register(id string, wt *waiter) (cancel func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	n := w.next
	if w.m[id] == nil {
		w.m[id] = map[int]*waiter{}
	}
	w.m[id][n] = wt
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if set := w.m[id]; set != nil {
			delete(set, n)
			if len(set) == 0 {
				delete(w.m, id)
			}
		}
	}
}

// wake hands ask, which has ended, to every waiter of it.
func (w *waiters) wake(ask interaction.Ask) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.m[ask.ID] {
		if wt.fn != nil {
			wt.fn(ask)
			continue
		}
		wt.ask = ask
		close(wt.done)
	}
	delete(w.m, ask.ID)
}

// watchEnds wakes this process's waiters when any process sharing the
// store ends their ask: it watches the store's committed writes and, for
// an ended ask that has waiters here (every ask with waiters after a
// Resync), reads it and wakes them. An end by this process has woken its
// waiters already and finds none. stop ends the watch and waits for the
// reads it started.
func (s *Service) watchEnds() (stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
		wg      sync.WaitGroup
	)
	stopWatch := s.store.Watch(func(c store.Change) {
		var ids []string
		switch {
		case c.Resync:
			ids = s.waiters.ids()
		case c.Status.Ended() && s.waiters.has(c.ID):
			ids = []string{c.ID}
		}
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		for _, id := range ids {
			wg.Go(func() { s.wakeFromStore(id) })
		}
	})
	return func() {
		stopWatch()
		mu.Lock()
		stopped = true
		mu.Unlock()
		wg.Wait()
	}
}

// wakeFromStore reads ask id and, when it has ended, wakes its waiters.
func (s *Service) wakeFromStore(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := s.store.Get(ctx, id)
	if err != nil {
		if !isNotFound(err) {
			s.log.Warn().Err(err).Str("ask", id).Msg("could not read an ask another replica ended")
		}
		return
	}
	if rec.Status.Ended() {
		s.waiters.wake(rec.Ask)
	}
}

// has reports whether id has waiters.
func (w *waiters) has(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m[id]) > 0
}

// ids returns the asks that have waiters.
func (w *waiters) ids() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.m))
	for id := range w.m {
		out = append(out, id)
	}
	return out
}

// EndWorkspace ends every pending ask of workspace team (and those stamped
// with no workspace, from before one was kept) aborted, with why as their
// error and note: the app was uninstalled there, so nobody can answer them
// and their messages can no longer be changed (no update is tried). It
// returns how many it ended; an error stops it, and the rest stay pending.
func (s *Service) EndWorkspace(ctx context.Context, team, why string) (int, error) {
	return s.endPending(ctx, "asks end workspace "+team, why, func(_ context.Context, r Record) bool {
		return r.TeamID == team || r.TeamID == ""
	})
}

// EndWorkspacesOf ends, as EndWorkspace does, the pending asks stamped
// with installation key that were posted in one of workspaces
// (Record.Workspace): the installation, which serves several workspaces,
// was taken from those only (an org-wide install removed from some of its
// organization's teams). Asks of key in its other workspaces, and asks of
// those workspaces through another installation (their own), stay
// pending; so do asks of key whose workspace is not known (one that named
// the organization, or was made before the workspace was kept): the
// surface is asked about those (EndUnreachableOf).
func (s *Service) EndWorkspacesOf(ctx context.Context, key string, workspaces []string, why string) (int, error) {
	return s.endPending(ctx, fmt.Sprintf("asks end workspaces %v of %s", workspaces, key), why, func(_ context.Context, r Record) bool {
		return r.TeamID == key && r.Workspace != "" && slices.Contains(workspaces, r.Workspace)
	})
}

// Reachable says whether the installation serving an ask (Record.TeamID)
// still reaches the conversation its message is in (Record.Channel):
// false only when the surface is told for sure that it does not; an
// error when it could not tell (a rate limit, a failure, a timeout).
type Reachable func(ctx context.Context, rec Record) (bool, error)

// EndUnreachableOf ends, as EndWorkspacesOf does, the pending asks stamped
// with installation key whose workspace is not known (Record.Workspace
// "": they named the organization, or were made before the workspace was
// kept) that reachable says the installation can no longer reach, once it
// was taken from some of its workspaces. Each such ask with a
// conversation (Record.Channel) is asked about, one after another; one
// that is reachable, or that reachable cannot tell about (logged), stays
// pending, to end at its deadline or when the installation itself goes.
func (s *Service) EndUnreachableOf(ctx context.Context, key string, reachable Reachable, why string) (int, error) {
	return s.endPending(ctx, "asks end unreachable of "+key, why, func(ctx context.Context, r Record) bool {
		if r.TeamID != key || r.Workspace != "" || r.Channel == "" || ctx.Err() != nil {
			return false // ctx over: the rest stay pending unasked
		}
		ok, err := reachable(ctx, r)
		if err != nil {
			s.log.Warn().Err(err).Str("ask", r.ID).Str("team", key).Msg("could not tell whether the ask's conversation is still reachable; it stays pending")
			return false
		}
		return !ok
	})
}

// endPending ends the pending asks that match picks aborted,
// unreachable, with why; op names the operation in its errors.
func (s *Service) endPending(ctx context.Context, op, why string, match func(context.Context, Record) bool) (int, error) {
	pending, err := s.store.Pending(ctx)
	if pending, err = s.readable(op, pending, err); err != nil {
		return 0, err
	}
	n := 0
	for _, rec := range pending {
		if !match(ctx, rec) {
			continue
		}
		_, err := s.end(ctx, rec.ID, ending{
			status: interaction.StatusAborted, note: why, unreachable: true,
			err: interaction.Errorf(interaction.AskAborted, "%s: nobody can answer it", why),
		})
		switch {
		case errors.Is(err, ErrEnded):
		case err != nil:
			return n, fmt.Errorf("%s: %w", op, err)
		default:
			n++
		}
	}
	return n, nil
}
