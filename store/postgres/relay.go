package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slackask/slackask/store"
)

var _ store.AckRelay = (*Store)(nil)

// ackChannel is the channel relayed acks of schema are announced on, beside
// notifyChannel's: "slackask_ack_" and the first 20 hex digits of
// md5(schema).
func ackChannel(schema string) string { return schemaChannel("slackask_ack_", schema) }

// ackNote is the payload of an ackChannel notification.
type ackNote struct {
	Origin string `json:"o"`
	ID     string `json:"id"`
}

// RelayAck implements store.AckRelay: one statement drops the entries
// older than store.AckWait, inserts this one (a second relay of one
// envelope replaces the first) and notifies ackChannel, which PostgreSQL
// delivers when the statement commits, so a listener's TakeAck finds it.
func (s *Store) RelayAck(ctx context.Context, origin, id string, ack []byte) error {
	const op = "postgres relay ack"
	if err := s.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	note, err := json.Marshal(ackNote{Origin: origin, ID: id})
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	_, err = s.pool.Exec(ctx, `WITH gone AS (
			DELETE FROM ack_relays WHERE created_at < clock_timestamp() - make_interval(secs => $4)),
		put AS (
			INSERT INTO ack_relays (envelope_id, origin, ack) VALUES ($1, $2, $3)
			ON CONFLICT (envelope_id) DO UPDATE SET origin = excluded.origin, ack = excluded.ack, created_at = excluded.created_at)
		SELECT pg_notify($5, $6)`,
		id, origin, ack, store.AckWait.Seconds(), s.ackChannel, string(note))
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	return nil
}

// WatchAcks implements store.AckRelay, through this Store's LISTEN
// connection.
func (s *Store) WatchAcks(fn func(origin, id string)) (stop func()) { return s.acks.Watch(fn) }

// TakeAck implements store.AckRelay: the DELETE … RETURNING takes the row
// for one caller only; the age is judged by the database's clock, the one
// every replica shares.
func (s *Store) TakeAck(ctx context.Context, id string, maxAge time.Duration) ([]byte, bool, error) {
	const op = "postgres take ack"
	if err := s.check(ctx); err != nil {
		return nil, false, store.WrapErr(ctx, op, err)
	}
	var (
		ack   []byte
		fresh bool
	)
	err := s.pool.QueryRow(ctx, `DELETE FROM ack_relays WHERE envelope_id = $1
		RETURNING ack, created_at >= clock_timestamp() - make_interval(secs => $2)`, id, maxAge.Seconds()).Scan(&ack, &fresh)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, store.WrapErr(ctx, op, err)
	}
	return ack, fresh, nil
}

// publishAck hands an ackChannel notification to the WatchAcks watchers.
func (s *Store) publishAck(payload string) {
	var n ackNote
	if err := json.Unmarshal([]byte(payload), &n); err == nil && n.ID != "" {
		s.acks.Publish(n.Origin, n.ID)
	}
}
