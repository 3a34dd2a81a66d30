package bot

import (
	"context"
	"sync"
)

// orderLine carries journaled envelopes from the readers of one or more
// Sockets to one goroutine (run) that decodes and routes them in the order
// they were put on it. A reader puts an envelope on the line before it
// acks it, so whatever is read after that ack, on any connection, is
// routed after it; it wakes the line only after the ack, which is why put
// and wake are apart.
type orderLine struct {
	room chan struct{} // a token per envelope on the line: at most inboundBuffer
	bell chan struct{} // 1-buffered: something was put since run last looked

	mu     sync.Mutex
	queue  []linedEnvelope
	closed bool
}

// linedEnvelope is an envelope on the line: s routes it on ctx, then done
// tells s's Run it was routed.
type linedEnvelope struct {
	s    *Socket
	ctx  context.Context
	f    inbound
	done func()
}

func newOrderLine() *orderLine {
	return &orderLine{room: make(chan struct{}, inboundBuffer), bell: make(chan struct{}, 1)}
}

// put appends e to the line, waiting while it is full (the routing is
// inboundBuffer envelopes behind: the reader then stops reading, as for
// its dispatcher). It reports false when ctx ended first.
func (l *orderLine) put(ctx context.Context, e linedEnvelope) bool {
	select {
	case l.room <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	l.mu.Lock()
	l.queue = append(l.queue, e)
	l.mu.Unlock()
	return true
}

// wake has run look at the line.
func (l *orderLine) wake() {
	select {
	case l.bell <- struct{}{}:
	default: // rung already
	}
}

// close has run return once the line is empty; nothing may be put after.
func (l *orderLine) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wake()
}

// run routes what is put on the line, in order, until it is closed and
// empty. It decodes without a work slot: the readers wait for its room.
//
// The queue and the batch being routed trade places: a put appends to
// the array the batch before last was routed from, so once both have
// grown to a burst's size a put (on the ack's path) allocates nothing.
func (l *orderLine) run() {
	var spare []linedEnvelope
	for {
		l.mu.Lock()
		batch, closed := l.queue, l.closed
		if len(batch) > 0 {
			l.queue = spare
		}
		l.mu.Unlock()
		if len(batch) == 0 {
			if closed {
				return
			}
			<-l.bell // a ring left from a batch already taken only loops once more
			continue
		}
		for _, e := range batch {
			e.s.dispatch(e.ctx, e.f, true)
			e.done()
			<-l.room
		}
		clear(batch) // holds no envelope's context or frame while it waits
		spare = batch[:0]
	}
}
