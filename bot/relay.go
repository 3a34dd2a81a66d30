package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/store"
)

// ackRoutes sends each ack on a connection that can still carry it: the
// envelope's own, another open one of this process, or, when none is (a
// stopping replica's last connection sent its close frame), another
// replica's through the shared store (store.AckRelay; ARCHITECTURE.md,
// "Nothing is acked that is not kept"). One per Bot, shared by its Sockets.
// Slack does not document accepting an ack on another connection than the
// envelope's; the fake accepts it.
//
// Concurrency: open is guarded by mu; a connection is in open from its
// hello until before its close frame is written, so a rerouted ack never
// picks a closed one (a racing write fails and the next one is tried).
// turn is a one-slot semaphore held by the connection a shutdown closes.
type ackRoutes struct {
	relay  store.AckRelay // nil: no other process to hand acks to
	origin string         // this process, in the relay
	log    zerolog.Logger

	mu   sync.Mutex
	open []*socketConn

	turn  chan struct{}
	takes sync.WaitGroup // TakeAck-and-write calls started by serve
}

// relayTimeout bounds one RelayAck or TakeAck: past Slack's 3 s the ack
// is useless anyway.
const relayTimeout = 2 * time.Second

func newAckRoutes(relay store.AckRelay, log zerolog.Logger) *ackRoutes {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return &ackRoutes{relay: relay, origin: hex.EncodeToString(b), log: log, turn: make(chan struct{}, 1)}
}

// add makes c a route for others' acks (at its hello).
func (r *ackRoutes) add(c *socketConn) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.open, c) {
		r.open = append(r.open, c)
	}
}

// remove takes c out of the routes (before its close frame, and when its
// reader ends).
func (r *ackRoutes) remove(c *socketConn) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open = slices.DeleteFunc(r.open, func(x *socketConn) bool { return x == c })
}

// routes returns the open connections other than c, newest first (the
// least likely to be closing next).
func (r *ackRoutes) routes(c *socketConn) []*socketConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*socketConn, 0, len(r.open))
	for i := len(r.open) - 1; i >= 0; i-- {
		if r.open[i] != c {
			out = append(out, r.open[i])
		}
	}
	return out
}

// reroute sends frame, the ack of envelope id that could not be written
// on c (failed with cause), on another open connection, else through the
// relay. It returns nil once the ack is out or handed over, else an error
// that says why not.
func (r *ackRoutes) reroute(c *socketConn, id string, frame []byte, cause error) error {
	if r == nil {
		return cause
	}
	for _, o := range r.routes(c) {
		if err := o.write(id, frame); err == nil {
			r.log.Debug().Str("envelope", id).Msg("ack sent on another connection: its own had closed")
			return nil
		}
	}
	if r.relay == nil {
		return fmt.Errorf("%w; no other connection to send it on", cause)
	}
	ctx, cancel := context.WithTimeout(context.Background(), relayTimeout)
	defer cancel()
	if err := r.relay.RelayAck(ctx, r.origin, id, frame); err != nil {
		return fmt.Errorf("%w; relaying it to another replica: %w", cause, err)
	}
	r.log.Debug().Str("envelope", id).Msg("ack relayed to another replica: no connection of this one could send it")
	return nil
}

// serve takes the acks other processes relay and writes each on an open
// connection of this one, until ctx ends; the func it returns stops it
// and waits for the writes in flight. A process without an open
// connection takes none (another replica will).
func (r *ackRoutes) serve(ctx context.Context) (stop func()) {
	if r.relay == nil {
		return func() {}
	}
	unwatch := r.relay.WatchAcks(func(origin, id string) {
		if origin == r.origin || ctx.Err() != nil || len(r.routes(nil)) == 0 {
			return
		}
		r.takes.Go(func() { r.take(ctx, id) })
	})
	return func() {
		unwatch()
		r.takes.Wait()
	}
}

// take takes the relayed ack of envelope id, if no other process did,
// and writes it on an open connection.
func (r *ackRoutes) take(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, relayTimeout)
	defer cancel()
	frame, ok, err := r.relay.TakeAck(ctx, id, store.AckWait)
	if err != nil {
		r.log.Warn().Err(err).Str("envelope", id).Msg("taking a relayed ack failed")
		return
	}
	if !ok {
		return // another replica took it, or it was stale
	}
	for _, c := range r.routes(nil) {
		if c.write(id, frame) == nil {
			r.log.Debug().Str("envelope", id).Msg("relayed ack sent for another replica")
			return
		}
	}
	r.log.Warn().Str("envelope", id).Msg("relayed ack lost: no connection could send it")
}

// closeInTurn runs closeConn, a shutdown's closing of c, once no other
// connection of the process is closing, and holds the turn until c's
// reader has ended and every envelope read from c is settled (or ctx
// ends): the acks of envelopes that arrived after c's close frame go out
// on a sibling, which must stay open until they have. So a stopping
// process closes its connections one at a time, and only the last one's
// late envelopes need the relay.
func (r *ackRoutes) closeInTurn(ctx context.Context, c *socketConn, closeConn func()) {
	if r == nil {
		closeConn()
		return
	}
	select {
	case r.turn <- struct{}{}:
		defer func() { <-r.turn }()
	case <-ctx.Done():
	}
	closeConn()
	if c.readerDone != nil {
		select {
		case <-c.readerDone:
		case <-ctx.Done():
			return
		}
	}
	c.waitSettled(ctx, settleWait)
}
