package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/internal/slacksign"
)

// HTTP is Slack's HTTP mode as a transport of its own, beside Socket: Slack
// POSTs interactive payloads to Interactivity and Events API callbacks to
// Events, each signed with the app's signing secret. A request whose
// signature is missing, wrong or older than five minutes is 401 and
// nothing of it is processed. An interactive payload is handed to Handler
// as an Envelope, exactly as a Socket hands one over, and the HTTP answer
// is its ack: 200 (with the ack's payload, e.g. a modal's errors) once the
// handler acked it, that is once what it asks for is stored; an error
// status when the handler dropped it or did not settle it within AckWait,
// so that Slack tells the person rather than lose a click it was told was
// kept. Any number of replicas may sit behind a load balancer: each
// request is whole in itself. Set the exported fields, then serve the
// handlers.
type HTTP struct {
	// Handler takes the payloads (the Bot).
	Handler HTTPHandler
	// SigningSecret is the app's signing secret (Basic Information).
	SigningSecret []byte
	// OnEvent, when set, handles an event_callback (its team, enterprise
	// and the whole callback body); an error answers 500 and Slack retries.
	// Nil: events are acknowledged and ignored.
	OnEvent func(ctx context.Context, ev HTTPEvent) error
	Log     zerolog.Logger
	// AckWait bounds the wait for the handler's ack (zero: DefaultAckWait),
	// below Slack's 3 s with room for the network.
	AckWait time.Duration
	// Now is the clock signatures are checked by (nil: time.Now).
	Now func() time.Time

	n atomic.Int64 // requests, for envelope ids in logs
}

// HTTPHandler is what an HTTP transport hands payloads to (the Bot).
type HTTPHandler interface {
	// Hello is called with the app id each payload names.
	Hello(appID string)
	// Accept hands env to the handler as Interactive does, on the
	// handler's own context (the request's ends with its answer, the
	// work does not); false when the handler is not running (not started,
	// or stopping): env was not taken and must not be acked.
	Accept(env *Envelope) bool
	// AcceptEvent hands an Events API event to the handler as a Socket
	// hands one (EventHandler), when it runs and takes events.
	AcceptEvent(ev EventCallback)
}

// DefaultAckWait leaves half a second of Slack's 3 s for the network.
const DefaultAckWait = 2500 * time.Millisecond

// MaxHTTPBody caps a request from Slack (a 50-block message and its state
// are well under 1 MB); a larger one is 413, unread and unprocessed.
const MaxHTTPBody = 4 << 20

// HTTPEvent is an Events API event_callback as HTTP mode receives it: the
// workspace (or org) it is of, and the event.
type HTTPEvent struct {
	TeamID       string          `json:"team_id"`
	EnterpriseID string          `json:"enterprise_id"`
	APIAppID     string          `json:"api_app_id"`
	Event        json.RawMessage `json:"event"`
	// IsEnterpriseInstall is true for an event of an org-wide install.
	IsEnterpriseInstall bool `json:"is_enterprise_install"`
}

// readSigned reads and verifies a request's body: nil and a status for
// the answer when it is too large, unreadable, or not signed right.
func (h *HTTP) readSigned(w http.ResponseWriter, r *http.Request) ([]byte, int) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxHTTPBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.Log.Warn().Str("path", r.URL.Path).Msg("slack request over the size limit refused")
			return nil, http.StatusRequestEntityTooLarge
		}
		return nil, http.StatusBadRequest
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	if err := slacksign.Verify(h.SigningSecret, r.Header, body, now()); err != nil {
		// The error names the check that failed, never a header's value.
		h.Log.Warn().Err(err).Str("path", r.URL.Path).Msg("slack request refused")
		return nil, http.StatusUnauthorized
	}
	return body, 0
}

// signed serves fn with the body of each request that is signed right;
// any other is answered (401, 413, 400) without reaching fn.
func (h *HTTP) signed(fn func(w http.ResponseWriter, r *http.Request, body []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, status := h.readSigned(w, r)
		if status != 0 {
			http.Error(w, http.StatusText(status), status)
			return
		}
		fn(w, r, body)
	})
}

// Interactivity serves POST /slack/interactivity: the form field payload
// holds the interactive payload (block_actions, view_submission,
// view_closed, …).
func (h *HTTP) Interactivity() http.Handler {
	return h.signed(func(w http.ResponseWriter, r *http.Request, body []byte) {
		form, err := url.ParseQuery(string(body))
		if err != nil || form.Get("payload") == "" {
			http.Error(w, "want a form with a payload field", http.StatusBadRequest)
			return
		}
		cb, err := decodeCallback([]byte(form.Get("payload")))
		if err != nil {
			h.Log.Warn().Err(err).Msg("interactive payload that did not parse")
			http.Error(w, "payload does not parse", http.StatusBadRequest)
			return
		}
		h.Handler.Hello(cb.APIAppID)
		id := "http-" + strconv.FormatInt(h.n.Add(1), 10)
		a := &httpAck{settled: make(chan struct{})}
		env := &Envelope{ID: id, Payload: cb, ackFn: a.ack, release: a.release, log: h.Log}
		if !h.Handler.Accept(env) {
			http.Error(w, "not running", http.StatusServiceUnavailable)
			return
		}
		wait := h.AckWait
		if wait <= 0 {
			wait = DefaultAckWait
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-a.settled:
		case <-t.C:
		case <-r.Context().Done():
		}
		acked, payload := a.answer()
		switch {
		case acked && payload != nil:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(payload)
		case acked:
			w.WriteHeader(http.StatusOK)
		default:
			// Dropped (not stored) or not stored in time: never 200, so
			// Slack shows the person an error instead of a silent loss.
			h.Log.Warn().Str("envelope", id).Msg("interactive payload not acked: its change was not stored in time")
			http.Error(w, "not stored", http.StatusServiceUnavailable)
		}
	})
}

// httpAck is the ack of one HTTP interactive payload: the handler's Ack
// records it, until the answer is written.
type httpAck struct {
	mu      sync.Mutex
	acked   bool
	payload []byte // JSON; nil: none
	late    bool   // answered (or given up): later acks fail
	settled chan struct{}
}

var errAckLate = errors.New("ack came after the HTTP answer")

func (a *httpAck) ack(payload any) error {
	var b []byte
	if payload != nil {
		var err error
		if b, err = json.Marshal(payload); err != nil {
			return fmt.Errorf("ack payload: %w", err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.late {
		return errAckLate
	}
	a.acked, a.payload = true, b
	return nil
}

func (a *httpAck) release() { close(a.settled) }

// answer ends the ack: what it was, and no ack after it.
func (a *httpAck) answer() (acked bool, payload []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.late = true
	return a.acked, a.payload
}

// Events serves POST /slack/events: url_verification is answered with its
// challenge; an event_callback is handed to OnEvent (its error is a 500,
// which Slack retries) and, once answered, its event to the handler.
func (h *HTTP) Events() http.Handler {
	return h.signed(func(w http.ResponseWriter, r *http.Request, body []byte) {
		var head struct {
			Type      string `json:"type"`
			Challenge string `json:"challenge"`
		}
		if err := json.Unmarshal(body, &head); err != nil {
			http.Error(w, "body does not parse", http.StatusBadRequest)
			return
		}
		switch head.Type {
		case "url_verification":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"challenge": head.Challenge})
		case "event_callback":
			var cb HTTPEvent
			if err := json.Unmarshal(body, &cb); err != nil {
				http.Error(w, "body does not parse", http.StatusBadRequest)
				return
			}
			var inner EventCallback
			if json.Unmarshal(cb.Event, &inner) == nil {
				inner.Team, inner.Enterprise, inner.OrgWide = cb.TeamID, cb.EnterpriseID, cb.IsEnterpriseInstall
				// As a Socket hands an events_api envelope over once acked:
				// an event the bot reads asks for nothing to be stored.
				defer h.Handler.AcceptEvent(inner)
			}
			if h.OnEvent != nil {
				wait := h.AckWait
				if wait <= 0 {
					wait = DefaultAckWait
				}
				ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), wait)
				defer cancel()
				if err := h.OnEvent(ctx, cb); err != nil {
					h.Log.Warn().Err(err).Str("team", cb.TeamID).Msg("event not handled; Slack retries it")
					http.Error(w, "not handled", http.StatusInternalServerError)
					return
				}
			}
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusOK) // app_rate_limited and the like: nothing to do
		}
	})
}
