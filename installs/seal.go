package installs

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/slackask/slackask/interaction"
)

// KeySize is the size of an encryption key: AES-256.
const KeySize = 32

// A sealed blob is
//
//	version (1 byte, 1) | key id (4 bytes) | nonce (12 bytes) | AES-256-GCM ciphertext and tag
//
// The key id is the first 4 bytes of SHA-256("slackask key id\x00" + key):
// it tells the reader which of its keys sealed the blob (current or
// previous, during a rotation) without revealing anything of the key. The
// additional data is the row the blob belongs to (its installation's Key),
// so a blob copied into another row does not open.
const (
	sealVersion = 1
	keyIDSize   = 4
	headerSize  = 1 + keyIDSize
)

type sealKey struct {
	id   [keyIDSize]byte
	aead cipher.AEAD
}

// Sealer seals secrets with AES-256-GCM under the current key and opens
// what the current or the previous key sealed. Safe for concurrent use.
type Sealer struct {
	cur  sealKey
	prev *sealKey
}

// ParseKey decodes an encryption key as SLACKASK_ENCRYPTION_KEY holds it:
// 32 bytes in base64 (standard or URL alphabet, padded or not), as
// `openssl rand -base64 32` prints. name is the variable, for the error,
// which never repeats the value.
func ParseKey(name, b64 string) ([]byte, error) {
	s := strings.TrimSpace(b64)
	var (
		k   []byte
		err error
	)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	switch {
	case err != nil:
		return nil, interaction.Errorf(interaction.InvalidRequest, "%s is not base64: give 32 random bytes in base64 (openssl rand -base64 32)", name)
	case len(k) != KeySize:
		return nil, interaction.Errorf(interaction.InvalidRequest, "%s is %d bytes, not %d: give 32 random bytes in base64 (openssl rand -base64 32)", name, len(k), KeySize)
	}
	return k, nil
}

// NewSealer returns a Sealer that seals under current and also opens what
// previous sealed (nil: no previous key). Each key is KeySize bytes.
func NewSealer(current, previous []byte) (*Sealer, error) {
	cur, err := newSealKey(current)
	if err != nil {
		return nil, fmt.Errorf("installs: current encryption key: %w", err)
	}
	s := &Sealer{cur: cur}
	if previous != nil {
		prev, err := newSealKey(previous)
		if err != nil {
			return nil, fmt.Errorf("installs: previous encryption key: %w", err)
		}
		if prev.id != cur.id {
			s.prev = &prev
		}
	}
	return s, nil
}

func newSealKey(k []byte) (sealKey, error) {
	if len(k) != KeySize {
		return sealKey{}, interaction.Errorf(interaction.InvalidRequest, "an encryption key is %d bytes, not %d", len(k), KeySize)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return sealKey{}, interaction.Errorf(interaction.Internal, "aes: %v", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealKey{}, interaction.Errorf(interaction.Internal, "gcm: %v", err)
	}
	sum := sha256.Sum256(append([]byte("slackask key id\x00"), k...))
	sk := sealKey{aead: aead}
	copy(sk.id[:], sum[:keyIDSize])
	return sk, nil
}

// KeyID is the current key's id as sealed blobs carry it, in hex: what
// `slackask installs list` shows to tell keys apart.
func (s *Sealer) KeyID() string { return hex.EncodeToString(s.cur.id[:]) }

// Seal seals plain for the row named ad under the current key.
func (s *Sealer) Seal(plain []byte, ad string) []byte {
	out := make([]byte, headerSize, headerSize+s.cur.aead.NonceSize()+len(plain)+s.cur.aead.Overhead())
	out[0] = sealVersion
	copy(out[1:], s.cur.id[:])
	nonce := make([]byte, s.cur.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	out = append(out, nonce...)
	return s.cur.aead.Seal(out, nonce, plain, []byte(ad))
}

// Open opens a blob Seal made for the row named ad, under the current or
// the previous key; stale reports the previous one, so the blob should be
// sealed again (Stored.Rekey). The error names the key id a blob needs,
// never anything of its content.
func (s *Sealer) Open(blob []byte, ad string) (plain []byte, stale bool, err error) {
	if len(blob) < headerSize || blob[0] != sealVersion {
		return nil, false, interaction.Errorf(interaction.Internal, "sealed installation %q: not a sealed blob of this version", ad)
	}
	var id [keyIDSize]byte
	copy(id[:], blob[1:headerSize])
	k := &s.cur
	if id != s.cur.id {
		if s.prev == nil || id != s.prev.id {
			return nil, false, interaction.Errorf(interaction.Internal,
				"sealed installation %q: sealed under key %x, which is neither SLACKASK_ENCRYPTION_KEY (%x) nor SLACKASK_ENCRYPTION_KEY_PREVIOUS",
				ad, id, s.cur.id)
		}
		k, stale = s.prev, true
	}
	body := blob[headerSize:]
	if len(body) < k.aead.NonceSize()+k.aead.Overhead() {
		return nil, false, interaction.Errorf(interaction.Internal, "sealed installation %q: truncated", ad)
	}
	plain, err = k.aead.Open(nil, body[:k.aead.NonceSize()], body[k.aead.NonceSize():], []byte(ad))
	if err != nil {
		return nil, false, interaction.Errorf(interaction.Internal, "sealed installation %q: does not open under key %x (altered, or sealed for another row)", ad, id)
	}
	return plain, stale, nil
}

// SealedKeyID returns the id (hex) of the key a blob was sealed under, ""
// when it is not a sealed blob.
func SealedKeyID(blob []byte) string {
	if len(blob) < headerSize || blob[0] != sealVersion {
		return ""
	}
	return hex.EncodeToString(blob[1:headerSize])
}
