package slackfake

import (
	"context"
	"sync"
)

// EventType names what changed in the fake.
type EventType string

// Event types reported by Subscribe.
const (
	EventMessagePosted  EventType = "message_posted"
	EventMessageUpdated EventType = "message_updated"
	EventMessageDeleted EventType = "message_deleted"
	EventEphemeral      EventType = "ephemeral_posted"
	EventViewOpened     EventType = "view_opened"
	EventViewUpdated    EventType = "view_updated"
	EventViewClosed     EventType = "view_closed"
	EventConnected      EventType = "socket_connected"
	EventDisconnected   EventType = "socket_disconnected"
	// EventInteractionFailed: a block_actions or view_submission was not
	// acked in time and the person saw an error (see FailedInteractions).
	EventInteractionFailed EventType = "interaction_failed"
)

// Event reports one change; fields that do not apply are empty.
type Event struct {
	Type    EventType
	Channel string
	TS      string
	User    string
	ViewID  string
}

type subscriber struct {
	mu     sync.Mutex
	queue  []Event
	signal chan struct{}
	out    chan Event
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// Subscribe returns a channel of every event from now on, in order and
// without loss, and a cancel func that closes the channel. The channel is
// also closed by Server.Close; after Close it is returned already closed.
func (s *Server) Subscribe() (events <-chan Event, cancel func()) {
	sub := &subscriber{
		signal: make(chan struct{}, 1),
		out:    make(chan Event),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(sub.out)
		return sub.out, func() {}
	}
	s.subs[sub] = struct{}{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		sub.run()
	}()
	return sub.out, func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
		sub.cancel()
	}
}

func (sub *subscriber) run() {
	defer close(sub.done)
	defer close(sub.out)
	for {
		sub.mu.Lock()
		if len(sub.queue) == 0 {
			sub.mu.Unlock()
			select {
			case <-sub.signal:
				continue
			case <-sub.stop:
				return
			}
		}
		ev := sub.queue[0]
		sub.queue = sub.queue[1:]
		sub.mu.Unlock()
		select {
		case sub.out <- ev:
		case <-sub.stop:
			return
		}
	}
}

func (sub *subscriber) push(ev Event) {
	sub.mu.Lock()
	sub.queue = append(sub.queue, ev)
	sub.mu.Unlock()
	select {
	case sub.signal <- struct{}{}:
	default:
	}
}

func (sub *subscriber) cancel() {
	sub.once.Do(func() { close(sub.stop) })
	<-sub.done
}

func (s *Server) subscribers() []*subscriber {
	out := make([]*subscriber, 0, len(s.subs))
	for sub := range s.subs {
		out = append(out, sub)
	}
	return out
}

// emitLocked reports ev to subscribers and waiters. s.mu must be held.
func (s *Server) emitLocked(ev Event) {
	for sub := range s.subs {
		sub.push(ev)
	}
	s.notifyLocked()
}

// WaitFor calls cond now and after every change in the fake until it
// returns true (nil). It returns ctx.Err() when ctx ends first and ErrClosed
// when the server closes first. cond must not block.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		ch, closed := s.changeChan()
		if cond() {
			return nil
		}
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
