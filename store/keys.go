package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slackask/slackask/interaction"
)

// APIKey is a scoped API key as stored: never the key itself, only its
// SHA-256 (keys are 128 random bits, so a fast hash is as good as a slow
// one and costs nothing per request).
type APIKey struct {
	// ID names the key in listings and owns its asks (Record.Owner).
	ID string `json:"id"`
	// Name is the operator's name for it; unique among keys.
	Name string `json:"name"`
	// Hash is SHA-256 of the whole key string.
	Hash []byte `json:"-"`
	// Workspaces, Channels and Responders are its scope (see
	// interaction.Caller); empty means any.
	Workspaces []string  `json:"workspaces,omitempty"`
	Channels   []string  `json:"channels,omitempty"`
	Responders []string  `json:"responders,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	// RevokedAt is when it was revoked; zero while it works.
	RevokedAt time.Time `json:"revokedAt,omitzero"`
}

// Caller returns the interaction.Caller the key makes its requests as.
func (k APIKey) Caller() *interaction.Caller {
	return &interaction.Caller{
		Key: k.ID, Name: k.Name,
		Workspaces: slices.Clone(k.Workspaces), Channels: slices.Clone(k.Channels), Responders: slices.Clone(k.Responders),
	}
}

// KeyStore keeps scoped API keys. Every Store is one.
type KeyStore interface {
	// CreateKey stores k (ID, Name and a 32-byte Hash required).
	// ErrKeyExists when its id, name or hash is taken, even by a revoked key.
	CreateKey(ctx context.Context, k APIKey) error
	// KeyByHash returns the key whose Hash is hash, revoked or not;
	// ErrNoKey when there is none.
	KeyByHash(ctx context.Context, hash []byte) (APIKey, error)
	// Keys returns every key, revoked ones included, oldest first.
	Keys(ctx context.Context) ([]APIKey, error)
	// RevokeKey revokes the key with that id or name at at and returns it;
	// a key already revoked is returned unchanged. ErrNoKey when there is
	// none.
	RevokeKey(ctx context.Context, idOrName string, at time.Time) (APIKey, error)
}

var (
	// ErrNoKey: no API key with that hash, id or name.
	ErrNoKey = errors.New("store: no such API key")
	// ErrKeyExists: CreateKey with an id, name or hash already taken.
	ErrKeyExists = errors.New("store: an API key with that id or name already exists")
)

// CheckKey refuses a key CreateKey cannot store.
func CheckKey(k APIKey) error {
	switch {
	case k.ID == "" || k.Name == "":
		return errors.New("an API key needs an id and a name")
	case len(k.Hash) != 32:
		return errors.New("an API key's hash is 32 bytes (SHA-256)")
	}
	return nil
}

// CloneKey returns a deep copy of k.
func CloneKey(k APIKey) APIKey {
	k.Hash = slices.Clone(k.Hash)
	k.Workspaces, k.Channels, k.Responders = slices.Clone(k.Workspaces), slices.Clone(k.Channels), slices.Clone(k.Responders)
	return k
}

// keyScope is how a database store keeps a key's scope: one JSON column.
type keyScope struct {
	Workspaces []string `json:"workspaces,omitempty"`
	Channels   []string `json:"channels,omitempty"`
	Responders []string `json:"responders,omitempty"`
}

// EncodeKeyScope returns the JSON a database store keeps k's scope as.
func EncodeKeyScope(k APIKey) (string, error) {
	b, err := json.Marshal(keyScope{k.Workspaces, k.Channels, k.Responders})
	return string(b), err
}

// DecodeKey fills k (its ID, Name and Hash already scanned) from the rest
// of a database row: the scope's JSON, the creation and (nil: none)
// revocation times in unix nanoseconds.
func DecodeKey(k *APIKey, scope []byte, created int64, revoked *int64) error {
	var sc keyScope
	if err := json.Unmarshal(scope, &sc); err != nil {
		return fmt.Errorf("key %q: corrupt scope: %w", k.ID, err)
	}
	k.Workspaces, k.Channels, k.Responders = sc.Workspaces, sc.Channels, sc.Responders
	k.CreatedAt = time.Unix(0, created).UTC()
	if revoked != nil {
		k.RevokedAt = time.Unix(0, *revoked).UTC()
	}
	return nil
}
