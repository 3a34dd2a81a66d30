package client

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/webhook"
)

// TestVerifyCallbackFromDeliverer: a receiver built on VerifyCallback
// accepts what webhook.Deliverer sends and gets the body back.
func TestVerifyCallbackFromDeliverer(t *testing.T) {
	secret, body := []byte("hook-secret"), []byte(`{"id":"ask1","status":"answered"}`)
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := VerifyCallback(secret, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		got.Store(string(b))
	}))
	defer srv.Close()
	d := webhook.NewDeliverer(webhook.Options{Guard: webhook.Guard{AllowPrivate: true}})
	defer d.CloseIdleConnections()
	if r := d.Deliver(t.Context(), srv.URL, "ask1", secret, body); r.Outcome != webhook.Delivered {
		t.Fatalf("Deliver = %+v", r)
	}
	if got.Load() != string(body) {
		t.Errorf("VerifyCallback returned %q, want %q", got.Load(), body)
	}
	if r := d.Deliver(t.Context(), srv.URL, "ask1", []byte("wrong"), body); r.Outcome != webhook.Retryable || r.Status != http.StatusUnauthorized || r.Err == nil {
		t.Errorf("wrong secret: Deliver = %+v, want a retryable 401", r)
	}
}

func TestVerifyCallbackRefuses(t *testing.T) {
	secret, body := []byte("hook-secret"), []byte(`{"id":"ask1"}`)
	req := func(b []byte, ts time.Time, signedBody []byte) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(b))
		tsv, sig := webhook.Sign(secret, ts, signedBody)
		r.Header.Set(webhook.TimestampHeader, tsv)
		r.Header.Set(webhook.SignatureHeader, sig)
		return r
	}
	now := time.Now()
	for _, c := range []struct {
		name   string
		r      *http.Request
		secret []byte
		want   error
	}{
		{"valid", req(body, now, body), secret, nil},
		{"tampered body", req([]byte(`{"id":"ask2"}`), now, body), secret, webhook.ErrBadSignature},
		{"wrong secret", req(body, now, body), []byte("other"), webhook.ErrBadSignature},
		{"stale", req(body, now.Add(-10*time.Minute), body), secret, webhook.ErrStaleTimestamp},
		{"unsigned", httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body)), secret, webhook.ErrMissingHeader},
		{"too big", req(bytes.Repeat([]byte("x"), webhook.MaxBodyBytes+1), now, nil), secret, webhook.ErrMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := VerifyCallback(c.secret, c.r)
			if c.want == nil {
				if err != nil || !bytes.Equal(b, body) {
					t.Fatalf("VerifyCallback = %q, %v; want the body", b, err)
				}
				return
			}
			if !errors.Is(err, c.want) || b != nil {
				t.Fatalf("VerifyCallback = %q, %v; want nil, %v", b, err, c.want)
			}
			if code := interaction.ErrorCode(err); code != interaction.Unauthorized {
				t.Errorf("code = %s, want UNAUTHORIZED", code)
			}
		})
	}
}

type failingBody struct{}

func (failingBody) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestVerifyCallbackReadError(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/hook", io.NopCloser(failingBody{}))
	if _, err := VerifyCallback([]byte("k"), r); !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "read body") {
		t.Errorf("VerifyCallback = %v, want the read error", err)
	}
}
