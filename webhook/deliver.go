package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// DefaultTimeout bounds one attempt: connecting, sending, and the
// receiver's response.
const DefaultTimeout = 10 * time.Second

// maxDrain is how much of a response body is read (so the connection can
// be reused); the body means nothing to a delivery and the rest is dropped.
const maxDrain = 64 << 10

// Outcome is what one attempt came to.
type Outcome int

// The outcomes of an attempt.
const (
	// Delivered: the receiver answered 2xx. Do not send again.
	Delivered Outcome = iota + 1
	// Retryable: the receiver answered anything but a 2xx (a 3xx too:
	// a redirect is never followed), or there was no answer (a timeout, a
	// connection or DNS error), or the caller's ctx ended. Try again later
	// (Result.RetryAt): a receiver's answer can change by waiting (a 401
	// while its secret is rotated, a 404 or 3xx during its deploy), and
	// the delivery is promised until a 2xx or the retry window's end.
	Retryable
	// Permanent: what waiting cannot change, because it is this side's
	// configuration, not the receiver's answer: the guard refused the URL
	// or an address it resolved to, the URL is malformed, or there is no
	// secret to sign with. No request was sent; the caller logs it and
	// stops.
	Permanent
)

func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Retryable:
		return "retryable"
	case Permanent:
		return "permanent"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Result is the result of one attempt.
type Result struct {
	Outcome Outcome
	// Status is the receiver's HTTP status, 0 when there was no response.
	Status int
	// RetryAfter is the receiver's Retry-After on a 429 or 503 (seconds or
	// an HTTP date), 0 when absent or already past.
	RetryAfter time.Duration
	// Err says what went wrong; nil when Delivered.
	Err error
}

// Deliverer makes delivery attempts. Its HTTP client dials through the
// Guard, uses no proxy (a proxy would dial the refused address for it),
// follows no redirect and bounds each attempt by Timeout. It is safe for
// concurrent use.
type Deliverer struct {
	guard   Guard
	timeout time.Duration
	hc      *http.Client
	now     func() time.Time
}

// Options configure a Deliverer.
type Options struct {
	Guard Guard
	// Timeout bounds one attempt; zero means DefaultTimeout.
	Timeout time.Duration
	// Now is the clock for signatures and Retry-After; nil means
	// time.Now.
	Now func() time.Time
}

// NewDeliverer returns a Deliverer with its own connection pool.
func NewDeliverer(o Options) *Deliverer {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dialer := &net.Dialer{Timeout: o.Timeout, Control: o.Guard.Control}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = dialer.DialContext
	tr.MaxIdleConnsPerHost = 4
	return &Deliverer{
		guard:   o.Guard,
		timeout: o.Timeout,
		now:     o.Now,
		hc: &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}
}

// Timeout is the bound of one attempt.
func (d *Deliverer) Timeout() time.Duration { return d.timeout }

// CloseIdleConnections closes the pool's idle connections (at shutdown).
func (d *Deliverer) CloseIdleConnections() { d.hc.CloseIdleConnections() }

// Deliver makes one attempt to POST body (JSON) to rawURL, signed with
// secret, with id (the ask id, the same on every attempt) in
// DeliveryHeader. It never panics on bad input: a bad URL is Permanent.
func (d *Deliverer) Deliver(ctx context.Context, rawURL, id string, secret, body []byte) Result {
	if err := d.guard.CheckURL(rawURL); err != nil {
		return Result{Outcome: Permanent, Err: err}
	}
	return d.send(ctx, rawURL, id, secret, body)
}

// send is Deliver after the URL's check: the Guard's Control still checks
// every address dialled.
func (d *Deliverer) send(ctx context.Context, rawURL, id string, secret, body []byte) Result {
	if len(secret) == 0 {
		return Result{Outcome: Permanent, Err: fmt.Errorf("webhook: deliver: %w: refusing to send an unsigned callback", ErrNoSecret)}
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return Result{Outcome: Permanent, Err: fmt.Errorf("webhook: deliver: %w", err)}
	}
	ts, sig := Sign(secret, d.now(), body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "slackask")
	req.Header.Set(TimestampHeader, ts)
	req.Header.Set(SignatureHeader, sig)
	if id != "" {
		req.Header.Set(DeliveryHeader, id)
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		var ref *RefusedError
		if errors.As(err, &ref) {
			return Result{Outcome: Permanent, Err: fmt.Errorf("webhook: deliver: %w", err)}
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("no answer within %s: %w", d.timeout, err)
		}
		return Result{Outcome: Retryable, Err: fmt.Errorf("webhook: deliver: %w", err)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
	return d.classify(resp)
}

// classify reads the receiver's answer: a 2xx is Delivered, any other
// status Retryable. Retry-After counts on a 429 or 503, the statuses that
// define it as a wait.
func (d *Deliverer) classify(resp *http.Response) Result {
	st := resp.StatusCode
	if st >= 200 && st < 300 {
		return Result{Outcome: Delivered, Status: st}
	}
	r := Result{Outcome: Retryable, Status: st, Err: fmt.Errorf("webhook: deliver: status %d", st)}
	switch {
	case st >= 300 && st < 400:
		r.Err = fmt.Errorf("webhook: deliver: status %d: redirects are not followed (to %q): configure the final URL", st, resp.Header.Get("Location"))
	case st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable:
		r.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), d.now())
	}
	return r
}

// retryAfter reads a Retry-After value: delay seconds or an HTTP date. It
// returns 0 for none, a malformed value or a time already past.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := parseUnix(v); err == nil {
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
