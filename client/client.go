// Package client is the Go client of slackask's v1 HTTP API (package
// httpapi). `slackask ask` and `slackask mcp` use it; so do tests.
//
// Every method returns, for an error response of the API, a *ResponseError
// that wraps the server's *interaction.Error, so errors.As(err, &ie) with
// ie *interaction.Error and interaction.ErrorCode(err) both work.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
)

// Defaults of AskAndWait.
const (
	// PollWait is the ?wait= of each long-poll; below the server's cap
	// (10m) and the usual proxy idle timeouts (60s).
	PollWait = 50 * time.Second
	// MinBackoff and MaxBackoff bound the pause between retries.
	MinBackoff = 250 * time.Millisecond
	MaxBackoff = 5 * time.Second
	// CreateTimeout bounds one create of AskAndWait.
	CreateTimeout = 30 * time.Second
	// WithdrawTimeout bounds the withdrawal after the caller's ctx ends.
	WithdrawTimeout = 5 * time.Second
	// requestSlack is added to a request's own wait for its deadline, so
	// that a server that vanished without closing the connection is
	// noticed.
	requestSlack = 30 * time.Second
	// maxResponseBytes caps the body read from the server.
	maxResponseBytes = 32 << 20
)

// Client calls the API at one base URL. It is safe for concurrent use.
type Client struct {
	base  string // without trailing slash
	token string
	hc    *http.Client

	// Tunables, changed by tests.
	pollWait   time.Duration
	minBackoff time.Duration
	maxBackoff time.Duration
	// createTimeout bounds one create of AskAndWait, which runs to its end
	// even when the caller's ctx ends.
	createTimeout time.Duration
}

// New returns a client of the API at baseURL (e.g. "http://127.0.0.1:8080",
// a path prefix is kept) that sends token as a bearer token when it is not
// empty. hc nil means a client without an overall timeout (long-polls need
// none; each call is bounded by its context and its wait). A malformed
// baseURL is reported by every call, not here.
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{
		base:       strings.TrimRight(baseURL, "/"),
		token:      token,
		hc:         hc,
		pollWait:   PollWait,
		minBackoff: MinBackoff,
		maxBackoff: MaxBackoff,

		createTimeout: CreateTimeout,
	}
}

// ResponseError is an error response of the API: the operation, the HTTP
// status and the server's coded error. A response that is not the API's
// JSON (another web server, the dev page's port, a proxy's page) is
// Foreign: code INTERNAL, and a message naming the status and the URL,
// never the body, which is not ours to print.
type ResponseError struct {
	Op         string // "create ask", "get ask", …
	StatusCode int
	Err        *interaction.Error
	// Foreign: the response did not come from a slackask API.
	Foreign bool
}

// Error returns "op: CODE: message".
func (e *ResponseError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the *interaction.Error.
func (e *ResponseError) Unwrap() error { return e.Err }

// Create posts the ask. With wait > 0 the server holds the response until
// the ask ends or wait elapses (the ask may come back pending). A retry with
// the same in.IdempotencyKey returns the existing ask. It returns a
// *ResponseError for an error response (validation: 400 with
// EMPTY_QUESTIONS, INVALID_QUESTION or BAD_INTENT), or a transport error,
// each wrapped with "create ask".
func (c *Client) Create(ctx context.Context, in interaction.AskInput, wait time.Duration) (interaction.Ask, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return interaction.Ask{}, fmt.Errorf("create ask: %w", err)
	}
	var ask interaction.Ask
	err = c.do(ctx, "create ask", http.MethodPost, "/v1/asks", waitQuery(wait), body, &ask)
	return ask, err
}

// Get returns the ask. With wait > 0 it long-polls: the server answers when
// the ask ends or wait elapses. It returns a *ResponseError (NOT_FOUND for
// an unknown id) or a transport error, wrapped with "get ask".
func (c *Client) Get(ctx context.Context, id string, wait time.Duration) (interaction.Ask, error) {
	var ask interaction.Ask
	err := c.do(ctx, "get ask", http.MethodGet, "/v1/asks/"+url.PathEscape(id), waitQuery(wait), nil, &ask)
	return ask, err
}

// Withdraw withdraws the ask (status aborted) and returns it; an ask that
// already ended comes back unchanged. It returns a *ResponseError
// (NOT_FOUND for an unknown id) or a transport error, wrapped with
// "withdraw ask".
func (c *Client) Withdraw(ctx context.Context, id string) (interaction.Ask, error) {
	var ask interaction.Ask
	err := c.do(ctx, "withdraw ask", http.MethodDelete, "/v1/asks/"+url.PathEscape(id), nil, nil, &ask)
	return ask, err
}

// List returns asks newest first, filtered by f (zero fields: no filter,
// the server's default limit). It returns a *ResponseError or a transport
// error, wrapped with "list asks".
func (c *Client) List(ctx context.Context, f interaction.ListFilter) ([]interaction.Ask, error) {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if !f.Before.IsZero() {
		q.Set("before", f.Before.UTC().Format(time.RFC3339Nano))
	}
	var out struct {
		Asks []interaction.Ask `json:"asks"`
	}
	if err := c.do(ctx, "list asks", http.MethodGet, "/v1/asks", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Asks, nil
}

// AskAndWait puts the ask and waits until it ends, surviving server
// restarts:
//
//   - it sets in.IdempotencyKey to a random key when empty, so a retried
//     create never posts twice;
//   - it creates the ask (the create runs to its end even when ctx ends, so
//     that an ask the server made is known and withdrawn), then long-polls
//     GET ?wait=50s until the ask ends;
//   - on a connection error or a 5xx response (but SLACK_ERROR) it retries
//     with backoff from 250ms doubling to 5s, forever, re-attaching by id;
//   - when ctx ends it withdraws the ask with a fresh 5s context (creating
//     it first, with the same key, if a create may have reached the server)
//     and returns the ask as the withdrawal left it.
//
// An ended ask is returned with a nil error whatever its outcome: read
// ask.Status or ask.Result(). The error is non-nil when the ask could not
// be put (a *ResponseError: validation 400s, UNAUTHORIZED, SLACK_ERROR…),
// when it vanished (NOT_FOUND), or when ctx ended and the withdrawal failed
// (an ASK_ABORTED *interaction.Error); the ask then holds what was last
// seen (empty ID if never created). Use ExitCode for the CLI status.
func (c *Client) AskAndWait(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	return c.AskAndWaitWith(ctx, in, WaitOptions{})
}

// WaitOptions tune AskAndWaitWith.
type WaitOptions struct {
	// CreateFor, when positive, bounds how long creating may keep failing
	// (a server that cannot be reached); zero retries until ctx ends.
	CreateFor time.Duration
	// WaitFor, when positive, bounds how long waiting may keep failing (a
	// server gone for good); zero retries until ctx ends.
	WaitFor time.Duration
	// OnRetry, when set, is called before each retry with the operation
	// ("create", "wait"), the error and the pause, so that a command can
	// say what it is trying.
	OnRetry func(op string, err error, pause time.Duration)
	// OnCreated, when set, is called once with the ask as the create
	// returned it (e.g. to show its permalink).
	OnCreated func(interaction.Ask)
}

// AskAndWaitWith is AskAndWait tuned by o.
func (c *Client) AskAndWaitWith(ctx context.Context, in interaction.AskInput, o WaitOptions) (interaction.Ask, error) {
	return c.askAndWait(ctx, in, o, o.OnRetry)
}

func (c *Client) askAndWait(ctx context.Context, in interaction.AskInput, o WaitOptions, onRetry func(string, error, time.Duration)) (interaction.Ask, error) {
	retry := func(d time.Duration) interaction.Retry {
		return interaction.Retry{Forever: d <= 0, For: d, Backoff: &backoff.Backoff{Min: c.minBackoff, Max: c.maxBackoff}}
	}
	if in.IdempotencyKey == "" {
		in.IdempotencyKey = newKey()
	}
	return interaction.AskAndWait(ctx, pollService{c}, in, interaction.AwaitOptions{
		CreateRetry:     retry(o.CreateFor),
		WaitRetry:       retry(o.WaitFor),
		Retryable:       retryable,
		MaybeCreated:    func(err error) bool { return !isDialError(err) },
		OnRetry:         onRetry,
		OnCreated:       o.OnCreated,
		CreateTimeout:   c.createTimeout,
		WithdrawTimeout: WithdrawTimeout,
	})
}

// pollService is the AskService of AskAndWait: one long-poll per Wait,
// each bounded so that a server that vanished without closing the
// connection is noticed.
type pollService struct{ c *Client }

func (p pollService) Create(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	return p.c.Create(ctx, in, 0)
}

func (p pollService) Get(ctx context.Context, id string) (interaction.Ask, error) {
	return p.c.Get(ctx, id, 0)
}

func (p pollService) Wait(ctx context.Context, id string) (interaction.Ask, error) {
	return p.c.getOnce(ctx, id)
}

func (p pollService) Withdraw(ctx context.Context, id string) (interaction.Ask, error) {
	return p.c.Withdraw(ctx, id)
}

func (p pollService) List(ctx context.Context, f interaction.ListFilter) ([]interaction.Ask, error) {
	return p.c.List(ctx, f)
}

// getOnce is one long-poll of pollWait whose request ends requestSlack
// later at the latest, so that a server that vanished without closing the
// connection is noticed.
func (c *Client) getOnce(ctx context.Context, id string) (interaction.Ask, error) {
	ctx, cancel := context.WithTimeout(ctx, c.pollWait+requestSlack)
	defer cancel()
	return c.Get(ctx, id, c.pollWait)
}

// retryable reports whether err may go away by itself: a transport error
// (refused, reset, timed out), a 503 of slackask (not ready, shutting
// down), or a proxy's 502, 503 or 504 that is not slackask's: the proxy
// could not reach slackask, a connection error one hop further. Anything
// else another server answers means it is not a slackask API, and asking
// again will not change that.
func retryable(err error) bool {
	var re *ResponseError
	if errors.As(err, &re) {
		if re.Foreign {
			return gatewayStatus(re.StatusCode)
		}
		return re.StatusCode == http.StatusServiceUnavailable
	}
	var te *transportError
	return errors.As(err, &te)
}

// gatewayStatus reports whether a proxy's status says it could not reach
// the server behind it.
func gatewayStatus(code int) bool {
	switch code {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// IsUnreachable reports whether err says the API could not be reached: a
// transport error, or a proxy's 502, 503 or 504 in front of it.
func IsUnreachable(err error) bool {
	var re *ResponseError
	if errors.As(err, &re) {
		return re.Foreign && gatewayStatus(re.StatusCode)
	}
	var te *transportError
	return errors.As(err, &te)
}

// IsForeign reports whether err is a response from something that is not a
// slackask API (the URL points elsewhere).
func IsForeign(err error) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Foreign && !gatewayStatus(re.StatusCode)
}

// isDialError reports whether err is a transport error from before the
// request was sent (the server refused the connection).
func isDialError(err error) bool {
	var te *transportError
	return errors.As(err, &te) && te.dial
}

// transportError marks an error of the HTTP exchange itself.
type transportError struct {
	err  error
	dial bool
}

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// waitQuery returns ?wait= for wait > 0.
func waitQuery(wait time.Duration) url.Values {
	if wait <= 0 {
		return nil
	}
	return url.Values{"wait": {wait.String()}}
}

// do sends one request and decodes a 2xx JSON body into out. Other statuses
// become a *ResponseError; failures of the exchange a transportError; all
// wrapped with op.
func (c *Client) do(ctx context.Context, op, method, path string, q url.Values, body []byte, out any) error {
	u, err := url.Parse(c.base + path)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: base URL %q is not an absolute http(s) URL", op, c.base)
	}
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "slackask-client/1")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, &transportError{err: err, dial: isDial(err)})
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("%s: reading the response: %w", op, &transportError{err: err})
	}
	u.RawQuery = "" // named in errors: the query is ours, not the caller's
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var body struct {
			Error *interaction.Error `json:"error"`
		}
		if json.Unmarshal(b, &body) == nil && body.Error != nil && body.Error.Code != "" {
			return &ResponseError{Op: op, StatusCode: resp.StatusCode, Err: body.Error}
		}
		return foreign(op, resp.StatusCode, u)
	}
	if err := json.Unmarshal(b, out); err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		return foreign(op, resp.StatusCode, u)
	}
	return nil
}

// foreign is the error of a response that is not the API's JSON. Its body
// is not printed: it is not ours (an HTML page, another service's data).
func foreign(op string, status int, u *url.URL) *ResponseError {
	msg := fmt.Sprintf("this is not a slackask API (HTTP %d from %s)", status, u.Redacted())
	if gatewayStatus(status) {
		msg = fmt.Sprintf("HTTP %d from %s: a proxy could not reach slackask", status, u.Redacted())
	}
	return &ResponseError{Op: op, StatusCode: status, Foreign: true, Err: &interaction.Error{Code: interaction.Internal, Message: msg}}
}

// isDial reports whether err happened while connecting (nothing was sent).
func isDial(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// newKey returns a random idempotency key.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "slackask-" + hex.EncodeToString(b[:])
}

// ExitCode maps the outcome of an ask to the exit status of `slackask ask`:
// 0 answered, 2 invalid request (EMPTY_QUESTIONS, INVALID_QUESTION,
// INVALID_REQUEST, BAD_INTENT), 3 cancelled by a person, 4 timed out, 5 aborted (withdrawn,
// Ctrl-C), 1 anything else (transport errors, UNAUTHORIZED, SLACK_ERROR, a
// still pending ask). An ended ask's status wins over err.
func ExitCode(ask interaction.Ask, err error) int {
	switch ask.Status {
	case interaction.StatusAnswered:
		return 0
	case interaction.StatusCancelled:
		return 3
	case interaction.StatusExpired:
		return 4
	case interaction.StatusAborted:
		return 5
	}
	if err == nil {
		return 1
	}
	switch interaction.ErrorCode(err) {
	case interaction.EmptyQuestions, interaction.InvalidQuestion, interaction.InvalidRequest, interaction.BadIntent:
		return 2
	case interaction.AskCancelled:
		return 3
	case interaction.AskTimeout:
		return 4
	case interaction.AskAborted:
		return 5
	}
	if errors.Is(err, context.Canceled) {
		return 5
	}
	return 1
}
