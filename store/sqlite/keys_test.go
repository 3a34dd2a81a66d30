package sqlite

import (
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/slackask/slackask/store"
)

// TestOpenKeysBesideARunningStore: `slackask keys` manages the keys of a
// file a serve process holds open: OpenKeys takes no lock, and what it
// writes the Store reads at once (and the other way round).
func TestOpenKeysBesideARunningStore(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	s := openAt(t, path)
	k, err := OpenKeys(ctx, path)
	if err != nil {
		t.Fatalf("OpenKeys beside an open Store: %v", err)
	}
	defer k.Close()
	sum := sha256.Sum256([]byte("sak_k1_secret"))
	key := store.APIKey{ID: "k1", Name: "ci", Hash: sum[:], Channels: []string{"C1"}, CreatedAt: time.Now()}
	if err := k.CreateKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	got, err := s.KeyByHash(ctx, sum[:])
	if err != nil || got.Name != "ci" || len(got.Channels) != 1 {
		t.Fatalf("the Store reads %+v, %v; want the key OpenKeys wrote", got, err)
	}
	if err := s.CreateKey(ctx, key); !errors.Is(err, store.ErrKeyExists) {
		t.Errorf("CreateKey of the same key through the Store = %v, want ErrKeyExists", err)
	}
	if _, err := k.RevokeKey(ctx, "ci", time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.KeyByHash(ctx, sum[:]); got.RevokedAt.IsZero() {
		t.Errorf("the Store does not see the revocation")
	}
	all, err := k.Keys(ctx)
	if err != nil || len(all) != 1 {
		t.Errorf("Keys = %v, %v", all, err)
	}
	_ = k.Close()
	if _, err := k.Keys(ctx); err == nil {
		t.Errorf("Keys after Close succeeded")
	}
}
