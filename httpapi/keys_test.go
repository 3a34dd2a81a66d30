package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
)

// callerSvc records the caller each Create came with (the fake refuses,
// as the lifecycle does, with FORBIDDEN what the caller's scope does not
// allow).
type callerSvc struct {
	*fakeSvc
	seen []*interaction.Caller
}

func (s *callerSvc) Create(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	s.seen = append(s.seen, interaction.CallerFrom(ctx))
	return s.fakeSvc.Create(ctx, in)
}

// TestAuthKeys: the server's token is the all-powerful caller (none in the
// context); a live key is its Caller; an unknown or revoked key is 401 even
// where no token is configured; a store failure is 500 without the token;
// FORBIDDEN is 403.
func TestAuthKeys(t *testing.T) {
	const token, key, dead = "s3rv3r-token", "sak_kabc_live", "sak_kdef_revoked"
	keys := func(_ context.Context, tok string) (*interaction.Caller, error) {
		switch tok {
		case key:
			return &interaction.Caller{Key: "kabc", Channels: []string{"C0OK"}}, nil
		case "sak_broken":
			return nil, errors.New("store down")
		}
		return nil, nil
	}
	for _, serverToken := range []string{token, ""} {
		var logs bytes.Buffer
		f := &callerSvc{fakeSvc: newFake()}
		h := New(f, Options{Token: serverToken, Keys: keys, Logger: zerolog.New(&logs)})
		bearer := func(v string) []string { return []string{"Authorization", "Bearer " + v} }

		rec := do(h, "POST", "/v1/asks", `{"questions":[{"id":"q","question":"Go?"}],"channel":"C0OK"}`, bearer(key)...)
		if rec.Code != http.StatusCreated || len(f.seen) != 1 || f.seen[0] == nil || f.seen[0].Key != "kabc" {
			t.Fatalf("token %q: a live key: %d %s, caller %v", serverToken, rec.Code, rec.Body, f.seen)
		}
		wantError(t, do(h, "POST", "/v1/asks", `{"questions":[{"id":"q","question":"Go?"}],"channel":"C0NO"}`, bearer(key)...),
			http.StatusForbidden, interaction.Forbidden, "channel C0NO")
		for _, bad := range []string{dead, "sak_", "sak_kabc_liv"} {
			wantError(t, do(h, "GET", "/v1/asks", "", bearer(bad)...), http.StatusUnauthorized, interaction.Unauthorized, "bearer token")
		}
		wantError(t, do(h, "GET", "/v1/asks", "", bearer("sak_broken")...), http.StatusInternalServerError, interaction.Internal, "internal error")
		if serverToken != "" {
			f.seen = nil
			if rec := do(h, "POST", "/v1/asks", askBody, bearer(token)...); rec.Code != http.StatusCreated || len(f.seen) != 1 || f.seen[0] != nil {
				t.Fatalf("the server token: %d, caller %v; want the all-powerful nil", rec.Code, f.seen)
			}
			wantError(t, do(h, "GET", "/v1/asks", ""), http.StatusUnauthorized, interaction.Unauthorized, "")
		} else if rec := do(h, "GET", "/v1/asks", ""); rec.Code != http.StatusOK {
			t.Fatalf("no token configured, none sent: %d", rec.Code)
		}
		for _, secret := range []string{key, dead, "sak_broken", token} {
			if strings.Contains(logs.String(), secret) {
				t.Fatalf("the log holds %q: %s", secret, logs.String())
			}
		}
	}
}
