package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slackask/slackask/interaction"
)

// The headers of a callback request.
const (
	TimestampHeader = "X-Slackask-Request-Timestamp"
	SignatureHeader = "X-Slackask-Signature"
	// DeliveryHeader carries the caller's delivery id (the ask id), the
	// same on every attempt. It is not signed: the id in the body is the
	// one to trust.
	DeliveryHeader = "X-Slackask-Delivery"
)

// DefaultTolerance is how far a timestamp may be from the receiver's
// clock, either way, for Verify with a zero tolerance: it bounds how long a
// captured request can be replayed.
const DefaultTolerance = 5 * time.Minute

// MaxBodyBytes caps the body a receiver reads (client.VerifyCallback): an
// ask resource with every limit of interaction reached stays well below it.
const MaxBodyBytes = 32 << 20

const sigPrefix = "v1="

// The reasons Verify refuses a request. They carry code UNAUTHORIZED, so a
// receiver can answer 401; the error Verify returns wraps one of them with
// the details (errors.Is works).
var (
	ErrNoSecret       = interaction.Errorf(interaction.Unauthorized, "no callback secret configured")
	ErrMissingHeader  = interaction.Errorf(interaction.Unauthorized, "callback signature headers missing")
	ErrMalformed      = interaction.Errorf(interaction.Unauthorized, "callback signature headers malformed")
	ErrStaleTimestamp = interaction.Errorf(interaction.Unauthorized, "callback timestamp outside the tolerance")
	ErrBadSignature   = interaction.Errorf(interaction.Unauthorized, "callback signature does not match")
)

// Sign returns the values of TimestampHeader and SignatureHeader for body
// sent at ts. It signs with an empty secret too; Verify and Deliver refuse
// one.
func Sign(secret []byte, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return timestamp, sigPrefix + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret []byte, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v1:" + timestamp + ":"))
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks that header carries a signature of body by secret, made
// within tolerance of now (either way; zero or negative means
// DefaultTolerance). The comparison takes constant time. It returns nil or
// an error wrapping one of ErrNoSecret, ErrMissingHeader, ErrMalformed,
// ErrStaleTimestamp or ErrBadSignature.
func Verify(secret []byte, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if len(secret) == 0 {
		return fmt.Errorf("webhook: verify: %w", ErrNoSecret)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	ts, sig := header.Get(TimestampHeader), header.Get(SignatureHeader)
	switch {
	case ts == "" && sig == "":
		return fmt.Errorf("webhook: verify: %w: want %s and %s", ErrMissingHeader, TimestampHeader, SignatureHeader)
	case ts == "":
		return fmt.Errorf("webhook: verify: %w: no %s", ErrMissingHeader, TimestampHeader)
	case sig == "":
		return fmt.Errorf("webhook: verify: %w: no %s", ErrMissingHeader, SignatureHeader)
	}
	secs, err := parseUnix(ts)
	if err != nil {
		return fmt.Errorf("webhook: verify: %w: %s %q: want unix seconds", ErrMalformed, TimestampHeader, ts)
	}
	hexSig, ok := strings.CutPrefix(sig, sigPrefix)
	if !ok {
		return fmt.Errorf("webhook: verify: %w: %s does not start with %q", ErrMalformed, SignatureHeader, sigPrefix)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("webhook: verify: %w: %s is not %d hex bytes", ErrMalformed, SignatureHeader, sha256.Size)
	}
	// The age is checked before the MAC so that a replayed request is told
	// apart from a forged one; both are refused.
	if age := now.Sub(time.Unix(secs, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("webhook: verify: %w: timestamp %d is %s from now, tolerance %s", ErrStaleTimestamp, secs, age.Round(time.Second), tolerance)
	}
	if !hmac.Equal(got, mac(secret, ts, body)) {
		return fmt.Errorf("webhook: verify: %w", ErrBadSignature)
	}
	return nil
}

// parseUnix reads decimal digits only: no sign, no spaces, at most 18
// digits so the value fits in an int64 and time.Unix.
func parseUnix(s string) (int64, error) {
	if len(s) == 0 || len(s) > 18 {
		return 0, strconv.ErrSyntax
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseInt(s, 10, 64)
}
