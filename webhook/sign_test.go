package webhook_test

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/webhook"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSignKnownVector pins the format of design.md: the vector was
// computed with Python's hmac, independently of this package.
func TestSignKnownVector(t *testing.T) {
	ts, sig := webhook.Sign([]byte("shh"), time.Unix(1700000000, 0), []byte(`{"id":"a1"}`))
	if ts != "1700000000" {
		t.Errorf("timestamp = %q, want 1700000000", ts)
	}
	const want = "v1=5464670cd51ba56971685814338bc1b6f1ad2cba8a49520e5dff6ded636922d3"
	if sig != want {
		t.Errorf("signature = %q, want %q", sig, want)
	}
}

func signed(secret []byte, ts time.Time, body []byte) http.Header {
	h := http.Header{}
	t, s := webhook.Sign(secret, ts, body)
	h.Set(webhook.TimestampHeader, t)
	h.Set(webhook.SignatureHeader, s)
	return h
}

func TestVerify(t *testing.T) {
	secret, body := []byte("s3cret"), []byte(`{"id":"ask1","status":"answered"}`)
	now := time.Unix(1800000000, 0)
	good := signed(secret, now.Add(-time.Minute), body)
	with := func(k, v string) http.Header {
		h := good.Clone()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		return h
	}
	sigOf := good.Get(webhook.SignatureHeader)
	for _, c := range []struct {
		name      string
		secret    []byte
		h         http.Header
		body      []byte
		tolerance time.Duration
		want      error
	}{
		{"valid", secret, good, body, 0, nil},
		{"tampered body", secret, good, []byte(`{"id":"ask1","status":"expired"}`), 0, webhook.ErrBadSignature},
		{"body with a byte added", secret, good, append(bytes.Clone(body), ' '), 0, webhook.ErrBadSignature},
		{"wrong secret", []byte("other"), good, body, 0, webhook.ErrBadSignature},
		{"no secret", nil, good, body, 0, webhook.ErrNoSecret},
		{"timestamp changed", secret, with(webhook.TimestampHeader, "1799999990"), body, 0, webhook.ErrBadSignature},
		{"stale", secret, signed(secret, now.Add(-6*time.Minute), body), body, 0, webhook.ErrStaleTimestamp},
		{"from the future", secret, signed(secret, now.Add(6*time.Minute), body), body, 0, webhook.ErrStaleTimestamp},
		{"within a wider tolerance", secret, signed(secret, now.Add(-6*time.Minute), body), body, 10 * time.Minute, nil},
		{"outside a narrower tolerance", secret, good, body, 30 * time.Second, webhook.ErrStaleTimestamp},
		{"no headers", secret, http.Header{}, body, 0, webhook.ErrMissingHeader},
		{"no timestamp", secret, with(webhook.TimestampHeader, ""), body, 0, webhook.ErrMissingHeader},
		{"no signature", secret, with(webhook.SignatureHeader, ""), body, 0, webhook.ErrMissingHeader},
		{"signed timestamp", secret, with(webhook.TimestampHeader, "+1799999940"), body, 0, webhook.ErrMalformed},
		{"timestamp not a number", secret, with(webhook.TimestampHeader, "yesterday"), body, 0, webhook.ErrMalformed},
		{"timestamp too long", secret, with(webhook.TimestampHeader, "99999999999999999999"), body, 0, webhook.ErrMalformed},
		{"no v1= prefix", secret, with(webhook.SignatureHeader, sigOf[3:]), body, 0, webhook.ErrMalformed},
		{"other version", secret, with(webhook.SignatureHeader, "v0="+sigOf[3:]), body, 0, webhook.ErrMalformed},
		{"not hex", secret, with(webhook.SignatureHeader, "v1="+string(bytes.Repeat([]byte("zz"), 32))), body, 0, webhook.ErrMalformed},
		{"short", secret, with(webhook.SignatureHeader, sigOf[:40]), body, 0, webhook.ErrMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := webhook.Verify(c.secret, c.h, c.body, now, c.tolerance)
			if c.want == nil {
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
			if code := interaction.ErrorCode(err); code != interaction.Unauthorized {
				t.Errorf("code = %s, want UNAUTHORIZED", code)
			}
		})
	}
}

// The README's checks in other languages, kept here so that they are known
// to accept what Sign produces and refuse a tampered body or a stale
// timestamp. The README section (Webhooks) quotes them verbatim.
const pythonVerify = `import hashlib, hmac, time

def verify(secret: bytes, headers, body: bytes, tolerance: int = 300) -> bool:
    ts = headers.get("X-Slackask-Request-Timestamp", "")
    sig = headers.get("X-Slackask-Signature", "")
    if not (ts.isascii() and ts.isdigit()) or abs(time.time() - int(ts)) > tolerance:
        return False
    mac = hmac.new(secret, b"v1:" + ts.encode() + b":" + body, hashlib.sha256)
    return hmac.compare_digest(b"v1=" + mac.hexdigest().encode(), sig.encode())
`

const pythonMain = `
import sys
ok = verify(sys.argv[1].encode(), {"X-Slackask-Request-Timestamp": sys.argv[2], "X-Slackask-Signature": sys.argv[3]}, sys.stdin.buffer.read())
sys.exit(0 if ok else 3)
`

const nodeVerify = `const crypto = require("node:crypto");

function verify(secret, headers, body, toleranceSeconds = 300) {
  const ts = headers["x-slackask-request-timestamp"] ?? "";
  const sig = Buffer.from(headers["x-slackask-signature"] ?? "");
  if (!/^\d+$/.test(ts) || Math.abs(Date.now() / 1000 - Number(ts)) > toleranceSeconds) return false;
  const mac = crypto.createHmac("sha256", secret).update("v1:" + ts + ":").update(body);
  const want = Buffer.from("v1=" + mac.digest("hex"));
  return sig.length === want.length && crypto.timingSafeEqual(sig, want);
}
`

const nodeMain = `
const [secret, ts, sig] = process.argv.slice(-3);
const body = require("node:fs").readFileSync(0);
process.exit(verify(secret, {"x-slackask-request-timestamp": ts, "x-slackask-signature": sig}, body) ? 0 : 3);
`

func TestVerifyOtherLanguages(t *testing.T) {
	for _, lang := range []struct{ bin, flag, code string }{
		{"python3", "-c", pythonVerify + pythonMain},
		{"node", "-e", nodeVerify + nodeMain},
	} {
		t.Run(lang.bin, func(t *testing.T) {
			bin, err := exec.LookPath(lang.bin)
			if err != nil {
				t.Skipf("%s is not on PATH", lang.bin)
			}
			secret := []byte("s3cret-🔑")
			body := []byte("{\"id\":\"ask1\",\"text\":\"naïve \\u2028 ok\"}\n")
			now := time.Now()
			run := func(body []byte, ts time.Time) error {
				t.Helper()
				tsv, sig := webhook.Sign(secret, ts, body)
				cmd := exec.CommandContext(t.Context(), bin, lang.flag, lang.code, string(secret), tsv, sig)
				cmd.Stdin = bytes.NewReader(body)
				cmd.Stderr = os.Stderr
				return cmd.Run()
			}
			if err := run(body, now); err != nil {
				t.Fatalf("a body signed by Sign is refused: %v", err)
			}
			exit := func(err error) int {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return ee.ExitCode()
				}
				t.Fatalf("not an exit status: %v", err)
				return 0
			}
			// A tampered body: signed for one body, checked with another.
			tsv, sig := webhook.Sign(secret, now, body)
			cmd := exec.CommandContext(t.Context(), bin, lang.flag, lang.code, string(secret), tsv, sig)
			cmd.Stdin = bytes.NewReader(append(bytes.Clone(body), ' '))
			if got := exit(cmd.Run()); got != 3 {
				t.Errorf("tampered body: exit %d, want 3 (refused)", got)
			}
			if got := exit(run(body, now.Add(-10*time.Minute))); got != 3 {
				t.Errorf("stale timestamp: exit %d, want 3 (refused)", got)
			}
			// A signature that is not ASCII is refused, not a crash.
			cmd = exec.CommandContext(t.Context(), bin, lang.flag, lang.code, string(secret), tsv, "v1=é"+sig[5:])
			cmd.Stdin = bytes.NewReader(body)
			if got := exit(cmd.Run()); got != 3 {
				t.Errorf("non-ASCII signature: exit %d, want 3 (refused)", got)
			}
		})
	}
}

// TestREADMEQuotesTheChecks: the README's Webhooks section shows the
// Python and Node checks that TestVerifyOtherLanguages runs, byte for byte.
func TestREADMEQuotesTheChecks(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, code := range map[string]string{"python": pythonVerify, "js": nodeVerify} {
		if !strings.Contains(string(readme), "```"+name+"\n"+code+"```\n") {
			t.Errorf("README.md does not quote the %s check as the test runs it:\n%s", name, code)
		}
	}
}
