// Package memory is an in-process store.Store: fast, and gone with the
// process. Use it in tests and when durability does not matter.
package memory

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/internal/watch"
)

// Store is an in-memory store.Store. The zero value is not usable: call New.
type Store struct {
	mu      sync.Mutex
	records map[string]store.Record
	byKey   map[string]string // idempotency key → id
	secrets map[string][]byte
	leases  map[string]lease
	closed  bool
	hub     watch.Hub
	relays  map[string]relayed // envelope id → relayed ack (relay.go)
	keys    []store.APIKey     // oldest first (keys.go)
	// installs by Key and nonces with their expiry (installs.go)
	installs map[string]store.InstallRow
	nonces   map[string]time.Time
	// orgTeams: team → the enterprise whose org-wide install serves it
	orgTeams map[string]string
	acks     watch.Acks
	// events is the audit trail of every ask, Seq ascending; seq is the
	// last Seq given out (never reused, also after Prune).
	events []store.Event
	seq    int64
}

type lease struct {
	holder  string
	expires time.Time
}

// New returns an empty store.
func New() *Store {
	return &Store{records: map[string]store.Record{}, byKey: map[string]string{}, secrets: map[string][]byte{}, leases: map[string]lease{}}
}

var errClosed = interaction.Errorf(interaction.Internal, "memory store: closed")

func (s *Store) check(ctx context.Context) error {
	if s.closed {
		return errClosed
	}
	return ctx.Err()
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, r store.Record) (store.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Record{}, false, fmt.Errorf("memory create: %w", err)
	}
	if r.IdempotencyKey != "" {
		if id, ok := s.byKey[r.IdempotencyKey]; ok {
			return store.Clone(s.records[id]), false, nil
		}
	}
	if _, ok := s.records[r.ID]; ok {
		return store.Record{}, false, fmt.Errorf("memory create %s: %w", r.ID, store.ErrExists)
	}
	r = store.Clone(r)
	evs, err := store.TakeEvents(&r)
	if err != nil {
		return store.Record{}, false, fmt.Errorf("memory create %s: %w", r.ID, err)
	}
	r.Version = 1
	s.records[r.ID] = r
	s.append(evs)
	if r.IdempotencyKey != "" {
		s.byKey[r.IdempotencyKey] = r.ID
	}
	s.publish(r, false)
	return store.Clone(r), true, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Record{}, fmt.Errorf("memory get: %w", err)
	}
	r, ok := s.records[id]
	if !ok {
		return store.Record{}, fmt.Errorf("memory get %q: %w", id, store.ErrNotFound)
	}
	return store.Clone(r), nil
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, id string, fn func(*store.Record) error) (store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.Record{}, fmt.Errorf("memory update: %w", err)
	}
	r, ok := s.records[id]
	if !ok {
		return store.Record{}, fmt.Errorf("memory update %q: %w", id, store.ErrNotFound)
	}
	c, evs, fnErr, err := store.Apply(store.Clone(r), fn)
	if fnErr != nil {
		return store.Record{}, fnErr
	}
	if err != nil {
		return store.Record{}, fmt.Errorf("memory update %q: %w", id, err)
	}
	s.records[id] = store.Clone(c)
	s.append(evs)
	if !c.Quiet {
		s.publish(c, false)
	}
	// fn may keep the pointer it was given: return a copy that shares
	// nothing with it.
	return store.Clone(c), nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory delete: %w", err)
	}
	r, ok := s.records[id]
	if !ok {
		return fmt.Errorf("memory delete %q: %w", id, store.ErrNotFound)
	}
	s.remove(r)
	s.dropEvents(map[string]bool{id: true})
	return nil
}

// append gives evs the next seqs and adds them to the log.
func (s *Store) append(evs []store.Event) {
	for _, e := range evs {
		s.seq++
		e.Seq = s.seq
		s.events = append(s.events, e)
	}
}

// dropEvents removes the events of the asks in ids.
func (s *Store) dropEvents(ids map[string]bool) {
	kept := s.events[:0]
	for _, e := range s.events {
		if !ids[e.AskID] {
			kept = append(kept, e)
		}
	}
	clear(s.events[len(kept):])
	s.events = kept
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, id string) ([]store.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory events %q: %w", id, err)
	}
	var out []store.Event
	for _, e := range s.events {
		if e.AskID == id {
			out = append(out, store.CloneEvent(e))
		}
	}
	return out, nil
}

// Feed implements store.Store.
func (s *Store) Feed(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory feed: %w", err)
	}
	i := sort.Search(len(s.events), func(i int) bool { return s.events[i].Seq > after })
	var out []store.Event
	for _, e := range s.events[i:min(len(s.events), i+store.FeedLimit(limit))] {
		out = append(out, store.CloneEvent(e))
	}
	return out, nil
}

func (s *Store) remove(r store.Record) {
	delete(s.records, r.ID)
	if r.IdempotencyKey != "" {
		delete(s.byKey, r.IdempotencyKey)
	}
	s.publish(r, true)
}

// publish tells the watchers about a committed write of r. It is called
// with s.mu held, so changes are queued in commit order.
func (s *Store) publish(r store.Record, deleted bool) {
	s.hub.Publish(store.Change{ID: r.ID, Version: r.Version, Status: r.Status, Deleted: deleted})
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory list: %w", err)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	var out []store.Record
	for _, r := range s.records {
		if matches(r, f) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	for i := range out {
		out[i] = store.Clone(out[i])
	}
	return out, nil
}

func matches(r store.Record, f store.Filter) bool {
	switch {
	case f.Status != "" && r.Status != f.Status:
		return false
	case !f.Before.IsZero() && !r.CreatedAt.Before(f.Before):
		return false
	case f.Unsynced && (r.Synced || !r.Status.Ended()):
		return false
	case f.Owner != "" && r.Owner != f.Owner:
		return false
	}
	return true
}

// Pending implements store.Store.
func (s *Store) Pending(ctx context.Context) ([]store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory pending: %w", err)
	}
	var out []store.Record
	for _, r := range s.records {
		if r.Status == interaction.StatusPending {
			out = append(out, store.Clone(r))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Queue implements store.Store.
func (s *Store) Queue(ctx context.Context, name string, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory queue: %w", err)
	}
	if limit <= 0 || name == "" {
		return nil, nil
	}
	var in []store.Record
	for _, r := range s.records {
		if r.Status == interaction.StatusPending && r.PostQueue == name {
			in = append(in, r)
		}
	}
	sort.Slice(in, func(i, j int) bool {
		if !in[i].CreatedAt.Equal(in[j].CreatedAt) {
			return in[i].CreatedAt.Before(in[j].CreatedAt)
		}
		return in[i].ID < in[j].ID
	})
	var out []string
	for _, r := range in[:min(limit, len(in))] {
		out = append(out, r.ID)
	}
	return out, nil
}

// Prune implements store.Store.
func (s *Store) Prune(ctx context.Context, t time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return 0, fmt.Errorf("memory prune: %w", err)
	}
	gone := map[string]bool{}
	for _, r := range s.records {
		if r.Status.Ended() && r.EndedAt != nil && r.EndedAt.Before(t) {
			s.remove(r)
			gone[r.ID] = true
		}
	}
	if len(gone) > 0 {
		s.dropEvents(gone)
	}
	return len(gone), nil
}

// Secret implements store.Store.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory secret: %w", err)
	}
	if k, ok := s.secrets[name]; ok {
		return append([]byte(nil), k...), nil
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("memory secret: %w", err)
	}
	s.secrets[name] = k
	return append([]byte(nil), k...), nil
}

// ClaimDue implements store.Store.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory claim due: %w", err)
	}
	if limit <= 0 {
		return nil, nil
	}
	var due []store.Record
	for _, r := range s.records {
		if !r.WakeAt.IsZero() && !r.WakeAt.After(now) {
			due = append(due, r)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].WakeAt.Equal(due[j].WakeAt) {
			return due[i].WakeAt.Before(due[j].WakeAt)
		}
		return due[i].ID < due[j].ID
	})
	if len(due) > limit {
		due = due[:limit]
	}
	for i, r := range due {
		r.WakeAt = now.Add(lease)
		r.Version++
		s.records[r.ID] = r
		s.publish(r, false)
		due[i] = store.Clone(r)
	}
	return due, nil
}

// Watch implements store.Store.
func (s *Store) Watch(fn func(store.Change)) (stop func()) { return s.hub.Watch(fn) }

// Lease implements store.Store. Expiry is judged by this process's clock.
func (s *Store) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return false, fmt.Errorf("memory lease %q: %w", name, err)
	}
	now := time.Now()
	cur, ok := s.leases[name]
	mine := ok && cur.holder == holder
	if ttl <= 0 {
		if mine {
			delete(s.leases, name)
		}
		return false, nil
	}
	if ok && !mine && now.Before(cur.expires) {
		return false, nil
	}
	s.leases[name] = lease{holder: holder, expires: now.Add(ttl)}
	return true, nil
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.hub.Close()
	s.acks.Close()
	return nil
}
