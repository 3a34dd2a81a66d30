package store

import (
	"context"
	"time"
)

// AckWait is how long Slack waits for the ack of an envelope before it
// shows the person an error: a relayed ack older than this is useless, and
// RelayAck drops such entries.
const AckWait = 3 * time.Second

// AckRelay is an optional capability of a Store that several processes
// share (store/postgres; store/memory for tests): it hands the Socket Mode
// ack of an envelope that a stopping process read and stored but can no
// longer ack (its last connection sent its close frame) to another
// process, which acks it on one of its own connections (bot/relay.go). It
// carries the ack frame as opaque bytes; an entry lives at most as long as
// Slack waits for an ack (3 s): TakeAck drops older ones.
//
// Concurrency: safe for concurrent use by every process sharing the
// database; of all TakeAck calls for one envelope id, at most one returns
// ok.
type AckRelay interface {
	// RelayAck records ack, the frame that acks envelope id, as sent by
	// origin (an id of the relaying process), and tells the WatchAcks
	// watchers of every Store sharing the database, once it is committed.
	RelayAck(ctx context.Context, origin, id string, ack []byte) error
	// WatchAcks calls fn with each relayed ack's origin and envelope id,
	// from every Store sharing the database (this one's included: the
	// watcher skips its own origin). fn runs on a goroutine of the store,
	// one call at a time; it must not block (start the TakeAck elsewhere).
	// After stop returns fn is not called again; Close stops every watch.
	// A relay made while the store was not listening is not announced (it
	// would be stale by the time it was).
	WatchAcks(fn func(origin, id string)) (stop func())
	// TakeAck removes the relayed ack of envelope id and returns its frame;
	// ok is false when there is none: already taken, never relayed, or
	// relayed more than maxAge ago (then it is dropped).
	TakeAck(ctx context.Context, id string, maxAge time.Duration) (ack []byte, ok bool, err error)
}
