package bot

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/internal/slacksign"
)

// stubHTTPHandler settles each envelope as settle says.
type stubHTTPHandler struct {
	refuse bool
	settle func(env *Envelope)
	got    []*Envelope
}

func (s *stubHTTPHandler) Hello(string)              {}
func (s *stubHTTPHandler) AcceptEvent(EventCallback) {}
func (s *stubHTTPHandler) Accept(env *Envelope) bool {
	if s.refuse {
		return false
	}
	s.got = append(s.got, env)
	go s.settle(env)
	return true
}

func signedRequest(t *testing.T, secret string, payload string) *http.Request {
	t.Helper()
	body := []byte(url.Values{"payload": {payload}}.Encode())
	r := httptest.NewRequest("POST", "/slack/interactivity", bytes.NewReader(body))
	slacksign.SetHeaders(r.Header, []byte(secret), body, time.Now())
	return r
}

// TestHTTPAckIsTheAnswer: the HTTP answer to an interactive payload is its
// ack: 200 (with the ack's payload) only once the handler acked it; a
// drop, no settling within AckWait, or a handler not running is an error
// status, and an ack after the answer fails.
func TestHTTPAckIsTheAnswer(t *testing.T) {
	const secret = "s3cret"
	payload := `{"type":"view_submission","user":{"id":"U1"},"view":{"id":"V1","callback_id":"x"}}`
	errs := slack.NewErrorsViewSubmissionResponse(map[string]string{"b": "say more"})
	late, answered := make(chan error, 1), make(chan struct{})
	for _, c := range []struct {
		name   string
		refuse bool
		settle func(env *Envelope)
		status int
		body   string
	}{
		{"acked", false, func(env *Envelope) { env.Ack(nil) }, 200, ""},
		{"acked with errors", false, func(env *Envelope) { env.Ack(errs) }, 200, `"response_action":"errors"`},
		{"dropped", false, func(env *Envelope) { env.Drop() }, 503, ""},
		{"not in time", false, func(env *Envelope) {
			<-answered // acked only once AckWait passed and the answer is written
			late <- env.ackFn(nil)
			env.released()
		}, 503, ""},
		{"not running", true, nil, 503, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hd := &stubHTTPHandler{refuse: c.refuse, settle: c.settle}
			h := &HTTP{Handler: hd, SigningSecret: []byte(secret), AckWait: 100 * time.Millisecond}
			rec := httptest.NewRecorder()
			h.Interactivity().ServeHTTP(rec, signedRequest(t, secret, payload))
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.body) {
				t.Fatalf("%d %s, want %d with %q", rec.Code, rec.Body, c.status, c.body)
			}
			if !c.refuse && (len(hd.got) != 1 || hd.got[0].Payload.View.ID != "V1") {
				t.Fatalf("handler got %d envelopes", len(hd.got))
			}
			if c.name == "not in time" {
				close(answered)
				if err := <-late; err == nil {
					t.Fatal("an ack after the answer succeeded")
				}
			}
		})
	}
	// A forged request reaches no handler.
	hd := &stubHTTPHandler{settle: func(env *Envelope) { env.Ack(nil) }}
	h := &HTTP{Handler: hd, SigningSecret: []byte(secret)}
	rec := httptest.NewRecorder()
	h.Interactivity().ServeHTTP(rec, signedRequest(t, "forged", payload))
	if rec.Code != 401 || len(hd.got) != 0 {
		t.Fatalf("forged: %d, %d envelopes handled", rec.Code, len(hd.got))
	}
}

// FuzzHTTPInteractivity: any body Slack could sign (a form, a payload
// that is not JSON, JSON of any shape) is answered without a panic: 200
// only for a payload the handler took and acked, 400 for one that does not
// parse; and nothing unsigned reaches the handler.
func FuzzHTTPInteractivity(f *testing.F) {
	f.Add([]byte(`payload=%7B%22type%22%3A%22block_actions%22%2C%22actions%22%3A%5B%7B%22block_id%22%3A%22b%22%2C%22action_id%22%3A%22a%22%7D%5D%7D`), true)
	f.Add([]byte(`payload=`), true)
	f.Add([]byte(`payload=%7B`), true)
	f.Add([]byte(`a=b&payload=null`), true)
	f.Add([]byte{0xff, '=', 0}, false)
	f.Fuzz(func(t *testing.T, body []byte, sign bool) {
		const secret = "fuzz-secret"
		hd := &stubHTTPHandler{settle: func(env *Envelope) { env.Ack(nil) }}
		h := &HTTP{Handler: hd, SigningSecret: []byte(secret), AckWait: time.Second}
		r := httptest.NewRequest("POST", "/slack/interactivity", bytes.NewReader(body))
		if sign {
			slacksign.SetHeaders(r.Header, []byte(secret), body, time.Now())
		}
		rec := httptest.NewRecorder()
		h.Interactivity().ServeHTTP(rec, r)
		switch {
		case !sign && (rec.Code != http.StatusUnauthorized || len(hd.got) != 0):
			t.Fatalf("unsigned: %d, %d envelopes handled", rec.Code, len(hd.got))
		case sign && rec.Code == http.StatusOK && len(hd.got) != 1:
			t.Fatalf("200 for a payload the handler never took")
		case sign && rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest:
			t.Fatalf("signed body answered %d", rec.Code)
		}
	})
}
