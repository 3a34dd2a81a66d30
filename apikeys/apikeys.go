// Package apikeys makes and checks slackask's scoped API keys. A key is
// "sak_" + its id + "_" + 128 random bits; the store keeps only the
// SHA-256 of the whole string (store.APIKey), so the key is shown once,
// when made, and cannot be read back.
package apikeys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
	"github.com/slackask/slackask/store"
)

// Prefix starts every key, so that a key is told from the server's own
// token (and found by secret scanners).
const Prefix = "sak_"

// Scope is what a key may do (see interaction.Caller); empty lists mean any.
type Scope struct {
	Workspaces, Channels, Responders []string
}

// Check refuses ids that are not Slack ids of their kind.
func (sc Scope) Check() error {
	for _, w := range sc.Workspaces {
		if !slackid.IsWorkspace(w) {
			return fmt.Errorf("workspace %q: not a Slack team (T…) or Enterprise Grid organization (E…) id", w)
		}
	}
	for _, c := range sc.Channels {
		if !slackid.IsConversation(c) && !slackid.IsUser(c) {
			return fmt.Errorf("channel %q: not a Slack conversation id (C…, G…, D…) or a user id (U…, W…) for DMs", c)
		}
	}
	for _, r := range sc.Responders {
		if !slackid.IsResponder(r) {
			return fmt.Errorf("responder %q: not a Slack user (U…, W…) or user-group (S…) id", r)
		}
	}
	return nil
}

// New makes a key named name with scope sc: the key string, to show once,
// and the record to store.
func New(name string, sc Scope, now time.Time) (key string, rec store.APIKey, err error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", store.APIKey{}, errors.New("a key needs a name (--name)")
	}
	if err := sc.Check(); err != nil {
		return "", store.APIKey{}, err
	}
	id := "k" + strings.ToLower(rand.Text()[:10])
	key = Prefix + id + "_" + rand.Text()
	return key, store.APIKey{
		ID: id, Name: name, Hash: Hash(key),
		Workspaces: sc.Workspaces, Channels: sc.Channels, Responders: sc.Responders,
		CreatedAt: now.UTC(),
	}, nil
}

// Hash is what the store keeps of key.
func Hash(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// IsKey reports whether token has the form of a key (not whether it is one).
func IsKey(token string) bool { return strings.HasPrefix(token, Prefix) }

// Resolver returns the func the HTTP API resolves a bearer token with: the
// Caller of a live key; nil and no error for a token that is no key, or a
// key unknown or revoked; an error when the store cannot say.
func Resolver(ks store.KeyStore) func(ctx context.Context, token string) (*interaction.Caller, error) {
	return func(ctx context.Context, token string) (*interaction.Caller, error) {
		if !IsKey(token) {
			return nil, nil
		}
		k, err := ks.KeyByHash(ctx, Hash(token))
		switch {
		case errors.Is(err, store.ErrNoKey):
			return nil, nil
		case err != nil:
			// The store's error never carries the token: it is looked up
			// by its hash.
			return nil, fmt.Errorf("api key: %w", err)
		case !k.RevokedAt.IsZero():
			return nil, nil
		}
		return k.Caller(), nil
	}
}
