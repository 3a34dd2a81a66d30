package slackoauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// A state is what /slack/install puts in Slack's authorize URL and Slack
// hands back to /slack/oauth_redirect:
//
//	base64url( version (1) | nonce (16) | expiry, unix seconds (8) | HMAC-SHA256 (32) )
//
// The HMAC, under a key every replica shares, covers the version, nonce,
// expiry and the redirect URL the state was made for: a forged, altered,
// or another deployment's state does not verify. The nonce is recorded as
// used by the first redirect that presents it (store.UseNonce), so a state
// works once across replicas. The PKCE code_verifier is derived from the
// nonce under the same key: it never leaves the server before the code
// exchange and needs no storage.
const (
	stateVersion = 1
	nonceSize    = 16
	macSize      = sha256.Size
	stateSize    = 1 + nonceSize + 8 + macSize
	// maxStateLen bounds what is decoded: the encoding of stateSize bytes.
	maxStateLen = (stateSize*8 + 5) / 6
)

// StateTTL is how long an install link's state is good for.
const StateTTL = 10 * time.Minute

// The reasons a state is refused. Each is a distinct page for the person
// and a log line for the operator.
var (
	errStateMissing = errors.New("the link has no state")
	errStateForged  = errors.New("the link's state was not made by this slackask (forged, altered or for another redirect URL)")
	errStateExpired = errors.New("the link's state expired (install links last 10 minutes)")
	errStateBrowser = errors.New("the install was started in another browser, or a newer install link was opened in this one")
)

type stateKey []byte

type state struct {
	nonce   [nonceSize]byte
	expires time.Time
}

func (k stateKey) mac(version byte, nonce []byte, expires uint64, redirect string) []byte {
	m := hmac.New(sha256.New, k)
	m.Write([]byte("slackask oauth state\x00"))
	m.Write([]byte{version})
	m.Write(nonce)
	var e [8]byte
	binary.BigEndian.PutUint64(e[:], expires)
	m.Write(e[:])
	m.Write([]byte(redirect))
	return m.Sum(nil)
}

// newState makes a state for redirect that expires at expires.
func (k stateKey) newState(redirect string, expires time.Time) (string, state) {
	var st state
	_, _ = rand.Read(st.nonce[:]) // crypto/rand.Read never fails (Go 1.24+)
	st.expires = time.Unix(expires.Unix(), 0)
	return k.encode(st, redirect), st
}

// encode is st as a state string for redirect.
func (k stateKey) encode(st state, redirect string) string {
	b := make([]byte, 0, stateSize)
	b = append(b, stateVersion)
	b = append(b, st.nonce[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(st.expires.Unix()))
	b = append(b, k.mac(stateVersion, st.nonce[:], uint64(st.expires.Unix()), redirect)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// verify checks a state's MAC for redirect and its expiry at now. It does
// not check the nonce's use (the store does).
func (k stateKey) verify(s, redirect string, now time.Time) (state, error) {
	if s == "" {
		return state{}, errStateMissing
	}
	if len(s) > maxStateLen {
		return state{}, errStateForged
	}
	// Strict: one state has one spelling.
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != stateSize || b[0] != stateVersion {
		return state{}, errStateForged
	}
	nonce, exp, mac := b[1:1+nonceSize], binary.BigEndian.Uint64(b[1+nonceSize:1+nonceSize+8]), b[1+nonceSize+8:]
	if !hmac.Equal(mac, k.mac(stateVersion, nonce, exp, redirect)) {
		return state{}, errStateForged
	}
	var st state
	copy(st.nonce[:], nonce)
	if exp > uint64(1<<62) {
		return state{}, errStateForged
	}
	st.expires = time.Unix(int64(exp), 0)
	if !now.Before(st.expires) {
		return state{}, errStateExpired
	}
	return st, nil
}

// verifier is the PKCE code_verifier of a state: 43 characters of
// base64url (RFC 7636 allows 43 to 128).
func (k stateKey) verifier(st state) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte("slackask pkce verifier\x00"))
	m.Write(st.nonce[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// challenge is the S256 code_challenge of a verifier.
func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// browserTag is the cookie value that ties a state to the browser it was
// handed to: a hash of its nonce, so the cookie alone reveals nothing.
func (k stateKey) browserTag(st state) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte("slackask oauth browser\x00"))
	m.Write(st.nonce[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (k stateKey) checkBrowser(st state, cookie string) error {
	if subtle.ConstantTimeCompare([]byte(cookie), []byte(k.browserTag(st))) != 1 {
		return errStateBrowser
	}
	return nil
}
