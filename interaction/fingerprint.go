package interaction

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Fingerprint returns a stable hash of the request in, without its
// IdempotencyKey: two bodies that say the same thing have the same
// fingerprint whatever their field order, spacing or duration spelling
// ("60s" and "1m"), and any change of a field that reaches the ask changes
// it. It is what a reused IdempotencyKey is compared by
// (IDEMPOTENCY_MISMATCH). The hash is of in's canonical JSON: encoding/json
// writes struct fields in declaration order and durations in one form, so
// only the meaning is hashed. It is "v1:" and 64 hex digits; a later
// canonical form gets a new prefix, so stored fingerprints are never
// compared across forms.
func (in AskInput) Fingerprint() string {
	in.IdempotencyKey = ""
	b, err := json.Marshal(in)
	if err != nil {
		// Every field of AskInput marshals; keep the hash total anyway.
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	return "v1:" + hex.EncodeToString(sum[:])
}
