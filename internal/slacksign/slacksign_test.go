package slacksign

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

var (
	secret = []byte("8f742231b10e8888abcd99yyyzzz85a5")
	now    = time.Unix(1531420618, 0)
)

// Slack's documented example: this secret, timestamp and body give this
// signature.
func TestSlackExample(t *testing.T) {
	body := []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
	h := http.Header{}
	h.Set(TimestampHeader, "1531420618")
	h.Set(SignatureHeader, "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503")
	if err := Verify(secret, h, body, now); err != nil {
		t.Fatalf("Slack's example: %v", err)
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`payload=%7B%22type%22%3A%22block_actions%22%7D`)
	good := http.Header{}
	SetHeaders(good, secret, body, now)
	if err := Verify(secret, good, body, now); err != nil {
		t.Fatal(err)
	}
	// The same timestamp and body twice is fine (a retry).
	if err := Verify(secret, good, body, now.Add(time.Minute)); err != nil {
		t.Fatalf("the same request a minute later: %v", err)
	}
	with := func(k, v string) http.Header {
		h := good.Clone()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		return h
	}
	sig := good.Get(SignatureHeader)
	cases := []struct {
		name string
		h    http.Header
		body []byte
		at   time.Time
		want error
	}{
		{"no signature", with(SignatureHeader, ""), body, now, ErrMissing},
		{"no timestamp", with(TimestampHeader, ""), body, now, ErrMissing},
		{"stale", good, body, now.Add(MaxAge + time.Second), ErrStale},
		{"from the future", good, body, now.Add(-MaxAge - time.Second), ErrStale},
		{"timestamp not a number", with(TimestampHeader, "12a"), body, now, ErrTimestamp},
		{"negative timestamp", with(TimestampHeader, "-1"), body, now, ErrTimestamp},
		{"huge timestamp", with(TimestampHeader, "99999999999999999999"), body, now, ErrTimestamp},
		{"truncated body", good, body[:len(body)-1], now, ErrMismatch},
		{"longer body", good, append(append([]byte{}, body...), '&'), now, ErrMismatch},
		{"other secret", good, body, now, nil},
		{"v1 scheme", with(SignatureHeader, "v1="+sig[3:]), body, now, ErrMismatch},
		{"short signature", with(SignatureHeader, sig[:len(sig)-2]), body, now, ErrMismatch},
		{"not hex", with(SignatureHeader, "v0="+string(make([]byte, 64))), body, now, ErrMismatch},
		{"timestamp moved", with(TimestampHeader, strconv.FormatInt(now.Unix()+1, 10)), body, now, ErrMismatch},
	}
	for _, c := range cases {
		s := secret
		if c.name == "other secret" {
			s, c.want = []byte("another secret"), ErrMismatch
		}
		if err := Verify(s, c.h, c.body, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// FuzzVerify: no input makes Verify panic or accept a request it did not
// sign; what it signs, it accepts.
func FuzzVerify(f *testing.F) {
	f.Add("1531420618", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503", []byte("payload=x"))
	f.Add("", "", []byte(nil))
	f.Add("1531420618", "v0=", []byte("{}"))
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(TimestampHeader, ts)
		h.Set(SignatureHeader, sig)
		err := Verify(secret, h, body, now)
		if err == nil && sig != Sign(secret, h.Get(TimestampHeader), body) {
			t.Fatalf("accepted %q %q for a body it did not sign", ts, sig)
		}
		good := http.Header{}
		SetHeaders(good, secret, body, now)
		if err := Verify(secret, good, body, now); err != nil {
			t.Fatalf("refused its own signature: %v", err)
		}
	})
}
