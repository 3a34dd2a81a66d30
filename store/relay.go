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
// share (store/postgres; store/memory for tests of several bots in one
// process): it hands the Socket Mode ack of an envelope from a process
// that read the envelope but can no longer ack it to another process,
// which acks it on one of its own connections to Slack.
//
// Why: a replica that stops ends its last connection with a close frame;
// an envelope Slack wrote to that connection before it read the close
// frame is still read, handled and stored, but its ack cannot go out on
// that connection (a websocket sends no data after its close frame). The
// act is in the shared store already; only the ack travels here.
//
// The relay carries opaque bytes: the ack frame as the origin would have
// written it. An entry lives at most as long as Slack waits for an ack
// (3 s): TakeAck drops older ones instead of handing them out.
//
// Concurrency: every method is safe for concurrent use, from any number of
// processes sharing the database. Of all TakeAck calls for one envelope id,
// at most one returns ok (the entry is removed in the same atomic step).
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
