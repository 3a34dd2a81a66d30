package storetest

import (
	"crypto/sha256"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/slackask/slackask/store"
)

func apiKey(id, name, secret string) store.APIKey {
	sum := sha256.Sum256([]byte(secret))
	return store.APIKey{
		ID: id, Name: name, Hash: sum[:],
		Workspaces: []string{"T0001"}, Channels: []string{"C0123", "U0456"}, Responders: []string{"U0456", "S0999"},
		CreatedAt: base.Add(time.Duration(len(id)) * time.Second),
	}
}

// testListOwner: List with Owner keeps that owner's records only, with the
// other filters and the limit applied among them.
func testListOwner(t *testing.T, s store.Store) {
	for i, owner := range []string{"ka", "kb", "ka", "", "ka"} {
		r := pendingAt(string(rune('p'+i))+"1", base.Add(time.Duration(i)*time.Second))
		r.Owner = owner
		mustCreate(t, s, r)
	}
	if got := ids(mustList(t, s, store.Filter{Owner: "ka"})); !reflect.DeepEqual(got, []string{"t1", "r1", "p1"}) {
		t.Errorf("List(owner ka) = %v, want [t1 r1 p1]", got)
	}
	if got := ids(mustList(t, s, store.Filter{Owner: "ka", Limit: 1})); !reflect.DeepEqual(got, []string{"t1"}) {
		t.Errorf("List(owner ka, limit 1) = %v, want [t1]", got)
	}
	if got := ids(mustList(t, s, store.Filter{Owner: "kb"})); !reflect.DeepEqual(got, []string{"q1"}) {
		t.Errorf("List(owner kb) = %v, want [q1]", got)
	}
	if got := ids(mustList(t, s, store.Filter{Owner: "kz"})); len(got) != 0 {
		t.Errorf("List(owner kz) = %v, want none", got)
	}
	if got := ids(mustList(t, s, store.Filter{})); len(got) != 5 {
		t.Errorf("List() = %v, want all 5", got)
	}
}

// testKeys: a key round-trips by its hash and in Keys; RevokeKey by id or
// name sets RevokedAt once; unknown hashes and names are ErrNoKey.
func testKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	a, b := apiKey("ka1", "deploy-bot", "secret-a"), apiKey("kb22", "triage", "secret-b")
	b.Workspaces, b.Channels, b.Responders = nil, nil, nil
	for _, k := range []store.APIKey{a, b} {
		if err := s.CreateKey(ctx, k); err != nil {
			t.Fatalf("CreateKey %s: %v", k.ID, err)
		}
	}
	got, err := s.KeyByHash(ctx, a.Hash)
	if err != nil {
		t.Fatalf("KeyByHash: %v", err)
	}
	want := a
	want.CreatedAt = a.CreatedAt.UTC()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("KeyByHash = %+v, want %+v", got, a)
	}
	other := sha256.Sum256([]byte("secret-c"))
	if _, err := s.KeyByHash(ctx, other[:]); !errors.Is(err, store.ErrNoKey) {
		t.Errorf("KeyByHash(unknown) = %v, want ErrNoKey", err)
	}
	all, err := s.Keys(ctx)
	if err != nil || len(all) != 2 || all[0].ID != "ka1" || all[1].ID != "kb22" {
		t.Fatalf("Keys = %+v, %v; want ka1, kb22", all, err)
	}
	at := base.Add(time.Hour)
	r, err := s.RevokeKey(ctx, "triage", at)
	if err != nil || !r.RevokedAt.Equal(at) || r.ID != "kb22" {
		t.Fatalf("RevokeKey(by name) = %+v, %v", r, err)
	}
	r, err = s.RevokeKey(ctx, "kb22", at.Add(time.Hour))
	if err != nil || !r.RevokedAt.Equal(at) {
		t.Errorf("RevokeKey again = %+v, %v; want the first revocation kept", r, err)
	}
	if got, err := s.KeyByHash(ctx, b.Hash); err != nil || !got.RevokedAt.Equal(at) {
		t.Errorf("KeyByHash(revoked) = %+v, %v; want it with RevokedAt", got, err)
	}
	if got, _ := s.KeyByHash(ctx, a.Hash); !got.RevokedAt.IsZero() {
		t.Errorf("revoking triage revoked deploy-bot too")
	}
	if _, err := s.RevokeKey(ctx, "nobody", at); !errors.Is(err, store.ErrNoKey) {
		t.Errorf("RevokeKey(unknown) = %v, want ErrNoKey", err)
	}
}

// testKeysUnique: ids, names and hashes are unique, revoked keys included;
// a key without a proper hash is refused.
func testKeysUnique(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := apiKey("ka1", "deploy-bot", "secret-a")
	if err := s.CreateKey(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeKey(ctx, "ka1", base); err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]store.APIKey{
		"id":   apiKey("ka1", "other", "secret-x"),
		"name": apiKey("kx1", "deploy-bot", "secret-y"),
		"hash": apiKey("ky1", "another", "secret-a"),
	} {
		if err := s.CreateKey(ctx, k); !errors.Is(err, store.ErrKeyExists) {
			t.Errorf("CreateKey with a taken %s = %v, want ErrKeyExists", name, err)
		}
	}
	bad := apiKey("kz1", "short", "x")
	bad.Hash = bad.Hash[:8]
	if err := s.CreateKey(ctx, bad); err == nil {
		t.Errorf("CreateKey with an 8-byte hash succeeded")
	}
	if all, _ := s.Keys(ctx); len(all) != 1 {
		t.Errorf("Keys = %d keys, want 1", len(all))
	}
}
