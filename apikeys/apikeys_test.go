package apikeys

import (
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/store/memory"
)

// A key is shown once and resolves to its scope while it lives; a token
// that is no key, an unknown key and a revoked one resolve to nothing.
func TestNewAndResolve(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	defer st.Close()
	sc := Scope{Workspaces: []string{"T0A"}, Channels: []string{"C0A", "U0DM"}, Responders: []string{"U0A", "S0G"}}
	key, rec, err := New("  ci  ", sc, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, Prefix+rec.ID+"_") || len(key) < len(Prefix)+len(rec.ID)+20 || rec.Name != "ci" {
		t.Fatalf("key %q, record %+v", key, rec)
	}
	if strings.Contains(string(rec.Hash), key[len(key)-10:]) {
		t.Fatal("the record holds the key")
	}
	if err := st.CreateKey(ctx, rec); err != nil {
		t.Fatal(err)
	}
	resolve := Resolver(st)
	c, err := resolve(ctx, key)
	if err != nil || c == nil || c.Key != rec.ID || c.Channels[1] != "U0DM" || c.Workspaces[0] != "T0A" {
		t.Fatalf("resolve: %+v %v", c, err)
	}
	for _, tok := range []string{"server-token", Prefix, key + "x", key[:len(key)-1]} {
		if c, err := resolve(ctx, tok); c != nil || err != nil {
			t.Errorf("resolve(%q) = %+v, %v; want nothing", tok, c, err)
		}
	}
	if _, err := st.RevokeKey(ctx, "ci", time.Now()); err != nil {
		t.Fatal(err)
	}
	if c, err := resolve(ctx, key); c != nil || err != nil {
		t.Errorf("a revoked key resolves: %+v %v", c, err)
	}
	other, _, _ := New("ci2", Scope{}, time.Now())
	if other == key {
		t.Fatal("two keys alike")
	}
}

func TestScopeRefusesBadIDs(t *testing.T) {
	for _, sc := range []Scope{
		{Workspaces: []string{"acme"}},
		{Workspaces: []string{"C0A"}},
		{Channels: []string{"#general"}},
		{Channels: []string{"S0G"}},
		{Responders: []string{"C0A"}},
		{Responders: []string{"alice"}},
	} {
		if _, _, err := New("x", sc, time.Now()); err == nil {
			t.Errorf("%+v accepted", sc)
		}
	}
	if _, _, err := New(" ", Scope{}, time.Now()); err == nil {
		t.Error("a key without a name accepted")
	}
}
