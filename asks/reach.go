package asks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/webhook"
)

// Callbacks configure the delivery of ended asks to callback URLs.
type Callbacks struct {
	// DefaultURL receives the asks that name no callbackUrl; "" for none.
	// It is read when an ask ends and kept with its delivery, so a changed
	// default applies to asks already pending, not to deliveries under way.
	DefaultURL string
	// Secret signs every callback. Without it a per-ask callbackUrl is
	// refused at create (an unsigned callback cannot be trusted by its
	// receiver); the configuration refuses a DefaultURL without it. An
	// attempt made without it (by a replica configured apart from the one
	// that ended the ask) fails as retryable, for one that has it.
	Secret []byte
	// Guard decides which addresses a callback may reach.
	Guard webhook.Guard
	// Deliverer makes the attempts; nil: one built from Guard.
	Deliverer *webhook.Deliverer
	// Schedule paces the retries; zero: webhook.DefaultSchedule.
	Schedule webhook.Schedule
}

func (c *Callbacks) init() {
	if c.Deliverer == nil {
		c.Deliverer = webhook.NewDeliverer(webhook.Options{Guard: c.Guard})
	}
	if c.Schedule == (webhook.Schedule{}) {
		c.Schedule = webhook.DefaultSchedule
	}
}

// prepareReach fills in what a new record keeps of in beyond the ask
// itself: the request's fingerprint (for IDEMPOTENCY_MISMATCH) and its
// callback URL, which is checked here (syntax, the address guard, a secret
// to sign with) so that a bad one is refused at create rather than found
// when the ask ends.
func (s *Service) prepareReach(rec *Record, in interaction.AskInput) error {
	rec.Fingerprint = in.Fingerprint()
	if in.CallbackURL == "" {
		return s.prepareEventHook(rec, in)
	}
	if len(s.cfg.Callbacks.Secret) == 0 {
		return interaction.Errorf(interaction.InvalidQuestion,
			"callbackUrl: this server has no SLACKASK_CALLBACK_SECRET, and it never sends an unsigned callback: set the secret on the server, or leave callbackUrl out")
	}
	if err := s.cfg.Callbacks.Guard.CheckURL(in.CallbackURL); err != nil {
		var ie *interaction.Error
		if errors.As(err, &ie) {
			return interaction.Errorf(interaction.InvalidQuestion, "%s", ie.Message)
		}
		return interaction.Errorf(interaction.InvalidQuestion, "callbackUrl: %v", err)
	}
	rec.CallbackURL = in.CallbackURL
	return s.prepareEventHook(rec, in)
}

// sameRequest refuses a create whose IdempotencyKey names an ask created by
// another request: returning that ask would let the caller believe it
// asked something new.
func sameRequest(existing Record, in interaction.AskInput) error {
	if existing.Fingerprint == "" || existing.Fingerprint == in.Fingerprint() {
		return nil
	}
	return interaction.Errorf(interaction.IdempotencyMismatch,
		"idempotencyKey %q was used by ask %s for a different request: use a new key for a new question", in.IdempotencyKey, existing.ID)
}

// callbackURL is where the ended ask rec is delivered: the URL its
// delivery was armed with, else its own URL, else this process's default;
// "" for none.
func (s *Service) callbackURL(rec Record) string {
	switch {
	case rec.Callback != nil && rec.Callback.URL != "":
		return rec.Callback.URL
	case rec.CallbackURL != "":
		return rec.CallbackURL
	}
	return s.cfg.Callbacks.DefaultURL
}

// armCallback, inside the compare-and-set that ends r, starts the durable
// delivery of r to its callback URL: the delivery state is stored with the
// end itself, so an end that is stored is delivered even if the process
// dies right after, and the record is due at once. The URL is fixed here:
// the attempts may be made by replicas (or a restart) whose default
// differs, e.g. during a deploy that sets SLACKASK_CALLBACK_URL.
func (s *Service) armCallback(r *Record, now time.Time) {
	url := s.callbackURL(*r)
	if r.Callback != nil || url == "" || !r.WantsCallback(interaction.EventEnded) {
		return
	}
	r.Callback = &store.Callback{URL: url, Next: now}
	r.WakeAt = now
}

// dutyCallback names the delivery of ended asks to their callback URLs
// among the dispatcher's duties.
const dutyCallback = "callback"

// callbackDuty is the delivery as a dispatcher duty: an ended record whose
// delivery is not over is due at Callback.Next, on whichever replica
// claims it, so an attempt survives restarts and is made by one replica
// at a time.
func (s *Service) callbackDuty() Duty {
	return Duty{
		Name: dutyCallback,
		When: func(rec Record) time.Time {
			if !rec.Status.Ended() || rec.Callback.Done() {
				return time.Time{}
			}
			if rec.Callback.Sending.After(rec.Callback.Next) {
				return rec.Callback.Sending
			}
			return rec.Callback.Next
		},
		Do: func(ctx context.Context, rec Record) error {
			_, err := s.deliverCallback(ctx, rec)
			return err
		},
	}
}

// redactURL replaces raw, a callback URL, in msg by its scheme, host and
// path: a URL's query often carries a token, and the error is logged and
// stored.
func redactURL(msg, raw string) string {
	u, err := neturl.Parse(raw)
	if raw == "" || err != nil || (u.RawQuery == "" && u.Fragment == "") {
		return msg
	}
	short := (&neturl.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String() + "?…"
	msg = strings.ReplaceAll(msg, raw, short)
	if u.RawQuery != "" {
		msg = strings.ReplaceAll(msg, u.RawQuery, "…")
	}
	return msg
}

// callbackDue reports whether rec has a delivery attempt due at now.
func callbackDue(rec Record, now time.Time) bool {
	return rec.Status.Ended() && !rec.Callback.Done() && !rec.Callback.Next.After(now) && !rec.Callback.Sending.After(now)
}

// deliverCallback makes the delivery attempt of the ended ask rec that is
// due and stores its outcome in rec.Callback: delivered (never sent
// again), given up (this side cannot send it: the guard refuses the URL or
// its address, or the URL is malformed; or the retry window passed: both
// logged), or the time of the next attempt, which is also the record's
// WakeAt. Every answer of the receiver but a 2xx is retried: a 4xx or 3xx
// can change by waiting (a secret being rotated, a deploy), and the
// delivery is promised until a 2xx or the window's end. It returns the record as stored. A record whose delivery is not
// due or is over is returned unchanged. The body is the ask resource as
// GET /v1/asks/{id} returns it, signed with Callbacks.Secret.
func (s *Service) deliverCallback(ctx context.Context, rec Record) (Record, error) {
	start := s.now()
	if !callbackDue(rec, start) {
		return rec, nil
	}
	cb := &s.cfg.Callbacks
	// Claim the attempt in the record first: a write of the record by
	// anyone (which moves its WakeAt) or another replica's claim must not
	// start a second attempt while this one is in flight, or one end
	// could be delivered twice.
	// (Update returns a zero record with errNoChange: rec keeps the id.)
	claimed, err := s.store.Update(ctx, rec.ID, func(r *Record) error {
		if !callbackDue(*r, start) {
			return errNoChange
		}
		c := *r.Callback
		c.Sending = start.Add(cb.Deliverer.Timeout() + 5*time.Second)
		r.Callback = &c
		return nil
	})
	if errors.Is(err, errNoChange) {
		return s.store.Get(context.WithoutCancel(ctx), rec.ID)
	}
	if err != nil {
		return rec, fmt.Errorf("asks callback %s: %w", rec.ID, err)
	}
	rec = claimed
	url := s.callbackURL(rec)
	body, err := json.Marshal(rec.Ask)
	if err != nil {
		err = fmt.Errorf("encode the ask: %w", err)
	}
	res := s.attempt(ctx, url, rec.ID, body, err)
	now := s.now()
	out, err := s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
		if r.Callback.Done() || r.Callback.Attempts != rec.Callback.Attempts || !r.Callback.Sending.Equal(rec.Callback.Sending) {
			return errNoChange // another replica's attempt got there first
		}
		c := s.settleAttempt(*r.Callback, res, start, now, url)
		r.Callback = &c
		r.WakeAt = c.Next
		return nil
	})
	if errors.Is(err, errNoChange) {
		return s.store.Get(context.WithoutCancel(ctx), rec.ID)
	}
	if err != nil {
		return rec, fmt.Errorf("asks callback %s: %w", rec.ID, err)
	}
	s.logAttempt(rec.ID, "callback", *out.Callback, res)
	return out, nil
}

// attempt makes one delivery attempt of body (encErr: why it could not
// be encoded) to url, with id in the delivery header.
func (s *Service) attempt(ctx context.Context, url, id string, body []byte, encErr error) webhook.Result {
	cb := &s.cfg.Callbacks
	switch {
	case encErr != nil:
		return webhook.Result{Outcome: webhook.Permanent, Err: encErr}
	// A process that cannot send (a replica whose configuration lags the
	// one that ended the ask) fails the attempt as retryable: a replica
	// with the setting, or this one once it has it, makes the next one
	// within the retry window; giving up here would lose the delivery.
	case url == "":
		return webhook.Result{Outcome: webhook.Retryable, Err: errors.New("no callback URL: the ask ended before its URL was kept, and this process has no SLACKASK_CALLBACK_URL")}
	case len(cb.Secret) == 0:
		return webhook.Result{Outcome: webhook.Retryable, Err: errors.New("this process has no SLACKASK_CALLBACK_SECRET to sign the callback with")}
	}
	return cb.Deliverer.Deliver(ctx, url, id, cb.Secret, body)
}

// settleAttempt returns c after the attempt that started at start and ended at
// now with res: delivered, given up (refused here, or the retry window
// passed), or the time of the next attempt. Any answer but a 2xx is
// retried.
func (s *Service) settleAttempt(c store.Callback, res webhook.Result, start, now time.Time, url string) store.Callback {
	c.Attempts++
	c.Sending = time.Time{}
	if c.First.IsZero() {
		c.First = start
	}
	c.Next, c.LastError = time.Time{}, ""
	switch res.Outcome {
	case webhook.Delivered:
		c.Delivered = now
	case webhook.Permanent:
		c.GaveUp, c.LastError = true, redactURL(res.Err.Error(), url)
	default:
		c.LastError = redactURL(res.Err.Error(), url)
		at, giveUp := res.RetryAt(s.cfg.Callbacks.Schedule, c.Attempts, c.First, now)
		if giveUp {
			c.GaveUp = true
		} else {
			c.Next = at
		}
	}
	return c
}

// logAttempt logs the outcome of an attempt of what (c as settled).
func (s *Service) logAttempt(id, what string, c store.Callback, res webhook.Result) {
	l := s.log.With().Str("ask", id).Int("attempt", c.Attempts).Logger()
	switch {
	case res.Outcome == webhook.Delivered:
		l.Info().Msg(what + " delivered")
	case c.GaveUp:
		l.Error().Str("error", c.LastError).Msg(what + " given up")
	default:
		l.Warn().Str("error", c.LastError).Time("next", c.Next).Msg(what + " failed; will retry")
	}
}
