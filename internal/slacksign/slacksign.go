// Package slacksign signs and verifies Slack's request signatures (v0):
// X-Slack-Signature is "v0=" + hex(HMAC-SHA256(signing secret,
// "v0:" + X-Slack-Request-Timestamp + ":" + body)). slackask's HTTP mode
// verifies every request Slack sends with it; the Slack fake signs with it.
package slacksign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Header names.
const (
	TimestampHeader = "X-Slack-Request-Timestamp"
	SignatureHeader = "X-Slack-Signature"
)

// MaxAge is how far a request's timestamp may be from now, either way:
// Slack's advice against replays.
const MaxAge = 5 * time.Minute

// Errors of Verify; none carries the secret, the signature or the body.
var (
	ErrMissing   = errors.New("slack signature: missing X-Slack-Signature or X-Slack-Request-Timestamp")
	ErrTimestamp = errors.New("slack signature: X-Slack-Request-Timestamp is not unix seconds")
	ErrStale     = errors.New("slack signature: the request timestamp is more than 5 minutes from now")
	ErrMismatch  = errors.New("slack signature: does not match")
)

// Sign returns the X-Slack-Signature of body sent at ts (unix seconds).
func Sign(secret []byte, ts string, body []byte) string {
	return "v0=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v0:"))
	m.Write([]byte(ts))
	m.Write([]byte(":"))
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks the request signature h carries for body at now: the
// timestamp within MaxAge of now, the signature a v0 HMAC of the exact
// body bytes, compared in constant time. The same timestamp and body may
// come twice (Slack retries): only age bounds a replay.
func Verify(secret []byte, h http.Header, body []byte, now time.Time) error {
	ts, sig := h.Get(TimestampHeader), h.Get(SignatureHeader)
	if ts == "" || sig == "" {
		return ErrMissing
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sec <= 0 || len(ts) > 12 {
		return ErrTimestamp
	}
	if d := now.Sub(time.Unix(sec, 0)); d > MaxAge || d < -MaxAge {
		return ErrStale
	}
	const prefix = "v0="
	if len(sig) != len(prefix)+2*sha256.Size || sig[:len(prefix)] != prefix {
		return ErrMismatch
	}
	got, err := hex.DecodeString(sig[len(prefix):])
	if err != nil {
		return ErrMismatch
	}
	if !hmac.Equal(got, mac(secret, ts, body)) {
		return ErrMismatch
	}
	return nil
}

// SetHeaders signs body for now and sets both headers on h.
func SetHeaders(h http.Header, secret []byte, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	h.Set(TimestampHeader, ts)
	h.Set(SignatureHeader, Sign(secret, ts, body))
}
