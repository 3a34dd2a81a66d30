package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/slackask/slackask/interaction"
)

// dbError is a database failure: an INTERNAL *interaction.Error that keeps
// its cause in the chain.
type dbError struct {
	coded *interaction.Error
	cause error
}

func (e *dbError) Error() string   { return e.coded.Error() }
func (e *dbError) Unwrap() []error { return []error{e.coded, e.cause} }

// Internal returns a database failure of a Store implementation as an
// INTERNAL *interaction.Error whose message is formatted, with cause kept
// in the chain for errors.Is and errors.As.
func Internal(cause error, format string, args ...any) error {
	return &dbError{coded: interaction.Errorf(interaction.Internal, format, args...), cause: cause}
}

// CorruptError names the rows a read of many records (List, Pending,
// ClaimDue) left out because they do not decode. It is returned together
// with the records that did: one corrupt row must not hide every other
// ask from the dispatcher, recovery, inboxes and listings. Its code is
// INTERNAL (each of Errs is).
type CorruptError struct {
	IDs  []string // the rows left out, in the order read
	Errs []error  // Errs[i] is why IDs[i] does not decode
}

// maxNamed bounds the ids a CorruptError's message lists.
const maxNamed = 5

func (e *CorruptError) Error() string {
	named := e.IDs[:min(len(e.IDs), maxNamed)]
	msg := fmt.Sprintf("%d corrupt records left out (%s", len(e.IDs), strings.Join(named, ", "))
	if more := len(e.IDs) - len(named); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	msg += ")"
	if len(e.Errs) > 0 {
		msg += ": " + e.Errs[0].Error()
	}
	return msg
}

func (e *CorruptError) Unwrap() []error { return e.Errs }

// Corrupt adds the row id, which does not decode for err, to *ce,
// making one on the first.
func Corrupt(ce **CorruptError, id string, err error) {
	if *ce == nil {
		*ce = &CorruptError{}
	}
	(*ce).IDs = append((*ce).IDs, id)
	(*ce).Errs = append((*ce).Errs, err)
}

// WrapErr names the operation op in err, as every Store's errors do.
// ErrExists and coded errors (among them ErrNotFound) pass as they are, a
// done context gives its own error, and anything else becomes Internal.
func WrapErr(ctx context.Context, op string, err error) error {
	var coded *interaction.Error
	switch {
	case errors.Is(err, ErrExists), errors.Is(err, ErrNoKey), errors.Is(err, ErrKeyExists), errors.Is(err, ErrInstallChanged), errors.As(err, &coded):
	case ctx.Err() != nil:
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
	default:
		err = Internal(err, "%v", err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Encode returns r as the JSON a database store keeps it in; a record
// that does not encode is an Internal error naming it.
func Encode(r Record) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", Internal(err, "encode record %q: %v", r.ID, err)
	}
	return string(b), nil
}
