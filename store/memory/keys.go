package memory

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/slackask/slackask/store"
)

// CreateKey implements store.KeyStore.
func (s *Store) CreateKey(ctx context.Context, k store.APIKey) error {
	op := fmt.Sprintf("memory create key %q", k.Name)
	if err := store.CheckKey(k); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	for _, o := range s.keys {
		if o.ID == k.ID || o.Name == k.Name || bytes.Equal(o.Hash, k.Hash) {
			return fmt.Errorf("%s: %w", op, store.ErrKeyExists)
		}
	}
	k = store.CloneKey(k)
	k.CreatedAt = k.CreatedAt.UTC()
	s.keys = append(s.keys, k)
	return nil
}

// KeyByHash implements store.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (store.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.APIKey{}, fmt.Errorf("memory key by hash: %w", err)
	}
	for _, k := range s.keys {
		if bytes.Equal(k.Hash, hash) {
			return store.CloneKey(k), nil
		}
	}
	return store.APIKey{}, fmt.Errorf("memory key by hash: %w", store.ErrNoKey)
}

// Keys implements store.KeyStore.
func (s *Store) Keys(ctx context.Context) ([]store.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory keys: %w", err)
	}
	out := make([]store.APIKey, len(s.keys))
	for i, k := range s.keys {
		out[i] = store.CloneKey(k)
	}
	return out, nil
}

// RevokeKey implements store.KeyStore.
func (s *Store) RevokeKey(ctx context.Context, idOrName string, at time.Time) (store.APIKey, error) {
	op := fmt.Sprintf("memory revoke key %q", idOrName)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.APIKey{}, fmt.Errorf("%s: %w", op, err)
	}
	for i, k := range s.keys {
		if k.ID == idOrName || k.Name == idOrName {
			if k.RevokedAt.IsZero() {
				s.keys[i].RevokedAt = at.UTC()
			}
			return store.CloneKey(s.keys[i]), nil
		}
	}
	return store.APIKey{}, fmt.Errorf("%s: %w", op, store.ErrNoKey)
}
