package bot

import (
	"context"
	"sync"

	"github.com/slackask/slackask/installs"
)

// testInstalls is an installs.Source and installs.Remover over a map, as
// the store-backed one answers: a team's own install, else its
// enterprise's org-wide one.
type testInstalls struct {
	mu      sync.Mutex
	m       map[string]installs.Installation // by Key
	removed []string
	// learned gets the enterprise of each Learn call, when not nil
	learned chan string
	// orgOf maps a team an org-wide install serves to its enterprise (as
	// auth.teams.list named them), when not nil.
	orgOf map[string]string
}

// Learn is installs.Stored's: list an org-wide install's teams again.
func (s *testInstalls) Learn(_ context.Context, enterprise string) error {
	if s.learned != nil {
		s.learned <- enterprise
	}
	return nil
}

func newTestInstalls(ins ...installs.Installation) *testInstalls {
	s := &testInstalls{m: map[string]installs.Installation{}}
	for _, in := range ins {
		s.m[in.Key()] = in
	}
	return s
}

func (s *testInstalls) Lookup(_ context.Context, enterprise, team string) (installs.Installation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in, ok := s.m[team]; ok && team != "" {
		return in, nil
	}
	if enterprise == "" {
		enterprise = s.orgOf[team]
	}
	if in, ok := s.m[enterprise]; ok && enterprise != "" && in.OrgWide {
		return in, nil
	}
	return installs.Installation{}, installs.ErrNotInstalled
}

func (s *testInstalls) Remove(_ context.Context, enterprise, team string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for key, in := range s.m {
		if (team != "" && in.Team == team && !in.OrgWide) || (team == "" && in.OrgWide && in.Enterprise == enterprise) {
			delete(s.m, key)
			keys = append(keys, key)
		}
	}
	s.removed = append(s.removed, keys...)
	return keys, nil
}

// removedKeys returns the keys Remove was called with.
func (s *testInstalls) removedKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.removed...)
}
