// Package store defines the durable record of an ask and the Store that
// keeps it. The Slack message is a view of a Record, never the record
// itself. Implementations live in subpackages (memory, sqlite, postgres) and all pass
// the conformance suite in storetest.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/slackask/slackask/interaction"
)

// Record is the durable state of one ask.
type Record struct {
	// Ask is the public resource. Ask.ID is the primary key.
	interaction.Ask

	// Delivery: where and to whom the ask was put. User, Mention and
	// Responders are the resource's (Ask), which echoes them; in a
	// record's JSON they sit where they always did, at its top level.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// TeamID is the key of the installation serving the ask, which every
	// call about it goes through: its workspace (T…), or the Grid
	// organization (E…) of an org-wide install.
	TeamID string `json:"teamId,omitempty"`
	// Workspace is the workspace (T…) the ask was posted in, when known:
	// TeamID itself for a workspace's own install, the team the ask named
	// for one served by its organization's org-wide install; empty for an
	// ask that named the organization (its conversation may be in any of
	// the org's workspaces) and for records from before it was kept. A
	// revoke of the org-wide install from a workspace ends the asks it
	// names (asks.Service.EndWorkspacesOf).
	Workspace string `json:"workspace,omitempty"`
	AppID     string `json:"appId,omitempty"`
	// Owner is the id of the API key that created the ask; empty for asks
	// made with the server's own token. Only its owner (and that token)
	// sees the ask.
	Owner string `json:"owner,omitempty"`

	// Progress holds, per question index, what people did so far that the
	// Slack message state does not keep (custom text, skips, selections).
	Progress []interaction.Progress `json:"progress,omitempty"`
	// Drafts holds, for an ask that collects several people's responses,
	// each person's progress (keyed by user id, per question index): their
	// picks are theirs alone and never shown on the shared message.
	Drafts map[string][]interaction.Progress `json:"drafts,omitempty"`
	// Awaited lists, for an ask that wants "all" responses, the users whose
	// responses it waits for (user groups expanded when it was created);
	// only they may answer it.
	Awaited []string `json:"awaited,omitempty"`
	// Rev counts the renders of the message; it is part of every block id.
	Rev int `json:"rev"`
	// Synced is true when the message in Slack shows the record's current
	// rendered state; false after an end whose update has not reached Slack.
	Synced bool `json:"synced"`
	// MessageGone is set once Slack said the ask's message is not there
	// any more (message_not_found, channel_not_found on chat.update): it
	// is never updated again, however the record changes.
	MessageGone bool `json:"messageGone,omitempty"`
	// Drawers lists the processes that may have an update of the ask's
	// views in flight whose outcome they have not yet checked against the
	// record, each with when it was listed (see asks' syncer: a process
	// marking the record synced while another is listed recently leaves
	// it unsynced, to be drawn once more when that update can no longer
	// land). Empty when nobody is drawing.
	Drawers []Drawer `json:"drawers,omitempty"`

	// RemindAt is when to post the one reminder; zero for none.
	RemindAt time.Time `json:"remindAt,omitzero"`
	// Reminded is set once the last reminder was posted (the one
	// reminder, or the last of those RemindEvery repeats).
	Reminded bool `json:"reminded,omitempty"`
	// Reminders counts the reminders posted so far.
	Reminders int `json:"reminders,omitempty"`
	// RemindSend is where the post of reminder number Reminders stands,
	// on a surface that marks its replies (asks.Noticer): claimed, posted
	// and marked Sent, a retry looking for the marked reply first, so
	// that each reminder is posted exactly once. Nil when none is owed.
	RemindSend *StepSend `json:"remindSend,omitempty"`
	// Added lists the people (user and user-group ids) added to who may
	// answer after the ask was created, by escalation steps and
	// hand-offs, each once, in order.
	Added []string `json:"added,omitempty"`
	// Steps holds, per fired escalation step (index as in
	// Ask.Escalation), where its notification stands.
	Steps []StepSend `json:"steps,omitempty"`
	// WakeAt is when the ask lifecycle next has work for this record (its
	// deadline, its reminder, a retry); zero means nothing is due. ClaimDue
	// hands out records whose WakeAt has come; the store keeps it in an
	// indexed column.
	WakeAt time.Time `json:"wakeAt,omitzero"`

	// EndedBy is who cancelled an ask (Ask.AnsweredBy is for answers).
	EndedBy *interaction.User `json:"endedBy,omitempty"`
	// Note is an extra line shown on the ended message, e.g. "answered
	// elsewhere".
	Note string `json:"note,omitempty"`

	// Fingerprint is AskInput.Fingerprint of the request that created the
	// ask: a later create with the same IdempotencyKey and another
	// fingerprint is refused (IDEMPOTENCY_MISMATCH). Empty for records
	// created before it was kept: those match any request.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Callback is the durable state of the delivery of the ended ask to
	// Ask.CallbackURL; nil while the ask is pending or has no callback.
	Callback *Callback `json:"callback,omitempty"`
	// EventHook is the durable state of the delivery of the ask's events
	// to its callback URL (Ask.CallbackEvents other than "ended"); nil
	// when none is chosen.
	EventHook *EventHook `json:"eventHook,omitempty"`

	// Ref is the main message's reference as the surface names it (what
	// acts on it carry); "" until posted, and in records posted before it
	// was kept (asks.Referrer gives it then).
	Ref string `json:"ref,omitempty"`
	// Copies are the ask's views besides its main message (Ask.Channel/TS):
	// direct messages to people and messages in other conversations, each
	// with its own controls, answered like the main one and kept in step
	// with the record by the same updates.
	Copies []Copy `json:"copies,omitempty"`

	// PostQueue names the post queue (the conversation) a pending ask
	// waits in for its message to be posted, in creation order; "" when
	// it is not queued. Store.Queue lists a queue's asks.
	PostQueue string `json:"postQueue,omitempty"`
	// PostAt is when a queued ask next tries its turn.
	PostAt time.Time `json:"postAt,omitzero"`
	// PostAttempt is when the last post of a queued ask started: until
	// it can no longer land, nobody posts the ask again without first
	// looking for its message.
	PostAttempt time.Time `json:"postAttempt,omitzero"`

	// Version is bumped by the store on every write.
	Version int64 `json:"version"`

	// NewEvents are the events emitted (Emit) on this copy of the record
	// and not yet written: transient, never kept. Create and Update write
	// them in the transaction of the record; the records a store returns
	// have none.
	NewEvents []Event `json:"-"`
	// Quiet, set by an Update's fn, marks its write as one no watcher
	// acts on (a person's draft picks): the write is not announced to
	// Watch, here or in another process, which saves every replica a
	// wake-up per click. Apply clears it before fn and keeps it only when
	// the status is unchanged and fn emitted no events, so an end or an
	// audited act is always announced. Transient, never kept; on the
	// record a store returns it says whether that write went unannounced.
	//
	// A quiet write that changes one entry of people's picks (Progress[q],
	// Drafts[user][q]) and nothing else must decide from the record apart
	// from the picks other such writes change: a store may apply it over a
	// copy that lacks them, merging the entry into the record as it stands
	// (PostgreSQL, store/postgres/merge.go), so that the later of two such
	// writes of one entry wins and those of different entries both stay.
	Quiet bool `json:"-"`
}

// Posted reports whether the ask's main message has been posted: the
// surface said where it landed (Ref; TS alone in records posted before
// references were kept). What either says is the surface's business.
func (r *Record) Posted() bool { return r.Ref != "" || r.TS != "" }

// Callback is where the delivery of an ended ask to its callback URL
// stands. It lives in the record so that delivery resumes after a restart
// and, with WakeAt, is handed to one replica at a time by ClaimDue.
type Callback struct {
	// URL is where the delivery goes: the ask's callbackUrl or, for an
	// ask that named none, the server default of the process that ended
	// it, fixed then so that every replica and restart sends to one place
	// whatever its own default. Empty in records armed before it was
	// kept: those go to Ask.CallbackURL, else the attempting process's
	// default.
	URL string `json:"url,omitempty"`
	// Attempts counts the attempts made so far.
	Attempts int `json:"attempts,omitempty"`
	// First is when the first attempt was made; the retry window runs
	// from it.
	First time.Time `json:"first,omitzero"`
	// Next is when the next attempt is due; zero once done.
	Next time.Time `json:"next,omitzero"`
	// Sending, while in the future, is when the attempt in flight (by
	// any replica) will have ended: no other attempt starts before it.
	Sending time.Time `json:"sending,omitzero"`
	// Delivered is when the receiver answered 2xx: never sent again.
	Delivered time.Time `json:"delivered,omitzero"`
	// GaveUp is set when delivery stopped without a 2xx: the retry
	// window passed, or this side refused to send (the address guard, a
	// malformed URL). A receiver's non-2xx answer is always retried.
	GaveUp bool `json:"gaveUp,omitempty"`
	// LastError says why the last attempt failed.
	LastError string `json:"lastError,omitempty"`
}

// Drawer is a process listed in Record.Drawers: its id (a Service's,
// random per start) and when it was listed, by its clock.
type Drawer struct {
	Proc string    `json:"proc"`
	At   time.Time `json:"at"`
}

// StepSend is where the notification of one fired escalation step stands.
// The step fires (FiredAt, its people added) in one write; its messages
// are sent after it, claimed with Sending so that one process at a time
// sends them, and Sent once they are out.
type StepSend struct {
	// Sending, while in the future, is when the attempt in flight (by
	// any replica) will have ended: no other attempt starts before it.
	Sending time.Time `json:"sending,omitzero"`
	// Attempts counts the attempts started; after the first, the sender
	// looks for what an earlier attempt posted before posting again.
	Attempts int `json:"attempts,omitempty"`
	// Sent is set once every message of the step is out.
	Sent bool `json:"sent,omitempty"`
}

// EventHook is where the delivery of an ask's events to its callback
// URL stands. The events log is its outbox: the chosen events after Sent
// go out in seq order, one at a time, each until delivered (at least
// once: the receiver deduplicates by seq), and the attempts of the one in
// flight are paced as a Callback's. A write that emits a chosen event
// bumps Marks in the same transaction; a look at the log that finds
// nothing after Sent sets Scanned to the Marks it read first, so events
// are due exactly while Marks > Scanned.
type EventHook struct {
	// Callback is the delivery of the next event (its URL fixed when the
	// ask was created; Delivered unused: a delivered event moves Sent).
	// GaveUp stops the delivery of every later event too.
	Callback
	// Sent is the seq of the last event delivered.
	Sent    int64 `json:"sent,omitempty"`
	Marks   int64 `json:"marks,omitempty"`
	Scanned int64 `json:"scanned,omitempty"`
}

// Due reports whether events may wait for delivery.
func (h *EventHook) Due() bool { return h != nil && !h.GaveUp && h.Marks > h.Scanned }

// Done reports whether the delivery has ended (delivered or given up).
func (c *Callback) Done() bool { return c == nil || !c.Delivered.IsZero() || c.GaveUp }

// Copy is one further view of an ask (Record.Copies). The lifecycle does
// not read For, In or Ref: they are the surface's ids and reference.
type Copy struct {
	// For is the person a direct-message copy goes to; In is the
	// conversation a copy is posted in. One of them is set.
	For string `json:"for,omitempty"`
	In  string `json:"in,omitempty"`
	// Ref is the posted copy, as the surface names it; "" until posted.
	Ref string `json:"ref,omitempty"`
	// Attempt is when the last post of the copy started: until that post
	// can no longer land, nobody posts the copy again, and after it the
	// copy is looked for before it is posted.
	Attempt time.Time `json:"attempt,omitzero"`
	// Failed says why the surface refused the copy for good; it is not
	// tried again.
	Failed string `json:"failed,omitempty"`
}

// UpdateOp is one Update of a batch (Batcher): ID and Fn as Update's
// arguments, Ctx its context; Rec and Err what Update would return.
type UpdateOp struct {
	Ctx context.Context
	ID  string
	Fn  func(*Record) error
	Rec Record
	Err error
}

// Batcher is a Store that can run several Updates as one write: each op
// gets the result and makes the change it would have made alone, in the
// order given (an op sees the ops before it), but the write is committed
// once. An error of the database fails every op that was to be written.
// A Store whose commit costs much more than a record's update offers it,
// so that updates queued behind each other under load share one commit.
type Batcher interface {
	UpdateBatch(ops []*UpdateOp)
}

// Filter selects records for List.
type Filter struct {
	Status interaction.Status // empty: any
	Before time.Time          // zero: no bound; else CreatedAt strictly before
	Limit  int                // <= 0: 100
	// Unsynced keeps only ended records whose final update has not reached
	// Slack.
	Unsynced bool
	// Owner, when not empty, keeps only records with that Owner.
	Owner string
}

// Errors returned by every Store, wrapped with the operation name.
var (
	// ErrNotFound: no record with that id.
	ErrNotFound = &interaction.Error{Code: interaction.NotFound, Message: "no such ask"}
	// ErrExists: Create with an id that is already taken.
	ErrExists = errors.New("store: ask id already exists")
	// ErrCorrupt is in the chain of an INTERNAL error for a row that is
	// there but does not decode: that record's failure alone, not the
	// database's.
	ErrCorrupt = errors.New("store: corrupt record")
)

// Store keeps ask records. Implementations are safe for concurrent use; each
// method is atomic.
type Store interface {
	// Create inserts r (r.Version is set to 1) and r.NewEvents. When r.IdempotencyKey is
	// not empty and a record with that key exists, it returns the existing
	// record and created=false instead. ErrExists for a taken id.
	Create(ctx context.Context, r Record) (rec Record, created bool, err error)
	// Get returns the record, or ErrNotFound.
	Get(ctx context.Context, id string) (Record, error)
	// Update reads the record, calls fn on a copy and, if fn returns nil,
	// writes the copy back with Version+1, and the events fn emitted on it
	// (Record.Emit) — all in one compare-and-set step,
	// so concurrent updates of one record are serialised. fn's error aborts
	// the update and is returned as is. ErrNotFound for unknown ids. fn may
	// be called more than once (a store may first try it on the record as
	// it last wrote it), each time on a fresh copy: only the call whose
	// copy was current counts, so fn must leave nothing behind but its
	// changes to the copy (reset what it reports to its caller each time).
	Update(ctx context.Context, id string, fn func(*Record) error) (Record, error)
	// Delete removes the record and its events; ErrNotFound for unknown ids.
	Delete(ctx context.Context, id string) error
	// List returns records newest first (CreatedAt, then ID, descending).
	// List, Pending and ClaimDue leave out a row that does not decode and
	// return the others with a *CorruptError naming it (such a row still
	// counts against a limit).
	List(ctx context.Context, f Filter) ([]Record, error)
	// Pending returns every pending record, oldest first.
	Pending(ctx context.Context) ([]Record, error)
	// Queue returns the ids of up to limit pending records whose
	// PostQueue is name, oldest first (CreatedAt, then ID): the order
	// their messages are posted in. limit <= 0 returns nothing.
	Queue(ctx context.Context, name string, limit int) ([]string, error)
	// Prune deletes ended records that ended before t, with their events,
	// and returns how many.
	Prune(ctx context.Context, t time.Time) (int, error)
	// Secret returns the named secret key (32 random bytes), creating and
	// storing it on first use so that it survives restarts.
	Secret(ctx context.Context, name string) ([]byte, error)
	// ClaimDue returns up to limit records whose WakeAt is set and not
	// after now, earliest WakeAt first (then by ID), and in the same atomic
	// step moves each one's WakeAt to now+lease (Version+1): no other caller,
	// in this process or in another one sharing the database, gets that
	// record from ClaimDue again until the lease has passed. The caller, its
	// work done, sets the next WakeAt (or zero) with Update; if it dies
	// instead, the record becomes due again when the lease runs out.
	// A row that does not decode is claimed all the same and left out
	// (*CorruptError): it comes back once a lease, not at every claim.
	// limit <= 0 returns nothing.
	ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Record, error)
	// Watch calls fn after every committed Create, Update, Delete, Prune
	// and ClaimDue write of any record made through any Store sharing the
	// database, this one's own writes included, except an Update that
	// Apply judged Quiet (Record.Quiet); the claim of a row that does not
	// decode may go unannounced too. A store that caches records
	// must not trust a cached copy for want of a change: a quiet write
	// moved the row on all the same. fn runs on a goroutine of
	// the store, one call at a time, in commit order per record where the
	// database allows; it must not block (hand the change to a channel or a
	// map and return). A Change with Resync set means changes may have been
	// missed: the watcher must re-read what it cares about. stop ends the
	// watch: after it returns fn is not called again, except for a call
	// already running. stop may be called more than once; Close stops every
	// watch.
	Watch(fn func(Change)) (stop func())
	// Events returns every event of the ask id, in order (Seq ascending);
	// none for an unknown id.
	Events(ctx context.Context, id string) ([]Event, error)
	// Feed returns the events of every ask with Seq > after, in order, at
	// most FeedLimit(limit) of them. A reader that resumes with the last
	// Seq it got misses no event: an event committed later never has a
	// lower Seq than one already served (PostgreSQL, with several
	// writers, orders its commits so: see store/postgres).
	Feed(ctx context.Context, after int64, limit int) ([]Event, error)
	// Lease takes or renews the named lease for holder for ttl and reports
	// whether holder holds it: false when another holder's lease has not
	// expired. ttl <= 0 releases the lease if holder holds it (and reports
	// false). It serves singletons across processes sharing the database.
	Lease(ctx context.Context, name, holder string, ttl time.Duration) (held bool, err error)
	// KeyStore keeps the scoped API keys.
	KeyStore
	// InstallStore keeps the Slack installations of OAuth installs.
	InstallStore
	// Close releases the store. Calls after Close fail.
	Close() error
}

// Change tells a watcher that a record was written (see Store.Watch).
type Change struct {
	ID      string             // the record; empty with Resync
	Version int64              // its version after the write; for a deletion, its last one
	Status  interaction.Status // its status after the write
	Deleted bool               // the record is gone (Delete, Prune)
	// Resync: changes may have been missed (e.g. the connection that
	// receives them was lost and made again); re-read what matters.
	Resync bool
}

// Apply is every store's Update step: it runs fn on rec, which the caller
// gives up (fn changes it in place), and returns the record to write over
// rec's version (its keys kept, Version one up) and the events fn
// emitted (TakeEvents). next.Quiet says whether the write goes
// unannounced (see Record.Quiet). fnErr is fn's own error, err an event
// that does not encode; either way nothing is to be written.
func Apply(rec Record, fn func(*Record) error) (next Record, evs []Event, fnErr, err error) {
	id, key, version, status := rec.ID, rec.IdempotencyKey, rec.Version, rec.Status
	rec.Quiet = false // a copy of an earlier quiet write's record says nothing of this one
	if fnErr = fn(&rec); fnErr != nil {
		return Record{}, nil, fnErr, nil
	}
	rec.ID, rec.IdempotencyKey, rec.Version = id, key, version+1 // the keys never change
	if evs, err = TakeEvents(&rec); err != nil {
		return Record{}, nil, nil, err
	}
	rec.Quiet = rec.Quiet && rec.Status == status && len(evs) == 0
	return rec, evs, nil, nil
}

// Clone returns a deep copy of r, so that callers never share slices with a
// store.
func Clone(r Record) Record {
	c := r
	c.Questions = cloneQuestions(r.Questions)
	if r.Agent != nil {
		a := *r.Agent
		c.Agent = &a
	}
	c.ExpiresAt = cloneTime(r.ExpiresAt)
	if r.Callback != nil {
		cb := *r.Callback
		c.Callback = &cb
	}
	if r.EventHook != nil {
		h := *r.EventHook
		c.EventHook = &h
	}
	c.CallbackEvents = append([]string(nil), r.CallbackEvents...)
	c.EndedAt = cloneTime(r.EndedAt)
	if r.Answer != nil {
		a := cloneAnswer(*r.Answer)
		c.Answer = &a
	}
	if r.AnsweredBy != nil {
		u := *r.AnsweredBy
		c.AnsweredBy = &u
	}
	if r.EndedBy != nil {
		u := *r.EndedBy
		c.EndedBy = &u
	}
	if r.Error != nil {
		e := *r.Error
		c.Error = &e
	}
	if r.Responses != nil {
		c.Responses = make([]interaction.Response, len(r.Responses))
		for i, resp := range r.Responses {
			resp.Answer = cloneAnswer(resp.Answer)
			c.Responses[i] = resp
		}
	}
	if r.Tally != nil {
		c.Tally = make(map[string]map[string]int, len(r.Tally))
		for q, counts := range r.Tally {
			m := make(map[string]int, len(counts))
			for l, n := range counts {
				m[l] = n
			}
			c.Tally[q] = m
		}
	}
	if r.Escalation != nil {
		c.Escalation = make([]interaction.EscalationStep, len(r.Escalation))
		for i, st := range r.Escalation {
			st.Responders = append([]string(nil), st.Responders...)
			st.FiredAt = cloneTime(st.FiredAt)
			c.Escalation[i] = st
		}
	}
	c.Handoffs = append([]interaction.Handoff(nil), r.Handoffs...)
	c.Added = append([]string(nil), r.Added...)
	c.Steps = append([]StepSend(nil), r.Steps...)
	if r.RemindSend != nil {
		rs := *r.RemindSend
		c.RemindSend = &rs
	}
	if r.NewEvents != nil {
		c.NewEvents = make([]Event, len(r.NewEvents))
		for i, e := range r.NewEvents {
			c.NewEvents[i] = CloneEvent(e)
		}
	}
	c.Copies = append([]Copy(nil), r.Copies...)
	c.Drawers = append([]Drawer(nil), r.Drawers...)
	c.Mention = append([]string(nil), r.Mention...)
	c.Responders = append([]string(nil), r.Responders...)
	c.Awaited = append([]string(nil), r.Awaited...)
	if r.Drafts != nil {
		c.Drafts = make(map[string][]interaction.Progress, len(r.Drafts))
		for u, ps := range r.Drafts {
			c.Drafts[u] = cloneProgress(ps)
		}
	}
	if r.Progress != nil {
		c.Progress = make([]interaction.Progress, len(r.Progress))
		for i, p := range r.Progress {
			p.Selected = append([]string(nil), p.Selected...)
			c.Progress[i] = p
		}
	}
	return c
}

func cloneQuestions(qs []interaction.Question) []interaction.Question {
	if qs == nil {
		return nil
	}
	out := make([]interaction.Question, len(qs))
	for i, q := range qs {
		q.Options = append([]interaction.Option(nil), q.Options...)
		for j, o := range q.Options {
			if o.Confirm != nil {
				c := *o.Confirm
				q.Options[j].Confirm = &c
			}
		}
		if q.Intent != nil {
			in := *q.Intent
			q.Intent = &in
		}
		if q.AllowOther != nil {
			v := *q.AllowOther
			q.AllowOther = &v
		}
		out[i] = q
	}
	return out
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := *t
	return &v
}

func cloneAnswer(a interaction.Answer) interaction.Answer {
	if a.Answers == nil {
		return a
	}
	out := interaction.Answer{Answers: make([]interaction.AnswerItem, len(a.Answers))}
	for i, it := range a.Answers {
		it.Selected = append([]string{}, it.Selected...)
		out.Answers[i] = it
	}
	return out
}

func cloneProgress(ps []interaction.Progress) []interaction.Progress {
	if ps == nil {
		return nil
	}
	out := make([]interaction.Progress, len(ps))
	for i, p := range ps {
		p.Selected = append([]string(nil), p.Selected...)
		out[i] = p
	}
	return out
}
