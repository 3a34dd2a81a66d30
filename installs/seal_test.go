package installs

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/slackask/slackask/interaction"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	_, _ = rand.Read(k)
	return k
}

func TestParseKeyRefusesWrongLengthsWithACodedError(t *testing.T) {
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	for _, v := range []string{good, strings.TrimRight(good, "="), base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), " " + good + "\n"} {
		if k, err := ParseKey("SLACKASK_ENCRYPTION_KEY", v); err != nil || len(k) != 32 {
			t.Errorf("ParseKey(%q) = %d bytes, %v", v, len(k), err)
		}
	}
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key"))
	for v, want := range map[string]string{
		short:                 "is 16 bytes, not 32",
		"not base64 at all!!": "is not base64",
		"":                    "is 0 bytes",
	} {
		_, err := ParseKey("SLACKASK_ENCRYPTION_KEY", v)
		if err == nil || interaction.ErrorCode(err) != interaction.InvalidRequest || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "SLACKASK_ENCRYPTION_KEY") || (v != "" && strings.Contains(err.Error(), v)) {
			t.Errorf("ParseKey(%q) = %v; want INVALID_REQUEST naming the variable, saying %q, without the value", v, err, want)
		}
	}
	if _, err := NewSealer([]byte("short"), nil); interaction.ErrorCode(err) != interaction.InvalidRequest {
		t.Errorf("NewSealer(5 bytes) = %v, want INVALID_REQUEST", err)
	}
}

func TestSealOpens(t *testing.T) {
	s, err := NewSealer(newKey(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("xoxb-1234-secret-token")
	blob := s.Seal(secret, "T1")
	if bytes.Contains(blob, secret) || bytes.Contains(blob, []byte("xoxb-")) {
		t.Fatal("the sealed blob holds the token in the clear")
	}
	if again := s.Seal(secret, "T1"); bytes.Equal(again, blob) {
		t.Fatal("two seals of one secret are equal: the nonce is not fresh")
	}
	got, stale, err := s.Open(blob, "T1")
	if err != nil || stale || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v, %v", got, stale, err)
	}
	if _, _, err := s.Open(blob, "T2"); err == nil {
		t.Error("a blob opened for another row")
	}
	for i := range blob {
		bad := bytes.Clone(blob)
		bad[i] ^= 0x40
		if _, _, err := s.Open(bad, "T1"); err == nil {
			t.Fatalf("a blob with byte %d altered opened", i)
		}
	}
	for n := range len(blob) {
		if _, _, err := s.Open(blob[:n], "T1"); err == nil {
			t.Fatalf("a blob cut to %d bytes opened", n)
		}
	}
}

func TestSealRotation(t *testing.T) {
	oldKey, newKey_ := newKey(t), newKey(t)
	old, _ := NewSealer(oldKey, nil)
	blob := old.Seal([]byte("xoxb-old"), "T1")

	rotated, err := NewSealer(newKey_, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	got, stale, err := rotated.Open(blob, "T1")
	if err != nil || !stale || string(got) != "xoxb-old" {
		t.Fatalf("Open under the previous key = %q, stale %v, %v; want it, stale", got, stale, err)
	}
	if _, stale, err := rotated.Open(rotated.Seal([]byte("x"), "T1"), "T1"); err != nil || stale {
		t.Fatalf("Open of a blob of the current key: stale %v, %v", stale, err)
	}
	onlyNew, _ := NewSealer(newKey_, nil)
	_, _, err = onlyNew.Open(blob, "T1")
	if err == nil || !strings.Contains(err.Error(), old.KeyID()) || !strings.Contains(err.Error(), "SLACKASK_ENCRYPTION_KEY_PREVIOUS") {
		t.Fatalf("Open without the old key = %v; want an error naming its key id %s and SLACKASK_ENCRYPTION_KEY_PREVIOUS", err, old.KeyID())
	}
	if strings.Contains(err.Error(), "xoxb") {
		t.Fatalf("the error shows the content: %v", err)
	}
}
