package asks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/webhook"
)

// The delivery of an ask's events to its callback URL (callbackEvents
// other than "ended", which is the ask resource at the end: armCallback).
// The events log is the outbox and store.EventHook the cursor: a write
// that emits a chosen event marks the hook in the same transaction
// (markEvents), the dispatcher's duty claims the record and sends the
// chosen events after Sent one at a time, in seq order, each until a 2xx,
// paced and given up as the end's callback is. The body is the event as
// GET /v1/asks/{id}/events serves it; the delivery header is
// "<ask id>/<seq>". An attempt may be repeated (a crash between the 2xx
// and storing it): receivers deduplicate by seq.

// dutyEvents names the event delivery among the dispatcher's duties.
const dutyEvents = "events"

// eventsPerTurn bounds the events one claim of a record delivers, so that
// a long backlog does not hold a dispatcher worker; the rest are due at
// once again.
const eventsPerTurn = 32

// hookedKinds are the kinds of rec's events that go to its callback as
// events (all its CallbackEvents but "ended").
func hookedKinds(rec Record) []string {
	return slices.DeleteFunc(slices.Clone(rec.CallbackKinds()), func(k string) bool { return k == interaction.EventEnded })
}

// prepareEventHook, at create, starts the delivery of the events rec's
// callback chose, to its own URL or this server's default (fixed now, as
// the end's is fixed when it ends). Choosing events without a URL to send
// them to is INVALID_QUESTION.
func (s *Service) prepareEventHook(rec *Record, in interaction.AskInput) error {
	rec.CallbackEvents = in.CallbackEvents
	if len(hookedKinds(*rec)) == 0 {
		return nil
	}
	url := s.callbackURL(*rec)
	if url == "" {
		return interaction.Errorf(interaction.InvalidQuestion,
			"callbackEvents %v: no callbackUrl to send them to, and this server has no SLACKASK_CALLBACK_URL", in.CallbackEvents)
	}
	rec.EventHook = &store.EventHook{Callback: store.Callback{URL: url}}
	return nil
}

// markEvents, inside the write of r that emits r.NewEvents, marks r's
// event hook when one of them is a kind it delivers.
func markEvents(r *Record) {
	if r.EventHook == nil {
		return
	}
	kinds := hookedKinds(*r)
	for _, e := range r.NewEvents {
		if slices.Contains(kinds, e.Kind) {
			h := *r.EventHook // the record's copy may share it: copy on write
			h.Marks++
			r.EventHook = &h
			return
		}
	}
}

// eventsDue reports whether rec has events to deliver with an attempt due
// at now.
func eventsDue(rec Record, now time.Time) bool {
	h := rec.EventHook
	return h.Due() && !h.Next.After(now) && !h.Sending.After(now)
}

// eventsDuty is the event delivery as a dispatcher duty: a record with
// events to deliver is due at the next attempt's time (at once for a
// new mark), on whichever replica claims it.
func (s *Service) eventsDuty() Duty {
	return Duty{
		Name: dutyEvents,
		When: func(rec Record) time.Time {
			h := rec.EventHook
			if !h.Due() {
				return time.Time{}
			}
			at := h.Next
			if h.Sending.After(at) {
				at = h.Sending
			}
			if at.IsZero() {
				at = rec.CreatedAt // a past time: now
			}
			return at
		},
		Do: func(ctx context.Context, rec Record) error {
			for range eventsPerTurn {
				more, err := s.deliverEvent(ctx, rec.ID)
				if err != nil || !more {
					return err
				}
			}
			return nil
		},
	}
}

// deliverEvent makes the attempt that is due for the next event of ask
// id, if any, and stores its outcome; more reports that it was delivered
// and the next may follow at once.
func (s *Service) deliverEvent(ctx context.Context, id string) (more bool, err error) {
	start := s.now()
	// Claim the attempt first, as deliverCallback does: no other attempt
	// (another replica's) starts while it is in flight.
	rec, err := s.store.Update(ctx, id, func(r *Record) error {
		if !eventsDue(*r, start) {
			return errNoChange
		}
		h := *r.EventHook
		h.Sending = start.Add(s.cfg.Callbacks.Deliverer.Timeout() + 5*time.Second)
		r.EventHook = &h
		return nil
	})
	if errors.Is(err, errNoChange) || isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("asks events hook %s: %w", id, err)
	}
	claim := *rec.EventHook
	// Every event marked up to claim.Marks is in the log now: it was
	// committed with its mark.
	evs, err := s.store.Events(ctx, id)
	if err != nil {
		return false, fmt.Errorf("asks events hook %s: %w", id, err)
	}
	kinds := hookedKinds(rec)
	i := slices.IndexFunc(evs, func(e store.Event) bool { return e.Seq > claim.Sent && slices.Contains(kinds, e.Kind) })
	mine := func(r *Record) bool {
		return r.EventHook != nil && r.EventHook.Sent == claim.Sent && r.EventHook.Sending.Equal(claim.Sending)
	}
	if i < 0 {
		// Nothing after Sent: what was marked up to the claim is done.
		_, err := s.store.Update(context.WithoutCancel(ctx), id, func(r *Record) error {
			if !mine(r) {
				return errNoChange
			}
			h := *r.EventHook
			h.Scanned, h.Sending = max(h.Scanned, claim.Marks), time.Time{}
			r.EventHook = &h
			return nil
		})
		if err != nil && !errors.Is(err, errNoChange) {
			return false, fmt.Errorf("asks events hook %s: %w", id, err)
		}
		return false, nil
	}
	e := evs[i]
	body, err := json.Marshal(e)
	if err != nil {
		err = fmt.Errorf("encode event %d: %w", e.Seq, err)
	}
	res := s.attempt(ctx, claim.URL, fmt.Sprintf("%s/%d", id, e.Seq), body, err)
	now := s.now()
	out, err := s.store.Update(context.WithoutCancel(ctx), id, func(r *Record) error {
		if !mine(r) {
			return errNoChange // another replica's attempt got there first
		}
		h := *r.EventHook
		h.Callback = s.settleAttempt(h.Callback, res, start, now, h.URL)
		if res.Outcome == webhook.Delivered {
			// The next event starts its own attempts.
			h.Sent = e.Seq
			h.Callback = store.Callback{URL: h.URL}
		}
		r.EventHook = &h
		return nil
	})
	if errors.Is(err, errNoChange) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("asks events hook %s: %w", id, err)
	}
	attempt := out.EventHook.Callback
	if res.Outcome == webhook.Delivered {
		attempt = s.settleAttempt(claim.Callback, res, start, now, claim.URL) // for the log: the attempt's count
	}
	s.logAttempt(id, fmt.Sprintf("event %d (%s)", e.Seq, e.Kind), attempt, res)
	return res.Outcome == webhook.Delivered, nil
}
