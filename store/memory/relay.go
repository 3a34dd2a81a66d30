package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slackask/slackask/store"
)

var _ store.AckRelay = (*Store)(nil)

// relayed is an ack handed over by RelayAck, waiting for TakeAck.
type relayed struct {
	ack []byte
	at  time.Time
}

// RelayAck implements store.AckRelay. Watchers are told after s.mu is
// let go, so that they may call TakeAck at once.
func (s *Store) RelayAck(ctx context.Context, origin, id string, ack []byte) error {
	s.mu.Lock()
	if err := s.check(ctx); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("memory relay ack %s: %w", id, err)
	}
	now := time.Now()
	if s.relays == nil {
		s.relays = map[string]relayed{}
	}
	for k, r := range s.relays {
		if now.Sub(r.at) > store.AckWait {
			delete(s.relays, k)
		}
	}
	s.relays[id] = relayed{ack: slices.Clone(ack), at: now}
	s.mu.Unlock()
	s.acks.Publish(origin, id)
	return nil
}

// WatchAcks implements store.AckRelay.
func (s *Store) WatchAcks(fn func(origin, id string)) (stop func()) { return s.acks.Watch(fn) }

// TakeAck implements store.AckRelay.
func (s *Store) TakeAck(ctx context.Context, id string, maxAge time.Duration) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, false, fmt.Errorf("memory take ack %s: %w", id, err)
	}
	r, ok := s.relays[id]
	delete(s.relays, id)
	if !ok || time.Since(r.at) > maxAge {
		return nil, false, nil
	}
	return r.ack, true, nil
}
