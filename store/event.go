package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/slackask/slackask/interaction"
)

// Event is one entry of an ask's audit trail. Events are append-only: a
// store writes the events a change emitted (Record.Emit) in the same
// transaction as the change, so an event exists iff its change was
// committed, and keeps them as long as their ask (Delete and Prune remove
// them with it).
type Event struct {
	// Seq is assigned by the store: one increasing sequence across all
	// asks, never reused, so that a reader of the feed resumes after any
	// event (see Store.Feed).
	Seq   int64     `json:"seq"`
	AskID string    `json:"askId"`
	At    time.Time `json:"at"`
	Kind  string    `json:"kind"`
	// By is who caused it, when a person did.
	By *interaction.User `json:"by,omitempty"`
	// Data is the kind's details, a JSON object (e.g. posted's channel and
	// ts).
	Data json.RawMessage `json:"data,omitempty"`

	// err is why Emit could not encode data: the store refuses the write.
	err error
}

// The kinds of events (design.md "Audit trail"; interaction.EventKinds),
// with their data.
const (
	EventCreated   = interaction.EventCreated   // no data
	EventPosted    = interaction.EventPosted    // {channel, ts}: one per copy of the message
	EventNotified  = interaction.EventNotified  // {user, how: mention|dm|thread}
	EventReminded  = interaction.EventReminded  // {reminder: n}
	EventEscalated = interaction.EventEscalated // {step}: the index of the escalation step
	EventHandedOff = interaction.EventHandedOff // {from, to}
	EventResponse  = interaction.EventResponse  // {user, answer}
	EventEnded     = interaction.EventEnded     // {status, by}
)

// FeedMax is the most events one Feed call returns; FeedDefault is what
// it returns when the limit is not given.
const (
	FeedMax     = 1000
	FeedDefault = 100
)

// Emit records that kind happened to the ask, by a person (nil for
// slackask itself), with data encoded as JSON (nil for none; a
// json.RawMessage is kept as is). Call it inside a Store.Update fn, or on
// the record given to Create, where the change happens: the store writes
// the event in the transaction that writes the change, and only then (an
// Update whose fn fails, or a Create that finds the idempotency key's
// record, writes none). NewEvents is not kept: the store clears it.
func (r *Record) Emit(kind string, by *interaction.User, data any) {
	e := Event{AskID: r.ID, At: time.Now(), Kind: kind}
	if by != nil {
		u := *by
		e.By = &u
	}
	switch d := data.(type) {
	case nil:
	case json.RawMessage:
		e.Data = append(json.RawMessage(nil), d...)
	default:
		b, err := json.Marshal(data)
		if err != nil {
			e.err = fmt.Errorf("encode the data of event %q: %w", kind, err)
		}
		e.Data = b
	}
	if kind == "" && e.err == nil {
		e.err = fmt.Errorf("an event without a kind")
	}
	r.NewEvents = append(r.NewEvents, e)
}

// TakeEvents returns the events emitted on r, ready for a store to write
// (AskID set to r's id; Seq for the store to assign), and clears
// r.NewEvents. An event that could not be encoded fails the write: an
// Internal error naming it.
func TakeEvents(r *Record) ([]Event, error) {
	evs := r.NewEvents
	r.NewEvents = nil
	if len(evs) == 0 {
		return nil, nil
	}
	out := make([]Event, len(evs))
	for i, e := range evs {
		if e.err != nil {
			return nil, Internal(e.err, "ask %q: %v", r.ID, e.err)
		}
		e.AskID = r.ID
		if e.At.IsZero() {
			e.At = time.Now()
		}
		e.At = e.At.Round(0).UTC() // as every store reads it back
		out[i] = e
	}
	return out, nil
}

// CloneEvent returns a deep copy of e.
func CloneEvent(e Event) Event {
	if e.Data != nil {
		e.Data = append(json.RawMessage(nil), e.Data...)
	}
	if e.By != nil {
		u := *e.By
		e.By = &u
	}
	return e
}

// FeedLimit is limit as Feed applies it: FeedDefault for <= 0, at most
// FeedMax.
func FeedLimit(limit int) int {
	switch {
	case limit <= 0:
		return FeedDefault
	case limit > FeedMax:
		return FeedMax
	}
	return limit
}

// Scanner is a database row (database/sql's and pgx's both are one).
type Scanner interface{ Scan(dest ...any) error }

// ScanEvent reads an event row as both database stores keep it: seq,
// ask_id, at (unix nanoseconds), kind, by_user and data (JSON text, NULL
// for none).
func ScanEvent(row Scanner) (Event, error) {
	var (
		e        Event
		at       int64
		by, data *string
	)
	if err := row.Scan(&e.Seq, &e.AskID, &at, &e.Kind, &by, &data); err != nil {
		return Event{}, err
	}
	e.At = time.Unix(0, at).UTC()
	if by != nil {
		var err error
		if e.By, err = DecodeUser(e.Seq, *by); err != nil {
			return Event{}, err
		}
	}
	if data != nil {
		e.Data = json.RawMessage(*data)
	}
	return e, nil
}

// Rows are the rows of a query (database/sql's and pgx's both are).
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// ScanEvents reads every row (ScanEvent) of rows; the caller closes them.
func ScanEvents(rows Rows) ([]Event, error) {
	var out []Event
	for rows.Next() {
		e, err := ScanEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// EncodeUser and DecodeUser keep Event.By in a database column as JSON
// ("" for nil).
func EncodeUser(u *interaction.User) (string, error) {
	if u == nil {
		return "", nil
	}
	b, err := json.Marshal(u)
	if err != nil {
		return "", Internal(err, "encode event user: %v", err)
	}
	return string(b), nil
}

// DecodeUser is EncodeUser's inverse; a value that does not decode is an
// Internal error naming the event.
func DecodeUser(seq int64, s string) (*interaction.User, error) {
	if s == "" {
		return nil, nil
	}
	var u interaction.User
	if err := json.Unmarshal([]byte(s), &u); err != nil {
		return nil, Internal(err, "corrupt event %d: by: %v", seq, err)
	}
	return &u, nil
}
