package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slackask/slackask/store"
)

// SaveInstall implements store.InstallStore.
func (s *Store) SaveInstall(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	op := fmt.Sprintf("memory save install %q", r.Key)
	if err := store.CheckInstall(r); err != nil {
		return store.InstallRow{}, fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.InstallRow{}, fmt.Errorf("%s: %w", op, err)
	}
	if s.installs == nil {
		s.installs = map[string]store.InstallRow{}
	}
	r = store.CloneInstall(r)
	r.Version = s.installs[r.Key].Version + 1
	s.installs[r.Key] = r
	return store.CloneInstall(r), nil
}

// InstallFor implements store.InstallStore.
func (s *Store) InstallFor(ctx context.Context, enterprise, team string) (store.InstallRow, error) {
	op := fmt.Sprintf("memory install for %q/%q", enterprise, team)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.InstallRow{}, fmt.Errorf("%s: %w", op, err)
	}
	if r, ok := s.installs[team]; ok && !r.OrgWide {
		return store.CloneInstall(r), nil
	}
	if r, ok := s.installs[enterprise]; ok && r.OrgWide {
		return store.CloneInstall(r), nil
	}
	if e, ok := s.orgTeams[team]; ok && enterprise == "" {
		if r, ok := s.installs[e]; ok && r.OrgWide {
			return store.CloneInstall(r), nil
		}
	}
	return store.InstallRow{}, fmt.Errorf("%s: %w", op, store.ErrNoInstall)
}

// SwapInstall implements store.InstallStore.
func (s *Store) SwapInstall(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	op := fmt.Sprintf("memory swap install %q", r.Key)
	if err := store.CheckInstall(r); err != nil {
		return store.InstallRow{}, fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return store.InstallRow{}, fmt.Errorf("%s: %w", op, err)
	}
	old, ok := s.installs[r.Key]
	switch {
	case !ok:
		return store.InstallRow{}, fmt.Errorf("%s: %w", op, store.ErrNoInstall)
	case old.Version != r.Version:
		return store.InstallRow{}, fmt.Errorf("%s: %w", op, store.ErrInstallChanged)
	}
	r = store.CloneInstall(r)
	r.Version++
	s.installs[r.Key] = r
	return store.CloneInstall(r), nil
}

// DeleteInstalls implements store.InstallStore.
func (s *Store) DeleteInstalls(ctx context.Context, enterprise, team string) ([]store.InstallRow, error) {
	op := fmt.Sprintf("memory delete installs %q/%q", enterprise, team)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var gone []store.InstallRow
	for k, r := range s.installs {
		if team != "" && k == team && !r.OrgWide || team == "" && enterprise != "" && k == enterprise && r.OrgWide {
			gone = append(gone, r)
			delete(s.installs, k)
		}
	}
	if team == "" && enterprise != "" {
		for t, e := range s.orgTeams {
			if e == enterprise {
				delete(s.orgTeams, t)
			}
		}
	}
	slices.SortFunc(gone, func(a, b store.InstallRow) int { return strings.Compare(a.Key, b.Key) })
	return gone, nil
}

// Installs implements store.InstallStore.
func (s *Store) Installs(ctx context.Context) ([]store.InstallRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory installs: %w", err)
	}
	out := make([]store.InstallRow, 0, len(s.installs))
	for _, r := range s.installs {
		out = append(out, store.CloneInstall(r))
	}
	slices.SortFunc(out, func(a, b store.InstallRow) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// UseNonce implements store.InstallStore.
func (s *Store) UseNonce(ctx context.Context, nonce string, expires time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("memory use nonce: %w", err)
	}
	now := time.Now()
	for n, exp := range s.nonces {
		if exp.Before(now) {
			delete(s.nonces, n)
		}
	}
	if _, used := s.nonces[nonce]; used {
		return fmt.Errorf("memory use nonce: %w", store.ErrNonceUsed)
	}
	if s.nonces == nil {
		s.nonces = map[string]time.Time{}
	}
	s.nonces[nonce] = expires
	return nil
}

// SetInstallTeams implements store.InstallStore.
func (s *Store) SetInstallTeams(ctx context.Context, enterprise string, teams []string) error {
	op := fmt.Sprintf("memory set install teams %q", enterprise)
	if err := store.CheckInstallTeams(enterprise, teams); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if s.orgTeams == nil {
		s.orgTeams = map[string]string{}
	}
	for t, e := range s.orgTeams {
		if e == enterprise {
			delete(s.orgTeams, t)
		}
	}
	for _, t := range teams {
		s.orgTeams[t] = enterprise
	}
	return nil
}

// InstallTeams implements store.InstallStore.
func (s *Store) InstallTeams(ctx context.Context, enterprise string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("memory install teams %q: %w", enterprise, err)
	}
	var out []string
	for t, e := range s.orgTeams {
		if e == enterprise {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}
